/* bw and bibw: streaming bandwidth between rank 0 and --peer, by the OSU method.
 *
 * bw: rank 0 posts a window of 64 nonblocking sends of one size, the peer 64 receives;
 * when all complete the peer answers with a 4-byte acknowledgement; repeated --iterations
 * times after --warmup. Bandwidth = 64 x iterations x size / time at rank 0.
 * bibw (the same program started as bibw, or with BIBW set): both sides send and receive
 * a window at once; the bandwidth counts both directions.
 * The sends of a window share one buffer (allowed since MPI-3); the receives get their own
 * slots up to 64 MiB in all, beyond which slots are reused, as OSU's benchmarks do.
 * --pairs N runs N pairs at once, rank i with rank i + size/2, as OSU's osu_mbw_mr does:
 * the bandwidth is the bytes of every pair over the slowest pair's time, what the
 * network, and on an emulated one the machine, carries in all. */
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define WINDOW 64
#define RECV_SPAN (64L << 20)

static size_t slot(long bytes, int w)
{
    long slots = RECV_SPAN / (bytes > 0 ? bytes : 1);
    return (size_t)(w % (slots > 0 ? slots : 1)) * (size_t)bytes;
}

/* One pair's windows: sender (the first of the pair) to other, or both ways (bidir). */
static double run(int sender, int other, char *sbuf, char *rbuf, long bytes, int iters, int bidir)
{
    MPI_Request req[2 * WINDOW];
    static MPI_Status statuses[2 * WINDOW];
    int ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        int n = 0;
        if (sender || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, other, 10, MPI_COMM_WORLD,
                          &req[n++]);
        if (!sender || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf + slot(bytes, w), (int)bytes, MPI_BYTE, other, 10, MPI_COMM_WORLD,
                          &req[n++]);
        MPI_Waitall(n, req, statuses); /* a real array: gcc misreads MPICH's STATUSES_IGNORE */
        if (!bidir) {
            if (sender) MPI_Recv(&ack, 1, MPI_INT, other, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(&ack, 1, MPI_INT, other, 11, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    int bidir = strcmp(base, "bibw") == 0 || getenv("BIBW") != NULL;
    const char *name = bidir ? "bibw" : "bw";
    struct bench_options o = {.min_size = 1, .max_size = 4L << 20, .seconds_per_size = 1,
                              .iterations = 20, .warmup = 2, .peer = 1};
    bench_parse(argc, argv, name, &o);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* this rank's pair: (0, peer), or (i, i + size/2) for i < pairs */
    const int pairs = o.pairs > 1 ? o.pairs : 1, half = size / 2;
    int sender = rank == 0, other = rank == 0 ? o.peer : rank == o.peer ? 0 : -1;
    if (o.pairs > 1) {
        sender = rank < pairs;
        other = rank < pairs ? rank + half : rank >= half && rank - half < pairs ? rank - half : -1;
    }
    bench_header(name, argc, argv, &o);
    size_t span = (size_t)WINDOW * (size_t)o.max_size;
    if (span < (size_t)o.max_size || span > (size_t)RECV_SPAN) span = (size_t)RECV_SPAN;
    if (span < (size_t)o.max_size) span = (size_t)o.max_size;
    char *sbuf = calloc((size_t)o.max_size, 1), *rbuf = calloc(span, 1);
    for (long s = o.min_size ? o.min_size : 1; s > 0 && s <= o.max_size; s = bench_next_size(&o, s)) {
        double t = 0;
        if (other >= 0) {
            run(sender, other, sbuf, rbuf, s, o.warmup, bidir);
            t = run(sender, other, sbuf, rbuf, s, o.iterations, bidir);
        } else {
            MPI_Barrier(MPI_COMM_WORLD); /* the two runs' barriers */
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double slowest = 0;
        MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double total = (double)WINDOW * o.iterations * (double)s * (bidir ? 2 : 1) * pairs;
        if (rank == 0) {
            printf("{\"record\": \"%s\", \"bytes\": %ld, \"window\": %d, \"iterations\": %d, "
                   "\"pairs\": %d, \"seconds\": %.6f, \"bandwidth_mbit\": %.3f}\n",
                   name, s, WINDOW, o.iterations, pairs, slowest, total * 8 / slowest / 1e6);
            fflush(stdout);
        }
        bench_progress(name, "%ld bytes", s);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
