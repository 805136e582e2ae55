/* Finding the clusters by measuring round trips (ISTHMUS_CLUSTERS=auto; docs/layer.md,
 * "Discovery", has the method step by step).
 *
 * When: layer.clusters = "auto" (isthmus run sets ISTHMUS_CLUSTERS=auto), at MPI_Init,
 * before anything else talks on the layer's communicator.
 *
 * How: ranks on one host are one cluster. One rank per host measures 8-byte round trips
 * to a sample of the other hosts (sample_pairs: O(H log H) pairs), all pairs at once,
 * keeping the least of a few (noise only lengthens a round trip); one Allreduce gives
 * every rank the same figures, so every rank decides the same. Local round trips are
 * those below the first gap of CONFIDENT_RATIO in their sorted list, from the smallest up
 * (the smallest class is the LAN; a slower second wide-area class above it is no cut
 * inside the clusters). With no such gap, or a gap of CUT_RATIO below it, a spanning set
 * of the short pairs (spanning_pairs: H - 1 at most) is measured again one pair at a time
 * (discover_measure.c), where the noise of ranks taking turns on the cores is gone, and
 * the first gap of CUT_RATIO among those cuts. Hosts
 * joined by a local round trip are one cluster (union-find); two groups not yet told
 * apart by a measurement, or apart by a round trip far below both's to every other group,
 * have a pair between them measured, until every two groups are apart (group()).
 *
 * Cost: about 6 wide-area round trips (an untimed exchange per pair, 3 timed ones, the
 * Allreduce's), plus 13 round trips per careful pair (H - 1 pairs at most, and the
 * verifying rounds' then) and as many rounds as verifying takes (none when the sample
 * held a local pair of every cluster). Limit: a cluster of one host among clusters of one
 * host has no local pair to compare with. */
#include "discover_method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CUT_RATIO 2.0
#define VERIFY_ROUNDS 8
#define CONFIDENT_RATIO 4.0 /* a gap this large in the sample needs no careful round */
/* Longer round trips are not measured carefully: the noise of ranks taking turns on the
 * cores (a millisecond at most, seen here) cannot hide a gap among them, and a careful
 * pair costs 9 of its round trips. */
#define CAREFUL_MAX_US 5000.0

static struct ist_discovery found;

const struct ist_discovery *ist_discovery(void) { return &found; }
struct ist_discovery *ist_discovery_mutable(void) { return &found; }

static int pair_order(const void *x, const void *y)
{
    const struct ist_host_pair *p = x, *q = y;
    return p->a != q->a ? p->a - q->a : p->b - q->b;
}

/* The sample: host pairs at cyclic distances 1, 2, 3, 4, 8, 16, ... in rank order, and
 * neighbours in the order of their names (by_name: a permutation of the hosts), each once.
 * The names only choose pairs to measure (node017 and node018 are likely neighbours,
 * which covers round-robin placements whose stride the distances miss); they never
 * decide a cluster. */
static int sample_pairs(int hosts, const int *by_name, struct ist_host_pair **out)
{
    int cap = 2 * hosts;
    for (int d = 1; d < hosts; d = d < 4 ? d + 1 : 2 * d) cap += hosts;
    struct ist_host_pair *p = malloc((size_t)(cap ? cap : 1) * sizeof *p);
    int n = 0;
    for (int i = 0; i < hosts; i++)
        for (int d = 1; d < hosts; d = d < 4 ? d + 1 : 2 * d) {
            int j = (i + d) % hosts;
            p[n++] = (struct ist_host_pair){i < j ? i : j, i < j ? j : i};
        }
    for (int i = 0; i + 1 < hosts; i++) {
        int x = by_name[i], y = by_name[i + 1];
        p[n++] = (struct ist_host_pair){x < y ? x : y, x < y ? y : x};
    }
    qsort(p, (size_t)n, sizeof *p, pair_order);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (kept == 0 || pair_order(&p[i], &p[kept - 1]) != 0) p[kept++] = p[i];
    *out = p;
    return kept;
}

static int root_of(int *parent, int x)
{
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int by_int(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

/* Round trips below the returned value are local: the first gap of CONFIDENT_RATIO from
 * the smallest up, else the first of CUT_RATIO (found.gap: its ratio; found.unsure: the
 * round trips below the confident gap, or all, when the first gap of CUT_RATIO is not
 * confident). 0: none (one class). */
static double local_cut(const double *rtt, int n)
{
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (rtt[i] > 0) v[m++] = rtt[i];
    qsort(v, (size_t)m, sizeof *v, by_value);
    double cut = 0, first = 0, cut_ratio = 0, first_ratio = 0;
    for (int i = 0; i + 1 < m && cut == 0; i++) {
        double ratio = v[i + 1] / v[i];
        if (ratio >= CUT_RATIO && first == 0) {
            first = sqrt(v[i] * v[i + 1]);
            first_ratio = ratio;
        }
        /* a clear gap, or one holding a single round trip (a local one that noise
         * lengthened, or a lone slower pair): the cut goes below it */
        int lone = ratio >= CUT_RATIO && i + 2 < m &&
                   v[i + 2] / v[i] >= CONFIDENT_RATIO * CUT_RATIO;
        if (ratio >= CONFIDENT_RATIO || lone) {
            cut = sqrt(v[i] * v[i + 1]);
            cut_ratio = ratio;
        }
    }
    found.unsure = cut == 0 ? INFINITY /* no clear gap: one class, or noise hides it */
                   : first < cut ? cut /* a small gap below the clear one */
                                 : 0;
    found.gap = cut > 0 ? cut_ratio : first_ratio;
    if (m) {
        found.lan_rtt_us = v[0];
        found.wan_rtt_us = v[m - 1];
    }
    free(v);
    return cut > 0 ? cut : first;
}

/* Two groups apart by a round trip far shorter than either's to every other group look
 * like one cluster whose local round trip noise lengthened past the cut (two nearby sites
 * far from the rest look the same): their first hosts are measured once more, unless
 * they already were. */
static int suspicious(const double *d, int groups, int x, int y, const struct ist_host_pair *p, int n,
                      const int *leader)
{
    double between = d[x * groups + y];
    int thirds = 0;
    for (int z = 0; z < groups; z++) {
        double dx = d[x * groups + z], dy = d[y * groups + z];
        if (z == x || z == y || dx == 0 || dy == 0) continue;
        if (between * CUT_RATIO > fmin(dx, dy)) return 0;
        thirds++;
    }
    int times = 0;
    for (int i = 0; i < n; i++) times += p[i].a == leader[x] && p[i].b == leader[y];
    return thirds > 0 && times < 2;
}

/* Groups of hosts joined by local round trips, below the cut: the first gap of the round
 * trips, or after a careful round (careful: those round trips, 0 where not measured so)
 * the first gap of the careful ones, or `limit` when they have none (all below it are then
 * one class). Returns the pairs of groups that no measured pair separates, or that look
 * suspicious (one pair of their first hosts each), or, after a careful round, that only a
 * sampled round trip under `limit` separates (that pair), into *missing. */
static int group(int hosts, const struct ist_host_pair *p, const double *rtt, const double *careful,
                 double limit, int n, int *parent, struct ist_host_pair **missing)
{
    double cut = local_cut(careful ? careful : rtt, n);
    if (careful && cut == 0) cut = limit;
    found.cut_us = cut;
    for (int h = 0; h < hosts; h++) parent[h] = h;
    for (int i = 0; i < n; i++)
        if (rtt[i] > 0 && (cut == 0 || rtt[i] < cut)) {
            int x = root_of(parent, p[i].a), y = root_of(parent, p[i].b);
            if (x != y) parent[x > y ? x : y] = x < y ? x : y; /* the lower host leads */
        }
    int groups = 0;
    int *leader = malloc((size_t)hosts * sizeof *leader);
    for (int h = 0; h < hosts; h++)
        if (root_of(parent, h) == h) leader[groups++] = h;
    /* the least measured round trip between every two groups (0: none measured); after a
     * careful round (careful), the least careful one where there is one (noise lengthened
     * the others), and where there is none, the sample's least pair (least[]) */
    size_t gg = (size_t)groups * (size_t)groups;
    double *d = calloc(gg, sizeof *d), *dc = calloc(gg, sizeof *dc);
    int *least = calloc(gg, sizeof *least);
    int *index = malloc((size_t)hosts * sizeof *index);
    for (int g = 0; g < groups; g++) index[leader[g]] = g;
    for (int i = 0; i < n; i++) {
        int x = index[root_of(parent, p[i].a)], y = index[root_of(parent, p[i].b)];
        if (rtt[i] <= 0 || x == y) continue;
        if (d[x * groups + y] == 0 || rtt[i] < d[x * groups + y]) {
            d[x * groups + y] = d[y * groups + x] = rtt[i];
            least[x * groups + y] = i;
        }
        if (careful && careful[i] > 0 && (dc[x * groups + y] == 0 || careful[i] < dc[x * groups + y]))
            dc[x * groups + y] = dc[y * groups + x] = careful[i];
    }
    for (size_t k = 0; k < gg; k++)
        if (dc[k] > 0) d[k] = dc[k];
    int m = 0;
    *missing = malloc((gg / 2 + 1) * sizeof **missing);
    for (int x = 0; x < groups; x++)
        for (int y = x + 1; y < groups; y++) {
            double between = d[x * groups + y];
            if (between == 0 || suspicious(d, groups, x, y, p, n, leader))
                (*missing)[m++] = (struct ist_host_pair){leader[x], leader[y]};
            else if (careful && dc[x * groups + y] == 0 && between < limit)
                /* apart only by a sampled round trip, which the noise the careful round was
                 * for may have lengthened past the cut (and out of the spanning set): that
                 * pair carefully (MPICH, das-4x2 at the 5x edge, 8 ranks on 2 cores: local
                 * round trips of 80 us sampled at 400-1300 us) */
                (*missing)[m++] = p[least[x * groups + y]];
        }
    free(leader);
    free(d);
    free(dc);
    free(least);
    free(index);
    return m;
}

/* The first IST_DISCOVERY_KEPT pairs measured, as host numbers (ist_discover makes them
 * ranks). */
static void keep_pairs(const struct ist_host_pair *p, const double *rtt, int n)
{
    for (int i = 0; i < n && found.kept < IST_DISCOVERY_KEPT; i++) {
        if (rtt[i] <= 0) continue; /* a slot measured again: its least is in the first */
        found.pair_rank[2 * found.kept] = p[i].a;
        found.pair_rank[2 * found.kept + 1] = p[i].b;
        found.pair_rtt_us[found.kept++] = rtt[i];
    }
}

static const double *rtt_for_sort;

static int by_rtt(const void *x, const void *y)
{
    double a = rtt_for_sort[*(const int *)x], b = rtt_for_sort[*(const int *)y];
    return (a > b) - (a < b);
}

/* The pairs to measure carefully when the sample shows no clear gap: a spanning forest of
 * the pairs below `below` (Kruskal, the shortest first: every cluster's local pairs come
 * before the pairs between clusters, which join them by their shortest), H - 1 pairs at
 * most instead of every short one, into slot[] (indices into p), ordered by first host
 * (fewer hand-overs of the turn). Returns how many. */
static int spanning_pairs(int hosts, const struct ist_host_pair *p, const double *rtt, int n,
                          double below, int *slot)
{
    int *order = malloc((size_t)(n + 1) * sizeof *order), *parent = malloc((size_t)(hosts + 1) * sizeof *parent);
    int m = 0, k = 0;
    for (int i = 0; i < n; i++)
        if (rtt[i] > 0 && rtt[i] < below) order[m++] = i;
    rtt_for_sort = rtt;
    qsort(order, (size_t)m, sizeof *order, by_rtt);
    for (int h = 0; h < hosts; h++) parent[h] = h;
    for (int j = 0; j < m; j++) {
        int x = root_of(parent, p[order[j]].a), y = root_of(parent, p[order[j]].b);
        if (x == y) continue;
        parent[x > y ? x : y] = x < y ? x : y;
        slot[k++] = order[j];
    }
    qsort(slot, (size_t)k, sizeof *slot, by_int); /* p is sorted by (a, b): slot order is */
    free(order);
    free(parent);
    return k;
}

/* Slots [first, n) of p measured all at once: rtt[first..n), the same on every rank. */
static void measure_round(const struct ist_discover_probe *probe, const struct ist_host_pair *p,
                          int first, int n, double *rtt)
{
    probe->all_at_once(probe->ctx, p + first, n - first, rtt + first);
    found.rounds++;
}

/* Pairs q[0..k) measured one at a time: out[], the same on every rank. */
static void measure_carefully(const struct ist_discover_probe *probe, const struct ist_host_pair *q,
                              int k, double *out)
{
    probe->one_at_a_time(probe->ctx, q, k, out);
    found.careful += k;
    found.rounds++;
}

void ist_discover_hosts(int hosts, const int *by_name, const struct ist_discover_probe *probe,
                        int *cluster)
{
    memset(&found, 0, sizeof found);
    found.done = 1;
    found.hosts = hosts;
    struct ist_host_pair *p = NULL;
    int n = sample_pairs(hosts, by_name, &p);
    double *rtt = calloc((size_t)(n + 1), sizeof *rtt);
    int *parent = malloc((size_t)(hosts + 1) * sizeof *parent);
    /* the sample, all at once */
    measure_round(probe, p, 0, n, rtt);
    struct ist_host_pair *missing = NULL;
    double *clean = NULL; /* the careful round trips (0: not measured so), when there are */
    double limit = 0;
    int m = group(hosts, p, rtt, NULL, 0, n, parent, &missing);
    if (found.unsure > 0 && hosts > 1) {
        /* small gaps only, or below the clear one: a spanning set of the short pairs again,
         * one at a time, and the cut from those (the sample's others stay: noise only
         * lengthens a round trip, so one below the careful cut is local); when those show
         * no gap (the set may hold no local pair, or only local ones), every short pair */
        limit = fmin(found.unsure, CAREFUL_MAX_US);
        clean = calloc((size_t)(n + 1), sizeof *clean);
        int *slot = malloc((size_t)(n + 1) * sizeof *slot);
        for (int pass = 0; pass < 2; pass++) {
            int k = 0;
            if (pass == 0) k = spanning_pairs(hosts, p, rtt, n, limit, slot);
            else if (local_cut(clean, n) == 0)
                for (int i = 0; i < n; i++)
                    if (clean[i] == 0 && rtt[i] < limit) slot[k++] = i;
            if (k == 0) continue;
            struct ist_host_pair *q = malloc((size_t)k * sizeof *q);
            double *again = calloc((size_t)k, sizeof *again);
            for (int j = 0; j < k; j++) q[j] = p[slot[j]];
            measure_carefully(probe, q, k, again);
            for (int j = 0; j < k; j++) rtt[slot[j]] = clean[slot[j]] = fmin(rtt[slot[j]], again[j]);
            free(q);
            free(again);
        }
        free(slot);
        free(missing);
        m = group(hosts, p, rtt, clean, limit, n, parent, &missing);
    } else if (found.cut_us > 0) {
        /* a clear gap: the pairs just above it once more (a local round trip that noise
         * lengthened across the cut would split its cluster) */
        int k = 0;
        for (int i = 0; i < n; i++) k += rtt[i] > found.cut_us && rtt[i] < found.cut_us * CUT_RATIO;
        if (k) {
            struct ist_host_pair *q = malloc((size_t)k * sizeof *q);
            int *slot = malloc((size_t)k * sizeof *slot);
            double *again = calloc((size_t)k, sizeof *again);
            k = 0;
            for (int i = 0; i < n; i++)
                if (rtt[i] > found.cut_us && rtt[i] < found.cut_us * CUT_RATIO) {
                    slot[k] = i;
                    q[k++] = p[i];
                }
            measure_round(probe, q, 0, k, again);
            for (int j = 0; j < k; j++) rtt[slot[j]] = fmin(rtt[slot[j]], again[j]);
            free(q);
            free(slot);
            free(again);
            free(missing);
            m = group(hosts, p, rtt, NULL, 0, n, parent, &missing);
        }
    }
    /* every two groups apart by a measured pair, else one more pair between them (one at a
     * time when the cut came from such pairs: the sample's noise is what split them) */
    for (int round = 0; m > 0 && round < VERIFY_ROUNDS; round++) {
        p = realloc(p, (size_t)(n + m) * sizeof *p);
        rtt = realloc(rtt, (size_t)(n + m) * sizeof *rtt);
        memcpy(p + n, missing, (size_t)m * sizeof *p);
        if (clean) {
            clean = realloc(clean, (size_t)(n + m) * sizeof *clean);
            measure_carefully(probe, p + n, m, rtt + n);
            memcpy(clean + n, rtt + n, (size_t)m * sizeof *clean);
        } else {
            measure_round(probe, p, n, n + m, rtt);
        }
        n += m;
        free(missing);
        m = group(hosts, p, rtt, clean, limit, n, parent, &missing);
    }
    free(missing);
    found.pairs = n;
    keep_pairs(p, rtt, n);
    /* clusters numbered by their lowest host */
    int *number = malloc((size_t)(hosts + 1) * sizeof *number), clusters = 0;
    for (int h = 0; h < hosts; h++) number[h] = -1;
    for (int h = 0; h < hosts; h++) {
        int g = root_of(parent, h);
        if (number[g] < 0) number[g] = clusters++;
        cluster[h] = number[g];
    }
    free(number);
    free(parent);
    free(clean);
    free(rtt);
    free(p);
}
