/* bw and bibw: streaming bandwidth between rank 0 and --peer, by the OSU method.
 *
 * bw: rank 0 posts a window of 64 nonblocking sends of one size, the peer 64 receives;
 * when all complete the peer answers with a 4-byte acknowledgement; repeated --iterations
 * times after --warmup. Bandwidth = 64 x iterations x size / time at rank 0.
 * bibw (the same program started as bibw, or with BIBW set): both sides send and receive
 * a window at once; the bandwidth counts both directions.
 * The sends of a window share one buffer (allowed since MPI-3); the receives get their own
 * slots up to 64 MiB in all, beyond which slots are reused, as OSU's benchmarks do. */
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

static double run(int rank, int peer, char *sbuf, char *rbuf, long bytes, int iters, int bidir)
{
    MPI_Request req[2 * WINDOW];
    static MPI_Status statuses[2 * WINDOW];
    int other = rank == 0 ? peer : 0, ack = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        int n = 0;
        if (rank == 0 || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, other, 10, MPI_COMM_WORLD,
                          &req[n++]);
        if (rank != 0 || bidir)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf + slot(bytes, w), (int)bytes, MPI_BYTE, other, 10, MPI_COMM_WORLD,
                          &req[n++]);
        MPI_Waitall(n, req, statuses); /* a real array: gcc misreads MPICH's STATUSES_IGNORE */
        if (!bidir) {
            if (rank == 0) MPI_Recv(&ack, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(&ack, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
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
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    bench_header(name, argc, argv, &o);
    size_t span = (size_t)WINDOW * (size_t)o.max_size;
    if (span < (size_t)o.max_size || span > (size_t)RECV_SPAN) span = (size_t)RECV_SPAN;
    if (span < (size_t)o.max_size) span = (size_t)o.max_size;
    char *sbuf = calloc((size_t)o.max_size, 1), *rbuf = calloc(span, 1);
    for (long s = o.min_size ? o.min_size : 1; s > 0 && s <= o.max_size; s = bench_next_size(&o, s)) {
        if (rank == 0 || rank == o.peer) {
            run(rank, o.peer, sbuf, rbuf, s, o.warmup, bidir);
            double t = run(rank, o.peer, sbuf, rbuf, s, o.iterations, bidir);
            double total = (double)WINDOW * o.iterations * (double)s * (bidir ? 2 : 1);
            if (rank == 0) {
                printf("{\"record\": \"%s\", \"bytes\": %ld, \"window\": %d, \"iterations\": %d, "
                       "\"seconds\": %.6f, \"bandwidth_mbit\": %.3f}\n",
                       name, s, WINDOW, o.iterations, t, total * 8 / t / 1e6);
                fflush(stdout);
            }
        } else {
            MPI_Barrier(MPI_COMM_WORLD); /* the two runs' barriers */
            MPI_Barrier(MPI_COMM_WORLD);
        }
        bench_progress(name, "%ld bytes", s);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
