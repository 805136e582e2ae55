/* A program with a known communication pattern: the profile of a run must match, call for
 * call and byte for byte, what tests/python/expected_pattern.py computes for n ranks.
 * The same pattern is written in C++ (pattern.cpp), Fortran (pattern.F90, in its three
 * bindings) and Python (pattern.py). Needs at least 2 ranks.
 *
 *   ring:   10 x MPI_Send/MPI_Recv of 1 double to the right (Recv with STATUS_IGNORE),
 *            5 x MPI_Sendrecv of 250 ints, 2 x MPI_Isend+MPI_Irecv of 16384 floats + Waitall
 *   world:  3 x Bcast of 1 int from 0, 4 x Allreduce of 1 double, 1 Barrier,
 *           1 Alltoall of 4 ints per pair, 1 Gather of 2 ints to n-1, 1 Reduce of 1 int to 1
 *   split:  by parity; sub rank 0 sends 25 ints to sub rank 1 (world 0 -> 2, 1 -> 3)
 *   dup:    1 Allreduce of 1 double on a duplicate of MPI_COMM_WORLD */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;

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
    int ibuf[250], ibuf2[250];
    for (int i = 0; i < 250; i++) ibuf[i] = rank;
    MPI_Status st;
    for (int i = 0; i < 5; i++)
        MPI_Sendrecv(ibuf, 250, MPI_INT, right, 2, ibuf2, 250, MPI_INT, left, 2, MPI_COMM_WORLD, &st);
    float *big = calloc(16384, sizeof(float)), *big2 = calloc(16384, sizeof(float));
    for (int i = 0; i < 2; i++) {
        MPI_Request req[2];
        MPI_Irecv(big2, 16384, MPI_FLOAT, left, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(big, 16384, MPI_FLOAT, right, 3, MPI_COMM_WORLD, &req[1]);
        MPI_Status sts[2];
        MPI_Waitall(2, req, sts);
    }

    int one = 1;
    for (int i = 0; i < 3; i++) MPI_Bcast(&one, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    int *a2a = calloc((size_t)4 * n, sizeof(int)), *a2a2 = calloc((size_t)4 * n, sizeof(int));
    MPI_Alltoall(a2a, 4, MPI_INT, a2a2, 4, MPI_INT, MPI_COMM_WORLD);
    int two[2] = {rank, rank}, *gathered = calloc((size_t)2 * n, sizeof(int));
    MPI_Gather(two, 2, MPI_INT, gathered, 2, MPI_INT, n - 1, MPI_COMM_WORLD);
    int isum = 0;
    MPI_Reduce(&one, &isum, 1, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD);

    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    if (hsize >= 2 && hrank == 0) MPI_Send(ibuf, 25, MPI_INT, 1, 4, half);
    if (hsize >= 2 && hrank == 1) MPI_Recv(ibuf2, 25, MPI_INT, 0, 4, half, &st);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);

    free(big);
    free(big2);
    free(a2a);
    free(a2a2);
    free(gathered);
    if (rank == 0) printf("pattern: done on %d ranks\n", n);
    MPI_Finalize();
    return 0;
}
