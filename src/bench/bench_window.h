/* Window-based timing of a collective operation, shared by coll and bcast (the method is
 * described in coll.c and docs/bench.md). */
#ifndef ISTHMUS_BENCH_WINDOW_H
#define ISTHMUS_BENCH_WINDOW_H

/* What rank 0 learns from timing one operation (seconds). */
struct window_result {
    int iterations, counted;
    double window, min, median, max, mean_of_medians;
};

/* Estimate every rank's clock offset from rank 0 (collective over MPI_COMM_WORLD). */
void bench_sync_clocks(void);

/* Time op(ctx) `iterations` times after `warmup` untimed calls, each started at the same
 * global time on every rank; collective; the result is meaningful on rank 0. */
struct window_result bench_window_time(void (*op)(void *), void *ctx, int iterations, int warmup);

/* The same for several operations in one run of windows: every round calls each once, in
 * ABBA order (A B, then B A, ...), so that each sees the machine and the network in the
 * same state as the others (TCP's window, a busy core) and none is always first; one
 * window, set by the slowest. out[k] is ops[k]'s result. */
struct window_op {
    void (*op)(void *);
    void *ctx;
};
void bench_window_time_n(const struct window_op *ops, int nops, int iterations, int warmup,
                         struct window_result *out);

#endif
