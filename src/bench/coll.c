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
 * Sizes are per-rank blocks of MPI_BYTE; reductions use MPI_BOR. --entries mpi,native
 * times each call on MPI_COMM_WORLD and on a duplicate named "isthmus:native", which
 * libisthmus leaves to the MPI library, call by call in one run of windows (A B, B A, ...:
 * bench_window.h): under isthmus with WAN-aware collectives on, both algorithms are
 * measured in one run, through the same wrappers and waiting mode ("entry" in each
 * record), neither always first (timed one after the other, the first entry at a size
 * paid alone for TCP's state at that size: 1 MiB gathers 2x slower in every call). */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "bench_common.h"
#include "bench_window.h"

/* Every collective the layer wraps (src/model/coll_cost.h's order). The v-forms and
 * alltoallw move equal blocks (counts n, displacements i x n): the same traffic as their
 * regular forms, through their own entry points. */
enum coll { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER,
            ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK,
            SCAN, EXSCAN, NCOLL };
static const char *coll_name[NCOLL] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw", "reduce_scatter",
    "reduce_scatter_block", "scan", "exscan"};

/* Per-peer counts, displacements (in elements and, for alltoallw, in bytes) and types of
 * the v-forms: n each, block i at i x n. */
static int *counts, *displs, *byte_displs;
static MPI_Datatype *types;

static void set_blocks(int n, int size)
{
    for (int i = 0; i < size; i++) {
        counts[i] = n;
        displs[i] = byte_displs[i] = i * n;
        types[i] = MPI_BYTE;
    }
}

static void call(enum coll c, char *s, char *r, int n, MPI_Comm comm)
{
    int *k = counts, *d = displs;
    switch (c) {
    case BARRIER: MPI_Barrier(comm); break;
    case BCAST: MPI_Bcast(s, n, MPI_BYTE, 0, comm); break;
    case REDUCE: MPI_Reduce(s, r, n, MPI_BYTE, MPI_BOR, 0, comm); break;
    case ALLREDUCE: MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, comm); break;
    case GATHER: MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, comm); break;
    case GATHERV: MPI_Gatherv(s, n, MPI_BYTE, r, k, d, MPI_BYTE, 0, comm); break;
    case SCATTER: MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, comm); break;
    case SCATTERV: MPI_Scatterv(s, k, d, MPI_BYTE, r, n, MPI_BYTE, 0, comm); break;
    case ALLGATHER: MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, comm); break;
    case ALLGATHERV: MPI_Allgatherv(s, n, MPI_BYTE, r, k, d, MPI_BYTE, comm); break;
    case ALLTOALL: MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, comm); break;
    case ALLTOALLV: MPI_Alltoallv(s, k, d, MPI_BYTE, r, k, d, MPI_BYTE, comm); break;
    case ALLTOALLW:
        MPI_Alltoallw(s, k, byte_displs, types, r, k, byte_displs, types, comm);
        break;
    case REDUCE_SCATTER: MPI_Reduce_scatter(s, r, k, MPI_BYTE, MPI_BOR, comm); break;
    case REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(s, r, n, MPI_BYTE, MPI_BOR, comm); break;
    case SCAN: MPI_Scan(s, r, n, MPI_BYTE, MPI_BOR, comm); break;
    case EXSCAN: MPI_Exscan(s, r, n, MPI_BYTE, MPI_BOR, comm); break;
    default: break;
    }
}

struct coll_call {
    enum coll c;
    char *s, *r;
    int n;
    MPI_Comm comm;
};

static void op(void *ctx)
{
    struct coll_call *cc = ctx;
    call(cc->c, cc->s, cc->r, cc->n, cc->comm);
}

/* wanted[c] = whether --collectives names collective c exactly ("gather" is not in
 * "allgatherv"; "all": every one). An item that names none: rank 0 says which (exit 2). */
static void parse_list(const char *list, int rank, int wanted[NCOLL])
{
    int all = strcmp(list, "all") == 0;
    for (int c = 0; c < NCOLL; c++) wanted[c] = all;
    for (const char *p = list; !all; p++) { /* p: the start of an item */
        size_t item = strcspn(p, ",");
        int known = 0;
        for (int c = 0; c < NCOLL; c++)
            if (strlen(coll_name[c]) == item && strncmp(p, coll_name[c], item) == 0) known = wanted[c] = 1;
        if (!known) {
            if (rank == 0)
                fprintf(stderr, "coll: --collectives: unknown collective '%.*s'; expected all or "
                        "items of barrier, bcast, reduce, allreduce, gather, gatherv, scatter, "
                        "scatterv, allgather, allgatherv, alltoall, alltoallv, alltoallw, "
                        "reduce_scatter, reduce_scatter_block, scan, exscan\n", (int)item, p);
            MPI_Finalize();
            exit(2);
        }
        p += item;
        if (!*p) return;
    }
}

/* The "native" entry's communicator: libisthmus leaves its collectives to the MPI library
 * (src/coll/hier.h: IST_NATIVE_COMM_NAME), with the same waiting mode as the others. */
static MPI_Comm native_comm;

/* Time collective c at `bytes` on each entry asked for (0: MPI_COMM_WORLD, "mpi"; 1: the
 * native duplicate), both in one run of windows when both are asked (bench_window.h). */
static void measure(enum coll c, long bytes, const struct bench_options *o, int rank,
                    const int *entries, int nentries, char *s, char *r)
{
    struct coll_call cc[2];
    struct window_op ops[2];
    struct window_result w[2];
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    set_blocks((int)bytes, size);
    for (int k = 0; k < nentries; k++) {
        cc[k] = (struct coll_call){c, s, r, (int)bytes, entries[k] ? native_comm : MPI_COMM_WORLD};
        ops[k] = (struct window_op){op, &cc[k]};
    }
    bench_window_time_n(ops, nentries, o->iterations, o->warmup, w);
    for (int k = 0; k < nentries && rank == 0; k++)
        printf("{\"record\": \"coll\", \"collective\": \"%s\", \"entry\": \"%s\", \"bytes\": %ld, \"iterations\": %d, "
               "\"counted\": %d, \"window_us\": %.1f, \"latency_min_us\": %.3f, \"latency_median_us\": %.3f, "
               "\"latency_max_us\": %.3f, \"rank_mean_of_medians_us\": %.3f}\n",
               coll_name[c], entries[k] ? "native" : "mpi", bytes, w[k].iterations, w[k].counted,
               w[k].window * 1e6, w[k].counted ? w[k].min * 1e6 : -1, w[k].counted ? w[k].median * 1e6 : -1,
               w[k].counted ? w[k].max * 1e6 : -1, w[k].mean_of_medians * 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct bench_options o = {.min_size = 1, .max_size = 1L << 20, .seconds_per_size = 1,
                              .iterations = 50, .warmup = 2, .peer = 1, .collectives = "all",
                              .entries = "mpi"};
    bench_parse(argc, argv, "coll", &o);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int wanted[NCOLL];
    parse_list(o.collectives, rank, wanted);
    bench_header("coll", argc, argv, &o);
    prctl(PR_SET_TIMERSLACK, 1000UL); /* sleeps end within 1 us of the time asked */
    bench_sync_clocks();
    MPI_Comm_dup(MPI_COMM_WORLD, &native_comm);
    MPI_Comm_set_name(native_comm, "isthmus:native");
    size_t span = (size_t)o.max_size * (size_t)size;
    char *s = calloc(span, 1), *r = calloc(span, 1);
    counts = calloc((size_t)size, sizeof *counts);
    displs = calloc((size_t)size, sizeof *displs);
    byte_displs = calloc((size_t)size, sizeof *byte_displs);
    types = calloc((size_t)size, sizeof *types);
    int entries[2], nentries = 0;
    if (strcmp(o.entries, "native") != 0) entries[nentries++] = 0;
    if (strstr(o.entries, "native") != NULL) entries[nentries++] = 1;
    for (int c = 0; c < NCOLL; c++) {
        if (!wanted[c]) continue;
        for (long b = c == BARRIER ? 0 : o.min_size ? o.min_size : 1; b >= 0 && b <= o.max_size;
             b = c == BARRIER ? -1 : bench_next_size(&o, b))
            measure((enum coll)c, b, &o, rank, entries, nentries, s, r);
        bench_progress("coll", "%s", coll_name[c]);
    }
    free(s);
    free(r);
    free(counts);
    free(displs);
    free(byte_displs);
    free(types);
    MPI_Comm_free(&native_comm);
    MPI_Finalize();
    return 0;
}
