/* Cluster membership of every rank and the per-communicator world-rank cache. */
#include "topology.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "discover.h"
#include "clock.h"
#include "own_calls.h"
#include "world.h"
#include "world_calls.h"
_Static_assert(IST_DISCOVER_NAME == IST_NAME_MAX, "one length for host names");
#include "zip.h"

struct rank_identity {
    char cluster[IST_NAME_MAX];
    char host[IST_NAME_MAX];
};

static int world_size, world_rank;
static int nclusters;
static char (*cluster_names)[IST_NAME_MAX];
static int *rank_cluster;
static char (*rank_host)[IST_NAME_MAX];

static struct ist_comm_info world_info;
static int comm_keyval = MPI_KEYVAL_INVALID;
/* A one-entry cache per thread in front of the attribute lookup: most programs talk on
 * one communicator at a time. It holds while no communicator's entry has been freed since
 * (a freed handle may come back as a new communicator): `generation` counts the frees.
 * Under MPI_THREAD_MULTIPLE two threads may meet a new communicator at once (sending on
 * it is legal from both): the lookup and insertion run under a mutex. */
static _Thread_local MPI_Comm last_comm = MPI_COMM_NULL;
static _Thread_local const struct ist_comm_info *last_info;
static _Thread_local unsigned long last_generation;
static atomic_ulong generation;
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static int delete_info(MPI_Comm comm, int keyval, void *value, void *extra);

static void copy_name(char dst[IST_NAME_MAX], const char *src)
{
    snprintf(dst, IST_NAME_MAX, "%s", src);
}

/* "a=n1*,n2*;b=g*": the cluster whose globs match the host name, or 0. */
static int cluster_from_patterns(const char *spec, const char *host, char out[IST_NAME_MAX])
{
    char *copy = strdup(spec), *save = NULL;
    int found = 0;
    for (char *entry = strtok_r(copy, ";", &save); entry && !found;
         entry = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(entry, '=');
        if (!eq) continue;
        *eq = '\0';
        char *save2 = NULL;
        for (char *glob = strtok_r(eq + 1, ",", &save2); glob; glob = strtok_r(NULL, ",", &save2)) {
            if (fnmatch(glob, host, 0) == 0) {
                copy_name(out, entry);
                found = 1;
                break;
            }
        }
    }
    free(copy);
    return found;
}

/* "a:2,b:2": world ranks in blocks, in this order. Ranks past the end: 0. */
static int cluster_from_blocks(const char *spec, int rank, char out[IST_NAME_MAX])
{
    char *copy = strdup(spec), *save = NULL;
    int first = 0, found = 0;
    for (char *entry = strtok_r(copy, ",", &save); entry && !found;
         entry = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(entry, ':');
        if (!colon) continue;
        *colon = '\0';
        int count = atoi(colon + 1);
        if (rank >= first && rank < first + count) {
            copy_name(out, entry);
            found = 1;
        }
        first += count;
    }
    free(copy);
    return found;
}

/* ISTHMUS_CLUSTERS=auto: the clusters are measured (discover.c), unless a zipper run's
 * sites say them. */
static int discovering(void)
{
    const char *blocks = getenv("ISTHMUS_CLUSTERS");
    return blocks && strcmp(blocks, "auto") == 0 && !ist_multi_site;
}

/* The platform's blocks of ranks count every rank of the job, hidden I/O servers too. */
static int job_rank(void)
{
    int rank = world_rank;
    if (ist_app_world != MPI_COMM_WORLD) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

static void decide_own_cluster(const char *host, char out[IST_NAME_MAX])
{
    const char *explicit_name = getenv("ISTHMUS_CLUSTER");
    const char *patterns = getenv("ISTHMUS_CLUSTER_PATTERNS");
    const char *blocks = getenv("ISTHMUS_CLUSTERS");
    if (blocks && strcmp(blocks, "auto") == 0) blocks = NULL;
    if (discovering()) {
        copy_name(out, "measured");
    } else if (explicit_name && *explicit_name) {
        copy_name(out, explicit_name);
    } else if (patterns && *patterns && cluster_from_patterns(patterns, host, out)) {
        /* matched a host pattern */
    } else if (blocks && *blocks && cluster_from_blocks(blocks, job_rank(), out)) {
        /* block mapping */
    } else {
        if ((patterns && *patterns) || (blocks && *blocks))
            fprintf(stderr, "isthmus: rank %d on host '%s' matches no cluster of the platform; "
                            "it is counted in cluster 'unmapped'\n", world_rank, host);
        copy_name(out, (patterns && *patterns) || (blocks && *blocks) ? "unmapped" : "world");
    }
}

static int find_or_add_cluster(const char *name)
{
    for (int c = 0; c < nclusters; c++)
        if (strcmp(cluster_names[c], name) == 0) return c;
    copy_name(cluster_names[nclusters], name);
    return nclusters++;
}

int ist_topology_init(MPI_Comm world_dup)
{
    /* MPI_Comm_size and friends, not PMPI_: under zipper forwarding world_dup spans the
     * sites and src/world/zip defines them (otherwise they pass straight to the MPI). */
    ist_world_Comm_size(world_dup, &world_size);
    ist_world_Comm_rank(world_dup, &world_rank);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_info, &comm_keyval, NULL);

    struct rank_identity me;
    memset(&me, 0, sizeof me);
    /* an emulated host is named by isthmus-exec (they all share the machine's name) */
    char host[256] = "";
    const char *named = getenv("ISTHMUS_HOST");
    if (named && *named) snprintf(host, sizeof host, "%s", named);
    else gethostname(host, sizeof host - 1);
    copy_name(me.host, host);
    decide_own_cluster(me.host, me.cluster);

    struct rank_identity *all = calloc((size_t)world_size, sizeof *all);
    int rc;
    if (!ist_zip_comm(world_dup) ||
        !ist_span_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, world_dup, &rc))
        ist_own_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, world_dup);

    /* Cluster numbers follow the platform's order when the block list gives one, then the
     * order in which ranks name new clusters. */
    cluster_names = calloc((size_t)world_size + 64, sizeof *cluster_names);
    rank_cluster = calloc((size_t)world_size, sizeof *rank_cluster);
    rank_host = calloc((size_t)world_size, sizeof *rank_host);
    const char *blocks = getenv("ISTHMUS_CLUSTERS");
    if (blocks && *blocks && strcmp(blocks, "auto") != 0) {
        char *copy = strdup(blocks), *save = NULL;
        for (char *e = strtok_r(copy, ",", &save); e && nclusters < 64; e = strtok_r(NULL, ",", &save)) {
            char *colon = strrchr(e, ':');
            if (colon) *colon = '\0';
            find_or_add_cluster(e);
        }
        free(copy);
    }
    for (int r = 0; r < world_size; r++) copy_name(rank_host[r], all[r].host);
    if (discovering()) {
        /* clusters c0, c1, ... numbered by their lowest rank */
        int *host_of = malloc((size_t)world_size * sizeof *host_of);
        for (int r = 0; r < world_size; r++) {
            host_of[r] = r;
            for (int q = 0; q < r; q++)
                if (strcmp(rank_host[q], rank_host[r]) == 0) {
                    host_of[r] = q;
                    break;
                }
        }
        ist_discover(world_dup, (const char(*)[IST_DISCOVER_NAME])rank_host, host_of, rank_cluster);
        for (int r = 0; r < world_size; r++) {
            if (rank_cluster[r] >= nclusters) nclusters = rank_cluster[r] + 1;
            snprintf(cluster_names[rank_cluster[r]], IST_NAME_MAX, "c%d", rank_cluster[r]);
        }
        free(host_of);
    } else {
        for (int r = 0; r < world_size; r++) rank_cluster[r] = find_or_add_cluster(all[r].cluster);
    }
    free(all);

    world_info.size = world_size;
    world_info.rank = world_rank;
    world_info.world = malloc((size_t)world_size * sizeof(int));
    for (int r = 0; r < world_size; r++) world_info.world[r] = r;
    return MPI_SUCCESS;
}

static void free_info(struct ist_comm_info *info)
{
    free(info->world);
    free(info->remote_world);
    free(info);
}

static int delete_info(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    atomic_fetch_add(&generation, 1);
    free_info(value);
    return MPI_SUCCESS;
}

void ist_topology_finalize(void)
{
    if (comm_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&comm_keyval);
    free(world_info.world);
    world_info.world = NULL;
    free(cluster_names);
    free(rank_cluster);
    free(rank_host);
    cluster_names = NULL;
    rank_cluster = NULL;
    rank_host = NULL;
    nclusters = 0;
    last_comm = MPI_COMM_NULL;
    last_info = NULL;
}

int ist_world_size(void) { return world_size; }
int ist_world_rank(void) { return world_rank; }
int ist_cluster_count(void) { return nclusters; }
const char *ist_cluster_name(int cluster) { return cluster_names[cluster]; }
int ist_rank_cluster(int r) { return rank_cluster[r]; }
const char *ist_rank_host(int r) { return rank_host[r]; }

/* The group calls are ist_world_X ones (generated, world_calls.h): src/world/zip answers
 * for communicators that span sites, in world ranks (zip_group.c); otherwise the MPI. */
static int *translate_group(MPI_Group group, int n)
{
    MPI_Group world_group;
    ist_world_Comm_group(ist_app_world, &world_group);
    int *ranks = malloc((size_t)n * sizeof(int));
    int *out = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) ranks[i] = i;
    ist_world_Group_translate_ranks(group, n, ranks, world_group, out);
    ist_world_Group_free(&world_group);
    free(ranks);
    return out;
}

static struct ist_comm_info *make_info(MPI_Comm comm)
{
    struct ist_comm_info *info = calloc(1, sizeof *info);
    MPI_Group group;
    PMPI_Comm_test_inter(comm, &info->inter);
    ist_world_Comm_size(comm, &info->size);
    ist_world_Comm_rank(comm, &info->rank);
    ist_world_Comm_group(comm, &group);
    info->world = translate_group(group, info->size);
    ist_world_Group_free(&group);
    if (info->inter) {
        PMPI_Comm_remote_size(comm, &info->remote_size);
        PMPI_Comm_remote_group(comm, &group);
        info->remote_world = translate_group(group, info->remote_size);
        PMPI_Group_free(&group);
    }
    return info;
}

const struct ist_comm_info *ist_comm_info(MPI_Comm comm)
{
    if (comm == ist_app_world) return &world_info;
    unsigned long gen = atomic_load(&generation);
    if (comm == last_comm && gen == last_generation) return last_info;
    struct ist_comm_info *info = NULL;
    int found = 0;
    pthread_mutex_lock(&info_lock);
    PMPI_Comm_get_attr(comm, comm_keyval, &info, &found);
    if (!found) {
        info = make_info(comm);
        PMPI_Comm_set_attr(comm, comm_keyval, info);
    }
    pthread_mutex_unlock(&info_lock);
    last_comm = comm;
    last_info = info;
    last_generation = gen;
    return info;
}
