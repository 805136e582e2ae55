/* Merging every rank's counters on rank 0 and writing the profile (docs/profile.md has the
 * schema). The file is written under a temporary name and renamed, so a reader never sees
 * half a profile. */
#define _GNU_SOURCE /* dladdr1: where a call site is */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "discover.h"
#include "hier.h"
#include "hier_adapt.h"
#include "layer.h"
#include "profiler.h"
#include "topology.h"
#include "world.h"

/* One nonzero bucket of one function on one rank, as sent to rank 0. */
struct call_row {
    int32_t fn;
    int32_t bucket;
    uint64_t calls;
    uint64_t bytes;
    double seconds;
};

/* One collective call site of one rank, as sent to rank 0: the object holding the caller
 * and the return address less the object's load bias (what addr2line takes), its counts. */
struct site_row {
    int32_t fn;
    int32_t pad;
    uint64_t calls, wan_calls, address;
    double seconds;
    char object[240];
};

struct rank_summary {
    double app_seconds;
    double mpi_seconds;
    double init_unix;
    int64_t pid;
};

static const char *implementation(void)
{
#if defined(OPEN_MPI)
    return "openmpi";
#elif defined(MPICH_VERSION)
    return "mpich";
#else
    return "unknown";
#endif
}

/* Dense n x n matrix of one kind from the gathered vectors: cell [s][d]. */
static void write_matrix(FILE *f, const uint64_t *all, int n, enum ist_vec out, int with_in)
{
    fputs("[", f);
    for (int s = 0; s < n; s++) {
        fputs(s ? ",\n      [" : "\n      [", f);
        for (int d = 0; d < n; d++) {
            uint64_t v = all[(size_t)s * IST_NVEC * (size_t)n + (size_t)out * (size_t)n + (size_t)d];
            if (with_in) /* recorded by the receiver d about sender s */
                v += all[(size_t)d * IST_NVEC * (size_t)n + (size_t)(out + 2) * (size_t)n + (size_t)s];
            fprintf(f, "%s%llu", d ? "," : "", (unsigned long long)v);
        }
        fputs("]", f);
    }
    fputs("]", f);
}

static uint64_t matrix_cell(const uint64_t *all, int n, enum ist_vec out, int with_in, int s, int d)
{
    uint64_t v = all[(size_t)s * IST_NVEC * (size_t)n + (size_t)out * (size_t)n + (size_t)d];
    if (with_in) v += all[(size_t)d * IST_NVEC * (size_t)n + (size_t)(out + 2) * (size_t)n + (size_t)s];
    return v;
}

static void write_kind(FILE *f, const char *name, const uint64_t *all, int n, enum ist_vec msgs,
                       int with_in, const char *last)
{
    int nc = ist_cluster_count();
    uint64_t *cm = calloc((size_t)nc * (size_t)nc * 2, sizeof(uint64_t));
    uint64_t split[2][2] = {{0, 0}, {0, 0}}; /* [intra/inter][messages/bytes] */
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            int cs = ist_rank_cluster(s), cd = ist_rank_cluster(d);
            uint64_t m = matrix_cell(all, n, msgs, with_in, s, d);
            uint64_t b = matrix_cell(all, n, msgs + 1, with_in, s, d);
            cm[((size_t)cs * (size_t)nc + (size_t)cd) * 2] += m;
            cm[((size_t)cs * (size_t)nc + (size_t)cd) * 2 + 1] += b;
            split[cs != cd][0] += m;
            split[cs != cd][1] += b;
        }
    fprintf(f, "    \"%s\": {\n      \"messages\": ", name);
    write_matrix(f, all, n, msgs, with_in);
    fputs(",\n      \"bytes\": ", f);
    write_matrix(f, all, n, msgs + 1, with_in);
    for (int k = 0; k < 2; k++) {
        fprintf(f, ",\n      \"cluster_%s\": [", k ? "bytes" : "messages");
        for (int a = 0; a < nc; a++) {
            fputs(a ? ", [" : "[", f);
            for (int b = 0; b < nc; b++)
                fprintf(f, "%s%llu", b ? "," : "",
                        (unsigned long long)cm[((size_t)a * (size_t)nc + (size_t)b) * 2 + (size_t)k]);
            fputs("]", f);
        }
        fputs("]", f);
    }
    fprintf(f, ",\n      \"intra\": {\"messages\": %llu, \"bytes\": %llu}"
               ",\n      \"inter\": {\"messages\": %llu, \"bytes\": %llu}\n    }%s\n",
            (unsigned long long)split[0][0], (unsigned long long)split[0][1],
            (unsigned long long)split[1][0], (unsigned long long)split[1][1], last);
    free(cm);
}

/* The object a return address lies in, and the address less its load bias. */
static void locate(const void *pc, char *object, size_t len, uint64_t *address)
{
    Dl_info info;
    struct link_map *map = NULL;
    *address = (uint64_t)(uintptr_t)pc;
    snprintf(object, len, "?");
    if (!pc || !dladdr1(pc, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return;
    *address -= (uint64_t)map->l_addr;
    if (map->l_name && map->l_name[0] == '/') {
        snprintf(object, len, "%s", map->l_name);
    } else { /* the program itself: the link map names it "" */
        ssize_t n = readlink("/proc/self/exe", object, len - 1);
        object[n > 0 ? n : 0] = '\0';
    }
}

static struct site_row *my_sites(int *n, double ticks_per_second)
{
    struct site_row *rows = calloc(IST_MAX_SITES + 1, sizeof *rows);
    *n = 0;
    for (int i = 0; rows && i < IST_MAX_SITES; i++) {
        const struct ist_site *s = &ist_sites[i];
        if (!s->calls) continue;
        struct site_row *r = &rows[(*n)++];
        r->fn = s->fn;
        r->calls = s->calls;
        r->wan_calls = s->wan_calls;
        r->seconds = (double)s->ticks / ticks_per_second;
        locate(s->pc, r->object, sizeof r->object, &r->address);
    }
    return rows;
}

static void write_sites(FILE *f, const struct site_row *rows, const int *counts, int n,
                        uint64_t dropped)
{
    fputs("  \"sites\": {\n    \"columns\": [\"rank\", \"function\", \"object\", \"address\", "
          "\"calls\", \"wan_aware_calls\", \"seconds\"],\n    \"rows\": [", f);
    int first = 1;
    for (int r = 0, k = 0; r < n; r++)
        for (int i = 0; i < counts[r]; i++, k++) {
            const struct site_row *s = &rows[k];
            fprintf(f, "%s\n      [%d, \"%s\", ", first ? "" : ",", r, ist_fn_name[s->fn]);
            ist_json_string(f, s->object);
            fprintf(f, ", %llu, %llu, %llu, %.9f]", (unsigned long long)s->address,
                    (unsigned long long)s->calls, (unsigned long long)s->wan_calls, s->seconds);
            first = 0;
        }
    fprintf(f, "\n    ],\n    \"dropped_calls\": %llu\n  },\n", (unsigned long long)dropped);
}

/* Per rank and function: calls that ran libisthmus's WAN-aware algorithm and what this
 * rank sent across wide-area links in them. */
static void write_wan(FILE *f, int n, const uint64_t *wan)
{
    fputs("  \"wan\": {\n    \"columns\": [\"rank\", \"function\", \"calls\", \"messages\", \"bytes\"],"
          "\n    \"rows\": [", f);
    int first = 1;
    for (int r = 0; r < n; r++)
        for (int fn = 0; fn < IST_FN_COUNT; fn++) {
            const uint64_t *w = &wan[((size_t)r * IST_FN_COUNT + (size_t)fn) * IST_NWAN];
            if (!w[IST_WAN_CALLS]) continue;
            fprintf(f, "%s\n      [%d, \"%s\", %llu, %llu, %llu]", first ? "" : ",", r, ist_fn_name[fn],
                    (unsigned long long)w[IST_WAN_CALLS], (unsigned long long)w[IST_WAN_MESSAGES],
                    (unsigned long long)w[IST_WAN_BYTES]);
            first = 0;
        }
    fputs("\n    ]\n  },\n", f);
}

static void write_class(FILE *f, const char *name, const struct ist_plogp_class *c)
{
    fprintf(f, "\"%s\": {\"L_us\": %.3f, \"points\": [", name, c->L);
    for (int i = 0; i < c->n; i++)
        fprintf(f, "%s[%ld, %.3f, %.3f, %.3f]", i ? ", " : "", c->sizes[i], c->os[i],
                c->orecv[i], c->g[i]);
    fputs("]}", f);
}

/* How the clusters were found and what the collectives' model was given (docs/profile.md). */
static void write_discovery(FILE *f)
{
    const struct ist_discovery *d = ist_discovery();
    fprintf(f, "  \"clusters_from\": \"%s\",\n", d->done ? "measured" : "settings");
    if (d->done) {
        fprintf(f, "  \"discovery\": {\"seconds\": %.6f, \"hosts\": %d, \"pairs\": %d, "
                   "\"rounds\": %d, \"careful\": %d, \"cut_us\": %.1f, \"least_rtt_us\": %.1f, "
                   "\"largest_rtt_us\": %.1f,\n    \"measured\": [",
                d->seconds, d->hosts, d->pairs, d->rounds, d->careful, d->cut_us, d->lan_rtt_us,
                d->wan_rtt_us);
        for (int i = 0; i < d->kept; i++)
            fprintf(f, "%s[%d, %d, %.1f]", i ? ", " : "", d->pair_rank[2 * i],
                    d->pair_rank[2 * i + 1], d->pair_rtt_us[i]);
        fputs("]},\n", f);
    }
    const char *source = ist_hier_model_source();
    fprintf(f, "  \"plogp\": {\"source\": \"%s\", \"seconds\": %.6f", source,
            ist_hier_model_seconds());
    if (strcmp(source, "none") != 0) {
        fputs(", ", f);
        write_class(f, "lan", &ist_hier_model()->lan);
        fputs(", ", f);
        write_class(f, "wan", &ist_hier_model()->wan);
    }
    fputs("},\n", f);
}

/* Live adaptation's switches (src/coll/hier_adapt.c), each as its communicator's rank 0
 * recorded it, rank after rank (docs/profile.md). */
static void write_adaptation(FILE *f, int n, const struct ist_adapt_event *e, const int *counts)
{
    fprintf(f, "  \"adaptation\": {\"check_every\": %d, \"segment_bytes\": %ld, \"switches\": [",
            ist_adapt_every(), (long)IST_EAGER_SEGMENT);
    for (int r = 0, k = 0; r < n; r++)
        for (int i = 0; i < counts[r]; i++, k++, e++) {
            fprintf(f, "%s\n    {\"rank0\": %d, \"ranks\": %d, \"clusters\": %d, \"call\": %ld, "
                       "\"slower\": %.3f, \"slower_seen_by\": %d, \"slower_ranks\": %d, "
                       "\"faster\": %.3f, \"faster_seen_by\": %d, \"faster_ranks\": %d, "
                       "\"wan_before\": [%.3f, %.3f], "
                       "\"wan_after\": [%.3f, %.3f], \"measure_seconds\": %.6f, "
                       "\"unchanged\": %d, \"changed\": [",
                    k ? "," : "", e->world_rank, e->comm_size, e->nclusters, e->call, e->factor[0],
                    e->seen_by[0], e->ranks_seen[0], e->factor[1], e->seen_by[1],
                    e->ranks_seen[1], e->old_L, e->old_g, e->new_L,
                    e->new_g, e->measure_seconds, e->unchanged);
            for (int c = 0; c < e->nchanged; c++) {
                fprintf(f, "%s[\"%s\", %ld, ", c ? ", " : "", ist_coll_names[e->changed[c].id],
                        e->changed[c].bytes);
                ist_json_string(f, e->changed[c].before);
                fputs(", ", f);
                ist_json_string(f, e->changed[c].after);
                fputs("]", f);
            }
            fputs("]}", f);
        }
    fputs("\n  ]},\n", f);
}

static void write_profile(FILE *f, int n, const struct rank_summary *ranks,
                          const struct call_row *rows, const int *row_counts,
                          const uint64_t *matrix, const uint64_t *wan, double ticks_per_second,
                          const struct site_row *sites, const int *site_counts, uint64_t dropped,
                          const struct ist_adapt_event *switches, const int *switch_counts,
                          const struct ist_io_gathered *io)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, version = 0, subversion = 0;
    PMPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0';
    PMPI_Get_version(&version, &subversion);
    char created[32];
    time_t now = time(NULL);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

    fputs("{\n  \"schema\": \"isthmus-profile\",\n  \"version\": 1,\n  \"created\": ", f);
    ist_json_string(f, created);
    fprintf(f, ",\n  \"mpi\": {\"implementation\": \"%s\", \"standard\": \"%d.%d\", \"library\": ",
            implementation(), version, subversion);
    ist_json_string(f, library);
    fprintf(f, "},\n  \"clock\": {\"source\": \"%s\", \"ticks_per_second\": %.6e},\n",
#if defined(__x86_64__)
            "tsc",
#else
            "monotonic",
#endif
            ticks_per_second);
    fputs("  \"collective_traffic\": \"arguments\",\n", f);
    write_discovery(f);
    if (ist_adapt_on()) write_adaptation(f, n, switches, switch_counts);
    fprintf(f, "  \"nranks\": %d,\n  \"clusters\": [", n);
    for (int c = 0; c < ist_cluster_count(); c++) {
        if (c) fputs(", ", f);
        ist_json_string(f, ist_cluster_name(c));
    }
    fputs("],\n  \"ranks\": [", f);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s\n    {\"rank\": %d, \"cluster\": %d, \"host\": ", r ? "," : "", r,
                ist_rank_cluster(r));
        ist_json_string(f, ist_rank_host(r));
        fprintf(f, ", \"pid\": %lld, \"app_seconds\": %.9f, \"mpi_seconds\": %.9f, "
                   "\"init_unix\": %.6f}",
                (long long)ranks[r].pid, ranks[r].app_seconds, ranks[r].mpi_seconds,
                ranks[r].init_unix);
    }
    fputs("\n  ],\n  \"functions\": {", f);
    for (int fn = 0; fn < IST_FN_COUNT; fn++)
        fprintf(f, "%s\"%s\": \"%s\"", fn ? ", " : "", ist_fn_name[fn], ist_fn_group[fn]);
    fputs("},\n  \"calls\": {\n    \"columns\": [\"rank\", \"function\", \"bucket_low\", "
          "\"calls\", \"bytes\", \"seconds\"],\n    \"rows\": [", f);
    int first = 1;
    for (int r = 0, k = 0; r < n; r++)
        for (int i = 0; i < row_counts[r]; i++, k++) {
            const struct call_row *row = &rows[k];
            fprintf(f, "%s\n      [%d, \"%s\", %llu, %llu, %llu, %.9f]", first ? "" : ",", r,
                    ist_fn_name[row->fn], (unsigned long long)ist_bucket_low(row->bucket),
                    (unsigned long long)row->calls, (unsigned long long)row->bytes, row->seconds);
            first = 0;
        }
    fputs("\n    ]\n  },\n", f);
    write_wan(f, n, wan);
    write_sites(f, sites, site_counts, n, dropped);
    ist_io_write(f, io, n);
    fputs("  \"traffic\": {\n", f);
    write_kind(f, "p2p", matrix, n, IST_OUT_P2P_MSGS, 0, ",");
    write_kind(f, "coll", matrix, n, IST_OUT_COLL_MSGS, 1, "");
    fputs("  }\n}\n", f);
}

int ist_profile_write(const char *path, MPI_Comm comm, double ticks_per_second, double app_seconds,
                      double init_unix)
{
    int n = ist_world_size(), me = ist_world_rank();

    /* This rank's nonzero buckets. */
    int nrows = 0;
    for (int fn = 0; fn < IST_FN_COUNT; fn++)
        for (int b = 0; b < IST_NBUCKETS; b++) nrows += ist_stats[fn][b].calls != 0;
    struct call_row *mine = calloc((size_t)nrows + 1, sizeof *mine);
    struct rank_summary summary = {app_seconds, 0.0, init_unix, (int64_t)getpid()};
    int k = 0;
    for (int fn = 0; fn < IST_FN_COUNT; fn++)
        for (int b = 0; b < IST_NBUCKETS; b++) {
            const struct ist_bucket *s = &ist_stats[fn][b];
            if (!s->calls) continue;
            double seconds = (double)s->ticks / ticks_per_second;
            mine[k++] = (struct call_row){fn, b, s->calls, s->bytes, seconds};
            if (fn != IST_FN_MPI_Init && fn != IST_FN_MPI_Init_thread && fn != IST_FN_MPI_Finalize)
                summary.mpi_seconds += seconds;
        }

    int *counts = NULL;
    struct rank_summary *ranks = NULL;
    uint64_t *matrix = NULL, *wan = NULL;
    if (me == 0) {
        wan = calloc((size_t)n * IST_FN_COUNT * IST_NWAN, sizeof *wan);
        ranks = calloc((size_t)n, sizeof *ranks);
        matrix = calloc((size_t)n * IST_NVEC * (size_t)n, sizeof *matrix);
    }
    struct call_row *rows = ist_gather_rows(mine, nrows, sizeof(struct call_row), &counts, comm);
    ist_gather_to_0(&summary, (int)sizeof summary, MPI_BYTE, ranks, (int)sizeof summary, MPI_BYTE, comm);
    ist_gather_to_0(ist_matrix_vec, IST_NVEC * n, MPI_UINT64_T, matrix, IST_NVEC * n, MPI_UINT64_T, comm);
    ist_gather_to_0(ist_wan_stats, IST_FN_COUNT * IST_NWAN, MPI_UINT64_T, wan, IST_FN_COUNT * IST_NWAN,
                MPI_UINT64_T, comm);

    int nsites = 0, *site_counts = NULL;
    struct site_row *my = my_sites(&nsites, ticks_per_second);
    struct site_row *sites = ist_gather_rows(my, nsites, sizeof(struct site_row), &site_counts, comm);
    uint64_t dropped = 0;
    ist_sum_to_0(&ist_sites_dropped, &dropped, comm);
    int nswitches = 0, *switch_counts = NULL;
    const struct ist_adapt_event *my_switches = ist_adapt_events(&nswitches);
    struct ist_adapt_event *switches =
        ist_gather_rows(my_switches, nswitches, sizeof *switches, &switch_counts, comm);
    struct ist_io_gathered io = {0};
    ist_io_gather(&io, comm, ticks_per_second);

    int rc = 0;
    if (me == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f) {
            fprintf(stderr, "isthmus: cannot write the profile '%s': %s\n", path, strerror(errno));
            rc = -1;
        } else {
            write_profile(f, n, ranks, rows, counts, matrix, wan, ticks_per_second, sites,
                          site_counts, dropped, switches, switch_counts, &io);
            if (fclose(f) != 0 || rename(tmp, path) != 0) {
                fprintf(stderr, "isthmus: cannot write the profile '%s': %s\n", path,
                        strerror(errno));
                unlink(tmp);
                rc = -1;
            }
        }
    }
    free(mine);
    free(counts);
    free(rows);
    free(ranks);
    free(matrix);
    free(wan);
    free(my);
    free(sites);
    free(site_counts);
    free(switches);
    free(switch_counts);
    ist_io_free(&io);
    return rc;
}
