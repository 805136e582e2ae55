/* Alltoall, direct: every rank sends every block straight to its destination, in eager
 * segments, all at once (receives posted first); no cluster stages.
 *
 * Chosen: only when forced (collectives.algorithm.alltoall = "direct"): n_i x n_k flows
 * start together on each wide-area link, and on das-4x2 with 64 KiB blocks they
 * overflowed its 256 KiB queues (Open MPI: 0.30-0.92 s, aggregated 0.31 s; MPICH
 * 0.32-0.36 s, aggregated 0.33 s; results/collectives/README.md).
 * Cost: L_w + (P-n) g_w(M) per rank while the queues hold; n_i n_k messages per pair of
 * clusters. */
#include <stdlib.h>
#include <string.h>

#include "coll_algorithms.h"

#define TAG_ALLTOALL_DIRECT 7011

/* Every block straight to its rank: receives posted first, then the sends, then one wait. */
int ist_alltoall_direct(struct ist_hier *h, const struct ist_block *send, const struct ist_block *recv)
{
    int n = h->size, me = h->rank, rc = MPI_SUCCESS;
    long *off, *roff = malloc((size_t)(n + 1) * sizeof(long));
    char *out = ist_pack_blocks(n, send, &off, &rc);
    roff[0] = 0;
    for (int j = 0; j < n; j++) roff[j + 1] = roff[j] + ist_block_bytes(&recv[j]);
    char *in = malloc((size_t)roff[n] + 1);
    struct ist_reqs q = {0};
    /* in eager segments (common/buffers.c): a rendezvous would wait behind the queued data */
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        if (i != me) rc = ist_h_irecv_segments(h, in + roff[i], roff[i + 1] - roff[i], i, TAG_ALLTOALL_DIRECT, &q);
    for (int k = 1; k < n && rc == MPI_SUCCESS; k++) { /* from me + 1 on: not all to rank 0 first */
        int j = (me + k) % n;
        rc = ist_h_isend_segments(h, out + off[j], off[j + 1] - off[j], j, TAG_ALLTOALL_DIRECT, &q);
    }
    int waited = ist_reqs_wait(&q);
    if (rc == MPI_SUCCESS) rc = waited;
    if (rc == MPI_SUCCESS) memcpy(in + roff[me], out + off[me], (size_t)(off[me + 1] - off[me]));
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        long p = roff[i];
        rc = ist_unpack(in, roff[i + 1], &p, (void *)recv[i].buf, recv[i].count, recv[i].type);
    }
    free(in);
    free(out);
    free(roff);
    free(off);
    return rc;
}

