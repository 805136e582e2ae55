/* The textbook collective algorithms the MPI libraries use, as schedules (schedule.h), so
 * that the selector can cost the MPI's own collective on a communicator's layout. Each
 * writes who sends what to whom in which round, in the order of MPICH's src/mpi/coll and
 * Open MPI's coll/base (which partner comes first decides which rounds cross the WAN);
 * which one an MPI picks at a size is in native_rules.c. Non-powers of two use MPICH's
 * pre- and post-step (the extra ranks fold into partners), where the algorithm has one. */
#include "schedule.h"

#define RANK(i) (g.ranks[(i)])

static int pof2_below(int n)
{
    int p = 1;
    while (2 * p <= n) p *= 2;
    return p;
}

static int log2_ceil(int n)
{
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

static long ceil_div(long a, long b) { return b > 0 ? (a + b - 1) / b : a; }

/* Layout rank of the group's rank that is vr-th counting from root. */
static int rel(struct ist_group g, int root, int vr) { return RANK((vr + root) % g.n); }

int ist_s_bcast_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long bytes)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int vr = 0; vr < (1 << k) && vr + (1 << k) < g.n; vr++)
            ist_sched_msg(s, at + k, rel(g, root, vr), rel(g, root, vr + (1 << k)), bytes, 0);
    return rounds;
}

int ist_s_scatter_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long block)
{
    int rounds = log2_ceil(g.n);
    /* from the largest distance down: vr (a multiple of 2 mask) hands vr + mask the blocks
     * of [vr + mask, vr + 2 mask) */
    for (int k = rounds - 1, r = at; k >= 0; k--, r++)
        for (int vr = 0; vr + (1 << k) < g.n; vr += 1 << (k + 1)) {
            int to = vr + (1 << k), n = g.n - to < (1 << k) ? g.n - to : 1 << k;
            ist_sched_msg(s, r, rel(g, root, vr), rel(g, root, to), block * n, 0);
        }
    return rounds;
}

int ist_s_gather_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long block)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int vr = 1 << k; vr < g.n; vr += 1 << (k + 1)) {
            int n = g.n - vr < (1 << k) ? g.n - vr : 1 << k;
            ist_sched_msg(s, at + k, rel(g, root, vr), rel(g, root, vr - (1 << k)), block * n, 0);
        }
    return rounds;
}

int ist_s_gather_linear(struct ist_sched *s, int at, struct ist_group g, int root, long block)
{
    for (int vr = 1; vr < g.n; vr++) ist_sched_msg(s, at, rel(g, root, vr), RANK(root), block, 0);
    return g.n > 1;
}

int ist_s_scatter_linear(struct ist_sched *s, int at, struct ist_group g, int root, long block)
{
    for (int vr = 1; vr < g.n; vr++) ist_sched_msg(s, at, RANK(root), rel(g, root, vr), block, 0);
    return g.n > 1;
}

int ist_s_reduce_pipeline(struct ist_sched *s, int at, struct ist_group g, int root, long bytes,
                          long segment)
{
    /* a chain towards the root: segment j leaves rank vr (counted from the far end) in
     * round j + (n - 1 - vr) */
    long k = ceil_div(bytes, segment);
    if (k < 1) k = 1;
    for (int vr = g.n - 1; vr >= 1; vr--)
        for (long j = 0; j < k; j++) {
            long left = bytes - j * segment, m = left < segment ? left : segment;
            ist_sched_msg(s, at + (int)j + (g.n - 1 - vr), rel(g, root, vr), rel(g, root, vr - 1),
                          m > 0 ? m : 0, 1);
        }
    return g.n > 1 ? (int)k + g.n - 2 : 0;
}

int ist_s_reduce_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long bytes)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int vr = 1 << k; vr < g.n; vr += 1 << (k + 1))
            ist_sched_msg(s, at + k, rel(g, root, vr), rel(g, root, vr - (1 << k)), bytes, 1);
    return rounds;
}

int ist_s_reduce_linear(struct ist_sched *s, int at, struct ist_group g, int root, long bytes)
{
    for (int vr = 1; vr < g.n; vr++) ist_sched_msg(s, at, rel(g, root, vr), RANK(root), bytes, 1);
    return g.n > 1;
}

int ist_s_allgather_ring(struct ist_sched *s, int at, struct ist_group g, long block)
{
    for (int k = 0; k < g.n - 1; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k, RANK(i), RANK((i + 1) % g.n), block, 0);
    return g.n - 1;
}

int ist_s_allgather_bruck(struct ist_sched *s, int at, struct ist_group g, long block)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++) {
        int have = 1 << k, n = g.n - have < have ? g.n - have : have;
        for (int i = 0; i < g.n; i++)
            ist_sched_msg(s, at + k, RANK(i), RANK((i - have + g.n) % g.n), block * n, 0);
    }
    return rounds;
}

int ist_s_allgather_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long block)
{
    if (pof2_below(g.n) != g.n) return ist_s_allgather_bruck(s, at, g, block);
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k, RANK(i), RANK(i ^ (1 << k)), block << k, 0);
    return rounds;
}

int ist_s_bcast_scatter_allgather(struct ist_sched *s, int at, struct ist_group g, int root,
                                  long bytes, int ring)
{
    long chunk = ceil_div(bytes, g.n);
    int r = ist_s_scatter_binomial(s, at, g, root, chunk);
    /* the allgather's partners by rank in the communicator (MPICH's ring); the recursive
     * doubling's by root-relative rank, the same links when the root is rank 0 */
    return r + (ring ? ist_s_allgather_ring(s, at + r, g, chunk)
                     : ist_s_allgather_recursive_doubling(s, at + r, g, chunk));
}

int ist_s_bcast_pipeline(struct ist_sched *s, int at, struct ist_group g, int root, long bytes,
                         long segment, int degree)
{
    long k = ceil_div(bytes, segment);
    if (k < 1) k = 1;
    int height = 0;
    for (int vr = 1; vr < g.n; vr++) {
        int depth = 0;
        for (int x = vr; x > 0; x = (x - 1) / degree) depth++;
        if (depth > height) height = depth;
        int parent = (vr - 1) / degree;
        for (long j = 0; j < k; j++) {
            long left = bytes - j * segment, m = left < segment ? left : segment;
            ist_sched_msg(s, at + (int)j + depth - 1, rel(g, root, parent), rel(g, root, vr),
                          m > 0 ? m : 0, 0);
        }
    }
    return g.n > 1 ? (int)k + height - 1 : 0;
}

/* MPICH's pre-step for n not a power of two: the first 2 rem ranks pair up, the odd one
 * hands its vector to the even one, which takes part for both. new_rank[i] is i's number
 * among the pof2 participants, or -1. */
static int fold_in(struct ist_sched *s, int at, struct ist_group g, long bytes, int *new_of)
{
    int pof2 = pof2_below(g.n), rem = g.n - pof2;
    for (int i = 0, nr = 0; i < g.n; i++) {
        if (i < 2 * rem && i % 2 == 1) {
            ist_sched_msg(s, at, RANK(i), RANK(i - 1), bytes, 1);
            new_of[i] = -1;
        } else {
            new_of[i] = nr++;
        }
    }
    return rem > 0;
}

static void fold_out(struct ist_sched *s, int at, struct ist_group g, long bytes)
{
    int rem = g.n - pof2_below(g.n);
    for (int i = 1; i < 2 * rem; i += 2) ist_sched_msg(s, at, RANK(i - 1), RANK(i), bytes, 0);
}

/* participants: layout ranks of the pof2 ranks that take part after the pre-step */
static int participants(struct ist_group g, const int *new_of, int *out)
{
    int n = 0;
    for (int i = 0; i < g.n; i++)
        if (new_of[i] >= 0) out[n++] = RANK(i);
    return n;
}

int ist_s_allreduce_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long bytes)
{
    int new_of[g.n > 0 ? g.n : 1], part[g.n > 0 ? g.n : 1];
    int r = fold_in(s, at, g, bytes, new_of), pof2 = participants(g, new_of, part);
    for (int k = 0; (1 << k) < pof2; k++, r++)
        for (int i = 0; i < pof2; i++) ist_sched_msg(s, at + r, part[i], part[i ^ (1 << k)], bytes, 1);
    if (pof2 < g.n) fold_out(s, at + r++, g, bytes);
    return r;
}

int ist_s_rabenseifner(struct ist_sched *s, int at, struct ist_group g, int root, long bytes, int all)
{
    int new_of[g.n > 0 ? g.n : 1], part[g.n > 0 ? g.n : 1];
    int r = fold_in(s, at, g, bytes, new_of), pof2 = participants(g, new_of, part);
    int steps = log2_ceil(pof2);
    /* reduce-scatter by recursive halving: the nearest partner first, with half the data */
    for (int k = 0; k < steps; k++, r++)
        for (int i = 0; i < pof2; i++)
            ist_sched_msg(s, at + r, part[i], part[i ^ (1 << k)], ceil_div(bytes, 2L << k), 1);
    /* then the same exchanges backwards: an allgather, or a gather towards the root */
    for (int k = steps - 1; k >= 0; k--, r++)
        for (int i = 0; i < pof2; i++) {
            int partner = i ^ (1 << k);
            if (!all && (i >> k) != 1) continue; /* a gather to participant 0: the far half sends */
            ist_sched_msg(s, at + r, part[i], part[partner], ceil_div(bytes, 2L << k), 0);
        }
    if (all && pof2 < g.n) fold_out(s, at + r++, g, bytes);
    /* MPICH gathers towards the root's partner; the result's last hop costs the same */
    if (!all && part[0] != RANK(root)) ist_sched_msg(s, at + r++, part[0], RANK(root), bytes, 0);
    return r;
}

int ist_s_allreduce_ring(struct ist_sched *s, int at, struct ist_group g, long bytes)
{
    long chunk = ceil_div(bytes, g.n);
    for (int k = 0; k < g.n - 1; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k, RANK(i), RANK((i + 1) % g.n), chunk, 1);
    return g.n - 1 + ist_s_allgather_ring(s, at + g.n - 1, g, chunk);
}

int ist_s_alltoall_linear(struct ist_sched *s, int at, struct ist_group g, long block)
{
    /* each rank posts its sends starting with its right neighbour (both MPIs) */
    for (int i = 0; i < g.n; i++)
        for (int k = 1; k < g.n; k++) ist_sched_msg(s, at, RANK(i), RANK((i + k) % g.n), block, 0);
    return g.n > 1;
}

int ist_s_alltoall_pairwise(struct ist_sched *s, int at, struct ist_group g, long block, int xor)
{
    xor = xor && pof2_below(g.n) == g.n;
    for (int k = 1; k < g.n; k++)
        for (int i = 0; i < g.n; i++)
            ist_sched_msg(s, at + k - 1, RANK(i), RANK(xor ? i ^ k : (i + k) % g.n), block, 0);
    return g.n - 1;
}

int ist_s_alltoall_bruck(struct ist_sched *s, int at, struct ist_group g, long block)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++) {
        long blocks = 0;
        for (int j = 0; j < g.n; j++) blocks += (j >> k) & 1;
        for (int i = 0; i < g.n; i++)
            ist_sched_msg(s, at + k, RANK(i), RANK((i + (1 << k)) % g.n), block * blocks, 0);
    }
    return rounds;
}

int ist_s_barrier_dissemination(struct ist_sched *s, int at, struct ist_group g)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k, RANK(i), RANK((i + (1 << k)) % g.n), 0, 0);
    return rounds;
}

int ist_s_barrier_recursive_doubling(struct ist_sched *s, int at, struct ist_group g)
{
    if (pof2_below(g.n) != g.n) return ist_s_barrier_dissemination(s, at, g);
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k, RANK(i), RANK(i ^ (1 << k)), 0, 0);
    return rounds;
}

int ist_s_reduce_scatter_halving(struct ist_sched *s, int at, struct ist_group g, long block)
{
    long bytes = block * g.n;
    int new_of[g.n > 0 ? g.n : 1], part[g.n > 0 ? g.n : 1];
    int r = fold_in(s, at, g, bytes, new_of), pof2 = participants(g, new_of, part);
    for (int k = 0; (1 << k) < pof2; k++, r++)
        for (int i = 0; i < pof2; i++)
            ist_sched_msg(s, at + r, part[i], part[i ^ (1 << k)], ceil_div(bytes, 2L << k), 1);
    if (pof2 < g.n) fold_out(s, at + r++, g, block);
    return r;
}

int ist_s_reduce_scatter_pairwise(struct ist_sched *s, int at, struct ist_group g, long block)
{
    for (int k = 1; k < g.n; k++)
        for (int i = 0; i < g.n; i++) ist_sched_msg(s, at + k - 1, RANK(i), RANK((i + k) % g.n), block, 1);
    return g.n - 1;
}

int ist_s_scan_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long bytes)
{
    int rounds = log2_ceil(g.n);
    for (int k = 0; k < rounds; k++)
        for (int i = 0; i < g.n; i++)
            if ((i ^ (1 << k)) < g.n) ist_sched_msg(s, at + k, RANK(i), RANK(i ^ (1 << k)), bytes, 1);
    return rounds;
}

int ist_s_scan_linear(struct ist_sched *s, int at, struct ist_group g, long bytes)
{
    for (int i = 0; i + 1 < g.n; i++) ist_sched_msg(s, at + i, RANK(i), RANK(i + 1), bytes, 1);
    return g.n - 1;
}
