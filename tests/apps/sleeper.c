/* Every rank prints "ready" (rank 0) and sleeps argv[1] seconds inside MPI: for signal
 * and timeout tests. Ranks sleep in short steps so that a signal ends them promptly.
 * With "hang" as argv[2] they block in MPI instead, for ever: rank 0 in a receive nobody
 * matches, the others in a barrier rank 0 never joins. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 60;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    if (argc > 2 && strcmp(argv[2], "hang") == 0) {
        if (rank == 0) MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Barrier(MPI_COMM_WORLD);
    }
    struct timespec step = {0, 50 * 1000 * 1000};
    for (double t = 0; t < seconds; t += 0.05) nanosleep(&step, NULL);
    MPI_Finalize();
    return 0;
}
