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
 * inside the clusters). With no such gap, or a gap of CUT_RATIO below it, the short round
 * trips are measured again one pair at a time (discover_measure.c), where the noise of
 * ranks taking turns on the cores is gone, and the first gap of CUT_RATIO cuts. Hosts
 * joined by a local round trip are one cluster (union-find); two groups not yet told
 * apart by a measurement, or apart by a round trip far below both's to every other group,
 * have a pair between them measured, until every two groups are apart (group()).
 *
 * Cost: about 6 wide-area round trips (an untimed exchange per pair, 3 timed ones, the
 * Allreduce's), plus a few local round trips per careful pair and as many rounds as
 * verifying takes (none when the sample held a local pair of every cluster). Limit: a
 * cluster of one host among clusters of one host has no local pair to compare with. */
#include "discover.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "own_calls.h"
#include "world.h"

#define CUT_RATIO 2.0
#define VERIFY_ROUNDS 8
#define CONFIDENT_RATIO 4.0 /* a gap this large in the sample needs no careful round */
/* Longer round trips are not measured carefully: the noise of ranks taking turns on the
 * cores (a millisecond at most, seen here) cannot hide a gap among them, and a careful
 * pair costs 9 of its round trips. */
#define CAREFUL_MAX_US 5000.0

static struct ist_discovery found;

const struct ist_discovery *ist_discovery(void) { return &found; }

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

/* Groups of hosts joined by local round trips; returns the pairs of groups that no
 * measured pair separates, or that look suspicious (one pair of their first hosts each),
 * into *missing. */
static int group(int hosts, const struct ist_host_pair *p, const double *rtt, int n, int *parent,
                 struct ist_host_pair **missing)
{
    double cut = found.cut_us = local_cut(rtt, n);
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
    /* the least measured round trip between every two groups (0: none measured) */
    double *d = calloc((size_t)groups * (size_t)groups, sizeof *d);
    int *index = malloc((size_t)hosts * sizeof *index);
    for (int g = 0; g < groups; g++) index[leader[g]] = g;
    for (int i = 0; i < n; i++) {
        int x = index[root_of(parent, p[i].a)], y = index[root_of(parent, p[i].b)];
        if (rtt[i] > 0 && x != y && (d[x * groups + y] == 0 || rtt[i] < d[x * groups + y]))
            d[x * groups + y] = d[y * groups + x] = rtt[i];
    }
    int m = 0;
    *missing = malloc((size_t)(groups * groups / 2 + 1) * sizeof **missing);
    for (int x = 0; x < groups; x++)
        for (int y = x + 1; y < groups; y++)
            if (d[x * groups + y] == 0 || suspicious(d, groups, x, y, p, n, leader))
                (*missing)[m++] = (struct ist_host_pair){leader[x], leader[y]};
    free(leader);
    free(d);
    free(index);
    return m;
}

static void keep_pairs(const int *rep, const struct ist_host_pair *p, const double *rtt, int n)
{
    for (int i = 0; i < n && found.kept < IST_DISCOVERY_KEPT; i++) {
        if (rtt[i] <= 0) continue; /* a slot measured again: its least is in the first */
        found.pair_rank[2 * found.kept] = rep[p[i].a];
        found.pair_rank[2 * found.kept + 1] = rep[p[i].b];
        found.pair_rtt_us[found.kept++] = rtt[i];
    }
}

/* Slots [first, n) of p measured all at once and agreed: rtt[first..n) on every rank. */
static void measure_round(MPI_Comm comm, int me, const int *rep, const struct ist_host_pair *p, int first,
                          int n, double *rtt)
{
    double *mine = calloc((size_t)(n - first + 1), sizeof *mine);
    if (me >= 0) ist_discover_ping(comm, me, rep, p + first, n - first, mine);
    ist_own_Allreduce(mine, rtt + first, n - first, MPI_DOUBLE, MPI_MAX, comm);
    free(mine);
    found.rounds++;
}

static const char (*names_for_sort)[IST_DISCOVER_NAME];
static const int *reps_for_sort;

static int name_order(const void *x, const void *y)
{
    return strcmp(names_for_sort[reps_for_sort[*(const int *)x]],
                  names_for_sort[reps_for_sort[*(const int *)y]]);
}

void ist_discover(MPI_Comm comm, const char (*names)[IST_DISCOVER_NAME], const int *host_of,
                  int *cluster_of)
{
    double start = ist_now_us();
    int size = 0, rank = 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    memset(&found, 0, sizeof found);
    found.done = 1;
    /* host numbers in rank order, and each host's lowest rank */
    int *host = malloc((size_t)size * sizeof *host), *rep = malloc((size_t)size * sizeof *rep);
    int hosts = 0;
    for (int r = 0; r < size; r++) {
        if (host_of[r] == r) rep[hosts++] = r;
        host[r] = -1;
    }
    for (int h = 0; h < hosts; h++) host[rep[h]] = h;
    for (int r = 0; r < size; r++) host[r] = host[host_of[r]];
    found.hosts = hosts;

    struct ist_host_pair *p = NULL;
    int *by_name = malloc((size_t)(hosts + 1) * sizeof *by_name);
    for (int h = 0; h < hosts; h++) by_name[h] = h;
    names_for_sort = names;
    reps_for_sort = rep;
    qsort(by_name, (size_t)hosts, sizeof *by_name, name_order);
    int n = sample_pairs(hosts, by_name, &p);
    free(by_name);
    double *rtt = calloc((size_t)(n + 1), sizeof *rtt);
    int *parent = malloc((size_t)(hosts + 1) * sizeof *parent);
    int me = host_of[rank] == rank ? host[rank] : -1;
    /* the sample, all at once */
    measure_round(comm, me, rep, p, 0, n, rtt);
    struct ist_host_pair *missing = NULL;
    int m = group(hosts, p, rtt, n, parent, &missing);
    if (found.unsure > 0 && hosts > 1) {
        /* small gaps only, or below the clear one: those pairs again, one at a time, the
         * pairs of each group together */
        double unsure = fmin(found.unsure, CAREFUL_MAX_US);
        struct ist_host_pair *q = malloc((size_t)(n + 1) * sizeof *q);
        int *slot = malloc((size_t)(n + 1) * sizeof *slot), k = 0;
        for (int g = 0; g < hosts; g++)
            for (int i = 0; i < n; i++)
                if (rtt[i] < unsure && root_of(parent, p[i].a) == g) {
                    slot[k] = i;
                    q[k++] = p[i];
                }
        double *again = calloc((size_t)(k + 1), sizeof *again);
        double *mine = calloc((size_t)(k + 1), sizeof *mine);
        ist_discover_ping_carefully(comm, rep, q, k, mine);
        ist_discover_agree_idly(mine, again, k, comm);
        for (int j = 0; j < k; j++) rtt[slot[j]] = fmin(rtt[slot[j]], again[j]);
        free(q);
        free(slot);
        free(again);
        free(mine);
        found.careful = k;
        found.rounds++;
        free(missing);
        m = group(hosts, p, rtt, n, parent, &missing);
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
            measure_round(comm, me, rep, q, 0, k, again);
            for (int j = 0; j < k; j++) rtt[slot[j]] = fmin(rtt[slot[j]], again[j]);
            free(q);
            free(slot);
            free(again);
            free(missing);
            m = group(hosts, p, rtt, n, parent, &missing);
        }
    }
    /* every two groups apart by a measured pair, else one more pair between them */
    for (int round = 0; m > 0 && round < VERIFY_ROUNDS; round++) {
        p = realloc(p, (size_t)(n + m) * sizeof *p);
        rtt = realloc(rtt, (size_t)(n + m) * sizeof *rtt);
        memcpy(p + n, missing, (size_t)m * sizeof *p);
        measure_round(comm, me, rep, p, n, n + m, rtt);
        n += m;
        free(missing);
        m = group(hosts, p, rtt, n, parent, &missing);
    }
    free(missing);
    found.pairs = n;
    keep_pairs(rep, p, rtt, n);

    /* clusters numbered by their lowest rank */
    int *number = malloc((size_t)(hosts + 1) * sizeof *number), clusters = 0;
    for (int h = 0; h < hosts; h++) number[h] = -1;
    for (int r = 0; r < size; r++) {
        int g = root_of(parent, host[r]);
        if (number[g] < 0) number[g] = clusters++;
        cluster_of[r] = number[g];
    }
    found.seconds = (ist_now_us() - start) / 1e6;
    if (getenv("ISTHMUS_COLL_LOG") && rank == 0) {
        fprintf(stderr, "isthmus: discovery: %d hosts, %d pairs in %d rounds, cut %.0f us, "
                        "%d clusters, %.1f ms, careful %d gap %.1f; round trips (us):", hosts, n, found.rounds,
                found.cut_us, clusters, found.seconds * 1e3, found.careful, found.gap);
        for (int i = 0; i < n; i++) fprintf(stderr, " %d-%d:%.0f", rep[p[i].a], rep[p[i].b], rtt[i]);
        fputc('\n', stderr);
    }
    free(number);
    free(parent);
    free(rtt);
    free(p);
    free(host);
    free(rep);
}
