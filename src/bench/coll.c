/* coll: latency of the blocking collectives over a size range, every rank taking part.
 *
 * Timing method (window-based, as SKaMPI and Netgauge): a barrier before a timed call
 * lets ranks leave it up to one latency apart, and that skew would be charged to (or hide
 * inside) the collective. Instead, rank 0 first estimates every rank's clock offset from
 * ping-pongs (the sample with the shortest round trip); each timed call then starts at the
 * same global time on every rank (rank 0 fixes the start of iteration i as T0 + i x W, the
 * window W being twice the slowest call seen in a trial plus a margin), each rank records
 * when it finished, and the call's latency is the last finish minus the start. A rank that
 * reaches a start late marks the iteration, which is not counted; too many late starts
 * double W and repeat. Ranks sleep until 50 us before a start and poll from there (a
 * short poll: with more ranks than cores, polling ranks would delay the others).
 * Reported per collective and size: minimum, median and maximum over iterations of that
 * latency, the mean over ranks of each rank's median finish, and the late iterations.
 * Sizes are per-rank blocks of MPI_BYTE; reductions use MPI_BOR. */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "bench_common.h"

enum coll { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL,
            REDUCE_SCATTER_BLOCK, SCAN, NCOLL };
static const char *coll_name[NCOLL] = {"barrier", "bcast", "reduce", "allreduce", "gather",
                                       "scatter", "allgather", "alltoall", "reduce_scatter_block", "scan"};

static double offset; /* this rank's clock minus rank 0's */

static double global_now(void) { return MPI_Wtime() - offset; }

static void estimate_offsets(int rank, int size)
{
    for (int r = 1; r < size; r++) {
        double best_rtt = 1e9, best_off = 0;
        for (int i = 0; i < 20; i++) {
            if (rank == 0) {
                double t0 = MPI_Wtime(), tr;
                MPI_Send(&t0, 1, MPI_DOUBLE, r, 20, MPI_COMM_WORLD);
                MPI_Recv(&tr, 1, MPI_DOUBLE, r, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    best_off = tr - (t0 + t1) / 2;
                }
            } else if (rank == r) {
                double t0, tr;
                MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                tr = MPI_Wtime();
                MPI_Send(&tr, 1, MPI_DOUBLE, 0, 20, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) MPI_Send(&best_off, 1, MPI_DOUBLE, r, 21, MPI_COMM_WORLD);
        else if (rank == r) MPI_Recv(&offset, 1, MPI_DOUBLE, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void call(enum coll c, char *s, char *r, int n, int size)
{
    switch (c) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(s, r, n, MPI_BYTE, MPI_BOR, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); break;
    case GATHER: MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case SCATTER: MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); break;
    case SCAN: MPI_Scan(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); break;
    default: break;
    }
    (void)size;
}

static void wait_until(double t)
{
    double left = t - global_now();
    if (left > 100e-6) {
        struct timespec ts = {0, (long)((left - 50e-6) * 1e9)};
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec = ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
        }
        nanosleep(&ts, NULL);
    }
    while (global_now() < t) {
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(enum coll c, long bytes, const struct bench_options *o, int rank, int size,
                    char *s, char *r)
{
    int n = (int)bytes, iters = o->iterations;
    /* trial: the slowest of a few calls sets the window */
    double trial = 0;
    for (int i = 0; i < o->warmup + 2; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        call(c, s, r, n, size);
        double d = MPI_Wtime() - t0;
        if (d > trial) trial = d;
    }
    MPI_Allreduce(MPI_IN_PLACE, &trial, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double window = 2 * trial + 1e-3;
    double *finish = malloc((size_t)iters * sizeof(double));
    double *all = rank == 0 ? malloc((size_t)iters * (size_t)size * sizeof(double)) : NULL;
    int late = 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        double t0 = global_now() + 0.01;
        MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (int i = 0; i < iters; i++) {
            double start = t0 + i * window;
            int late_start = global_now() > start; /* this iteration will not count */
            wait_until(start);
            call(c, s, r, n, size);
            finish[i] = late_start ? -1 : global_now() - start;
        }
        MPI_Gather(finish, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            late = 0;
            for (int i = 0; i < iters; i++)
                for (int q = 0; q < size; q++)
                    if (all[(size_t)q * (size_t)iters + (size_t)i] < 0) {
                        late++;
                        break;
                    }
        }
        MPI_Bcast(&late, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (late * 5 <= iters) break;
        window *= 2;
    }
    if (rank == 0) {
        double *lat = malloc((size_t)iters * sizeof(double)), *per = malloc((size_t)iters * sizeof(double));
        int m = 0;
        double mean_of_medians = 0;
        for (int i = 0; i < iters; i++) {
            double worst = 0;
            int ok = 1;
            for (int q = 0; q < size; q++) {
                double f = all[(size_t)q * (size_t)iters + (size_t)i];
                if (f < 0) ok = 0;
                if (f > worst) worst = f;
            }
            if (ok) lat[m++] = worst;
        }
        for (int q = 0; q < size; q++) {
            int k = 0;
            for (int i = 0; i < iters; i++)
                if (all[(size_t)q * (size_t)iters + (size_t)i] >= 0) per[k++] = all[(size_t)q * (size_t)iters + (size_t)i];
            qsort(per, (size_t)k, sizeof *per, cmp_double);
            mean_of_medians += k ? per[k / 2] / size : 0;
        }
        qsort(lat, (size_t)m, sizeof *lat, cmp_double);
        printf("{\"record\": \"coll\", \"collective\": \"%s\", \"bytes\": %ld, \"iterations\": %d, "
               "\"counted\": %d, \"window_us\": %.1f, \"latency_min_us\": %.3f, \"latency_median_us\": %.3f, "
               "\"latency_max_us\": %.3f, \"rank_mean_of_medians_us\": %.3f}\n",
               coll_name[c], bytes, iters, m, window * 1e6, m ? lat[0] * 1e6 : -1,
               m ? lat[m / 2] * 1e6 : -1, m ? lat[m - 1] * 1e6 : -1, mean_of_medians * 1e6);
        fflush(stdout);
        free(lat);
        free(per);
    }
    free(finish);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct bench_options o = {.min_size = 1, .max_size = 1L << 20, .seconds_per_size = 1,
                              .iterations = 50, .warmup = 2, .peer = 1, .collectives = "all"};
    bench_parse(argc, argv, "coll", &o);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bench_header("coll", argc, argv, &o);
    prctl(PR_SET_TIMERSLACK, 1000UL); /* sleeps end within 1 us of the time asked */
    estimate_offsets(rank, size);
    size_t span = (size_t)o.max_size * (size_t)size;
    char *s = calloc(span, 1), *r = calloc(span, 1);
    for (int c = 0; c < NCOLL; c++) {
        if (strcmp(o.collectives, "all") != 0) {
            const char *p = strstr(o.collectives, coll_name[c]);
            size_t len = strlen(coll_name[c]);
            if (!p || (p[len] != '\0' && p[len] != ',') || (p != o.collectives && p[-1] != ',')) continue;
        }
        if (c == BARRIER) {
            measure(BARRIER, 0, &o, rank, size, s, r);
            bench_progress("coll", "barrier");
            continue;
        }
        for (long b = o.min_size ? o.min_size : 1; b > 0 && b <= o.max_size; b = bench_next_size(&o, b))
            measure((enum coll)c, b, &o, rank, size, s, r);
        bench_progress("coll", "%s", coll_name[c]);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
