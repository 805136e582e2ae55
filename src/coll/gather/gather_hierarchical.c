/* Gather and Gatherv: each cluster gathers its ranks' blocks (packed) at one rank, the
 * root in its own cluster and the coordinator elsewhere, which sends them to the root as
 * one message (its length, then eager segments: common/buffers.c): one wide-area latency,
 * every block crosses one link once. The root unpacks each block into its place with its
 * own receive type.
 *
 * Chosen (coll_choose.c) when the model predicts it faster than the MPI's own gather; cost
 * about one wide-area latency plus the remote clusters' bytes at the WAN gap, against the
 * MPI's binomial tree whose wide-area steps can follow one another.
 * The entries (gather.c) run the linear algorithm (gather_linear.c) instead where the
 * selector or a forced setting chooses it. */
#include <stdlib.h>
#include <string.h>

#include "coll_algorithms.h"

#define TAG_GATHER 7005

/* The block of rank `rank`, packed, at the root: unpack it into recv[rank]. */
static int unpack_members(const struct ist_hier *h, int c, const int *sizes, const char *data,
                          const struct ist_block *recv, int skip)
{
    long pos = 0;
    int rc = MPI_SUCCESS;
    for (int j = 0; j < h->count[c] && rc == MPI_SUCCESS; j++) {
        int r = h->members[h->member_start[c] + j];
        long end = pos + sizes[j];
        if (r != skip) {
            long p = pos;
            rc = ist_unpack(data, end, &p, (void *)recv[r].buf, recv[r].count, recv[r].type);
        }
        pos = end;
    }
    return rc;
}

/* mine: this rank's block (NULL at a root that gathers in place); recv: where each rank's
 * block goes (at the root only). */
int ist_gather_hierarchical(struct ist_hier *h, const struct ist_block *mine, int root,
                            const struct ist_block *recv)
{
    int rootc = h->cluster_of[root], c = h->my_cluster;
    int lrep = c == rootc ? h->cluster_rank[root] : 0;
    int rep = h->cluster_rank[h->rank] == lrep;
    /* The root keeps its own block: it sends nothing in its cluster's gather. */
    long bytes = mine && h->rank != root ? ist_block_bytes(mine) : 0;
    char *packed = malloc(bytes > 0 ? (size_t)bytes : 1);
    long pos = 0;
    int rc = MPI_SUCCESS;
    if (bytes) rc = ist_pack(mine->buf, mine->count, mine->type, packed, bytes, &pos);
    int nb = (int)bytes, *sizes = NULL, *displs = NULL;
    char *msg = NULL;
    long total = 0;
    if (rep) {
        sizes = malloc((size_t)h->count[c] * sizeof(int));
        displs = malloc((size_t)h->count[c] * sizeof(int));
    }
    if (rc == MPI_SUCCESS) rc = ist_own_Gather(&nb, 1, MPI_INT, sizes, 1, MPI_INT, lrep, h->cluster_comm);
    long header = (long)h->count[c] * (long)sizeof(int);
    if (rep && rc == MPI_SUCCESS) {
        for (int j = 0; j < h->count[c]; j++) {
            displs[j] = (int)total;
            total += sizes[j];
        }
        msg = malloc((size_t)(header + total) + 1);
        memcpy(msg, sizes, (size_t)header);
    }
    if (rc == MPI_SUCCESS)
        rc = ist_own_Gatherv(packed, nb, MPI_PACKED, msg ? msg + header : NULL, sizes, displs,
                         MPI_PACKED, lrep, h->cluster_comm);
    if (rep && c != rootc && rc == MPI_SUCCESS) {
        struct ist_reqs q = {0};
        rc = ist_h_isend_any_size(h, msg, header + total, root, TAG_GATHER, &q);
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
    }
    if (h->rank == root && rc == MPI_SUCCESS) {
        if (mine) rc = ist_copy_block(mine, &recv[root]); /* my own block, into place */
        if (rc == MPI_SUCCESS) rc = unpack_members(h, rootc, sizes, msg + header, recv, root);
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == rootc) continue;
            char *in;
            long n;
            rc = ist_h_recv_any_size(h, h->first[k], TAG_GATHER, &in, &n);
            if (rc == MPI_SUCCESS)
                rc = unpack_members(h, k, (const int *)in, in + (long)h->count[k] * (long)sizeof(int), recv, -1);
            free(in);
        }
    }
    free(msg);
    free(sizes);
    free(displs);
    free(packed);
    return rc;
}
