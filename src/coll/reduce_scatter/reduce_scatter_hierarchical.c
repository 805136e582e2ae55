/* Reduce_scatter and Reduce_scatter_block: each cluster reduces the whole vector at its
 * coordinator with the MPI's reduce; each coordinator sends every other coordinator only
 * the elements that belong to that cluster's ranks, combines what it receives for its own
 * ranks in cluster order, and scatters the results in its cluster. One wide-area latency;
 * each element crosses only the link into the cluster that keeps it. Non-commutative
 * operations need every cluster's ranks consecutive (else: native).
 *
 * Chosen: the model predicts it faster than the MPI's own.
 * Cost: reduce_l(n, P M) + L_w + (C-1) g_w(n M) + scatterv_l(n, M).
 */
#include <stdlib.h>

#include "hier.h"

#define TAG_REDUCE_SCATTER 7009

/* The elements of cluster k's ranks, packed from a full vector laid out by counts. */
static char *cluster_part(const struct ist_hier *h, int k, const char *full, const long *first_elem,
                          const int *counts, MPI_Datatype type, long *bytes)
{
    MPI_Aint ext = ist_extent(type);
    long total = 0;
    for (int j = 0; j < h->count[k]; j++) total += ist_packed_size(counts[h->members[h->member_start[k] + j]], type);
    char *out = malloc((size_t)total + 1);
    long pos = 0;
    for (int j = 0; j < h->count[k]; j++) {
        int r = h->members[h->member_start[k] + j];
        ist_pack(full + first_elem[r] * ext, counts[r], type, out, total, &pos);
    }
    *bytes = pos;
    return out;
}

static int reduce_scatter(struct ist_hier *h, const void *sendbuf, void *recvbuf, const int *counts,
                          MPI_Datatype type, MPI_Op op)
{
    int c = h->my_cluster, rc = MPI_SUCCESS;
    long *first_elem = malloc((size_t)(h->size + 1) * sizeof(long)), n = 0;
    for (int r = 0; r < h->size; r++) {
        first_elem[r] = n;
        n += counts[r];
    }
    int mine = 0; /* elements of my cluster's ranks, in their order */
    for (int j = 0; j < h->count[c]; j++) mine += counts[h->members[h->member_start[c] + j]];
    struct ist_tmp full = {0}, *parts = calloc((size_t)h->nclusters, sizeof *parts);
    int coord = h->cluster_rank[h->rank] == 0;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (coord) rc = ist_tmp_alloc(&full, (int)n, type);
    if (rc == MPI_SUCCESS) rc = ist_own_Reduce(in, full.base, (int)n, type, op, 0, h->cluster_comm);
    if (coord && rc == MPI_SUCCESS) {
        char **out = calloc((size_t)h->nclusters, sizeof *out), **got = calloc((size_t)h->nclusters, sizeof *got);
        long mybytes = 0;
        char *own = cluster_part(h, c, full.base, first_elem, counts, type, &mybytes);
        struct ist_reqs q = {0};
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == c) continue;
            long b;
            out[k] = cluster_part(h, k, full.base, first_elem, counts, type, &b);
            got[k] = malloc((size_t)mybytes + 1);
            /* in eager segments: a whole message of tens of KiB waits for the MPI's rendezvous */
            rc = ist_h_irecv_segments(h, got[k], mybytes, h->first[k], TAG_REDUCE_SCATTER, &q);
            if (rc == MPI_SUCCESS) rc = ist_h_isend_segments(h, out[k], b, h->first[k], TAG_REDUCE_SCATTER, &q);
        }
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
        void **p = malloc((size_t)h->nclusters * sizeof *p);
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            rc = ist_tmp_alloc(&parts[k], mine, type);
            long pos = 0;
            if (rc == MPI_SUCCESS) rc = ist_unpack(k == c ? own : got[k], mybytes, &pos, parts[k].base, mine, type);
            p[k] = parts[k].base;
        }
        /* my ranks' results, in order, at the coordinator: scattered below */
        if (rc == MPI_SUCCESS) {
            void *res = ist_fold(p, h->nclusters, mine, type, op);
            struct ist_tmp *last = &parts[h->nclusters - 1];
            if (res != last->base) rc = ist_copy_typed(res, last->base, mine, type);
        }
        for (int k = 0; k < h->nclusters; k++) {
            free(out[k]);
            free(got[k]);
        }
        free(own);
        free(out);
        free(got);
        free(p);
    }
    int *lc = malloc((size_t)h->count[c] * sizeof(int)), *ld = malloc((size_t)h->count[c] * sizeof(int));
    for (int j = 0, d = 0; j < h->count[c]; d += lc[j], j++) {
        lc[j] = counts[h->members[h->member_start[c] + j]];
        ld[j] = d;
    }
    if (rc == MPI_SUCCESS)
        rc = ist_own_Scatterv(coord ? parts[h->nclusters - 1].base : NULL, lc, ld, type, recvbuf,
                          counts[h->rank], type, 0, h->cluster_comm);
    for (int k = 0; k < h->nclusters; k++) ist_tmp_free(&parts[k]);
    free(parts);
    ist_tmp_free(&full);
    free(lc);
    free(ld);
    free(first_elem);
    return rc;
}

static int declines(struct ist_hier *h, MPI_Op op)
{
    int commute;
    PMPI_Op_commutative(op, &commute);
    return !commute && !h->contiguous;
}

int ist_wan_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_REDUCE_SCATTER, comm, ist_counts_bytes(comm, recvcounts, datatype), IST_NO_ROOT);
    if (!h) return 0;
    if (declines(h, op)) return ist_hier_decline();
    ist_hier_log(h, IST_COLL_REDUCE_SCATTER, "cluster reduce, each cluster's part to it, cluster scatter");
    return ist_hier_served(answer, reduce_scatter(h, sendbuf, recvbuf, recvcounts, datatype, op));
}

int ist_wan_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_REDUCE_SCATTER_BLOCK, comm, ist_type_bytes(recvcount, datatype), IST_NO_ROOT);
    if (!h) return 0;
    if (declines(h, op)) return ist_hier_decline();
    ist_hier_log(h, IST_COLL_REDUCE_SCATTER_BLOCK, "cluster reduce, each cluster's part to it, cluster scatter");
    int *counts = malloc((size_t)h->size * sizeof(int));
    for (int r = 0; r < h->size; r++) counts[r] = recvcount;
    int rc = reduce_scatter(h, sendbuf, recvbuf, counts, datatype, op);
    free(counts);
    return ist_hier_served(answer, rc);
}
