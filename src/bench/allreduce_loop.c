/* allreduce_loop: time per 8-byte MPI_Allreduce over all ranks (after 10 warm-up calls),
 * for comparing waiting modes when ranks outnumber cores.
 *   allreduce_loop [ITERATIONS]          prints {"ranks": N, "us_per_allreduce": T} */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 200;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = 1, y = 0;
    for (int i = 0; i < 10; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    if (rank == 0) printf("{\"ranks\": %d, \"us_per_allreduce\": %.3f}\n", size, t / iters * 1e6);
    MPI_Finalize();
    return 0;
}
