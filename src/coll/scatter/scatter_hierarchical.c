/* Scatter and Scatterv: the root sends each other cluster its ranks' blocks (packed, with
 * their sizes) as one message to the cluster's coordinator (its length, then eager
 * segments: common/buffers.c), which scatters them inside the cluster; the root scatters in
 * its own. One wide-area latency, every block crosses one link once.
 *
 * Chosen (coll_choose.c) when the model predicts it faster than the MPI's own scatter; cost
 * about one wide-area latency plus the remote clusters' bytes at the WAN gap.
 * Where the linear algorithm in eager segments (scatter_linear.c) is chosen instead, it runs in
 * this call's place (h->way). */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

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
static int scatter_blocks(struct ist_hier *h, const struct ist_block *send, int root,
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

/* The root's send blocks of either form (counts NULL: the regular one), and the way the
 * call takes: ours or the linear one (h->way). */
static int scatter(struct ist_hier *h, enum ist_coll_id id, const void *sendbuf, int sendcount,
                   const int *sendcounts, const int *displs, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root)
{
    ist_hier_log(h, id, "%s",
                 h->way == IST_WAY_LINEAR ? "linear in eager segments, every block straight from the root"
                                          : "one message per cluster from the root, cluster scatter");
    struct ist_block mine = {recvbuf, recvcount, recvtype}, *send = NULL;
    if (h->rank == root) send = ist_rank_blocks(h, sendbuf, sendcount, sendcounts, displs, sendtype);
    const struct ist_block *own = recvbuf == MPI_IN_PLACE && h->rank == root ? NULL : &mine;
    int rc = (h->way == IST_WAY_LINEAR ? ist_linear_scatter : scatter_blocks)(h, send, root, own);
    free(send);
    return ist_hier_leave(rc);
}

int ist_wan_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_SCATTER, comm,
        recvbuf == MPI_IN_PLACE ? ist_type_bytes(sendcount, sendtype) : ist_type_bytes(recvcount, recvtype));
    if (!h) return 0;
    return ist_answered(answer, scatter(h, IST_COLL_SCATTER, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                   recvtype, root));
}

int ist_wan_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_SCATTERV, comm, IST_BYTES_LOCAL(recvbuf == MPI_IN_PLACE ? 0 : ist_type_bytes(recvcount, recvtype)));
    if (!h) return 0;
    return ist_answered(answer, scatter(h, IST_COLL_SCATTERV, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                   recvtype, root));
}
