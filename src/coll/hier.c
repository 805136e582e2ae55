/* The WAN-aware collectives' front: settings and start-up (ist_hier_init), the entry
 * every algorithm's call passes (ist_hier_enter: forced, disabled, spanning sites, or the
 * selector's way), the way out (ist_hier_leave), the choices' log and the wide-area
 * counters the profiler reads. The model (hier_model.c), the hierarchy cache
 * (hier_cache.c) and the selector (hier_select.c) are rooms of their own. */
#include "hier.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier_parts.h"
#include "settings.h"
#include "world.h"

int ist_hier_enabled;
_Thread_local int ist_in_hier __attribute__((tls_model("initial-exec")));

/* ISTHMUS_COLL_DISABLE, _ALGORITHM and _SEGMENT, checked at MPI_Init (settings.h) */
static struct ist_coll_settings settings;
static int log_choices;
/* ISTHMUS_COLL_SELECT=always: ours wherever it applies, the model not asked (tests of the
 * algorithms, comparisons); default "model". */
static int select_always;

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
    const char *select = getenv("ISTHMUS_COLL_SELECT");
    select_always = select && strcmp(select, "always") == 0;
    if (ist_hier_enabled) {
        ist_hier_cache_init();
        ist_hier_model_load(world);
        ist_hier_select_init(log_choices);
        ist_adapt_init();
    }
}

void ist_hier_finalize(void)
{
    ist_hier_cache_free();
    ist_hier_model_free();
    ist_hier_select_free();
    ist_hier_enabled = 0;
}

struct ist_hier *ist_hier_enter(enum ist_coll_id id, MPI_Comm comm, long bytes, int root)
{
    if (!ist_hier_enabled || ist_in_hier || settings.disabled[id] || comm == MPI_COMM_NULL)
        return NULL;
    int forced = settings.forced[id];
    if (forced == IST_ALG_NATIVE) return NULL;
    int spanning = ist_world_spans(comm);
    if (zip_spanning_only && !spanning) return NULL;
    int choose = forced == IST_ALG_NONE && !select_always && !spanning, way = IST_WAY_OURS;
    /* a WAN no slower than the LAN and nothing measured: no hierarchy is even built */
    if (choose && !ist_hier_can_choose_ours()) return NULL;
    struct ist_hier *h = ist_hier_lookup(comm);
    if (h->single) return NULL;
    if (choose) {
        if (h->adapt) ist_adapt_check(h); /* may make the choices again, on every rank */
        way = ist_hier_way(h, id, bytes);
        if (h->adapt) ist_adapt_begin(h, root);
        if (way == IST_WAY_NATIVE) return NULL;
    }
    /* forced, or every call ours (collectives.select = always): the hierarchical one */
    if (!choose) way = forced == IST_ALG_LINEAR ? IST_WAY_LINEAR : IST_WAY_OURS;
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

void ist_hier_log(const struct ist_hier *h, enum ist_coll_id id, const char *fmt, ...)
{
    if (!log_choices || h->rank != 0) return;
    char text[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (ist_hier_logged_before(h, id, text)) return;
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
