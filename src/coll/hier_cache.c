/* The hierarchy of each communicator the WAN-aware collectives run on (struct ist_hier:
 * its clusters, their members, a duplicate and a communicator per cluster), built at the
 * first collective that needs it (collective over the communicator: it dups and splits)
 * and kept as an attribute, freed with the communicator or at MPI_Finalize. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier_parts.h"
#include "topology.h"
#include "world.h"

static int keyval = MPI_KEYVAL_INVALID;

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

static void free_hier(struct ist_hier *h)
{
    ist_adapt_forget(h);
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

void ist_hier_cache_init(void)
{
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_hier, &keyval, NULL);
}

void ist_hier_cache_free(void)
{
    while (live) PMPI_Comm_delete_attr(live->user, keyval); /* unlinks it */
    if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
}

int ist_hier_logged_before(const struct ist_hier *h, enum ist_coll_id id, const char *text)
{
    int seen = 0;
    pthread_mutex_lock(&live_lock);
    for (struct cached *c = live; c; c = c->next)
        if (c->h == h) {
            seen = strcmp(c->logged[id], text) == 0;
            snprintf(c->logged[id], sizeof c->logged[id], "%s", text);
        }
    pthread_mutex_unlock(&live_lock);
    return seen;
}

static struct ist_hier *build(MPI_Comm comm)
{
    const struct ist_comm_info *info = ist_comm_info(comm);
    struct ist_hier *h = calloc(1, sizeof *h);
    h->size = info->size;
    h->rank = info->rank;
    h->model = ist_hier_model();
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
        h->spans_sites = ist_world_spans(comm);
        ist_world_dup(comm, &h->comm);
        ist_world_split(comm, h->my_cluster, h->rank, &h->cluster_comm);
        if (ist_adapt_on() && !h->spans_sites) ist_adapt_built(h);
    }
    return h;
}

struct ist_hier *ist_hier_lookup(MPI_Comm comm)
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

