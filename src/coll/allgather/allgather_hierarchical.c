/* Allgather and Allgatherv: each cluster gathers its ranks' blocks (packed) at its
 * coordinator; coordinators send their cluster's blocks to every other coordinator at
 * once, in wide-area segments; each coordinator broadcasts all blocks in its cluster.
 * One wide-area latency, each block crosses each link once: C(C-1) messages (in
 * segments) of a cluster's blocks. Every rank knows every block's size (the counts are
 * arguments everywhere), so no sizes travel.
 *
 * Pipelined: every cluster's blocks are cut into pieces (at most MAX_PIECES of at least
 * PIECE_BYTES), and the cluster broadcast runs as one MPI_Ibcast per piece, started as
 * soon as the piece is complete at the coordinator, so that the broadcast of nM bytes
 * (C n M in all) hides behind the wide-area transfer instead of following it. Cost:
 * g_lan(gather) + L + g(nM) + g_lan(piece), against g_lan(gather) + L + g(nM) +
 * g_lan(CnM) unpipelined (on das-4x2 with 1 MiB per rank, Open MPI: 2.62 s before,
 * 2.47-2.50 s after; results/collectives/README.md).
 *
 * Every rank of a cluster starts the broadcasts in the same order (MPI's rule for
 * nonblocking collectives): its own cluster's pieces first (complete after the gather),
 * then the other clusters' round by round (piece r of clusters c+1, c+2, ... in turn),
 * which is about the order in which they arrive over links of equal speed. */
#include <stdlib.h>

#include "coll_algorithms.h"

#define TAG_ALLGATHER 7007
#define PIECE_BYTES (64L << 10)
#define MAX_PIECES 16

struct layout {
    int npiece;
    const long *cl_off; /* cluster k's blocks, packed: [cl_off[k], cl_off[k + 1]) */
    int *order;         /* piece ids (k * npiece + r) in the order broadcast */
};

/* Where piece r of cluster k's blocks starts in the packed buffer (r = npiece: its end). */
static long piece_start(const struct layout *l, int k, int r)
{
    long len = l->cl_off[k + 1] - l->cl_off[k];
    return l->cl_off[k] + len * r / l->npiece;
}

static int start_bcast(const struct layout *l, char *packed, int p, MPI_Comm local, MPI_Request *req)
{
    int k = p / l->npiece, r = p % l->npiece;
    long first = piece_start(l, k, r);
    return PMPI_Ibcast(packed + first, (int)(piece_start(l, k, r + 1) - first), MPI_PACKED, 0, local, req);
}

/* The coordinator's wide-area exchange and its cluster's broadcasts, each piece
 * broadcast once every segment of it is in. */
static int coordinator(struct ist_hier *h, const struct layout *l, char *packed)
{
    int c = h->my_cluster, n = h->nclusters, R = l->npiece, P = n * R, rc = MPI_SUCCESS, next = 0;
    long seg = ist_wan_segment(h);
    int *left = calloc((size_t)P, sizeof *left); /* piece -> segments still to come */
    struct ist_reqs recvs = {0}, later = {0};
    int *piece_of = NULL, cap = 0;
    for (int r = 0; r < R && rc == MPI_SUCCESS; r++)
        for (int d = 1; d < n && rc == MPI_SUCCESS; d++) {
            int k = (c + d) % n;
            for (long off = piece_start(l, k, r); off < piece_start(l, k, r + 1) && rc == MPI_SUCCESS; off += seg) {
                long len = piece_start(l, k, r + 1) - off < seg ? piece_start(l, k, r + 1) - off : seg;
                rc = ist_h_irecv(h, packed + off, len, h->first[k], TAG_ALLGATHER, ist_reqs_next(&recvs));
                if (recvs.n > cap) {
                    cap = recvs.cap;
                    piece_of = realloc(piece_of, (size_t)cap * sizeof *piece_of);
                }
                piece_of[recvs.n - 1] = k * R + r;
                left[k * R + r]++;
            }
        }
    /* this cluster's blocks, piece by piece to every other coordinator (links in parallel) */
    for (int r = 0; r < R && rc == MPI_SUCCESS; r++) {
        long first = piece_start(l, c, r), len = piece_start(l, c, r + 1) - first;
        for (int d = 1; d < n && rc == MPI_SUCCESS && len > 0; d++) /* an empty piece: no message */
            rc = ist_h_isend_segments(h, packed + first, len, h->first[(c + d) % n], TAG_ALLGATHER, &later);
    }
    for (int done = 0; rc == MPI_SUCCESS; done++) {
        while (rc == MPI_SUCCESS && next < P && left[l->order[next]] == 0)
            rc = start_bcast(l, packed, l->order[next++], h->cluster_comm, ist_reqs_next(&later));
        if (done == recvs.n || rc != MPI_SUCCESS) break;
        int i;
        rc = ist_world_waitany(recvs.n, recvs.r, &i, MPI_STATUS_IGNORE); /* sleeps when it should */
        if (rc == MPI_SUCCESS) left[piece_of[i]]--;
    }
    int wrc = ist_reqs_wait(&recvs); /* nothing left pending on our buffers after an error */
    int lrc = ist_reqs_wait(&later);
    free(piece_of);
    free(left);
    return rc != MPI_SUCCESS ? rc : wrc != MPI_SUCCESS ? wrc : lrc;
}

/* A rank other than the coordinator: every piece's broadcast, in the coordinator's order. */
static int member(struct ist_hier *h, const struct layout *l, char *packed)
{
    int P = h->nclusters * l->npiece, rc = MPI_SUCCESS;
    struct ist_reqs q = {0};
    for (int i = 0; i < P && rc == MPI_SUCCESS; i++) rc = start_bcast(l, packed, l->order[i], h->cluster_comm, ist_reqs_next(&q));
    int wrc = ist_reqs_wait(&q);
    return rc == MPI_SUCCESS ? wrc : rc;
}

/* Pieces per cluster: the largest cluster's blocks in PIECE_BYTES, at most MAX_PIECES. */
static int pieces(const long *cl_off, int nclusters)
{
    long most = 0;
    for (int k = 0; k < nclusters; k++)
        if (cl_off[k + 1] - cl_off[k] > most) most = cl_off[k + 1] - cl_off[k];
    long R = most / PIECE_BYTES;
    return R < 1 ? 1 : R > MAX_PIECES ? MAX_PIECES : (int)R;
}

/* mine: this rank's block (NULL: in place, it is all[rank]); all: where each rank's goes. */
int ist_allgather_hierarchical(struct ist_hier *h, const struct ist_block *mine,
                               const struct ist_block *all)
{
    int c = h->my_cluster, rc = MPI_SUCCESS;
    long *bytes = malloc((size_t)h->size * sizeof(long));
    long *cl_off = malloc((size_t)(h->nclusters + 1) * sizeof(long)); /* packed, cluster order */
    long total = 0;
    for (int k = 0; k < h->nclusters; k++) {
        cl_off[k] = total;
        for (int j = 0; j < h->count[k]; j++) {
            int r = h->members[h->member_start[k] + j];
            bytes[r] = ist_block_bytes(&all[r]);
            total += bytes[r];
        }
    }
    cl_off[h->nclusters] = total;
    char *packed = malloc((size_t)total + 1);
    /* my block goes where the cluster gather puts it */
    int *sizes = malloc((size_t)h->count[c] * sizeof(int)), *displs = malloc((size_t)h->count[c] * sizeof(int));
    for (int j = 0, off = 0; j < h->count[c]; off += sizes[j], j++) {
        sizes[j] = (int)bytes[h->members[h->member_start[c] + j]];
        displs[j] = off;
    }
    long pos = cl_off[c] + displs[h->cluster_rank[h->rank]];
    const struct ist_block *src = mine ? mine : &all[h->rank];
    rc = ist_pack(src->buf, src->count, src->type, packed, total, &pos);
    char *mine_packed = packed + cl_off[c] + displs[h->cluster_rank[h->rank]];
    if (rc == MPI_SUCCESS)
        rc = ist_own_Gatherv(h->cluster_rank[h->rank] == 0 ? MPI_IN_PLACE : mine_packed,
                         sizes[h->cluster_rank[h->rank]], MPI_PACKED, packed + cl_off[c], sizes, displs,
                         MPI_PACKED, 0, h->cluster_comm);
    struct layout l = {pieces(cl_off, h->nclusters), cl_off, NULL};
    l.order = malloc((size_t)(h->nclusters * l.npiece) * sizeof(int));
    int o = 0;
    for (int r = 0; r < l.npiece; r++) l.order[o++] = c * l.npiece + r;
    for (int r = 0; r < l.npiece; r++)
        for (int d = 1; d < h->nclusters; d++) l.order[o++] = ((c + d) % h->nclusters) * l.npiece + r;
    if (rc == MPI_SUCCESS)
        rc = h->cluster_rank[h->rank] == 0 ? coordinator(h, &l, packed) : member(h, &l, packed);
    free(l.order);
    for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
        long p = cl_off[k];
        for (int j = 0; j < h->count[k] && rc == MPI_SUCCESS; j++) {
            int r = h->members[h->member_start[k] + j];
            if (r == h->rank && !mine) {
                p += bytes[r];
                continue;
            }
            rc = ist_unpack(packed, p + bytes[r], &p, (void *)all[r].buf, all[r].count, all[r].type);
        }
    }
    free(sizes);
    free(displs);
    free(packed);
    free(cl_off);
    free(bytes);
    return rc;
}
