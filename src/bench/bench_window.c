/* Window-based timing: see coll.c's comment and docs/bench.md. */
#include "bench_window.h"

#include <mpi.h>
#include <stdlib.h>
#include <time.h>

static double offset; /* this rank's clock minus rank 0's */

static double global_now(void) { return MPI_Wtime() - offset; }

void bench_sync_clocks(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
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

/* Sleep until 50 us before global time t, then poll. Under SimGrid SMPI (smpicc defines
 * SMPI_HELPERS_H) sleeps are simulated and exact, and polling would never see the
 * simulated clock move: sleep the whole way. */
#ifdef SMPI_HELPERS_H
#define POLL_SECONDS 0.0
#else
#define POLL_SECONDS 50e-6
#endif

static void wait_until(double t)
{
    double left = t - global_now();
    if (left > 2 * POLL_SECONDS && left > 0) {
        struct timespec ts = {0, (long)((left - POLL_SECONDS) * 1e9)};
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

/* How far ahead of now a start time must lie to reach every rank before it: 10 ms plus
 * twice the slowest delivery of a broadcast from rank 0 measured here (across a wide-area
 * link it takes one or two latencies; a fixed lead shorter than that made every attempt's
 * first call late, and with few iterations doubled the window four times). */
static double start_lead(void)
{
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        double sent = global_now();
        MPI_Bcast(&sent, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        double d = global_now() - sent;
        if (d > worst) worst = d;
    }
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return 0.01 + 2 * worst;
}

/* Rank 0: one operation's statistics from every rank's finish times (all[q][i], -1 for a
 * late start) of its iterations. */
static void summarize(const double *all, int iters, int size, struct window_result *res)
{
    double *lat = malloc((size_t)iters * sizeof(double)), *per = malloc((size_t)iters * sizeof(double));
    int m = 0;
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
        res->mean_of_medians += k ? per[k / 2] / size : 0;
    }
    qsort(lat, (size_t)m, sizeof *lat, cmp_double);
    res->counted = m;
    res->min = m ? lat[0] : -1;
    res->median = m ? lat[m / 2] : -1;
    res->max = m ? lat[m - 1] : -1;
    free(lat);
    free(per);
}

/* Rank 0: the iterations whose start some rank missed. */
static int count_late(const double *all, int iters, int size)
{
    int late = 0;
    for (int i = 0; i < iters; i++)
        for (int q = 0; q < size; q++)
            if (all[(size_t)q * (size_t)iters + (size_t)i] < 0) {
                late++;
                break;
            }
    return late;
}

void bench_window_time_n(const struct window_op *ops, int nops, int iters, int warmup,
                         struct window_result *out)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* trial: the slowest of a few calls of every operation sets the one window */
    double trial = 0;
    for (int i = 0; i < warmup + 2; i++)
        for (int k = 0; k < nops; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            ops[k].op(ops[k].ctx);
            double d = MPI_Wtime() - t0;
            if (d > trial) trial = d;
        }
    MPI_Allreduce(MPI_IN_PLACE, &trial, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double window = 2 * trial + 1e-3, lead = start_lead();
    /* finish[k][i]: operation k's iteration i; all[k]: every rank's, at rank 0 */
    double *finish = malloc((size_t)nops * (size_t)iters * sizeof(double));
    double *all = rank == 0 ? malloc((size_t)nops * (size_t)iters * (size_t)size * sizeof(double)) : NULL;
    for (int attempt = 0; attempt < 4; attempt++) {
        double t0 = global_now() + lead;
        MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (int j = 0; j < nops * iters; j++) {
            /* round i runs every operation once, in ABBA order: neither always goes first */
            int i = j / nops, pos = j % nops, k = i % 2 == 0 ? pos : nops - 1 - pos;
            double start = t0 + j * window;
            int late_start = global_now() > start; /* this iteration will not count */
            wait_until(start);
            ops[k].op(ops[k].ctx);
            finish[(size_t)k * (size_t)iters + (size_t)i] = late_start ? -1 : global_now() - start;
        }
        int worst = 0; /* the most late iterations of any operation: rank 0 counts */
        for (int k = 0; k < nops; k++) {
            double *mine = all ? all + (size_t)k * (size_t)iters * (size_t)size : NULL;
            MPI_Gather(finish + (size_t)k * (size_t)iters, iters, MPI_DOUBLE, mine, iters, MPI_DOUBLE, 0,
                       MPI_COMM_WORLD);
            int late = rank == 0 ? count_late(mine, iters, size) : 0;
            if (late > worst) worst = late;
        }
        MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (worst * 5 <= iters) break;
        window *= 2;
    }
    for (int k = 0; k < nops; k++) {
        out[k] = (struct window_result){.iterations = iters, .window = window};
        if (rank == 0) summarize(all + (size_t)k * (size_t)iters * (size_t)size, iters, size, &out[k]);
    }
    free(finish);
    free(all);
}

struct window_result bench_window_time(void (*op)(void *), void *ctx, int iters, int warmup)
{
    struct window_op one = {op, ctx};
    struct window_result res;
    bench_window_time_n(&one, 1, iters, warmup, &res);
    return res;
}
