/* Measures the round trip between rank 0 and the last rank (20 zero-byte ping-pongs, the
 * smallest), prints "rtt_us = X" and exits 1 when it exceeds argv[1] microseconds: an
 * application whose success depends on the emulated WAN, for the sweep tests. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double limit_us = argc > 1 ? atof(argv[1]) : 1e9, best = 1e9;
    int peer = size - 1;
    for (int i = 0; i < 20 && peer > 0; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == peer) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("rtt_us = %.1f\n", best * 1e6);
    int failed = best * 1e6 > limit_us;
    MPI_Finalize();
    return failed;
}
