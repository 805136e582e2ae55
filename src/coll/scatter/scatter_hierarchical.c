/* Scatter and Scatterv: the root sends each other cluster its ranks' blocks (packed, with
 * their sizes) as one message to the cluster's coordinator (its length, then eager
 * segments: common/buffers.c), which scatters them inside the cluster; the root scatters in
 * its own. One wide-area latency, every block crosses one link once.
 *
 * Chosen (coll_choose.c) when the model predicts it faster than the MPI's own scatter; cost
 * about one wide-area latency plus the remote clusters' bytes at the WAN gap.
 * The entries (scatter.c) run the linear algorithm (scatter_linear.c) instead where the
 * selector or a forced setting chooses it. */
#include <stdlib.h>
#include <string.h>

#include "coll_algorithms.h"

#define TAG_SCATTER 7006

/* [sizes of cluster c's ranks][their blocks, packed], for the root to send (the root's
 * own block is left out: size 0). */
static char *cluster_message(const struct ist_hier *h, int c, const struct ist_block *send,
                             int root, long *len)
{
    long header = (long)h->count[c] * (long)sizeof(int), total = 0;
    int *sizes = malloc((size_t)h->count[c] * sizeof(int));
    for (int j = 0; j < h->count[c]; j++) {
        int r = h->members[h->member_start[c] + j];
        sizes[j] = r == root ? 0 : (int)ist_block_bytes(&send[r]);
        total += sizes[j];
    }
    char *msg = malloc((size_t)(header + total) + 1);
    memcpy(msg, sizes, (size_t)header);
    long pos = header;
    for (int j = 0; j < h->count[c]; j++) {
        int r = h->members[h->member_start[c] + j];
        if (r != root) ist_pack(send[r].buf, send[r].count, send[r].type, msg, header + total, &pos);
    }
    free(sizes);
    *len = header + total;
    return msg;
}

/* send: each rank's block at the root; mine: where this rank's goes (NULL: the root in
 * place). */
int ist_scatter_hierarchical(struct ist_hier *h, const struct ist_block *send, int root,
                             const struct ist_block *mine)
{
    int rootc = h->cluster_of[root], c = h->my_cluster;
    int lrep = c == rootc ? h->cluster_rank[root] : 0;
    int rep = h->cluster_rank[h->rank] == lrep;
    int rc = MPI_SUCCESS;
    char *msg = NULL;
    long len = 0;
    if (h->rank == root) {
        struct ist_reqs q = {0};
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == rootc) continue;
            long n;
            char *out = cluster_message(h, k, send, root, &n);
            ist_reqs_own(&q, out);
            rc = ist_h_isend_any_size(h, out, n, h->first[k], TAG_SCATTER, &q);
        }
        msg = cluster_message(h, rootc, send, root, &len);
        if (rc == MPI_SUCCESS && mine) rc = ist_copy_block(&send[root], mine); /* my own block */
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
    } else if (rep) {
        rc = ist_h_recv_any_size(h, root, TAG_SCATTER, &msg, &len);
    }
    int *displs = NULL;
    const int *sizes = NULL;
    if (rep) {
        sizes = (const int *)msg;
        displs = malloc((size_t)h->count[c] * sizeof(int));
        for (int j = 0, off = 0; j < h->count[c]; off += sizes[j], j++) displs[j] = off;
    }
    long bytes = mine && h->rank != root ? ist_block_bytes(mine) : 0;
    char *in = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (rc == MPI_SUCCESS)
        rc = ist_own_Scatterv(rep ? msg + (long)h->count[c] * (long)sizeof(int) : NULL, sizes, displs,
                          MPI_PACKED, in, (int)bytes, MPI_PACKED, lrep, h->cluster_comm);
    if (rc == MPI_SUCCESS && bytes) {
        long p = 0;
        rc = ist_unpack(in, bytes, &p, (void *)mine->buf, mine->count, mine->type);
    }
    free(in);
    free(displs);
    free(msg);
    return rc;
}
