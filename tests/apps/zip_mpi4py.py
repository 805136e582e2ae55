"""mpi4py across zipper forwarding (tests/python/test_zipper.py): pickled and buffer
point-to-point, wildcards, collectives and a split, with known results. Prints
"zip_mpi4py: ok THREAD_LEVEL" on every rank, or raises."""

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size

# Pickled objects through Mprobe/Mrecv, both ways round the ring
got = comm.sendrecv({"from": rank, "data": list(range(rank))}, dest=right, source=left)
assert got == {"from": left, "data": list(range(left))}, got

# Wildcard receives at rank 0 from every other rank, in order per sender
if rank == 0:
    seen: dict[int, list[int]] = {}
    status = MPI.Status()
    for _ in range(3 * (size - 1)):
        value = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
        seen.setdefault(status.Get_source(), []).append(value)
    assert seen == {r: [r, r + 1, r + 2] for r in range(1, size)}, seen
else:
    for i in range(3):
        comm.send(rank + i, dest=0, tag=i)
comm.Barrier()  # no later message may meet those wildcard receives

# Buffers, nonblocking
import array  # noqa: E402

out = array.array("d", [rank + 0.5] * 1000)
into = array.array("d", [0.0] * 1000)
reqs = [comm.Irecv(into, source=left, tag=5), comm.Isend(out, dest=right, tag=5)]
MPI.Request.Waitall(reqs)
assert into[999] == left + 0.5

# Collectives: objects and buffers
assert comm.allreduce(rank) == size * (size - 1) // 2
assert comm.bcast("hello" if rank == size - 1 else None, root=size - 1) == "hello"
assert comm.allgather(rank) == list(range(size))
assert comm.alltoall([rank * 10 + i for i in range(size)]) == [i * 10 + rank for i in range(size)]
total = array.array("i", [0])
comm.Allreduce(array.array("i", [rank]), total, op=MPI.MAX)
assert total[0] == size - 1

# Even and odd ranks: each spans both clusters
half = comm.Split(rank % 2, rank)
assert half.Get_size() == size // 2 and half.Get_rank() == rank // 2
assert half.allreduce(rank) == sum(range(rank % 2, size, 2))
half.Free()
comm.Barrier()

levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
          MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}  # fmt: skip
print(f"zip_mpi4py: ok {levels[MPI.Query_thread()]}", flush=True)
