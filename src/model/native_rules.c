/* Which algorithm the MPI's own collective runs at a size: the libraries' documented
 * default selection, as schedules (sched_algorithms.c).
 *
 * MPICH 4.0 (Debian 12): its intra-communicator "auto" selection with the default CVARs
 * (MPIR_CVAR_BCAST_SHORT_MSG_SIZE 12288, _LONG_MSG_SIZE 524288, _MIN_PROCS 8;
 * ALLREDUCE_SHORT_MSG_SIZE 2048; REDUCE_SHORT_MSG_SIZE 2048; ALLGATHER_SHORT_MSG_SIZE
 * 81920, _LONG_MSG_SIZE 524288; ALLTOALL_SHORT_MSG_SIZE 256, _MEDIUM_MSG_SIZE 32768,
 * _MIN_PROCS 8; REDSCAT_COMMUTATIVE_LONG_MSG_SIZE 524288).
 *
 * Open MPI 4.1 (Debian 12): the fixed decision rules of coll/tuned as they stood through
 * 4.0 (size thresholds from the University of Tennessee's measurements). 4.1 refined the
 * tables for some communicator sizes; where they differ the prediction is off, and a
 * tuning file (isthmus coll tune) measured on the platform wins over the model. */
#include "coll_cost.h"

static int is_pof2(int n) { return n > 0 && (n & (n - 1)) == 0; }

#define USE(name, call)                                                                            \
    do {                                                                                           \
        *rounds = (call);                                                                          \
        return name;                                                                               \
    } while (0)

static const char *mpich(enum ist_coll_id id, struct ist_sched *s, int at, struct ist_group g,
                         long bytes, int *rounds)
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
    case IST_COLL_GATHER:
    case IST_COLL_GATHERV: USE("binomial", ist_s_gather_binomial(s, at, g, 0, bytes));
    case IST_COLL_SCATTER:
    case IST_COLL_SCATTERV: USE("binomial", ist_s_scatter_binomial(s, at, g, 0, bytes));
    case IST_COLL_ALLGATHER:
    case IST_COLL_ALLGATHERV:
        if (bytes * n < 524288 && is_pof2(n))
            USE("recursive doubling", ist_s_allgather_recursive_doubling(s, at, g, bytes));
        if (bytes * n < 81920) USE("bruck", ist_s_allgather_bruck(s, at, g, bytes));
        USE("ring", ist_s_allgather_ring(s, at, g, bytes));
    case IST_COLL_ALLTOALL:
    case IST_COLL_ALLTOALLV:
    case IST_COLL_ALLTOALLW:
        if (bytes <= 256 && n >= 8) USE("bruck", ist_s_alltoall_bruck(s, at, g, bytes));
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

static const char *openmpi(enum ist_coll_id id, struct ist_sched *s, int at, struct ist_group g,
                           long bytes, int *rounds)
{
    int n = g.n;
    double m = (double)bytes;
    switch (id) {
    case IST_COLL_BARRIER:
        USE(is_pof2(n) ? "recursive doubling" : "bruck", ist_s_barrier_dissemination(s, at, g));
    case IST_COLL_BCAST:
        if (bytes < 2048) USE("binomial", ist_s_bcast_binomial(s, at, g, 0, bytes));
        if (bytes < 370728)
            USE("split binary tree, 1 KiB", ist_s_bcast_pipeline(s, at, g, 0, bytes, 1024, 2));
        if (n < 1.6134e-6 * m + 2.1102)
            USE("pipeline, 128 KiB", ist_s_bcast_pipeline(s, at, g, 0, bytes, 128 << 10, 1));
        if (n < 13)
            USE("split binary tree, 8 KiB", ist_s_bcast_pipeline(s, at, g, 0, bytes, 8 << 10, 2));
        USE("pipeline, 16 KiB", ist_s_bcast_pipeline(s, at, g, 0, bytes, 16 << 10, 1));
    case IST_COLL_REDUCE:
        if (n < 8 && bytes < 512) USE("linear", ist_s_reduce_linear(s, at, g, 0, bytes));
        if (n < 8 && bytes < 20480) USE("binomial", ist_s_reduce_binomial(s, at, g, 0, bytes));
        /* its binary trees costed as binomial ones: the same depth on these sizes */
        if (bytes < 2048) USE("binary", ist_s_reduce_binomial(s, at, g, 0, bytes));
        if (n > 0.6016 / 1024 * m + 1.3496)
            USE("binary, 1 KiB", ist_s_reduce_binomial(s, at, g, 0, bytes));
        if (n > 0.0410 / 1024 * m + 9.7128)
            USE("pipeline, 1 KiB", ist_s_reduce_pipeline(s, at, g, 0, bytes, 1 << 10));
        if (n > 0.0033 / 1024 * m + 1.6761)
            USE("pipeline, 32 KiB", ist_s_reduce_pipeline(s, at, g, 0, bytes, 32 << 10));
        USE("pipeline, 64 KiB", ist_s_reduce_pipeline(s, at, g, 0, bytes, 64 << 10));
    case IST_COLL_ALLREDUCE:
        if (bytes < 10000)
            USE("recursive doubling", ist_s_allreduce_recursive_doubling(s, at, g, bytes));
        USE("ring", ist_s_allreduce_ring(s, at, g, bytes));
    case IST_COLL_GATHER:
    case IST_COLL_GATHERV:
        if (bytes < 92160 && (n > 60 || (n > 10 && bytes < 1024)))
            USE("binomial", ist_s_gather_binomial(s, at, g, 0, bytes));
        USE("linear", ist_s_gather_linear(s, at, g, 0, bytes));
    case IST_COLL_SCATTER:
    case IST_COLL_SCATTERV:
        if (n > 10 && bytes < 300) USE("binomial", ist_s_scatter_binomial(s, at, g, 0, bytes));
        USE("linear", ist_s_scatter_linear(s, at, g, 0, bytes));
    case IST_COLL_ALLGATHER:
    case IST_COLL_ALLGATHERV:
        if (bytes * n < 50000) {
            if (is_pof2(n))
                USE("recursive doubling", ist_s_allgather_recursive_doubling(s, at, g, bytes));
            USE("bruck", ist_s_allgather_bruck(s, at, g, bytes));
        }
        USE("ring", ist_s_allgather_ring(s, at, g, bytes));
    case IST_COLL_ALLTOALL:
    case IST_COLL_ALLTOALLV:
    case IST_COLL_ALLTOALLW:
        if (n > 12 && bytes < 200) USE("bruck", ist_s_alltoall_bruck(s, at, g, bytes));
        if (bytes < 3000) USE("linear", ist_s_alltoall_linear(s, at, g, bytes));
        USE("pairwise", ist_s_alltoall_pairwise(s, at, g, bytes, 0));
    case IST_COLL_REDUCE_SCATTER:
    case IST_COLL_REDUCE_SCATTER_BLOCK: {
        /* coll/basic: a reduce of the whole vector at rank 0, then a linear scatter */
        int r = 0;
        (void)openmpi(IST_COLL_REDUCE, s, at, g, bytes * n, &r);
        USE("reduce + scatter", r + ist_s_scatter_linear(s, at + r, g, 0, bytes));
    }
    case IST_COLL_SCAN:
    case IST_COLL_EXSCAN:
    default: USE("linear", ist_s_scan_linear(s, at, g, bytes));
    }
}

const char *ist_native_schedule(enum ist_mpi_flavour f, enum ist_coll_id id, struct ist_sched *s,
                                int at, struct ist_group g, long bytes, int *rounds)
{
    *rounds = 0;
    if (g.n < 2) return "none";
    return f == IST_MPI_MPICH ? mpich(id, s, at, g, bytes, rounds)
                              : openmpi(id, s, at, g, bytes, rounds);
}
