/* Gather and Gatherv, linear in eager segments: the root and every other rank exchange
 * that rank's block directly, as the MPI's linear algorithm does, but cut into pieces
 * under both MPIs' eager limits (IST_EAGER_SEGMENT, or collectives.segment), so that no
 * block waits for a rendezvous (Open MPI's from 64 KiB: one round trip; MPICH's over UCX
 * from about 19.5 KB: two). Each pair cuts the block by its own byte count, which both
 * ends know, so the v-form needs no agreement; blocks are packed so that the two ends'
 * datatypes may differ. A pair whose block would flood a wide-area link (its size times
 * its cluster's ranks above IST_LINEAR_FLOOD, coll_cost.h) moves it whole, paced by the
 * MPI's rendezvous (common/buffers.c, ist_linear_in_segments_pair).
 *
 * Chosen (coll_choose.c) where the model predicts it the margin (15%) faster than the
 * MPI's own, and for Gatherv as its one way where it is the fastest safe way (hier_select.c).
 * Cost: L_w + (P-1) g_w(M) at the root's port: the MPI's linear algorithm without its
 * rendezvous, up to the flood bound. */
#include <stdlib.h>

#include "coll_algorithms.h"

#define TAG_LINEAR 7016

/* mine: this rank's block (NULL at a root that gathers in place); recv: where each rank's
 * block goes (at the root only). */
int ist_gather_linear(struct ist_hier *h, const struct ist_block *mine, int root,
                      const struct ist_block *recv)
{
    int rc = MPI_SUCCESS;
    struct ist_reqs q = {0};
    if (h->rank != root) {
        long bytes = ist_block_bytes(mine), pos = 0;
        if (!ist_linear_in_segments_pair(h, root, h->rank, bytes)) {
            rc = ist_h_isend_typed(h, mine->buf, mine->count, mine->type, root, TAG_LINEAR,
                                   ist_reqs_next(&q));
        } else {
            char *out = malloc(bytes > 0 ? (size_t)bytes : 1);
            ist_reqs_own(&q, out);
            rc = ist_pack(mine->buf, mine->count, mine->type, out, bytes, &pos);
            if (rc == MPI_SUCCESS) rc = ist_h_isend_segments(h, out, bytes, root, TAG_LINEAR, &q);
        }
        int waited = ist_reqs_wait(&q);
        return rc == MPI_SUCCESS ? waited : rc;
    }
    long *off = ist_linear_offsets(h, recv, root);
    char *in = malloc((size_t)off[h->size] + 1);
    for (int r = 0; r < h->size && rc == MPI_SUCCESS; r++) {
        if (r == root) continue;
        if (ist_linear_in_segments_pair(h, root, r, ist_block_bytes(&recv[r])))
            rc = ist_h_irecv_segments(h, in + off[r], off[r + 1] - off[r], r, TAG_LINEAR, &q);
        else
            rc = ist_h_irecv_typed(h, (void *)recv[r].buf, recv[r].count, recv[r].type, r,
                                   TAG_LINEAR, ist_reqs_next(&q));
    }
    if (rc == MPI_SUCCESS && mine) rc = ist_copy_block(mine, &recv[root]); /* mine, while they come */
    int waited = ist_reqs_wait(&q);
    if (rc == MPI_SUCCESS) rc = waited;
    for (int r = 0; r < h->size && rc == MPI_SUCCESS; r++) {
        long pos = off[r];
        if (r != root && off[r + 1] > off[r])
            rc = ist_unpack(in, off[r + 1], &pos, (void *)recv[r].buf, recv[r].count, recv[r].type);
    }
    free(in);
    free(off);
    return rc;
}

