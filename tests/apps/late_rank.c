/* Ranks waiting for a late rank in a communicator constructor (issue 43's stall):
 *
 *   late_rank [SECONDS [split_type|create_group]]     (default 2 s, split_type)
 *
 * Rank 0 sleeps SECONDS outside MPI, then every rank calls MPI_Comm_split_type (which the
 * layer's sleep mode precedes with a sleeping barrier) or MPI_Comm_create_group of the
 * whole world (which it does not: Open MPI's ranks wait in its context-id agreement,
 * polling with sched_yield between polls, which the layer makes a short sleep). Each
 * other rank prints the CPU time it used in the call as a share of its wall time there:
 *
 *   late_rank rank R: waited W s, cpu C s, share S
 *
 * Spinning ranks share the cores (7 ranks on 2 cores: about 0.28 each); ranks that sleep
 * between polls use a few percent. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 2;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        struct timespec late = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&late, NULL);
    }
    double w0 = wall(), c0 = cpu();
    MPI_Comm made;
    if (argc > 2 && strcmp(argv[2], "create_group") == 0) {
        MPI_Group world;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Comm_create_group(MPI_COMM_WORLD, world, 7, &made);
        MPI_Group_free(&world);
    } else {
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &made);
    }
    double w = wall() - w0, c = cpu() - c0;
    MPI_Comm_free(&made);
    if (rank != 0) printf("late_rank rank %d: waited %.2f s, cpu %.3f s, share %.3f\n", rank, w, c, c / w);
    MPI_Finalize();
    return 0;
}
