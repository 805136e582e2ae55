/* Gather, Gatherv, Scatter and Scatterv, linear in eager segments: the root and every
 * other rank exchange that rank's block directly, as the MPI's linear algorithm does, but
 * cut into pieces under both MPIs' eager limits (IST_EAGER_SEGMENT), so that no block
 * waits for a rendezvous (Open MPI's from 64 KiB: one round trip; MPICH's over UCX from
 * about 19.5 KB: two). Each pair cuts the block by its own byte count, which both ends
 * know (the root from its counts, the rank from its own), so no rank needs another's
 * size: the v-forms need no agreement, and each block is packed so that the two ends'
 * datatypes may differ.
 *
 * A pair whose block would flood a wide-area link (its size times its cluster's ranks
 * above IST_LINEAR_FLOOD, coll_cost.h) moves it whole instead, from and into the callers'
 * buffers, paced by the MPI's rendezvous: the MPI's own linear algorithm for that pair.
 *
 * Chosen (coll_choose.c) where the model predicts it the margin faster than the MPI's
 * own, and for the v-forms as their one way where it is the fastest safe way by the same
 * margin (hier.c); cost: one latency, the root's port carrying every block, as the MPI's
 * linear algorithm without its rendezvous up to the flood bound. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

#define TAG_LINEAR 7016

/* Whether the pair (root, other) moves its block in eager segments (packed), or whole,
 * straight from and into the callers' buffers, paced by the MPI's rendezvous: where the
 * segments would flood the wide-area link (above). */
static int in_segments(const struct ist_hier *h, int root, int other, long bytes)
{
    const int c = h->cluster_of[other];
    return c == h->cluster_of[root] || ist_linear_in_segments(bytes, h->count[c]);
}

/* Offsets of the packed blocks b[0..n) one after the other: off[r] .. off[r + 1]. The
 * root's own block and the blocks that move whole take no room. */
static long *offsets(const struct ist_hier *h, const struct ist_block *b, int root)
{
    long *off = malloc((size_t)(h->size + 1) * sizeof *off);
    off[0] = 0;
    for (int r = 0; r < h->size; r++) {
        long bytes = r == root ? 0 : ist_block_bytes(&b[r]);
        off[r + 1] = off[r] + (in_segments(h, root, r, bytes) ? bytes : 0);
    }
    return off;
}

/* mine: this rank's block (NULL at a root that gathers in place); recv: where each rank's
 * block goes (at the root only). */
int ist_linear_gather(struct ist_hier *h, const struct ist_block *mine, int root,
                      const struct ist_block *recv)
{
    int rc = MPI_SUCCESS;
    struct ist_reqs q = {0};
    if (h->rank != root) {
        long bytes = ist_block_bytes(mine), pos = 0;
        if (!in_segments(h, root, h->rank, bytes)) {
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
    long *off = offsets(h, recv, root);
    char *in = malloc((size_t)off[h->size] + 1);
    for (int r = 0; r < h->size && rc == MPI_SUCCESS; r++) {
        if (r == root) continue;
        if (in_segments(h, root, r, ist_block_bytes(&recv[r])))
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

/* send: each rank's block (at the root only); mine: where this rank's goes (NULL: the
 * root in place). */
int ist_linear_scatter(struct ist_hier *h, const struct ist_block *send, int root,
                       const struct ist_block *mine)
{
    int rc = MPI_SUCCESS;
    struct ist_reqs q = {0};
    if (h->rank != root) {
        long bytes = ist_block_bytes(mine), pos = 0;
        if (!in_segments(h, root, h->rank, bytes)) {
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
    long *off = offsets(h, send, root);
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
            if (in_segments(h, root, r, ist_block_bytes(&send[r])) != segments) continue;
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
