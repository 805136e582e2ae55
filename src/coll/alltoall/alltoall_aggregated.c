/* Alltoall, aggregated: blocks between ranks of one cluster go directly (the MPI's
 * alltoallv on the cluster communicator); blocks for other clusters are gathered at the
 * coordinator, which sends each other cluster one message holding every block from its
 * cluster to that cluster (with their sizes; in wide-area segments, hier.h), and scatters
 * what it receives to its ranks. The coordinator posts all its wide-area receives before
 * sending. One message per pair of clusters: few wide-area messages for small blocks.
 *
 * Chosen (hier_select.c) where the model predicts it faster than the MPI's own; the default
 * algorithm of all three forms.
 * Cost: alltoallv_l(n, M) + gather_l(n, C n M) + L_w + (C-1) g_w(n^2 M)
 *       + scatter_l(n, C n M); C(C-1) wide-area messages. */
#include <stdlib.h>
#include <string.h>

#include "coll_algorithms.h"

#define TAG_ALLTOALL 7008

/* The q-th int of a header inside a byte buffer (headers need not be aligned). */
static int header_at(const char *p, long q)
{
    int v;
    memcpy(&v, p + q * (long)sizeof(int), sizeof v);
    return v;
}

/* send[j]: this rank's block for rank j; recv[i]: where the block from rank i goes. */
int ist_alltoall_aggregated(struct ist_hier *h, const struct ist_block *send, const struct ist_block *recv)
{
    int c = h->my_cluster, me = h->cluster_rank[h->rank], nl = h->count[c], rc = MPI_SUCCESS;
    const int *mine = &h->members[h->member_start[c]];
    const size_t ncl = h->nclusters > 0 ? (size_t)h->nclusters : 1;
    long *off;
    char *out = ist_pack_blocks(h->size, send, &off, &rc);
    /* 1. inside the cluster */
    int *sc = malloc((size_t)nl * sizeof(int)), *sd = malloc((size_t)nl * sizeof(int));
    int *rcn = malloc((size_t)nl * sizeof(int)), *rd = malloc((size_t)nl * sizeof(int));
    long rtotal = 0;
    for (int j = 0; j < nl; j++) {
        sc[j] = (int)(off[mine[j] + 1] - off[mine[j]]);
        sd[j] = (int)off[mine[j]];
        rcn[j] = (int)ist_block_bytes(&recv[mine[j]]);
        rd[j] = (int)rtotal;
        rtotal += rcn[j];
    }
    char *in = malloc((size_t)rtotal + 1);
    if (rc == MPI_SUCCESS) rc = ist_own_Alltoallv(out, sc, sd, MPI_PACKED, in, rcn, rd, MPI_PACKED, h->cluster_comm);
    for (int j = 0; j < nl && rc == MPI_SUCCESS; j++) {
        long p = rd[j];
        rc = ist_unpack(in, rd[j] + rcn[j], &p, (void *)recv[mine[j]].buf, recv[mine[j]].count, recv[mine[j]].type);
    }
    free(in);
    /* 2. to the coordinator: [size of my block for each remote rank][size of the block I
     * expect from each remote rank][the blocks], remote ranks in cluster order, each
     * cluster's in its order. The expected sizes let the coordinator post every
     * wide-area receive at once (a receive of unknown size would take the clusters'
     * messages one after the other: under rendezvous, one transfer at a time). */
    int nremote = h->size - nl;
    long hdr = 2L * nremote * (long)sizeof(int);
    long mylen = hdr;
    for (int k = 0; k < h->nclusters; k++)
        if (k != c)
            for (int j = 0; j < h->count[k]; j++) mylen += ist_block_bytes(&send[h->members[h->member_start[k] + j]]);
    char *up = malloc((size_t)mylen + 1);
    {
        int *sz = (int *)up, n = 0;
        char *data = up + hdr;
        for (int k = 0; k < h->nclusters; k++) {
            if (k == c) continue;
            for (int j = 0; j < h->count[k]; j++) {
                int r = h->members[h->member_start[k] + j];
                sz[nremote + n] = (int)ist_block_bytes(&recv[r]);
                sz[n++] = (int)(off[r + 1] - off[r]);
                memcpy(data, out + off[r], (size_t)(off[r + 1] - off[r]));
                data += off[r + 1] - off[r];
            }
        }
    }
    int coord = me == 0, len = (int)mylen, *lens = NULL, *ld = NULL;
    char *gathered = NULL;
    if (coord) {
        lens = malloc((size_t)nl * sizeof(int));
        ld = malloc((size_t)nl * sizeof(int));
    }
    if (rc == MPI_SUCCESS) rc = ist_own_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, h->cluster_comm);
    long gtotal = 0;
    if (coord)
        for (int j = 0; j < nl; j++) {
            ld[j] = (int)gtotal;
            gtotal += lens[j];
        }
    if (coord) gathered = malloc((size_t)gtotal + 1);
    if (rc == MPI_SUCCESS) rc = ist_own_Gatherv(up, len, MPI_PACKED, gathered, lens, ld, MPI_PACKED, 0, h->cluster_comm);
    free(up);
    /* 3. coordinators: one message per other cluster, and the scatter of what comes in */
    char *down = NULL;
    int *dlens = NULL, *dd = NULL;
    if (coord && rc == MPI_SUCCESS) {
        /* where member i's block for remote rank r is: index of r among remote ranks */
        int *ridx = malloc((size_t)h->size * sizeof(int)), n = 0;
        for (int k = 0; k < h->nclusters; k++)
            if (k != c)
                for (int j = 0; j < h->count[k]; j++) ridx[h->members[h->member_start[k] + j]] = n++;
        long **boff = malloc((size_t)nl * sizeof(long *)); /* member i: offset of each remote block */
        for (int i = 0; i < nl; i++) {
            boff[i] = malloc((size_t)(nremote + 1) * sizeof(long));
            long p = ld[i] + hdr;
            for (int q = 0; q < nremote; q++) {
                boff[i][q] = p;
                p += header_at(gathered + ld[i], q);
            }
            boff[i][nremote] = p;
        }
        struct ist_reqs q = {0};
        char **msgs = calloc(ncl, sizeof *msgs);
        /* each other cluster's blocks for my ranks, [sizes nk x nl][blocks]: all posted
         * before any send, so that the wide-area transfers run at the same time */
        char **inmsg = calloc(ncl, sizeof *inmsg);
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == c) continue;
            long ilen = (long)h->count[k] * nl * (long)sizeof(int);
            for (int j = 0; j < nl; j++)
                for (int i = 0; i < h->count[k]; i++)
                    ilen += header_at(gathered + ld[j], nremote + ridx[h->members[h->member_start[k] + i]]);
            inmsg[k] = malloc((size_t)ilen + 1);
            rc = ist_h_irecv_segments(h, inmsg[k], ilen, h->first[k], TAG_ALLTOALL, &q);
        }
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == c) continue;
            int nk = h->count[k];
            long mlen = (long)nl * nk * (long)sizeof(int);
            for (int i = 0; i < nl; i++)
                for (int j = 0; j < nk; j++) {
                    int q = ridx[h->members[h->member_start[k] + j]];
                    mlen += boff[i][q + 1] - boff[i][q];
                }
            char *m = msgs[k] = malloc((size_t)mlen + 1);
            int *sz = (int *)m;
            char *data = m + (long)nl * nk * (long)sizeof(int);
            for (int i = 0; i < nl; i++)
                for (int j = 0; j < nk; j++) {
                    int q = ridx[h->members[h->member_start[k] + j]];
                    long b = boff[i][q + 1] - boff[i][q];
                    sz[i * nk + j] = (int)b;
                    memcpy(data, gathered + boff[i][q], (size_t)b);
                    data += b;
                }
            rc = ist_h_isend_segments(h, m, mlen, h->first[k], TAG_ALLTOALL, &q);
        }
        int wrc = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = wrc;
        /* member j gets, cluster by cluster and rank by rank, the blocks addressed to it */
        dlens = calloc((size_t)nl, sizeof(int));
        dd = malloc((size_t)nl * sizeof(int));
        long dtotal = 0;
        for (int k = 0; k < h->nclusters; k++)
            if (k != c && inmsg[k])
                for (int x = 0; x < h->count[k] * nl; x++) dtotal += ((int *)inmsg[k])[x];
        down = malloc((size_t)dtotal + 1);
        long p = 0;
        for (int j = 0; j < nl && rc == MPI_SUCCESS; j++) {
            dd[j] = (int)p;
            for (int k = 0; k < h->nclusters; k++) {
                if (k == c) continue;
                int nk = h->count[k];
                const int *sz = (const int *)inmsg[k];
                for (int i = 0; i < nk; i++) { /* block from k's rank i to my rank j */
                    long at = (long)nk * nl * (long)sizeof(int);
                    for (int x = 0; x < i * nl + j; x++) at += sz[x];
                    memcpy(down + p, inmsg[k] + at, (size_t)sz[i * nl + j]);
                    p += sz[i * nl + j];
                }
            }
            dlens[j] = (int)(p - dd[j]);
        }
        for (int k = 0; k < h->nclusters; k++) {
            free(msgs[k]);
            free(inmsg[k]);
        }
        for (int i = 0; i < nl; i++) free(boff[i]);
        free(boff);
        free(msgs);
        free(inmsg);
        free(ridx);
    }
    /* 4. each rank receives its remote blocks and unpacks them */
    long want = 0;
    for (int k = 0; k < h->nclusters; k++)
        if (k != c)
            for (int i = 0; i < h->count[k]; i++) want += ist_block_bytes(&recv[h->members[h->member_start[k] + i]]);
    char *mine_in = malloc((size_t)want + 1);
    if (rc == MPI_SUCCESS)
        rc = ist_own_Scatterv(down, dlens, dd, MPI_PACKED, mine_in, (int)want, MPI_PACKED, 0, h->cluster_comm);
    long p = 0;
    for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
        if (k == c) continue;
        for (int i = 0; i < h->count[k] && rc == MPI_SUCCESS; i++) {
            const struct ist_block *b = &recv[h->members[h->member_start[k] + i]];
            rc = ist_unpack(mine_in, p + ist_block_bytes(b), &p, (void *)b->buf, b->count, b->type);
        }
    }
    free(mine_in);
    free(down);
    free(dlens);
    free(dd);
    free(gathered);
    free(lens);
    free(ld);
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
    free(out);
    free(off);
    return rc;
}

