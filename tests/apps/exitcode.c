/* Rank argv[1] exits with status argv[2] before MPI_Finalize (or, for a negative status,
 * kills itself with that signal); the others finalize. */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int who = argc > 1 ? atoi(argv[1]) : 0, code = argc > 2 ? atoi(argv[2]) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == who && code < 0) raise(-code);
    if (rank == who && code != 0) exit(code);
    MPI_Finalize();
    return 0;
}
