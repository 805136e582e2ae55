/* pingpong: round trip and throughput between rank 0 and --peer, by the NetPIPE method.
 *
 * Sizes follow powers of two from --min-size to --max-size, each also perturbed by
 * +-perturbation bytes (NetPIPE's default 3), which exposes effects tied to exact powers
 * of two. Each size runs two unmeasured round trips and a timed one; the repetitions are
 * then chosen so that the size runs for --seconds-per-size, and every round trip is
 * timed. Reported per size: minimum (NetPIPE's figure) and median round trip, and the
 * throughput of the minimum (size / (round trip / 2)) and of the median. */
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define MAX_REPS 100000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void round_trips(int rank, int peer, char *buf, long bytes, int n, double *times)
{
    for (int i = 0; i < n; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == peer) {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        if (times) times[i] = MPI_Wtime() - t0;
    }
}

static void measure(int rank, const struct bench_options *o, char *buf, double *times, long bytes)
{
    double first;
    round_trips(rank, o->peer, buf, bytes, 2, NULL);
    round_trips(rank, o->peer, buf, bytes, 1, &first);
    int reps = 0;
    if (rank == 0) {
        double want = o->seconds_per_size / (first > 1e-7 ? first : 1e-7);
        reps = want < 3 ? 3 : want > MAX_REPS ? MAX_REPS : (int)want;
        MPI_Send(&reps, 1, MPI_INT, o->peer, 2, MPI_COMM_WORLD);
    } else if (rank == o->peer) {
        MPI_Recv(&reps, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    round_trips(rank, o->peer, buf, bytes, reps, times);
    if (rank != 0) return;
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    double min = times[0], med = times[reps / 2];
    printf("{\"record\": \"pingpong\", \"bytes\": %ld, \"repetitions\": %d, \"rtt_min_us\": %.3f, "
           "\"rtt_median_us\": %.3f, \"throughput_min_mbit\": %.3f, \"throughput_median_mbit\": %.3f}\n",
           bytes, reps, min * 1e6, med * 1e6, (double)bytes * 8 / (min / 2) / 1e6,
           (double)bytes * 8 / (med / 2) / 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct bench_options o = {.min_size = 1, .max_size = 4L << 20, .seconds_per_size = 0.5,
                              .iterations = 1, .peer = 1, .perturbation = 3};
    bench_parse(argc, argv, "pingpong", &o);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    bench_header("pingpong", argc, argv, &o);
    char *buf = calloc((size_t)o.max_size + (size_t)o.perturbation + 1, 1);
    double *times = malloc(MAX_REPS * sizeof(double));
    long last = -1;
    for (long s = o.min_size ? o.min_size : 1; s > 0 && s <= o.max_size; s = bench_next_size(&o, s)) {
        long sizes[3] = {s - o.perturbation, s, s + o.perturbation};
        for (int k = 0; k < 3; k++) {
            long b = sizes[k];
            if (b <= last || b < 1 || (k != 1 && o.perturbation == 0)) continue;
            measure(rank, &o, buf, times, b);
            last = b;
        }
        bench_progress("pingpong", "%ld bytes", s);
    }
    free(buf);
    free(times);
    MPI_Finalize();
    return 0;
}
