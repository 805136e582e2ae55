/* Weak scaling of compute (the scale model's check, experiments/dilation/weak-scaling.toml):
 * every rank does the same fixed CPU work and no communication while it is timed.
 *
 *   compute_only [MEGA_ITERATIONS]     (default 200: about 0.2 s of one core)
 *
 * Between two barriers each rank runs a dependent chain of integer operations (no
 * memory traffic: a core's speed, not its caches' or the memory bus's), timed with
 * MPI_Wtime (virtual time under dilation) and with its own CPU-time clock. Rank 0 prints
 * one JSON object: the slowest rank's and the mean time, and the slowest CPU time. On
 * as many cores as ranks the slowest time equals the CPU time; with more ranks than cores
 * it grows, unless dilation gives each rank its core back in virtual time. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mega = argc > 1 ? atol(argv[1]) : 200;
    if (mega < 1) {
        if (!rank) fprintf(stderr, "compute_only: MEGA_ITERATIONS %s: expected a positive number\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), c0 = cpu_seconds();
    volatile uint64_t sink;
    uint64_t x = (uint64_t)rank + 1;
    for (long i = 0; i < mega * 1000000L; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
    (void)sink;
    double mine[2] = {MPI_Wtime() - t0, cpu_seconds() - c0}, most[2], sum;
    MPI_Reduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (!rank)
        printf("{\"ranks\": %d, \"mega_iterations\": %ld, \"seconds\": %.6f, \"mean_seconds\": %.6f, "
               "\"cpu_seconds\": %.6f}\n", size, mega, most[0], sum / size, most[1]);
    MPI_Finalize();
    return 0;
}
