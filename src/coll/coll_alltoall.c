/* Alltoall, Alltoallv, Alltoallw, two algorithms; each block crosses one link once in
 * both, and both have one wide-area latency on the critical path.
 *
 * aggregated (the default): blocks between ranks of one cluster go directly (the MPI's
 * alltoallv on the cluster communicator); blocks for other clusters are gathered at the
 * coordinator, which sends each other cluster one message holding every block from its
 * cluster to that cluster (with their sizes; in wide-area segments, hier.h), and scatters
 * what it receives to its ranks. One message per pair of clusters: few wide-area messages
 * for small blocks.
 *
 * direct (when forced: ISTHMUS_COLL_ALGORITHM=alltoall:direct): every rank sends every
 * block straight to its destination (in eager segments), all at once; no LAN stages, but n_i x n_k flows
 * start together on each wide-area link. On das-4x2 with 64 KiB blocks they overflowed
 * its 256 KiB queues (Open MPI: 0.30-0.92 s, aggregated 0.31 s; MPICH 0.32-0.36 s,
 * aggregated 0.33 s; results/collectives/README.md), so it is not the default.
 *
 * Blocks travel packed, so that any datatypes, also different per peer, work. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

#define TAG_ALLTOALL 7008
#define TAG_ALLTOALL_DIRECT 7011

/* The q-th int of a header inside a byte buffer (headers need not be aligned). */
static int header_at(const char *p, long q)
{
    int v;
    memcpy(&v, p + q * (long)sizeof(int), sizeof v);
    return v;
}

/* Blocks b[0..n) packed one after the other; (*off)[j] is where block j starts, (*off)[n]
 * the end. Packing comes first because in place the receive buffer is the send buffer. */
static char *pack_blocks(int n, const struct ist_block *b, long **off, int *rc)
{
    long *o = *off = malloc((size_t)(n + 1) * sizeof(long));
    o[0] = 0;
    for (int j = 0; j < n; j++) o[j + 1] = o[j] + ist_block_bytes(&b[j]);
    char *out = malloc((size_t)o[n] + 1);
    for (int j = 0; j < n && *rc == MPI_SUCCESS; j++) {
        long p = o[j];
        *rc = ist_pack(b[j].buf, b[j].count, b[j].type, out, o[n], &p);
    }
    return out;
}

/* send[j]: this rank's block for rank j; recv[i]: where the block from rank i goes. */
static int alltoall_blocks(struct ist_hier *h, const struct ist_block *send, const struct ist_block *recv)
{
    int c = h->my_cluster, me = h->local_rank[h->rank], nl = h->count[c], rc = MPI_SUCCESS;
    const int *mine = &h->members[h->member_start[c]];
    const size_t ncl = h->nclusters > 0 ? (size_t)h->nclusters : 1;
    long *off;
    char *out = pack_blocks(h->size, send, &off, &rc);
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
    if (rc == MPI_SUCCESS) rc = MPI_Alltoallv(out, sc, sd, MPI_PACKED, in, rcn, rd, MPI_PACKED, h->local);
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
    if (rc == MPI_SUCCESS) rc = MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, h->local);
    long gtotal = 0;
    if (coord)
        for (int j = 0; j < nl; j++) {
            ld[j] = (int)gtotal;
            gtotal += lens[j];
        }
    if (coord) gathered = malloc((size_t)gtotal + 1);
    if (rc == MPI_SUCCESS) rc = MPI_Gatherv(up, len, MPI_PACKED, gathered, lens, ld, MPI_PACKED, 0, h->local);
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
        rc = MPI_Scatterv(down, dlens, dd, MPI_PACKED, mine_in, (int)want, MPI_PACKED, 0, h->local);
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

/* Every block straight to its rank: receives posted first, then the sends, then one wait. */
static int alltoall_direct(struct ist_hier *h, const struct ist_block *send, const struct ist_block *recv)
{
    int n = h->size, me = h->rank, rc = MPI_SUCCESS;
    long *off, *roff = malloc((size_t)(n + 1) * sizeof(long));
    char *out = pack_blocks(n, send, &off, &rc);
    roff[0] = 0;
    for (int j = 0; j < n; j++) roff[j + 1] = roff[j] + ist_block_bytes(&recv[j]);
    char *in = malloc((size_t)roff[n] + 1);
    struct ist_reqs q = {0};
    /* in eager segments (coll_buffers.c): a rendezvous would wait behind the queued data */
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

/* The blocks of the three forms; in place, what is sent is taken from the receive side. */
static struct ist_block *blocks(int n, const void *buf, const int *counts, const int *displs,
                                int count, MPI_Datatype type, const MPI_Datatype *types, int bytes_displs)
{
    struct ist_block *b = malloc((size_t)n * sizeof *b);
    for (int j = 0; j < n; j++) {
        MPI_Datatype t = types ? types[j] : type;
        MPI_Aint at = displs ? (MPI_Aint)displs[j] * (bytes_displs ? 1 : ist_extent(t))
                             : (MPI_Aint)j * count * ist_extent(t);
        b[j] = (struct ist_block){(const char *)buf + at, counts ? counts[j] : count, t};
    }
    return b;
}

static int run(struct ist_hier *h, enum ist_coll_id id, struct ist_block *send, struct ist_block *recv)
{
    int direct = strcmp(ist_hier_algorithm(id), "direct") == 0;
    ist_hier_log(h, id, "%s",
                 direct ? "every block straight to its rank" : "one message per cluster pair through the coordinators");
    int rc = direct ? alltoall_direct(h, send, recv) : alltoall_blocks(h, send, recv);
    free(send);
    free(recv);
    return ist_hier_leave(rc);
}

int ist_hier_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLTOALL, comm, ist_type_bytes(recvcount, recvtype));
    if (!h) return IST_HIER_DECLINED;
    int in_place = sendbuf == MPI_IN_PLACE;
    return run(h, IST_COLL_ALLTOALL, blocks(h->size, in_place ? recvbuf : sendbuf, NULL, NULL, in_place ? recvcount : sendcount,
                         in_place ? recvtype : sendtype, NULL, 0),
               blocks(h->size, recvbuf, NULL, NULL, recvcount, recvtype, NULL, 0));
}

int ist_hier_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_ALLTOALLV, comm,
        IST_BYTES_LOCAL(sendbuf == MPI_IN_PLACE ? ist_counts_bytes(comm, recvcounts, recvtype)
                                                : ist_counts_bytes(comm, sendcounts, sendtype)));
    if (!h) return IST_HIER_DECLINED;
    int in_place = sendbuf == MPI_IN_PLACE;
    return run(h, IST_COLL_ALLTOALLV, in_place ? blocks(h->size, recvbuf, recvcounts, rdispls, 0, recvtype, NULL, 0)
                           : blocks(h->size, sendbuf, sendcounts, sdispls, 0, sendtype, NULL, 0),
               blocks(h->size, recvbuf, recvcounts, rdispls, 0, recvtype, NULL, 0));
}

int ist_hier_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_ALLTOALLW, comm,
        IST_BYTES_LOCAL(sendbuf == MPI_IN_PLACE ? ist_countsw_bytes(comm, recvcounts, recvtypes)
                                                : ist_countsw_bytes(comm, sendcounts, sendtypes)));
    if (!h) return IST_HIER_DECLINED;
    int in_place = sendbuf == MPI_IN_PLACE;
    return run(h, IST_COLL_ALLTOALLW, in_place ? blocks(h->size, recvbuf, recvcounts, rdispls, 0, MPI_DATATYPE_NULL, recvtypes, 1)
                           : blocks(h->size, sendbuf, sendcounts, sdispls, 0, MPI_DATATYPE_NULL, sendtypes, 1),
               blocks(h->size, recvbuf, recvcounts, rdispls, 0, MPI_DATATYPE_NULL, recvtypes, 1));
}
