/* The selector's costs: the MPI's own algorithm (native_rules.c) against the WAN-aware
 * one of src/coll/, both as schedules on the communicator's layout (schedule.h), except
 * the broadcast, whose WAN-aware form is the paper's pipelined two-layer tree costed by
 * its own model (plogp_model.c).
 *
 * The WAN-aware schedules follow the stages of src/coll/coll_<name>.c: the MPI's own
 * collective inside every cluster at once (costed by its rules on the cluster's ranks),
 * one round of messages between coordinators (each cluster's lowest rank; the root is
 * rank 0, so it is its cluster's coordinator), and the MPI's own collective inside
 * every cluster again. Their pipelining (allgather, allreduce's split form) is not
 * counted: the prediction is an upper bound there.
 *
 * The MPI's own algorithm stays unless another is predicted at least IST_NATIVE_MARGIN
 * faster: the model's error must not make a call slower than the library would have
 * made it. 15%, not 10%: the model is most optimistic for ours where one TCP connection
 * carries a large transfer at 1 Gbit/s (scatter's and the aggregated alltoall's
 * coordinator messages); the figures behind the choice are in the commit that made it
 * (1c40ce7). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_cost.h"
#include "coll_tuning.h"

enum ist_coll_id ist_coll_regular(enum ist_coll_id id)
{
    return (enum ist_coll_id)ist_coll_registry[id].regular;
}

/* Each cluster's ranks in rank order. */
struct clusters {
    int n, largest;
    int *start, *count, *members;
};

static int clusters_of(const struct ist_layout *l, struct clusters *c)
{
    c->n = l->nclusters;
    c->largest = 0;
    c->start = calloc((size_t)c->n + 1, sizeof(int));
    c->count = calloc((size_t)c->n + 1, sizeof(int));
    c->members = malloc((size_t)l->size * sizeof(int));
    if (!c->start || !c->count || !c->members) return -1;
    for (int r = 0; r < l->size; r++) c->count[l->cluster[r]]++;
    for (int k = 1; k <= c->n; k++) c->start[k] = c->start[k - 1] + c->count[k - 1];
    int *fill = calloc((size_t)c->n, sizeof(int));
    if (!fill) return -1;
    for (int r = 0; r < l->size; r++) {
        int k = l->cluster[r];
        c->members[c->start[k] + fill[k]++] = r;
    }
    free(fill);
    for (int k = 0; k < c->n; k++)
        if (c->count[k] > c->largest) c->largest = c->count[k];
    return 0;
}

static void clusters_free(struct clusters *c)
{
    free(c->start);
    free(c->count);
    free(c->members);
}

static struct ist_group group(const struct clusters *c, int k)
{
    return (struct ist_group){&c->members[c->start[k]], c->count[k]};
}

static int coordinator(const struct clusters *c, int k) { return c->members[c->start[k]]; }

long ist_rendezvous_bytes(struct ist_mpi f)
{
    /* Open MPI: btl_tcp_eager_limit is 65536 bytes with ob1's header (ompi_info). MPICH
     * over UCX's TCP transport: UCX chooses; measured with `isthmus bench pingpong` across
     * a 5 ms link (docs/model.md): payloads up to 19503 bytes go eagerly, from 19547 on
     * the round trip grows by four one-way latencies per message. */
    return f.flavour == IST_MPI_OPENMPI ? 65536 - 64 : 19504;
}

int ist_rendezvous_trips(struct ist_mpi f)
{
    /* ob1 sends its first fragment and waits for the receiver's answer; UCX's rendezvous
     * over TCP was measured at two round trips (its request, then the receiver's get) */
    return f.flavour == IST_MPI_OPENMPI ? 1 : 2;
}

double ist_wake_us(struct ist_mpi f)
{
    /* Fitted on collectives/grid-2x2 (4 ranks and the router on 2 cores, both MPIs): the
     * MPI's own algorithms at 8 B to 1 MiB were predicted 24% (Open MPI) and 46% (MPICH)
     * short in the median without it, 2% and 7% with (docs/model.md). */
    return f.nonblocking ? 400 : 0;
}

/* An empty schedule, costed with the MPI's rendezvous and its ranks' way of waiting. */
static void sched_init(struct ist_sched *s, struct ist_mpi f)
{
    ist_sched_init(s);
    s->rendezvous = ist_rendezvous_bytes(f);
    s->rendezvous_trips = ist_rendezvous_trips(f);
    s->wake_us = ist_wake_us(f);
}

/* The MPI's own `id` inside every cluster at once, from round at: the rounds it takes. */
static int in_clusters(struct ist_sched *s, int at, struct ist_mpi f, enum ist_coll_id id,
                       const struct clusters *c, long bytes)
{
    int most = 0;
    for (int k = 0; k < c->n; k++) {
        int r = 0;
        (void)ist_native_schedule(f, id, s, at, group(c, k), bytes, &r);
        if (r > most) most = r;
    }
    return most;
}

/* The WAN-aware algorithm's schedule; returns its name. */
static const char *wan_aware(struct ist_sched *s, enum ist_coll_id id, long b,
                             struct ist_mpi f, const struct clusters *c, int size)
{
    int at = 0;
    switch (id) {
    case IST_COLL_BARRIER:
        at += in_clusters(s, at, f, IST_COLL_BARRIER, c, 0);
        for (int i = 0; i < c->n; i++)
            for (int j = 0; j < c->n; j++) ist_sched_msg(s, at, coordinator(c, i), coordinator(c, j), 0, IST_MSG_EAGER);
        at++;
        in_clusters(s, at, f, IST_COLL_BARRIER, c, 0);
        return "hierarchical";
    case IST_COLL_REDUCE:
        at += in_clusters(s, at, f, IST_COLL_REDUCE, c, b);
        for (int k = 1; k < c->n; k++) ist_sched_msg(s, at, coordinator(c, k), 0, b, IST_MSG_REDUCE | IST_MSG_EAGER);
        return "hierarchical";
    case IST_COLL_GATHER:
        at += in_clusters(s, at, f, IST_COLL_GATHER, c, b);
        for (int k = 1; k < c->n; k++) ist_sched_msg(s, at, coordinator(c, k), 0, b * c->count[k], IST_MSG_EAGER);
        return "hierarchical";
    case IST_COLL_SCATTER:
        for (int k = 1; k < c->n; k++) ist_sched_msg(s, at, 0, coordinator(c, k), b * c->count[k], IST_MSG_EAGER);
        in_clusters(s, at + 1, f, IST_COLL_SCATTER, c, b);
        return "hierarchical";
    case IST_COLL_ALLGATHER:
        at += in_clusters(s, at, f, IST_COLL_GATHER, c, b);
        for (int i = 0; i < c->n; i++)
            for (int j = 0; j < c->n; j++)
                ist_sched_msg(s, at, coordinator(c, i), coordinator(c, j), b * c->count[i], IST_MSG_EAGER);
        in_clusters(s, at + 1, f, IST_COLL_BCAST, c, b * size);
        return "hierarchical";
    case IST_COLL_ALLTOALL:
        /* the cluster's own blocks, then every block for other clusters via the
         * coordinators: up (a gather), across (one message per pair of clusters), down */
        at += in_clusters(s, at, f, IST_COLL_ALLTOALL, c, b);
        for (int k = 0; k < c->n; k++) {
            long away = b * (size - c->count[k]);
            for (int j = 1; j < c->count[k]; j++) {
                ist_sched_msg(s, at, c->members[c->start[k] + j], coordinator(c, k), away, 0);
                ist_sched_msg(s, at + 2, coordinator(c, k), c->members[c->start[k] + j], away, 0);
            }
            for (int j = 0; j < c->n; j++)
                ist_sched_msg(s, at + 1, coordinator(c, k), coordinator(c, j),
                              b * c->count[k] * c->count[j], IST_MSG_EAGER);
        }
        return "aggregated";
    case IST_COLL_REDUCE_SCATTER_BLOCK:
        at += in_clusters(s, at, f, IST_COLL_REDUCE, c, b * size);
        for (int i = 0; i < c->n; i++)
            for (int j = 0; j < c->n; j++)
                ist_sched_msg(s, at, coordinator(c, i), coordinator(c, j), b * c->count[j],
                              IST_MSG_REDUCE | IST_MSG_EAGER);
        in_clusters(s, at + 1, f, IST_COLL_SCATTER, c, b);
        return "hierarchical";
    case IST_COLL_SCAN:
        at += in_clusters(s, at, f, IST_COLL_SCAN, c, b);
        for (int i = 0; i < c->n; i++)
            for (int j = i + 1; j < c->n; j++)
                ist_sched_msg(s, at, c->members[c->start[i] + c->count[i] - 1], coordinator(c, j), b,
                              IST_MSG_REDUCE | IST_MSG_EAGER);
        in_clusters(s, at + 1, f, IST_COLL_BCAST, c, b);
        return "hierarchical";
    default: return NULL;
    }
}

/* Allreduce: the cluster reduce, then coordinators exchange the whole vector ("direct")
 * or reduce-scatter and allgather it among themselves ("split"), then the cluster
 * broadcast; the layer takes the cheaper exchange (src/coll/allreduce/allreduce.c). */
static double allreduce_wan_aware(long b, struct ist_mpi f, const struct clusters *c,
                                  const struct ist_plogp *p, const struct ist_layout *l)
{
    double best = HUGE_VAL;
    for (int split = 0; split < 2; split++) {
        struct ist_sched s;
        sched_init(&s, f);
        int at = in_clusters(&s, 0, f, IST_COLL_REDUCE, c, b);
        long part = split ? (b + c->n - 1) / c->n : b;
        for (int step = 0; step < 1 + split; step++, at++)
            for (int i = 0; i < c->n; i++)
                for (int j = 0; j < c->n; j++)
                    ist_sched_msg(&s, at, coordinator(c, i), coordinator(c, j), part,
                                  (step == 0 ? IST_MSG_REDUCE : 0) | IST_MSG_EAGER);
        in_clusters(&s, at, f, IST_COLL_BCAST, c, b);
        double t = ist_sched_time(&s, p, l);
        ist_sched_free(&s);
        if (t < best) best = t;
    }
    return best;
}

/* Gather and Scatter linear in eager segments (src/coll/gather/gather_linear.c, scatter/scatter_linear.c): every block straight
 * between its rank and the root, all at once, none waiting for a rendezvous up to the
 * flood bound of its wide-area link (IST_LINEAR_FLOOD), one message above it. */
static double linear_eager(enum ist_coll_id base, long b, struct ist_mpi f,
                           const struct ist_plogp *p, const struct ist_layout *l)
{
    int *ranks = calloc((size_t)l->nclusters, sizeof *ranks);
    for (int r = 0; r < l->size; r++) ranks[l->cluster[r]]++;
    struct ist_sched s;
    sched_init(&s, f);
    /* the root scatters the blocks that move whole first, then the segments, as
     * gather_linear.c does (a gather's blocks leave from different ranks: one pass) */
    const int passes = base == IST_COLL_SCATTER ? 2 : 1;
    for (int pass = 0; pass < passes; pass++)
        for (int r = 1; r < l->size; r++) {
            const int c = l->cluster[r];
            const int eager = c == l->cluster[0] || ist_linear_in_segments(b, ranks[c]);
            if (passes == 2 && eager != pass) continue;
            ist_sched_msg(&s, 0, base == IST_COLL_GATHER ? r : 0, base == IST_COLL_GATHER ? 0 : r,
                          b, eager ? IST_MSG_EAGER : 0);
        }
    double t = ist_sched_time(&s, p, l);
    ist_sched_free(&s);
    free(ranks);
    return t;
}

int ist_coll_rooted(enum ist_coll_id base)
{
    return base == IST_COLL_BCAST || base == IST_COLL_REDUCE || base == IST_COLL_GATHER ||
           base == IST_COLL_SCATTER;
}

int ist_wan_pays(const struct ist_plogp *m)
{
    const double mib = 1 << 20;
    return m->wan.L >= 4 * m->lan.L ||
           ist_plogp_at(&m->wan, m->wan.g, mib) >= 2 * ist_plogp_at(&m->lan, m->lan.g, mib);
}

static void add(struct ist_choice *out, const char *name, int native, double t)
{
    if (out->n == IST_CANDIDATES) return;
    struct ist_candidate *c = &out->c[out->n++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->native = native;
    c->time_us = t;
}

void ist_coll_choose(enum ist_coll_id id, long bytes, struct ist_mpi f,
                     const struct ist_plogp *p, const struct ist_layout *l, struct ist_choice *out)
{
    memset(out, 0, sizeof *out);
    enum ist_coll_id base = ist_coll_regular(id);
    int *all = malloc((size_t)l->size * sizeof(int));
    if (!all) return;
    struct ist_sched s;
    char name[40];
    /* the MPI's own by the call's own rules (a v-form's may differ from its regular form's).
     * For the selector (l->every_root) a rooted one is costed as the mean over its roots:
     * its trees are laid out from the root, so how often they cross the wide area depends
     * on it, and one choice serves every root (from root 0 alone, a Bcast whose root went
     * round 8 ranks ran the MPI's binomial tree 2.7-3.0x slower than the two-layer one it
     * replaced: adaptive/live) */
    const int roots = l->every_root && ist_coll_rooted(base) ? l->size : 1;
    double sum = 0;
    for (int root = 0; root < roots; root++) {
        for (int r = 0; r < l->size; r++) all[r] = (r + root) % l->size; /* root first */
        sched_init(&s, f);
        int rounds = 0;
        snprintf(name, sizeof name, "native (%s)",
                 ist_native_schedule(f, id, &s, 0, (struct ist_group){all, l->size}, bytes,
                                     &rounds));
        sum += ist_sched_time(&s, p, l);
        ist_sched_free(&s);
    }
    add(out, name, 1, sum / roots);
    free(all);

    struct clusters c = {0};
    if (l->nclusters > 1 && clusters_of(l, &c) == 0) {
        if (base == IST_COLL_BCAST) {
            add(out, "pipelined two-layer", 0,
                ist_bcast_best_pipelined_under(p, c.n, c.largest, bytes > 0 ? bytes : 1,
                                               IST_EAGER_SEGMENT).time);
        } else if (base == IST_COLL_ALLREDUCE) {
            add(out, "hierarchical", 0, allreduce_wan_aware(bytes, f, &c, p, l));
        } else {
            sched_init(&s, f);
            const char *wan = wan_aware(&s, base, bytes, f, &c, l->size);
            if (wan) add(out, wan, 0, ist_sched_time(&s, p, l));
            ist_sched_free(&s);
        }
        if (base == IST_COLL_GATHER || base == IST_COLL_SCATTER)
            add(out, "linear in eager segments", 0, linear_eager(base, bytes, f, p, l));
    }
    clusters_free(&c);
    out->best = 0;
    for (int i = 1; i < out->n && ist_wan_pays(p); i++)
        if (out->c[i].time_us < (1 - IST_NATIVE_MARGIN) * out->c[0].time_us &&
            out->c[i].time_us < out->c[out->best].time_us)
            out->best = i;
}
