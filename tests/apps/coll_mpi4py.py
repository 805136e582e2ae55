"""mpi4py through libisthmus's WAN-aware collectives: buffer (numpy) and pickled-object
collectives, a user-defined non-commutative operation, MPI.IN_PLACE; each result checked
against the value computed here. Prints "coll_mpi4py: ok" when all agree."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = []


def check(name, got, want):
    if not np.array_equal(np.asarray(got), np.asarray(want)):
        failures.append(f"{name}: rank {rank} got {got!r}, want {want!r}")


comm.Barrier()
x = np.arange(5, dtype="i8") + rank
out = np.empty_like(x)
comm.Allreduce(x, out, op=MPI.SUM)
check("Allreduce", out, sum(np.arange(5) + r for r in range(size)))
buf = x.copy()
comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
check("Allreduce IN_PLACE", buf, np.arange(5) + size - 1)
for root in range(size):
    b = np.full(3, rank, dtype="f8") if rank == root else np.zeros(3)
    comm.Bcast(b, root=root)
    check(f"Bcast root {root}", b, np.full(3, root, dtype="f8"))
gathered = np.empty(size * 2, dtype="i4")
comm.Allgather(np.array([rank, -rank], dtype="i4"), gathered)
check("Allgather", gathered, np.array([v for r in range(size) for v in (r, -r)], dtype="i4"))
send = np.array([rank * 100 + d for d in range(size)], dtype="i4")
recv = np.empty(size, dtype="i4")
comm.Alltoall(send, recv)
check("Alltoall", recv, np.array([s * 100 + rank for s in range(size)], dtype="i4"))
scanned = np.empty(1, dtype="i8")
comm.Scan(np.array([rank + 1], dtype="i8"), scanned)
check("Scan", scanned, [sum(range(1, rank + 2))])
reduced = np.zeros(2, dtype="i8") if rank == 0 else None
comm.Reduce(np.array([rank, 1], dtype="i8"), reduced, op=MPI.SUM, root=0)
if rank == 0:
    check("Reduce", reduced, [sum(range(size)), size])


# 2x2 matrices multiplied in rank order: not commutative, so order must be kept
def matmul(inbuf, inoutbuf, datatype):
    a = np.frombuffer(inbuf, dtype="i8").reshape(2, 2)
    b = np.frombuffer(inoutbuf, dtype="i8").reshape(2, 2)
    np.frombuffer(inoutbuf, dtype="i8")[:] = (a @ b).ravel()


op = MPI.Op.Create(matmul, commute=False)
m = np.array([[1, rank + 1], [0, 1]], dtype="i8")
prod = np.empty(4, dtype="i8")
comm.Allreduce(m.ravel(), prod, op=op)
want = np.eye(2, dtype="i8")
for r in range(size):
    want = want @ np.array([[1, r + 1], [0, 1]], dtype="i8")
check("Allreduce non-commutative", prod, want.ravel())
op.Free()
# pickled objects ride on the same collectives
check("allgather objects", comm.allgather({"r": rank}) == [{"r": r} for r in range(size)], True)
check("bcast object", comm.bcast("from 0" if rank == 0 else None, root=0), "from 0")
comm.Barrier()
all_failures = comm.gather(failures, root=0)
if rank == 0:
    flat = [f for fs in all_failures for f in fs]
    print("\n".join(flat) if flat else "coll_mpi4py: ok", flush=True)
