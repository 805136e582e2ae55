/* The selector: which way a call of the WAN-aware collectives takes (the MPI's own, the
 * hierarchical algorithm, or the linear one in eager segments), from a tuning file's
 * measurements where one has a rule, else from the model's predictions
 * (src/model/coll_choose.c), remembered per communicator, collective and size. Cost: one
 * prediction per new (collective, size) on a communicator; a v-form's policy once per
 * communicator, and one small allreduce per call when it must agree on the size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_tuning.h"
#include "hier_parts.h"
#include "topology.h"
#include "world.h"

/* Whether wide-area messages cost enough more than local ones for the hierarchy to pay
 * (from the model, at MPI_Init): the rule for communicators too large to cost each call. */
static int wan_pays;
/* Whose selection rules this MPI's own collectives follow (coll_cost.h). */
#if defined(OPEN_MPI)
static const enum ist_mpi_flavour flavour = IST_MPI_OPENMPI;
#else
static const enum ist_mpi_flavour flavour = IST_MPI_MPICH;
#endif
/* ISTHMUS_COLL_TUNING: measured choices (isthmus coll tune), which win where they apply. */
static struct ist_tuning tuning;
static int log_choices;

void ist_hier_select_init(int log)
{
    log_choices = log;
    const char *tuning_file = getenv("ISTHMUS_COLL_TUNING");
    if (tuning_file && *tuning_file) {
        char err[512] = "";
        if (ist_tuning_read(tuning_file, &tuning, err, sizeof err) != 0 && ist_world_rank() == 0)
            fprintf(stderr, "isthmus: ISTHMUS_COLL_TUNING: %s; the model chooses\n", err);
    }
    wan_pays = ist_wan_pays(ist_hier_model());
    if (!wan_pays && log_choices && ist_world_rank() == 0)
        fprintf(stderr, "isthmus: the model's wide-area links are no slower than its local "
                        "ones: native collectives (unless an algorithm is forced)\n");
}

int ist_hier_can_choose_ours(void) { return wan_pays || tuning.n > 0; }

void ist_hier_select_free(void) { ist_tuning_free(&tuning); }

/* Predicted microseconds of our best algorithm and of the MPI's own for id at bytes on h,
 * and which of them is chosen (*pick: 1 ours; the model's choice keeps the MPI's own
 * unless ours is clearly faster): a tuning file's measurements where it has a rule, else
 * the model. 0 when neither can say (the WAN costs no more than the LAN, or the
 * communicator is too large to cost). */
struct prediction {
    double ours, native; /* microseconds: our best algorithm, the MPI's own */
    double hier, linear; /* ours: the hierarchical one; gather's and scatter's linear one
                          * in eager segments (1e300: none) */
    int pick;            /* an enum ist_way */
    char name[40];       /* of the one picked */
    int measured;        /* from a tuning file's rule */
};

/* A candidate's name in coll_choose.c: the linear algorithm in eager segments. */
static int is_linear(const char *name) { return strncmp(name, "linear in eager", 15) == 0; }

static int predicted(struct ist_hier *h, enum ist_coll_id id, long bytes, struct prediction *p)
{
    const struct ist_mpi mpi = {flavour, ist_sleep_wait};
    const struct ist_tuning_rule *rule =
        ist_tuning_find(&tuning, mpi, h->size, h->nclusters, id, bytes);
    if (rule) {
        *p = (struct prediction){rule->ours_us, rule->native_us, rule->ours_us, 1e300,
                                 rule->ours ? IST_WAY_OURS : IST_WAY_NATIVE, "", 1};
        snprintf(p->name, sizeof p->name, "%s", rule->ours ? "ours" : "native");
        return 1;
    }
    if (!wan_pays || h->size > COSTED_RANKS) return 0;
    struct ist_layout l = {h->size, h->nclusters, h->cluster_of, h->host, 1};
    struct ist_choice c;
    ist_coll_choose(id, bytes, mpi, h->model, &l, &c);
    if (c.n == 0) return 0;
    *p = (struct prediction){1e300, 1e300, 1e300, 1e300,
                             c.c[c.best].native ? IST_WAY_NATIVE
                             : is_linear(c.c[c.best].name) ? IST_WAY_LINEAR : IST_WAY_OURS,
                             "", 0};
    memcpy(p->name, c.c[c.best].name, sizeof p->name);
    for (int i = 0; i < c.n; i++) {
        double *t = c.c[i].native ? &p->native : &p->ours;
        if (c.c[i].time_us < *t) *t = c.c[i].time_us;
        if (!c.c[i].native) *(is_linear(c.c[i].name) ? &p->linear : &p->hier) = c.c[i].time_us;
    }
    return 1;
}

/* Which way (enum ist_way) for id at bytes on h, without the cache, into d (with the
 * time predicted for it, for live adaptation). Every rank decides from the same figures. */
static void decide(struct ist_hier *h, enum ist_coll_id id, long bytes, struct ist_decision *d)
{
    struct prediction p;
    if (!predicted(h, id, bytes, &p)) {
        d->way = wan_pays ? IST_WAY_OURS : IST_WAY_NATIVE;
        snprintf(d->name, sizeof d->name, "%s", d->way == IST_WAY_OURS ? "ours" : "native");
        return;
    }
    if (log_choices && h->rank == 0)
        fprintf(stderr, "isthmus: selector: %s of %ld B on %d ranks in %d clusters: %s, %s: "
                        "ours %.0f us, native %.0f us\n",
                ist_coll_names[id], bytes, h->size, h->nclusters, p.name,
                p.measured ? "measured (tuning file)" : "predicted", p.ours, p.native);
    d->way = p.pick;
    d->predicted_us = p.pick == IST_WAY_NATIVE ? p.native
                      : p.pick == IST_WAY_LINEAR ? p.linear
                                                 : p.ours;
    snprintf(d->name, sizeof d->name, "%s", p.name);
}

/* decide(), remembered per communicator, collective and size (key). */
typedef void chooser(struct ist_hier *h, enum ist_coll_id id, long key, struct ist_decision *d);

static int remembered(struct ist_hier *h, enum ist_coll_id id, long key, chooser *choose)
{
    for (int i = 0; i < IST_DECISION_CACHE; i++)
        if (h->decisions[i].id == (int)id + 1 && h->decisions[i].bytes == key)
            return (h->last = &h->decisions[i])->way;
    struct ist_decision *d = h->last = &h->decisions[h->next_decision];
    *d = (struct ist_decision){.id = (int)id + 1, .bytes = key};
    choose(h, id, key, d);
    h->next_decision = (h->next_decision + 1) % IST_DECISION_CACHE;
    return d->way;
}

/* How a v-form decides, each rank knowing only its own counts while all must take the
 * same path: always the MPI's, always ours (the hierarchical algorithm), always the linear
 * one in eager segments (Gatherv and Scatterv: each pair cuts by its own count), or first
 * agree on the largest mean block (one small allreduce, a wide-area round trip: it
 * doubled a small Scatterv at 2 ms). A way is safe when, over the sizes users meet (8 B
 * to 1 MiB), its predicted time is nowhere more than 5% above the MPI's own; of the safe
 * ways the one predicted fastest overall (geometric mean) is taken, the MPI's own when no
 * other is safe. The linear way is the MPI's own pattern without its rendezvous; a way
 * with local stages must beat it by the margin the MPI's own keeps per size
 * (IST_NATIVE_MARGIN): on grid-2x2 at 10 ms, Open MPI's Scatterv and Gatherv ran ours
 * slower than the MPI's own at small blocks, where the model had the two level. */
enum v_way { V_NATIVE, V_OURS, V_AGREE, V_LINEAR, V_WAYS };
#define V_POLICY_KEY (-1L - (1L << 62))

static void v_way(struct ist_hier *h, enum ist_coll_id id, long unused, struct ist_decision *d)
{
    (void)unused;
    double agree = 0, logsum[V_WAYS] = {0}, worst[V_WAYS] = {0};
    struct prediction p;
    if (predicted(h, IST_COLL_ALLREDUCE, (long)sizeof(long), &p)) agree = p.native;
    int known = 0;
    for (long b = 8; b <= 1L << 20; b *= 2) {
        if (!predicted(h, id, b, &p)) continue;
        known++;
        double n = p.native, o = p.hier; /* ours: the hierarchical one */
        double best = p.ours < n ? p.ours : n, t[V_WAYS] = {n, o, agree + best, p.linear};
        for (int w = 0; w < V_WAYS; w++) {
            logsum[w] += log(t[w] / n);
            if (t[w] / n > worst[w]) worst[w] = t[w] / n;
        }
    }
    static const char *const names[V_WAYS] = {"native", "ours", "agree on the size", "linear"};
    if (!known) { /* as every size decides then */
        d->way = wan_pays ? V_OURS : V_NATIVE;
        snprintf(d->name, sizeof d->name, "%s", names[d->way]);
        return;
    }
    int way = worst[V_LINEAR] <= 1.05 && logsum[V_LINEAR] < 0 ? V_LINEAR : V_NATIVE;
    double against = way == V_LINEAR ? logsum[V_LINEAR] + known * log(1 - IST_NATIVE_MARGIN) : 0;
    for (int w = V_OURS; w <= V_AGREE; w++)
        if (worst[w] <= 1.05 && logsum[w] < against && logsum[w] < logsum[way]) way = w;
    if (log_choices && h->rank == 0)
        fprintf(stderr, "isthmus: selector: %s on %d ranks: %s (worst predicted ratio to the "
                        "MPI's own: ours %.2f, agreeing first %.2f, linear %.2f)\n",
                ist_coll_names[id], h->size,
                way == V_NATIVE   ? "the MPI's own"
                : way == V_OURS   ? "ours"
                : way == V_LINEAR ? "linear"
                                  : "agree on the size",
                worst[V_OURS], worst[V_AGREE], worst[V_LINEAR] < 1e299 ? worst[V_LINEAR] : 0.0);
    d->way = way;
    snprintf(d->name, sizeof d->name, "%s", names[way]);
}

/* The way (enum ist_way) a call takes. */
int ist_hier_way(struct ist_hier *h, enum ist_coll_id id, long bytes)
{
    if (bytes >= 0) return remembered(h, id, bytes, decide);
    switch (remembered(h, id, V_POLICY_KEY, v_way)) {
    case V_NATIVE: return IST_WAY_NATIVE;
    case V_OURS: return IST_WAY_OURS;
    case V_LINEAR: return IST_WAY_LINEAR;
    default: break;
    }
    long mine = IST_BYTES_LOCAL(bytes), agreed = 0;
    ist_own_Allreduce(&mine, &agreed, 1, MPI_LONG, MPI_MAX, h->comm); /* never spanning sites */
    return remembered(h, id, agreed, decide);
}

int ist_hier_choose_again(struct ist_hier *h, struct ist_choice_change *changed, int max,
                          int *unchanged)
{
    int n = 0;
    *unchanged = 0;
    for (int i = 0; i < IST_DECISION_CACHE; i++) {
        struct ist_decision *d = &h->decisions[i], was = *d;
        if (!d->id) continue;
        *d = (struct ist_decision){.id = was.id, .bytes = was.bytes};
        (was.bytes == V_POLICY_KEY ? v_way : decide)(h, (enum ist_coll_id)(was.id - 1),
                                                      was.bytes, d);
        if (d->way == was.way && strcmp(d->name, was.name) == 0) {
            ++*unchanged;
        } else if (n < max) {
            changed[n] = (struct ist_choice_change){was.id - 1, was.bytes, "", ""};
            snprintf(changed[n].before, sizeof changed[n].before, "%s", was.name);
            snprintf(changed[n].after, sizeof changed[n].after, "%s", d->name);
            n++;
        }
    }
    h->last = NULL;
    return n;
}

