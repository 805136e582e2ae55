/* Live adaptation (layer.adapt = true: ISTHMUS_ADAPT=1): the selector's choices follow a
 * wide area that changes while the run goes on (docs/layer.md, "Live adaptation").
 *
 * When: on every communicator whose calls the selector decides (hier_select.c); not on
 * intercommunicators, communicators inside one cluster, collectives whose algorithm is
 * forced, or communicators that span zipper sites (their way is fixed).
 *
 * How:
 *  - Each call the selector decided is timed, from its decision (ist_adapt_begin) to its
 *    return (ist_adapt_after, in the generated wrapper), and set against the time the
 *    model predicted for the way it took. Per choice (collective and size), and for a
 *    rooted collective per side of its root (in this rank's cluster, in another, itself),
 *    the IST_DRIFT_BASE calls after its first IST_DRIFT_SKIP give its usual log ratio
 *    (median) and spread (MAD); after them, when each of the last IST_DRIFT_RECENT departs
 *    from it, on the same side, by more than DRIFT_MIN and by more than DRIFT_SPREADS
 *    spreads, this rank has seen a drift.
 *  - Every `every` calls on the communicator (ISTHMUS_ADAPT_EVERY, default 8) each rank
 *    starts two nonblocking reductions, the largest slow-down and speed-up it saw (MAXLOC)
 *    and whether it saw one (SUM), and completes the ones it started `every` calls before:
 *    all ranks learn the same at the same call, and the reductions had the calls in
 *    between to finish, so no round trip is added to a call's critical path. A drift is
 *    followed when a quorum of ranks saw it (a quarter, at least 2: one rank preempted for
 *    a few calls on a shared core is not the network; with one rank enough, 6-11 switches
 *    were made in runs where nothing changed, adaptive/live) and no quorum saw the other
 *    way: a rank's time includes its wait for the others, and when the ranks of one
 *    cluster reach the calls first and another's last, then the other way round, the first
 *    see slower calls and the last as much faster with nothing changed (9 false switches
 *    in a steady dilated run), while a change of the network moves them one way. (The
 *    least time over the ranks, the last to arrive, is no cure: in a hierarchical
 *    Allreduce its cluster's partial result crosses the wide area to one that is already
 *    there, and 16 ranks on 2 cores never saw a 20 ms WAN in it.) A change is followed once
 *    IST_DRIFT_RECENT calls of a choice's root side depart, within two checks after.
 *  - On a drift the wide-area class is measured again between the coordinators of the
 *    first two clusters (plogp_measure.c's method: about 7 round trips and a short train),
 *    known on every rank after. When it confirms the drift (confirms()) it becomes the
 *    communicator's model and its cached choices and broadcast shapes are made again from
 *    it (hier_select.c); when not, the model stays and each rank learns the drift as its
 *    calls' noise (widen_spreads()). Either way the switch is kept for the profile: call
 *    number, cause, old and new parameters, old and new choices.
 *  - A hierarchy built later takes its rank 0's latest measured class (one small
 *    broadcast), so that communicators created after a change start from it and their
 *    ranks agree. A change before a communicator's first calls is in its own usual ratios:
 *    so each rank keeps the usual ratio of every choice (collective, size, communicator
 *    size and clusters, algorithm, under one wide-area class), learnt on the first
 *    communicator that made it, and a later communicator's usual ratio that departs from
 *    it as a drift does is seen as one.
 * Cost when nothing changes: two clock reads and a logarithm per call, and one reduction
 * of two (double, int) pairs every `every` calls. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hier_adapt.h"
#include "hier_parts.h"
#include "topology.h"
#include "world.h"

#define DRIFT_MIN 0.405f   /* log 1.5: a change smaller than 1.5x is left alone */
#define DRIFT_SPREADS 4.0f /* ... and one within 4 MADs of the usual ratio */

struct ist_adapt {
    long calls;            /* calls decided on this communicator */
    MPI_Request check[2];  /* the reductions started at the last check */
    struct { double v; int rank; } seen[2], agreed[2]; /* [0] slow-down, [1] speed-up */
    int saw[2], saw_agreed[2]; /* this rank saw one; how many ranks did */
    struct ist_plogp own;  /* the model after a change: the layer's lan, a measured wan */
    int owns_wan;
    double started_us;     /* of the call under way */
    const struct ist_hier *h;
};

_Thread_local struct ist_decision *ist_adapt_pending __attribute__((tls_model("initial-exec")));
static _Thread_local struct ist_adapt *pending_state; /* the pending decision's communicator's */
static _Thread_local int pending_side;                /* an enum ist_root_side */

static int adapt_on, every = 8;
/* This rank's latest measured wide-area class (the last switch of any communicator), for
 * hierarchies built later, and the switches this rank recorded as a rank 0; guarded, as
 * threads may run collectives on different communicators at once. */
static struct ist_plogp_class latest;
static struct ist_adapt_event events[IST_ADAPT_EVENTS]; /* the first ones: later dropped */
static int nevents;
/* The usual ratios learnt (the first communicator's of each choice; round robin). */
#define USUAL_KEPT 64
static struct usual {
    int id, side, size, nclusters;
    long bytes;
    double wan_L, wan_g; /* the wide-area class it was learnt under */
    char name[40];
    float level;
} usual[USUAL_KEPT];
static int next_usual;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void ist_adapt_init(void)
{
    const char *on = getenv("ISTHMUS_ADAPT"), *n = getenv("ISTHMUS_ADAPT_EVERY");
    adapt_on = on && *on && strcmp(on, "0") != 0;
    if (n && atoi(n) > 0) every = atoi(n);
}

int ist_adapt_on(void) { return adapt_on; }
int ist_adapt_every(void) { return every; }

const struct ist_adapt_event *ist_adapt_events(int *n)
{
    *n = nevents;
    return events;
}

static void free_own(struct ist_adapt *a)
{
    if (a->owns_wan) ist_plogp_class_free(&a->own.wan);
    a->owns_wan = 0;
}

/* h's model becomes the layer's lan with wan (copied). */
static void take_wan(struct ist_hier *h, const struct ist_plogp_class *wan)
{
    struct ist_adapt *a = h->adapt;
    struct ist_plogp_class copy;
    if (ist_plogp_class_copy(&copy, wan) != 0) return;
    free_own(a);
    a->own = (struct ist_plogp){.lan = ist_hier_model()->lan, .wan = copy};
    snprintf(a->own.platform, sizeof a->own.platform, "measured while running");
    a->owns_wan = 1;
    h->model = &a->own;
    memset(h->shapes, 0, sizeof h->shapes); /* the broadcast's shapes came from the old one */
    h->next_shape = 0;
}

void ist_adapt_built(struct ist_hier *h)
{
    h->adapt = calloc(1, sizeof *h->adapt);
    h->adapt->h = h;
    h->adapt->check[0] = h->adapt->check[1] = MPI_REQUEST_NULL;
    /* rank 0's latest measured class, so that every rank of a new communicator starts
     * from the same model: its size first, then its points */
    struct ist_plogp_class mine = {0};
    pthread_mutex_lock(&lock);
    if (h->rank == 0 && latest.present) ist_plogp_class_copy(&mine, &latest);
    pthread_mutex_unlock(&lock);
    int n = mine.present ? mine.n : 0;
    ist_bcast_waiting(&n, 1, MPI_INT, 0, h->comm);
    double L = mine.L, *pts = n ? malloc((size_t)n * 4 * sizeof *pts) : NULL;
    for (int i = 0; h->rank == 0 && i < n; i++) {
        pts[4 * i] = (double)mine.sizes[i];
        pts[4 * i + 1] = mine.os[i];
        pts[4 * i + 2] = mine.orecv[i];
        pts[4 * i + 3] = mine.g[i];
    }
    ist_plogp_class_free(&mine);
    if (n == 0) return;
    ist_bcast_waiting(&L, 1, MPI_DOUBLE, 0, h->comm);
    ist_bcast_waiting(pts, 4 * n, MPI_DOUBLE, 0, h->comm);
    struct ist_plogp_class wan = {0};
    if (ist_plogp_class_init(&wan, L, n) == 0) {
        for (int i = 0; i < n; i++) {
            wan.sizes[i] = (long)pts[4 * i];
            wan.os[i] = pts[4 * i + 1];
            wan.orecv[i] = pts[4 * i + 2];
            wan.g[i] = pts[4 * i + 3];
        }
        take_wan(h, &wan);
    }
    ist_plogp_class_free(&wan);
    free(pts);
}

void ist_adapt_forget(struct ist_hier *h)
{
    struct ist_adapt *a = h->adapt;
    if (!a) return;
    if (a->check[0] != MPI_REQUEST_NULL) ist_wait_all(2, a->check); /* every rank started them */
    free_own(a);
    free(a);
    h->adapt = NULL;
}

static int by_value(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

static float median(const float *v, int n, float *sorted)
{
    memcpy(sorted, v, (size_t)n * sizeof *v);
    qsort(sorted, (size_t)n, sizeof *sorted, by_value);
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* d's usual ratio (just learnt) against the one its choice had on the communicator that
 * made it first, under the same wide-area class: a departure as large as a drift's is
 * one (seen now, agreed at the next check); none known, d's becomes it. */
static void against_usual(struct ist_adapt *a, const struct ist_decision *d, int side)
{
    const struct ist_hier *h = a->h;
    const struct ist_plogp_class *wan = &h->model->wan;
    double g = wan->n > 0 ? ist_plogp_at(wan, wan->g, IST_EAGER_SEGMENT) : 0;
    const struct ist_drift *s = &d->drift[side];
    pthread_mutex_lock(&lock);
    struct usual *u = NULL;
    for (int i = 0; i < USUAL_KEPT && !u; i++)
        if (usual[i].id == d->id && usual[i].side == side && usual[i].bytes == d->bytes &&
            usual[i].size == h->size && usual[i].nclusters == h->nclusters &&
            usual[i].wan_L == wan->L && usual[i].wan_g == g && strcmp(usual[i].name, d->name) == 0)
            u = &usual[i];
    if (!u) {
        usual[next_usual] = (struct usual){d->id, side, h->size, h->nclusters, d->bytes, wan->L,
                                           g, "", s->level};
        snprintf(usual[next_usual].name, sizeof usual[next_usual].name, "%s", d->name);
        next_usual = (next_usual + 1) % USUAL_KEPT;
    }
    float then = u ? u->level : s->level;
    pthread_mutex_unlock(&lock);
    float bar = fmaxf(DRIFT_MIN, DRIFT_SPREADS * s->spread);
    for (int k = 0; k < 2; k++) {
        float away = k == 0 ? s->level - then : then - s->level;
        if (away <= bar) continue;
        a->saw[k] = 1;
        if (away > a->seen[k].v) a->seen[k].v = away;
    }
}

void ist_adapt_begin(struct ist_hier *h, int root)
{
    ist_adapt_pending = h->last && h->last->predicted_us > 0 ? h->last : NULL;
    pending_state = h->adapt;
    pending_side = root < 0 || root >= h->size ? IST_ROOT_NEAR
                   : root == h->rank                                ? IST_ROOT_SELF
                   : h->cluster_of[root] == h->my_cluster           ? IST_ROOT_NEAR
                                                                    : IST_ROOT_FAR;
    if (ist_adapt_pending) h->adapt->started_us = ist_now_us();
}

/* The call under way ended: its log ratio of measured over predicted time into its
 * choice's statistics, and this rank's drift, if it sees one, into the next check. */
void ist_adapt_observe(void)
{
    struct ist_decision *d = ist_adapt_pending;
    struct ist_adapt *a = pending_state;
    ist_adapt_pending = NULL;
    struct ist_drift *s = &d->drift[pending_side];
    float r = (float)log(fmax(ist_now_us() - a->started_us, 0.01) / d->predicted_us);
    float tmp[IST_DRIFT_BASE + IST_DRIFT_RECENT];
    if (s->n < IST_DRIFT_SKIP) {
        s->n++;
        return;
    }
    int seen = s->n++ - IST_DRIFT_SKIP; /* the calls counted */
    if (seen < IST_DRIFT_BASE) {
        s->log_ratio[seen] = r;
        if (seen + 1 == IST_DRIFT_BASE) {
            s->level = median(s->log_ratio, IST_DRIFT_BASE, tmp);
            float dev[IST_DRIFT_BASE];
            for (int i = 0; i < IST_DRIFT_BASE; i++) dev[i] = fabsf(s->log_ratio[i] - s->level);
            s->spread = median(dev, IST_DRIFT_BASE, tmp);
            against_usual(a, d, pending_side);
        }
        return;
    }
    s->log_ratio[IST_DRIFT_BASE + (seen - IST_DRIFT_BASE) % IST_DRIFT_RECENT] = r;
    if (seen + 1 < IST_DRIFT_BASE + IST_DRIFT_RECENT) return;
    /* every one of the last calls away from the usual ratio, on the same side: one slow
     * call (a rank preempted, another root) is noise, not a change of the network */
    const float *recent = s->log_ratio + IST_DRIFT_BASE;
    float lo = recent[0], hi = recent[0];
    for (int i = 1; i < IST_DRIFT_RECENT; i++) {
        lo = fminf(lo, recent[i]);
        hi = fmaxf(hi, recent[i]);
    }
    float bar = fmaxf(DRIFT_MIN, DRIFT_SPREADS * s->spread);
    float slower = lo - s->level, faster = s->level - hi;
    if (slower > bar) a->saw[0] = 1;
    if (faster > bar) a->saw[1] = 1;
    if (slower > bar || faster > bar) s->away = fmaxf(s->away, fmaxf(slower, faster));
    if (slower > bar && slower > a->seen[0].v) a->seen[0].v = slower;
    if (faster > bar && faster > a->seen[1].v) a->seen[1].v = faster;
}

/* Whether the wide area measured again (e) changed the way the calls drifted: L or g more
 * than SAME times larger for a slow-down, smaller for a speed-up. Measured again with
 * nothing changed, L came within 1.02-1.10 ms of 1.02 ms in steady dilated runs; in
 * undilated ones, where a rank's turn on a shared core can hold one round trip, also
 * g(16 KiB) 380 us for 136, which as a model changed the broadcast's shapes for the worse. */
#define SAME 1.25
static int confirms(int slower, const struct ist_adapt_event *e)
{
    return slower ? e->new_L > SAME * e->old_L || e->new_g > SAME * e->old_g
                  : SAME * e->new_L < e->old_L || SAME * e->new_g < e->old_g;
}

/* Every choice side's spread made wide enough that the largest departure from its usual
 * ratio this rank saw as a drift is not one again; the number of choices. */
static int widen_spreads(struct ist_hier *h)
{
    int n = 0;
    for (int i = 0; i < IST_DECISION_CACHE; i++) {
        if (!h->decisions[i].id) continue;
        n++;
        for (int k = 0; k < IST_ROOT_SIDES; k++) {
            struct ist_drift *s = &h->decisions[i].drift[k];
            s->spread = fmaxf(s->spread, 1.25f * s->away / DRIFT_SPREADS);
        }
    }
    return n;
}

/* The agreed drift (slower: a slow-down, else a speed-up): the wide area measured again,
 * the choices made again when it confirms the drift, the switch kept. */
static void follow(struct ist_hier *h, int slower)
{
    struct ist_adapt *a = h->adapt;
    const struct ist_plogp_class *before = &h->model->wan;
    struct ist_adapt_event e = {.comm_size = h->size, .nclusters = h->nclusters, .call = a->calls};
    e.world_rank = ist_world_rank();
    for (int k = 0; k < 2; k++) {
        e.factor[k] = exp(a->agreed[k].v);
        e.seen_by[k] = a->agreed[k].v > 0 ? a->agreed[k].rank : -1;
        e.ranks_seen[k] = a->saw_agreed[k];
    }
    e.old_L = before->L;
    e.old_g = ist_plogp_at(before, before->g, IST_EAGER_SEGMENT);
    double started = ist_now_us();
    const struct ist_plogp_class *lan = &ist_hier_model()->lan;
    double lan_or[2];
    for (int k = 0; k < 2 && lan->n > 0; k++)
        lan_or[k] = ist_plogp_at(lan, lan->orecv, k ? IST_EAGER_SEGMENT : 0);
    struct ist_plogp_class wan;
    ist_plogp_measure_wan(h->comm, 0, h->first[1], lan->n > 0 ? lan_or : NULL, &wan);
    e.new_L = wan.n > 0 ? wan.L : e.old_L;
    e.new_g = wan.n > 0 ? ist_plogp_at(&wan, wan.g, IST_EAGER_SEGMENT) : e.old_g;
    const int noise = wan.n > 0 && !confirms(slower, &e);
    if (noise) {
        /* the network is as it was, or measured changed the other way: what the ranks saw
         * was their calls' own noise (their turns at waiting for each other), learnt as
         * such; every rank has the same measurement, so every rank decides so */
        e.measure_seconds = (ist_now_us() - started) / 1e6;
        e.unchanged = widen_spreads(h);
    } else if (wan.n > 0) {
        take_wan(h, &wan);
        pthread_mutex_lock(&lock);
        ist_plogp_class_free(&latest);
        ist_plogp_class_copy(&latest, &wan);
        pthread_mutex_unlock(&lock);
    }
    if (!noise) {
        e.measure_seconds = (ist_now_us() - started) / 1e6;
        e.nchanged = ist_hier_choose_again(h, e.changed, IST_ADAPT_CHANGES, &e.unchanged);
    }
    ist_plogp_class_free(&wan);
    if (h->rank != 0) return;
    pthread_mutex_lock(&lock);
    if (nevents < IST_ADAPT_EVENTS) events[nevents++] = e;
    pthread_mutex_unlock(&lock);
}

/* A drift is followed when at least this many of the communicator's ranks saw it. */
static int quorum(int size)
{
    int q = size / 4 > 2 ? size / 4 : 2;
    return q < size ? q : size;
}

void ist_adapt_check(struct ist_hier *h)
{
    struct ist_adapt *a = h->adapt;
    if (++a->calls % every) return;
    if (a->check[0] != MPI_REQUEST_NULL) {
        ist_wait_all(2, a->check); /* started `every` calls ago: done by now, as a rule */
        const int q = quorum(h->size);
        const int slower = a->saw_agreed[0] >= q && a->saw_agreed[1] < q,
                  faster = a->saw_agreed[1] >= q && a->saw_agreed[0] < q;
        if (!slower) a->agreed[0].v = 0;
        if (!faster) a->agreed[1].v = 0;
        if (slower || faster) {
            follow(h, slower);
            a->seen[0].v = a->seen[1].v = 0; /* seen against the choices just replaced */
            a->saw[0] = a->saw[1] = 0;
        }
    }
    for (int k = 0; k < 2; k++) {
        a->seen[k].rank = h->rank;
        a->agreed[k] = a->seen[k];
        a->saw_agreed[k] = a->saw[k];
    }
    PMPI_Iallreduce(MPI_IN_PLACE, a->agreed, 2, MPI_DOUBLE_INT, MPI_MAXLOC, h->comm, &a->check[0]);
    PMPI_Iallreduce(MPI_IN_PLACE, a->saw_agreed, 2, MPI_INT, MPI_SUM, h->comm, &a->check[1]);
    a->seen[0].v = a->seen[1].v = 0;
    a->saw[0] = a->saw[1] = 0;
}
