/* The selector and the per-communicator hierarchy cache of the WAN-aware collectives. */
#include "hier.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_tuning.h"
#include "settings.h"
#include "topology.h"
#include "world.h"

int ist_hier_enabled;
_Thread_local int ist_in_hier __attribute__((tls_model("initial-exec")));

/* ISTHMUS_COLL_DISABLE, _ALGORITHM and _SEGMENT, checked at MPI_Init (settings.h) */
static struct ist_coll_settings settings;
static int log_choices;
/* ISTHMUS_COLL_SELECT=always: ours wherever it applies, the model not asked (tests of the
 * algorithms, comparisons); default "model". */
static int select_always;
static struct ist_plogp model;
/* ISTHMUS_COLL_TUNING: measured choices (isthmus coll tune), which win where they apply. */
static struct ist_tuning tuning;
static int model_loaded;
static int keyval = MPI_KEYVAL_INVALID;
/* Whether wide-area messages cost enough more than local ones for the hierarchy to pay
 * (from the model, at MPI_Init): the rule for communicators too large to cost each call. */
static int wan_pays;
/* Whose selection rules this MPI's own collectives follow (coll_cost.h). */
#if defined(OPEN_MPI)
static const enum ist_mpi_flavour flavour = IST_MPI_OPENMPI;
#else
static const enum ist_mpi_flavour flavour = IST_MPI_MPICH;
#endif
/* Beyond this many ranks the selector does not cost each call (schedules grow as the
 * square of the ranks): the hierarchy runs when the model's WAN is slower than its LAN. */
#define COSTED_RANKS 256

/* Every live hierarchy, so that MPI_Finalize can free the ones still attached. Under
 * MPI_THREAD_MULTIPLE threads run collectives on different communicators at once (on one
 * communicator they must not, MPI's rule): the list is guarded by a mutex, never held
 * across a collective call (building a hierarchy is one: threads on other ranks could be
 * waiting for the lock in the opposite order). */
struct cached {
    MPI_Comm user;
    struct ist_hier *h;
    struct cached *next;
    char logged[IST_COLL_COUNT][96];
};
static struct cached *live;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int delete_hier(MPI_Comm comm, int kv, void *value, void *extra);

int ist_hier_settings(char *err, size_t errlen)
{
    static const char *const modes[] = {"native", "isthmus"}, *const selections[] = {"model", "always"};
    if (ist_coll_choice("ISTHMUS_COLL", getenv("ISTHMUS_COLL"), modes, 2, err, errlen) != 0 ||
        ist_coll_choice("ISTHMUS_COLL_SELECT", getenv("ISTHMUS_COLL_SELECT"), selections, 2, err,
                        errlen) != 0)
        return -1;
    return ist_coll_settings_parse(&settings, getenv("ISTHMUS_COLL_DISABLE"),
                                   getenv("ISTHMUS_COLL_ALGORITHM"), getenv("ISTHMUS_COLL_SEGMENT"),
                                   err, errlen);
}

/* Built-in parameters when no file is given: a Gigabit LAN and a 10 ms, 100 Mbit/s WAN. */
static void default_class(struct ist_plogp_class *c, double L, double rate)
{
    static long sizes[2] = {0, 1 << 20};
    if (ist_plogp_class_init(c, L, 2) != 0) return;
    for (int i = 0; i < 2; i++) {
        c->sizes[i] = sizes[i];
        c->os[i] = c->orecv[i] = 2 + sizes[i] / 5e3;
        c->g[i] = c->os[i] + sizes[i] / rate;
    }
}

/* Where the model's parameters came from, and the time measuring them took (profile). */
static const char *model_source = "built-in";
static double model_seconds;

static void load_model(MPI_Comm world)
{
    const char *path = getenv("ISTHMUS_PLOGP");
    char err[512] = "";
    if (path && strcmp(path, "measure") == 0) { /* plogp_measure.c, at this MPI_Init */
        model_seconds = ist_plogp_measure(world, &model);
        model_source = "measured";
        model_loaded = 1;
        return;
    }
    if (path && *path) {
        if (ist_plogp_read(path, &model, err, sizeof err) == 0 && model.lan.present &&
            model.wan.present) {
            model_loaded = 1;
            model_source = "file";
            return;
        }
        if (model_loaded == 0 && ist_world_rank() == 0)
            fprintf(stderr, "isthmus: ISTHMUS_PLOGP: %s; using built-in parameters\n",
                    *err ? err : "the file lacks a lan or wan class");
        if (!*err) ist_plogp_free(&model);
    }
    memset(&model, 0, sizeof model);
    default_class(&model.lan, 50, 125);
    default_class(&model.wan, 10000, 12.5);
    model_loaded = 1;
}

/* Under zipper forwarding a communicator that spans sites always takes the cluster-aware
 * algorithm where it applies (there is no MPI's own across sites: the alternative is
 * src/world/zip's simple shapes, which send more through the forwarders); layer.collectives
 * then rules the communicators inside a site only. */
static int zip_spanning_only;

void ist_hier_init(MPI_Comm world)
{
    const char *mode = getenv("ISTHMUS_COLL");
    ist_hier_enabled = mode && strcmp(mode, "isthmus") == 0;
    if (ist_multi_site && !ist_hier_enabled) ist_hier_enabled = zip_spanning_only = 1;
    const char *log = getenv("ISTHMUS_COLL_LOG");
    log_choices = log && *log && strcmp(log, "0") != 0;
    const char *tuning_file = getenv("ISTHMUS_COLL_TUNING");
    if (tuning_file && *tuning_file) {
        char err[512] = "";
        if (ist_tuning_read(tuning_file, &tuning, err, sizeof err) != 0 && ist_world_rank() == 0)
            fprintf(stderr, "isthmus: ISTHMUS_COLL_TUNING: %s; the model chooses\n", err);
    }
    const char *select = getenv("ISTHMUS_COLL_SELECT");
    select_always = select && strcmp(select, "always") == 0;
    if (ist_hier_enabled) {
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_hier, &keyval, NULL);
        load_model(world);
        wan_pays = ist_wan_pays(&model);
        if (!wan_pays && log_choices && ist_world_rank() == 0)
            fprintf(stderr, "isthmus: the model's wide-area links are no slower than its local "
                            "ones: native collectives (unless an algorithm is forced)\n");
    }
}

static void free_hier(struct ist_hier *h)
{
    if (!h->single) {
        ist_world_free(&h->cluster_comm);
        ist_world_free(&h->comm);
    }
    free(h->cluster_of);
    free(h->cluster_rank);
    free(h->first);
    free(h->count);
    free(h->member_start);
    free(h->members);
    free(h->host);
    free(h);
}

static int delete_hier(MPI_Comm comm, int kv, void *value, void *extra)
{
    (void)comm;
    (void)kv;
    (void)extra;
    pthread_mutex_lock(&live_lock);
    for (struct cached **p = &live; *p; p = &(*p)->next)
        if ((*p)->h == value) {
            struct cached *dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    pthread_mutex_unlock(&live_lock);
    free_hier(value);
    return MPI_SUCCESS;
}

void ist_hier_finalize(void)
{
    while (live) PMPI_Comm_delete_attr(live->user, keyval); /* unlinks it */
    if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
    if (model_loaded) ist_plogp_free(&model);
    ist_tuning_free(&tuning);
    model_loaded = 0;
    ist_hier_enabled = 0;
}

static struct ist_hier *build(MPI_Comm comm)
{
    const struct ist_comm_info *info = ist_comm_info(comm);
    struct ist_hier *h = calloc(1, sizeof *h);
    h->size = info->size;
    h->rank = info->rank;
    h->cluster_of = malloc((size_t)h->size * sizeof(int));
    h->cluster_rank = malloc((size_t)h->size * sizeof(int));
    h->first = malloc((size_t)h->size * sizeof(int));
    h->count = calloc((size_t)h->size, sizeof(int));
    h->member_start = malloc((size_t)h->size * sizeof(int));
    h->members = malloc((size_t)h->size * sizeof(int));
    /* A communicator named NATIVE_NAME keeps the MPI's own collectives (the bench's
     * "native" entry; users can do the same). */
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    PMPI_Comm_get_name(comm, name, &len);
    if (info->inter || strcmp(name, IST_NATIVE_COMM_NAME) == 0) {
        h->single = 1;
        return h;
    }
    /* Clusters numbered by their lowest rank in this communicator. */
    int *number = malloc((size_t)ist_cluster_count() * sizeof(int));
    for (int c = 0; c < ist_cluster_count(); c++) number[c] = -1;
    for (int r = 0; r < h->size; r++) {
        int wc = ist_rank_cluster(info->world[r]);
        if (number[wc] < 0) {
            number[wc] = h->nclusters;
            h->first[h->nclusters++] = r;
        }
        int c = h->cluster_of[r] = number[wc];
        h->cluster_rank[r] = h->count[c]++;
    }
    free(number);
    for (int c = 0, off = 0; c < h->nclusters; off += h->count[c], c++) h->member_start[c] = off;
    int *fill = calloc((size_t)h->nclusters, sizeof(int));
    h->contiguous = 1;
    for (int r = 0; r < h->size; r++) {
        int c = h->cluster_of[r];
        h->members[h->member_start[c] + fill[c]++] = r;
        if (r > 0 && c != h->cluster_of[r - 1] && c != h->cluster_of[r - 1] + 1) h->contiguous = 0;
        if (h->count[c] > h->max_count) h->max_count = h->count[c];
    }
    free(fill);
    h->my_cluster = h->cluster_of[h->rank];
    h->single = h->nclusters < 2;
    /* hosts by the lowest rank on each: equal names, one host */
    h->host = malloc((size_t)h->size * sizeof(int));
    for (int r = 0; r < h->size; r++) {
        const char *name = ist_rank_host(info->world[r]);
        h->host[r] = r;
        for (int q = 0; q < r && h->size <= COSTED_RANKS; q++)
            if (strcmp(ist_rank_host(info->world[q]), name) == 0) {
                h->host[r] = h->host[q];
                break;
            }
    }
    if (!h->single) {
        /* when comm spans sites h->comm does too, and our messages on it go through the
         * forwarders; each cluster's part lies in one site and is native */
        ist_world_dup(comm, &h->comm);
        ist_world_split(comm, h->my_cluster, h->rank, &h->cluster_comm);
    }
    return h;
}

static struct ist_hier *lookup(MPI_Comm comm)
{
    struct ist_hier *h = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, keyval, &h, &found);
    if (found) return h;
    h = build(comm); /* collective over comm: outside the lock */
    struct cached *c = calloc(1, sizeof *c);
    c->user = comm;
    c->h = h;
    pthread_mutex_lock(&live_lock);
    c->next = live;
    live = c;
    pthread_mutex_unlock(&live_lock);
    PMPI_Comm_set_attr(comm, keyval, h);
    return h;
}

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
                                 rule->ours ? IST_WAY_HIER : IST_WAY_NATIVE, "", 1};
        snprintf(p->name, sizeof p->name, "%s", rule->ours ? "ours" : "native");
        return 1;
    }
    if (!wan_pays || h->size > COSTED_RANKS) return 0;
    struct ist_layout l = {h->size, h->nclusters, h->cluster_of, h->host};
    struct ist_choice c;
    ist_coll_choose(id, bytes, mpi, &model, &l, &c);
    if (c.n == 0) return 0;
    *p = (struct prediction){1e300, 1e300, 1e300, 1e300,
                             c.c[c.best].native ? IST_WAY_NATIVE
                             : is_linear(c.c[c.best].name) ? IST_WAY_LINEAR : IST_WAY_HIER,
                             "", 0};
    memcpy(p->name, c.c[c.best].name, sizeof p->name);
    for (int i = 0; i < c.n; i++) {
        double *t = c.c[i].native ? &p->native : &p->ours;
        if (c.c[i].time_us < *t) *t = c.c[i].time_us;
        if (!c.c[i].native) *(is_linear(c.c[i].name) ? &p->linear : &p->hier) = c.c[i].time_us;
    }
    return 1;
}

/* Which way (enum ist_way) for id at bytes on h, without the cache. Every rank decides
 * from the same figures. */
static int decide(struct ist_hier *h, enum ist_coll_id id, long bytes)
{
    struct prediction p;
    if (!predicted(h, id, bytes, &p)) return wan_pays ? IST_WAY_HIER : IST_WAY_NATIVE;
    if (log_choices && h->rank == 0)
        fprintf(stderr, "isthmus: selector: %s of %ld B on %d ranks in %d clusters: %s, %s: "
                        "ours %.0f us, native %.0f us\n",
                ist_coll_names[id], bytes, h->size, h->nclusters, p.name,
                p.measured ? "measured (tuning file)" : "predicted", p.ours, p.native);
    return p.pick;
}

/* decide(), remembered per communicator, collective and size (key). */
typedef int chooser(struct ist_hier *h, enum ist_coll_id id, long key);

static int remembered(struct ist_hier *h, enum ist_coll_id id, long key, chooser *choose)
{
    for (int i = 0; i < IST_DECISION_CACHE; i++)
        if (h->decisions[i].id == (int)id + 1 && h->decisions[i].bytes == key)
            return h->decisions[i].wan_aware;
    int ours = choose(h, id, key);
    h->decisions[h->next_decision] = (struct ist_decision){(int)id + 1, key, ours};
    h->next_decision = (h->next_decision + 1) % IST_DECISION_CACHE;
    return ours;
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

static int v_way(struct ist_hier *h, enum ist_coll_id id, long unused)
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
    if (!known) return wan_pays ? V_OURS : V_NATIVE; /* as every size decides then */
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
    return way;
}

/* The way (enum ist_way) a call takes. */
static int way_of(struct ist_hier *h, enum ist_coll_id id, long bytes)
{
    if (bytes >= 0) return remembered(h, id, bytes, decide);
    switch (remembered(h, id, V_POLICY_KEY, v_way)) {
    case V_NATIVE: return IST_WAY_NATIVE;
    case V_OURS: return IST_WAY_HIER;
    case V_LINEAR: return IST_WAY_LINEAR;
    default: break;
    }
    long mine = IST_BYTES_LOCAL(bytes), agreed = 0;
    ist_own_Allreduce(&mine, &agreed, 1, MPI_LONG, MPI_MAX, h->comm); /* never spanning sites */
    return remembered(h, id, agreed, decide);
}

struct ist_hier *ist_hier_enter(enum ist_coll_id id, MPI_Comm comm, long bytes)
{
    if (!ist_hier_enabled || ist_in_hier || settings.disabled[id] || comm == MPI_COMM_NULL)
        return NULL;
    int forced = settings.forced[id];
    if (forced == IST_ALG_NATIVE) return NULL;
    int spanning = ist_world_spans(comm);
    if (zip_spanning_only && !spanning) return NULL;
    int choose = forced == IST_ALG_NONE && !select_always && !spanning, way = IST_WAY_HIER;
    /* a WAN no slower than the LAN and nothing measured: no hierarchy is even built */
    if (choose && !wan_pays && tuning.n == 0) return NULL;
    struct ist_hier *h = lookup(comm);
    if (h->single) return NULL;
    if (choose && (way = way_of(h, id, bytes)) == IST_WAY_NATIVE) return NULL;
    /* forced, or every call ours (collectives.select = always): the hierarchical one */
    if (!choose) way = forced == IST_ALG_LINEAR ? IST_WAY_LINEAR : IST_WAY_HIER;
    h->way = way;
    h->algorithm = forced;
    h->segment = settings.segment[id] > 0 ? settings.segment[id] : IST_EAGER_SEGMENT;
    ist_in_hier = 1;
    return h;
}

/* comm's size when counts[] has one entry per rank, else 0 (intercommunicators) */
static int local_size(MPI_Comm comm)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return 0;
    return ist_world_comm_size(comm);
}

long ist_counts_bytes(MPI_Comm comm, const int counts[], MPI_Datatype type)
{
    int n = local_size(comm);
    long sum = 0;
    for (int r = 0; r < n; r++) sum += counts[r];
    return n ? ist_type_bytes(1, type) * sum / n : 0;
}

long ist_countsw_bytes(MPI_Comm comm, const int counts[], const MPI_Datatype types[])
{
    int n = local_size(comm);
    long sum = 0;
    for (int r = 0; r < n; r++) sum += ist_type_bytes(counts[r], types[r]);
    return n ? sum / n : 0;
}

int ist_hier_leave(int rc)
{
    ist_wan_calls++;
    ist_in_hier = 0;
    return rc;
}

long ist_hier_forced_segment(enum ist_coll_id id) { return settings.segment[id]; }
const struct ist_plogp *ist_hier_model(void) { return &model; }
const char *ist_hier_model_source(void) { return model_loaded ? model_source : "none"; }
double ist_hier_model_seconds(void) { return model_seconds; }

void ist_hier_log(const struct ist_hier *h, enum ist_coll_id id, const char *fmt, ...)
{
    if (!log_choices || h->rank != 0) return;
    char text[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int seen = 0;
    pthread_mutex_lock(&live_lock);
    for (struct cached *c = live; c; c = c->next)
        if (c->h == h) {
            seen = strcmp(c->logged[id], text) == 0;
            snprintf(c->logged[id], sizeof c->logged[id], "%s", text);
        }
    pthread_mutex_unlock(&live_lock);
    if (seen) return;
    fprintf(stderr, "isthmus: %s on %d ranks in %d clusters: %s\n", ist_coll_names[id], h->size,
            h->nclusters, text);
}

_Thread_local long ist_wan_bytes, ist_wan_messages, ist_wan_calls;

void ist_hier_note_wan(const struct ist_hier *h, int dest, long bytes, long messages)
{
    if (h->cluster_of[dest] == h->my_cluster) return;
    ist_wan_bytes += bytes;
    ist_wan_messages += messages;
}
