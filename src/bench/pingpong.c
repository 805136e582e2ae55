/* pingpong: MPI round-trip time and bandwidth between ranks 0 and 1 against message size.
 *
 *   pingpong [--max-size BYTES] [--seconds-per-size S]
 *
 * Sizes are powers of two from 1 byte to --max-size (default 4 MiB). Each size runs two
 * unmeasured round trips and a timed one, then as many as fit in S seconds (default 0.2)
 * at that pace, at least 3 and at most 100000. Reported per size: the minimum and median round trip and
 * the bandwidth 2 x size / median. Output: JSON lines from rank 0, one header record
 * ({"record": "header", ...}) and one record per size. This is the part of the NetPIPE
 * method the network measurements need; the benchmark suite extends it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long max_size = 4L << 20;
    double seconds = 0.2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--max-size") == 0) max_size = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds-per-size") == 0) seconds = atof(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || max_size < 1 || seconds <= 0) {
        if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks, --max-size >= 1, --seconds-per-size > 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc((size_t)max_size, 1);
    double *samples = malloc(100000 * sizeof(double));
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = '\0';
        for (char *c = lib; *c; c++)
            if (*c < 0x20 || *c == '"' || *c == '\\') *c = ' ';
        printf("{\"record\": \"header\", \"benchmark\": \"pingpong\", \"mpi_library\": \"%s\", "
               "\"ranks\": %d, \"seconds_per_size\": %g}\n", lib, size, seconds);
    }
    for (long bytes = 1; bytes <= max_size; bytes *= 2) {
        /* Two unmeasured round trips and one timed one; rank 0 derives the repetitions from
         * it and tells rank 1, then both run them. */
        int reps = 0;
        double first = 0;
        for (int i = 0; i < 3; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            first = MPI_Wtime() - t0;
        }
        if (rank == 0) {
            double want = seconds / (first > 1e-7 ? first : 1e-7);
            reps = want < 3 ? 3 : want > 100000 ? 100000 : (int)want;
            MPI_Send(&reps, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(&reps, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (int i = 0; i < reps; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                samples[i] = MPI_Wtime() - t0;
            } else if (rank == 1) {
                MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            qsort(samples, (size_t)reps, sizeof *samples, cmp_double);
            double med = samples[reps / 2];
            printf("{\"record\": \"size\", \"bytes\": %ld, \"repetitions\": %d, \"rtt_min_us\": %.3f, "
                   "\"rtt_median_us\": %.3f, \"bandwidth_mbit\": %.3f}\n",
                   bytes, reps, samples[0] * 1e6, med * 1e6, 2.0 * (double)bytes * 8 / med / 1e6);
            fflush(stdout);
        }
    }
    free(buf);
    free(samples);
    MPI_Finalize();
    return 0;
}
