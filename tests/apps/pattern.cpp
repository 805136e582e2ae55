// The known pattern of pattern.c, in C++ (the MPI C API from C++, as C++ codes use it).
#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;

    double d = rank, dsum = 0;
    for (int i = 0; i < 10; i++) {
        if (rank % 2 == 0) {
            MPI_Send(&d, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
            MPI_Recv(&d, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&d, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&d, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
        }
    }
    std::vector<int> ibuf(250, rank), ibuf2(250);
    MPI_Status st;
    for (int i = 0; i < 5; i++)
        MPI_Sendrecv(ibuf.data(), 250, MPI_INT, right, 2, ibuf2.data(), 250, MPI_INT, left, 2,
                     MPI_COMM_WORLD, &st);
    std::vector<float> big(16384), big2(16384);
    for (int i = 0; i < 2; i++) {
        MPI_Request req[2];
        MPI_Status sts[2];
        MPI_Irecv(big2.data(), 16384, MPI_FLOAT, left, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(big.data(), 16384, MPI_FLOAT, right, 3, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, sts);
    }
    int one = 1;
    for (int i = 0; i < 3; i++) MPI_Bcast(&one, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<int> a2a(4 * n), a2a2(4 * n);
    MPI_Alltoall(a2a.data(), 4, MPI_INT, a2a2.data(), 4, MPI_INT, MPI_COMM_WORLD);
    int two[2] = {rank, rank};
    std::vector<int> gathered(2 * n);
    MPI_Gather(two, 2, MPI_INT, gathered.data(), 2, MPI_INT, n - 1, MPI_COMM_WORLD);
    int isum = 0;
    MPI_Reduce(&one, &isum, 1, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD);

    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    if (hsize >= 2 && hrank == 0) MPI_Send(ibuf.data(), 25, MPI_INT, 1, 4, half);
    if (hsize >= 2 && hrank == 1) MPI_Recv(ibuf2.data(), 25, MPI_INT, 0, 4, half, &st);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    if (rank == 0) std::printf("pattern: done on %d ranks\n", n);
    MPI_Finalize();
    return 0;
}
