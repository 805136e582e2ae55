/* Which algorithm the MPI's own collective runs at a size: the libraries' documented
 * default selection, as schedules (sched_algorithms.c).
 *
 * MPICH 4.0 (Debian 12): its intra-communicator "auto" selection with the default CVARs
 * (MPIR_CVAR_BCAST_SHORT_MSG_SIZE 12288, _LONG_MSG_SIZE 524288, _MIN_PROCS 8;
 * ALLREDUCE_SHORT_MSG_SIZE 2048; REDUCE_SHORT_MSG_SIZE 2048; ALLGATHER_SHORT_MSG_SIZE
 * 81920, _LONG_MSG_SIZE 524288; ALLTOALL_SHORT_MSG_SIZE 256, _MEDIUM_MSG_SIZE 32768,
 * _MIN_PROCS 8; REDSCAT_COMMUTATIVE_LONG_MSG_SIZE 524288).
 *
 * Open MPI 4.1 (Debian 12): coll/tuned's fixed decisions of 4.1 for blocking calls,
 * coll/libnbc's for the nonblocking forms that run under the layer's sleeping waits
 * (below). Where a rule is approximated the prediction is off; a tuning file (isthmus coll
 * tune) measured on the platform wins over the model. */
#include "coll_cost.h"

static int is_pof2(int n) { return n > 0 && (n & (n - 1)) == 0; }

#define USE(name, call)                                                                            \
    do {                                                                                           \
        *rounds = (call);                                                                          \
        return name;                                                                               \
    } while (0)

static const char *mpich(struct ist_mpi f, enum ist_coll_id id, struct ist_sched *s, int at,
                         struct ist_group g, long bytes, int *rounds)
{
    int n = g.n;
    switch (id) {
    case IST_COLL_BARRIER: USE("dissemination", ist_s_barrier_dissemination(s, at, g));
    case IST_COLL_BCAST:
        if (bytes < 12288 || n < 8) USE("binomial", ist_s_bcast_binomial(s, at, g, 0, bytes));
        if (bytes < 524288 && is_pof2(n))
            USE("scatter + recursive doubling",
                ist_s_bcast_scatter_allgather(s, at, g, 0, bytes, 0));
        USE("scatter + ring", ist_s_bcast_scatter_allgather(s, at, g, 0, bytes, 1));
    case IST_COLL_REDUCE:
        if (bytes <= 2048) USE("binomial", ist_s_reduce_binomial(s, at, g, 0, bytes));
        USE("reduce-scatter + gather", ist_s_rabenseifner(s, at, g, 0, bytes, 0));
    case IST_COLL_ALLREDUCE:
        if (bytes <= 2048)
            USE("recursive doubling", ist_s_allreduce_recursive_doubling(s, at, g, bytes));
        USE("reduce-scatter + allgather", ist_s_rabenseifner(s, at, g, 0, bytes, 1));
    case IST_COLL_GATHER: USE("binomial", ist_s_gather_binomial(s, at, g, 0, bytes));
    case IST_COLL_SCATTER: USE("binomial", ist_s_scatter_binomial(s, at, g, 0, bytes));
    /* the v-forms have no tree: only the root knows every count (gatherv_allcomm_linear) */
    case IST_COLL_GATHERV: USE("linear", ist_s_gather_linear(s, at, g, 0, bytes));
    case IST_COLL_SCATTERV: USE("linear", ist_s_scatter_linear(s, at, g, 0, bytes));
    case IST_COLL_ALLGATHER:
    case IST_COLL_ALLGATHERV:
        if (bytes * n < 524288 && is_pof2(n))
            USE("recursive doubling", ist_s_allgather_recursive_doubling(s, at, g, bytes));
        if (bytes * n < 81920) USE("bruck", ist_s_allgather_bruck(s, at, g, bytes));
        USE("ring", ist_s_allgather_ring(s, at, g, bytes));
    case IST_COLL_ALLTOALLV:
    case IST_COLL_ALLTOALLW: /* the scattered exchange at every size */
        USE("scattered", ist_s_alltoall_linear(s, at, g, bytes));
    case IST_COLL_ALLTOALL:
        /* but not the nonblocking form, which sends every block at once: on 8 ranks of
         * das-4x2 at 2 ms, 8-256 B, "auto" took 3.4-4.1 ms, as its scattered and permuted
         * exchanges forced (3.3-3.7), not as Bruck's forced (8.2-8.7: three rounds across) */
        if (bytes <= 256 && n >= 8 && !f.nonblocking)
            USE("bruck", ist_s_alltoall_bruck(s, at, g, bytes));
        if (bytes <= 32768) USE("scattered", ist_s_alltoall_linear(s, at, g, bytes));
        USE("pairwise", ist_s_alltoall_pairwise(s, at, g, bytes, 1));
    case IST_COLL_REDUCE_SCATTER:
    case IST_COLL_REDUCE_SCATTER_BLOCK:
        if (bytes * n < 524288)
            USE("recursive halving", ist_s_reduce_scatter_halving(s, at, g, bytes));
        USE("pairwise", ist_s_reduce_scatter_pairwise(s, at, g, bytes));
    case IST_COLL_SCAN:
    case IST_COLL_EXSCAN:
    default: USE("recursive doubling", ist_s_scan_recursive_doubling(s, at, g, bytes));
    }
}

/* Open MPI 4.1's coll/tuned fixed decisions (coll_tuned_decision_fixed.c, tables measured
 * in 2020), exactly for communicators under 16 ranks; larger ones follow the tables' main
 * trend only. Sizes as Open MPI counts them: the buffer, or a rank's block (alltoall,
 * allgather, gather, scatter, reduce_scatter_block). The fixed rules pass no segment size,
 * so chains and trees move whole messages. Knomial trees are costed as binomial ones,
 * binary trees as degree-2 trees, the synchronised and nonblocking linear forms as linear,
 * the butterfly and recursive doubling reduce-scatters as recursive halving. Commutative
 * operations (the non-commutative rules differ). */
static const char *openmpi_bcast(struct ist_sched *s, int at, struct ist_group g, long b,
                                 int *rounds)
{
    int n = g.n, alg; /* 1 linear, 2 chain, 4 split binary, 5 binary, 6 binomial, 7 knomial,
                         8 scatter+allgather */
    if (n < 4) alg = b < 32 ? 2 : b < 256 ? 5 : b < 512 ? 2 : b < 1024 ? 7 : b < 32768 ? 1
                     : b < 131072 ? 5 : b < 262144 ? 2 : b < 524288 ? 1 : b < 1048576 ? 6 : 5;
    else if (n < 8) alg = b < 64 ? 5 : b < 128 ? 6 : b < 2048 ? 5 : b < 8192 ? 6 : b < 1048576 ? 1 : 2;
    else if (n < 16) alg = b < 8 ? 7 : b < 64 ? 5 : b < 4096 ? 7 : b < 16384 ? 5 : b < 32768 ? 6 : 1;
    else if (n < 32) alg = b < 4096 ? 7 : b < 1048576 ? 6 : 8;
    else alg = 7;
    switch (alg) {
    case 1: USE("linear", ist_s_scatter_linear(s, at, g, 0, b));
    case 2: USE("chain", ist_s_bcast_pipeline(s, at, g, 0, b, b > 0 ? b : 1, 1));
    case 4: USE("split binary tree", ist_s_bcast_pipeline(s, at, g, 0, b, b > 1 ? (b + 1) / 2 : 1, 2));
    case 5: USE("binary tree", ist_s_bcast_pipeline(s, at, g, 0, b, b > 0 ? b : 1, 2));
    case 8: USE("scatter + allgather", ist_s_bcast_scatter_allgather(s, at, g, 0, b, 0));
    case 7: USE("knomial", ist_s_bcast_binomial(s, at, g, 0, b));
    default: USE("binomial", ist_s_bcast_binomial(s, at, g, 0, b));
    }
}

static const char *openmpi_reduce(struct ist_sched *s, int at, struct ist_group g, long b,
                                  int *rounds)
{
    int n = g.n, alg; /* 1 linear, 2 chain, 3 pipeline, 4 binary, 5 binomial, 7 rabenseifner */
    if (n < 4) alg = b < 8 ? 7 : b < 16 ? 4 : b < 32 ? 3 : b < 262144 ? 1 : b < 524288 ? 3
                     : b < 1048576 ? 2 : 3;
    else if (n < 8) alg = b < 4096 ? 4 : b < 65536 ? 2 : b < 262144 ? 5 : b < 524288 ? 1
                          : b < 1048576 ? 5 : 1;
    else if (n < 16) alg = b < 8192 ? 4 : 5;
    else if (n < 32) alg = b < 4096 ? 4 : 5;
    else alg = 5;
    switch (alg) {
    case 1: USE("linear", ist_s_reduce_linear(s, at, g, 0, b));
    case 2: USE("chain", ist_s_reduce_pipeline(s, at, g, 0, b, b > 0 ? b : 1));
    case 3: USE("pipeline", ist_s_reduce_pipeline(s, at, g, 0, b, b > 0 ? b : 1));
    case 4: USE("binary", ist_s_reduce_binomial(s, at, g, 0, b));
    case 7: USE("rabenseifner", ist_s_rabenseifner(s, at, g, 0, b, 0));
    default: USE("binomial", ist_s_reduce_binomial(s, at, g, 0, b));
    }
}

static const char *openmpi(enum ist_coll_id id, struct ist_sched *s, int at, struct ist_group g,
                           long bytes, int *rounds)
{
    int n = g.n;
    long b = bytes;
    switch (id) {
    case IST_COLL_BARRIER:
        if (n >= 4 && n < 8) { /* linear: all to rank 0, then back */
            int r = ist_s_gather_linear(s, at, g, 0, 0);
            USE("linear", r + ist_s_scatter_linear(s, at + r, g, 0, 0));
        }
        if (n < 64) USE("recursive doubling", ist_s_barrier_recursive_doubling(s, at, g));
        USE("bruck", ist_s_barrier_dissemination(s, at, g));
    case IST_COLL_BCAST: return openmpi_bcast(s, at, g, b, rounds);
    case IST_COLL_REDUCE: return openmpi_reduce(s, at, g, b, rounds);
    case IST_COLL_ALLREDUCE: {
        int alg; /* 3 recursive doubling, 4 ring, 5 segmented ring, 6 rabenseifner */
        if (n < 4) alg = b < 8 ? 4 : b < 4096 ? 3 : b < 8192 ? 4 : b < 16384 ? 3 : b < 65536 ? 4
                         : b < 262144 ? 5 : 6;
        else if (n < 8) alg = b < 16 ? 4 : b < 8192 ? 3 : 6;
        else if (n < 16) alg = b < 8192 ? 3 : 6;
        else if (n < 32) alg = b < 64 ? 5 : b < 4096 ? 3 : 6;
        else alg = b < 128 ? 5 : 6;
        if (alg == 3)
            USE("recursive doubling", ist_s_allreduce_recursive_doubling(s, at, g, b));
        if (alg == 6) USE("rabenseifner", ist_s_rabenseifner(s, at, g, 0, b, 1));
        USE(alg == 4 ? "ring" : "segmented ring", ist_s_allreduce_ring(s, at, g, b));
    }
    /* coll/tuned has no decision for the v-forms: coll/basic's linear ones run */
    case IST_COLL_GATHERV: USE("linear", ist_s_gather_linear(s, at, g, 0, b));
    case IST_COLL_SCATTERV: USE("linear", ist_s_scatter_linear(s, at, g, 0, b));
    case IST_COLL_GATHER: {
        int binomial = n < 4   ? (b >= 4 && b < 32768) || (b >= 65536 && b < 131072)
                       : n < 8 ? b < 1024 || (b >= 8192 && b < 32768)
                               : 1;
        if (binomial) USE("binomial", ist_s_gather_binomial(s, at, g, 0, b));
        USE("linear", ist_s_gather_linear(s, at, g, 0, b));
    }
    case IST_COLL_SCATTER: {
        int binomial = n < 4    ? 0
                       : n < 8  ? b < 2048 || (b >= 4096 && b < 8192)
                       : n < 32 ? b < 16384
                                : b < 512;
        if (binomial) USE("binomial", ist_s_scatter_binomial(s, at, g, 0, b));
        USE("linear", ist_s_scatter_linear(s, at, g, 0, b));
    }
    case IST_COLL_ALLGATHER:
    case IST_COLL_ALLGATHERV:
        if (n == 2) USE("two procs", ist_s_allgather_ring(s, at, g, b));
        if (n < 32 || b < 512)
            USE("recursive doubling", ist_s_allgather_recursive_doubling(s, at, g, b));
        USE("ring", ist_s_allgather_ring(s, at, g, b));
    case IST_COLL_ALLTOALL:
    case IST_COLL_ALLTOALLW:
    case IST_COLL_ALLTOALLV: {
        int pairwise;
        if (id != IST_COLL_ALLTOALL) pairwise = n < 4; /* alltoallv: by size only */
        else if (n == 2) pairwise = 1;
        else if (n < 8) pairwise = b >= 524288 && b < 1048576;
        else if (n < 64) pairwise = 0;
        else pairwise = b >= 262144;
        if (id == IST_COLL_ALLTOALL && n >= 16 && b < 512)
            USE("modified bruck", ist_s_alltoall_bruck(s, at, g, b));
        if (pairwise) USE("pairwise", ist_s_alltoall_pairwise(s, at, g, b, 0));
        USE("linear", ist_s_alltoall_linear(s, at, g, b));
    }
    case IST_COLL_REDUCE_SCATTER:
    case IST_COLL_REDUCE_SCATTER_BLOCK: {
        int linear = n < 4 ? b >= 131072 : n < 8 ? b >= 1048576 : n < 16 ? b < 4 || (b >= 524288 && b < 4194304)
                                                                          : b < 32;
        if (linear) { /* basic: reduce of the whole vector at rank 0, then a linear scatter */
            int r = 0;
            (void)openmpi_reduce(s, at, g, b * n, &r);
            USE("reduce + scatter", r + ist_s_scatter_linear(s, at + r, g, 0, b));
        }
        USE("recursive halving", ist_s_reduce_scatter_halving(s, at, g, b));
    }
    case IST_COLL_SCAN:
    case IST_COLL_EXSCAN:
    default: USE("linear", ist_s_scan_linear(s, at, g, b));
    }
}

/* Open MPI's nonblocking collectives (coll/libnbc of 4.1.4, its default choices, from its
 * sources; its Ibcast on 8 ranks measured as the binomial tree on das-4x2). */
static const char *libnbc(enum ist_coll_id id, struct ist_sched *s, int at, struct ist_group g,
                          long b, int *rounds)
{
    int n = g.n;
    switch (id) {
    case IST_COLL_BARRIER: USE("dissemination", ist_s_barrier_dissemination(s, at, g));
    case IST_COLL_BCAST:
        if (n <= 4) USE("linear", ist_s_scatter_linear(s, at, g, 0, b));
        USE("binomial", ist_s_bcast_binomial(s, at, g, 0, b));
    case IST_COLL_REDUCE:
        if (n > 4 || b < 65536) USE("binomial", ist_s_reduce_binomial(s, at, g, 0, b));
        USE("chain, 8 KiB", ist_s_reduce_pipeline(s, at, g, 0, b, 8192));
    case IST_COLL_ALLREDUCE:
        /* nbc_iallreduce.c: binomial below 4 ranks or 64 KiB (also for non-commutative
         * operations and in place, which the selector does not see: it assumes neither),
         * else Rabenseifner's reduce-scatter + allgather (nearest partner first); the ring
         * only when the count is below the ranks' power of two */
        if (n < 4 || b < 65536) {
            int r = ist_s_reduce_binomial(s, at, g, 0, b);
            USE("binomial", r + ist_s_bcast_binomial(s, at + r, g, 0, b));
        }
        USE("rabenseifner", ist_s_rabenseifner(s, at, g, 0, b, 1));
    case IST_COLL_GATHER:
    case IST_COLL_GATHERV: USE("linear", ist_s_gather_linear(s, at, g, 0, b));
    case IST_COLL_SCATTER:
    case IST_COLL_SCATTERV: USE("linear", ist_s_scatter_linear(s, at, g, 0, b));
    case IST_COLL_ALLGATHER:
    case IST_COLL_ALLGATHERV: /* every block to every rank at once: an all-to-all's traffic */
        USE("linear", ist_s_alltoall_linear(s, at, g, b));
    case IST_COLL_ALLTOALL:
    case IST_COLL_ALLTOALLV:
    case IST_COLL_ALLTOALLW: USE("linear", ist_s_alltoall_linear(s, at, g, b));
    case IST_COLL_REDUCE_SCATTER:
    case IST_COLL_REDUCE_SCATTER_BLOCK: {
        int r = ist_s_reduce_binomial(s, at, g, 0, b * n);
        USE("reduce + scatter", r + ist_s_scatter_linear(s, at + r, g, 0, b));
    }
    case IST_COLL_SCAN:
    case IST_COLL_EXSCAN:
    default: USE("linear", ist_s_scan_linear(s, at, g, b));
    }
}

const char *ist_native_schedule(struct ist_mpi f, enum ist_coll_id id, struct ist_sched *s,
                                int at, struct ist_group g, long bytes, int *rounds)
{
    *rounds = 0;
    if (g.n < 2) return "none";
    /* MPICH's nonblocking collectives follow the same thresholds (its sched "auto"), but
     * one (mpich(): Alltoall) */
    if (f.flavour == IST_MPI_MPICH) return mpich(f, id, s, at, g, bytes, rounds);
    return f.nonblocking ? libnbc(id, s, at, g, bytes, rounds) : openmpi(id, s, at, g, bytes, rounds);
}
