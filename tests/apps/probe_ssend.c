/* The pattern of issue 43's hang: rank 0 takes one message from every other rank with
 * MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG) and then MPI_Recv from the probed source and tag,
 * while every other rank sends it with MPI_Ssend; then everyone goes straight on.
 *
 *   probe_ssend [ROUNDS [INTS]]     (default 1 round of 1 int)
 *
 * Each rank prints "probe_ssend rank R: ok"; a wrong message exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    int n = argc > 2 ? atoi(argv[2]) : 1;
    int *buf = calloc((size_t)(n > 1 ? n : 1), sizeof *buf);
    for (int round = 0; round < rounds; round++) {
        if (rank == 0) {
            for (int i = 1; i < size; i++) {
                MPI_Status st;
                MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                MPI_Recv(buf, n, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
                if (n > 0 && (buf[0] != st.MPI_SOURCE || st.MPI_TAG != st.MPI_SOURCE)) {
                    fprintf(stderr, "probe_ssend: from %d (tag %d) came %d\n", st.MPI_SOURCE,
                            st.MPI_TAG, buf[0]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
        } else {
            if (n > 0) buf[0] = rank;
            MPI_Ssend(buf, n, MPI_INT, 0, rank, MPI_COMM_WORLD);
        }
    }
    printf("probe_ssend rank %d: ok\n", rank);
    free(buf);
    MPI_Finalize();
    return 0;
}
