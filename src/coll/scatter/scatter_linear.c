/* Scatter and Scatterv, linear in eager segments: the root and every other rank exchange
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
 * MPI's own, and for Scatterv as its one way where it is the fastest safe way (hier_select.c).
 * The blocks that go whole are sent first, so that their rendezvous overlaps the
 * segments.
 * Cost: L_w + (P-1) g_w(M) at the root's port: the MPI's linear algorithm without its
 * rendezvous, up to the flood bound. */
#include <stdlib.h>

#include "coll_algorithms.h"

#define TAG_LINEAR 7016

/* send: each rank's block (at the root only); mine: where this rank's goes (NULL: the
 * root in place). */
int ist_scatter_linear(struct ist_hier *h, const struct ist_block *send, int root,
                       const struct ist_block *mine)
{
    int rc = MPI_SUCCESS;
    struct ist_reqs q = {0};
    if (h->rank != root) {
        long bytes = ist_block_bytes(mine), pos = 0;
        if (!ist_linear_in_segments_pair(h, root, h->rank, bytes)) {
            rc = ist_h_irecv_typed(h, (void *)mine->buf, mine->count, mine->type, root,
                                   TAG_LINEAR, ist_reqs_next(&q));
            int waited = ist_reqs_wait(&q);
            return rc == MPI_SUCCESS ? waited : rc;
        }
        char *in = malloc(bytes > 0 ? (size_t)bytes : 1);
        rc = ist_h_irecv_segments(h, in, bytes, root, TAG_LINEAR, &q);
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
        if (rc == MPI_SUCCESS) rc = ist_unpack(in, bytes, &pos, (void *)mine->buf, mine->count, mine->type);
        free(in);
        return rc;
    }
    long *off = ist_linear_offsets(h, send, root);
    char *out = malloc((size_t)off[h->size] + 1);
    ist_reqs_own(&q, out);
    for (int r = 0; r < h->size && rc == MPI_SUCCESS; r++) {
        long pos = off[r];
        if (r != root && off[r + 1] > off[r])
            rc = ist_pack(send[r].buf, send[r].count, send[r].type, out, off[r + 1], &pos);
    }
    /* The blocks that move whole first, then the segments, each from root + 1 on as the
     * MPI's: a whole block waits for its rendezvous, and that round trip then overlaps
     * the segments on the root's port instead of following them (measured: a209035). */
    for (int segments = 0; segments <= 1; segments++)
        for (int k = 1; k < h->size && rc == MPI_SUCCESS; k++) {
            int r = (root + k) % h->size;
            if (ist_linear_in_segments_pair(h, root, r, ist_block_bytes(&send[r])) != segments) continue;
            if (segments)
                rc = ist_h_isend_segments(h, out + off[r], off[r + 1] - off[r], r, TAG_LINEAR, &q);
            else
                rc = ist_h_isend_typed(h, send[r].buf, send[r].count, send[r].type, r,
                                       TAG_LINEAR, ist_reqs_next(&q));
        }
    if (rc == MPI_SUCCESS && mine) rc = ist_copy_block(&send[root], mine); /* mine, while they go */
    int waited = ist_reqs_wait(&q);
    free(off);
    return rc == MPI_SUCCESS ? waited : rc;
}
