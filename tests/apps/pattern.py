"""The known pattern of pattern.c, with mpi4py's buffer interface (run with /usr/bin/python3)."""

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, n = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % n, (rank + n - 1) % n

d = np.array([float(rank)])
dsum = np.zeros(1)
for _ in range(10):
    if rank % 2 == 0:
        comm.Send([d, MPI.DOUBLE], dest=right, tag=1)
        comm.Recv([d, MPI.DOUBLE], source=left, tag=1)
    else:
        comm.Recv([d, MPI.DOUBLE], source=left, tag=1)
        comm.Send([d, MPI.DOUBLE], dest=right, tag=1)
ibuf = np.full(250, rank, dtype=np.int32)
ibuf2 = np.zeros(250, dtype=np.int32)
st = MPI.Status()
for _ in range(5):
    comm.Sendrecv([ibuf, MPI.INT], right, 2, [ibuf2, MPI.INT], left, 2, st)
big = np.zeros(16384, dtype=np.float32)
big2 = np.zeros(16384, dtype=np.float32)
for _ in range(2):
    reqs = [comm.Irecv([big2, MPI.FLOAT], left, 3), comm.Isend([big, MPI.FLOAT], right, 3)]
    MPI.Request.Waitall(reqs)
one = np.ones(1, dtype=np.int32)
for _ in range(3):
    comm.Bcast([one, MPI.INT], root=0)
for _ in range(4):
    comm.Allreduce([d, MPI.DOUBLE], [dsum, MPI.DOUBLE], op=MPI.SUM)
comm.Barrier()
a2a = np.zeros(4 * n, dtype=np.int32)
a2a2 = np.zeros(4 * n, dtype=np.int32)
comm.Alltoall([a2a, MPI.INT], [a2a2, MPI.INT])
two = np.full(2, rank, dtype=np.int32)
gathered = np.zeros(2 * n, dtype=np.int32)
comm.Gather([two, MPI.INT], [gathered, MPI.INT], root=n - 1)
isum = np.zeros(1, dtype=np.int32)
comm.Reduce([one, MPI.INT], [isum, MPI.INT], op=MPI.SUM, root=1)

half = comm.Split(rank % 2, rank)
if half.Get_size() >= 2 and half.Get_rank() == 0:
    half.Send([ibuf[:25], MPI.INT], dest=1, tag=4)
if half.Get_size() >= 2 and half.Get_rank() == 1:
    half.Recv([ibuf2[:25], MPI.INT], source=0, tag=4, status=st)
dup = comm.Dup()
dup.Allreduce([d, MPI.DOUBLE], [dsum, MPI.DOUBLE], op=MPI.SUM)
dup.Free()
half.Free()
if rank == 0:
    print(f"pattern: done on {n} ranks")
