"""Object broadcasts over an intercommunicator, as mpi4py's test_cco_obj_inter does them:
the world splits in two halves joined by an intercommunicator; each rank of one half
broadcasts in turn (root=MPI.ROOT at the broadcaster, MPI.PROC_NULL at the others of its
half) and the other half receives from root 0, 1, ...; then the halves swap. Each
broadcast is two MPI_Bcast calls (the pickle's size, then its bytes). Prints
"inter_bcast: ok" when every rank received what was sent."""

import sys

from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
color = 0 if rank < size // 2 else 1
local = world.Split(color, key=0)
inter = local.Create_intercomm(0, world, size // 2 if color == 0 else 0)
failures = []
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
for n in range(rounds):
    for sender in (0, 1):
        if color == sender:
            for root in range(inter.Get_size()):
                mine = root == inter.Get_rank()
                got = inter.bcast(
                    ("msg", n, root) if mine else None, root=MPI.ROOT if mine else MPI.PROC_NULL
                )
                if got is not None:
                    failures.append(f"rank {rank}: a sender got {got!r}")
        else:
            for root in range(inter.Get_remote_size()):
                got = inter.bcast(None, root=root)
                if got != ("msg", n, root):
                    failures.append(f"rank {rank}: from root {root} got {got!r}")
inter.Free()
local.Free()
if failures:
    print("inter_bcast: FAILED", *failures[:5], sep="\n", flush=True)
    world.Abort(1)
world.Barrier()
if rank == 0:
    print("inter_bcast: ok", flush=True)
