/* Allreduce for large messages: the cluster reduce, a reduce-scatter then an allgather
 * between coordinators (each owns 1/C of the vector), and the cluster broadcast, all four
 * pipelined. Each link carries 2M/C instead of M, for one more wide-area latency: the
 * choice in allreduce.c weighs L + g(M) against L + g(M/C) + max(g(M/C), L) with the
 * model's wide-area parameters.
 *
 * Wide area: each chunk travels in segments, and a coordinator sends a segment of its own
 * chunk back out (the allgather) as soon as every cluster's part of it is in, while the
 * rest of the reduce-scatter still streams. The second phase queues behind the first on
 * each link instead of waiting for it: about L + 2M/(CB) instead of 2(L + M/(CB)).
 * Segments are of ist_wan_segment(h) bytes, under the MPI's eager limit: a rendezvous
 * handshake sent after the first phase's data would wait behind them in the wide-area
 * queue (hier.h).
 *
 * Local area: the cluster's reduce and broadcast run in pieces of SEGS_PER_PIECE segments,
 * as nonblocking collectives on the cluster communicator, so
 * that a piece's segments leave as soon as the piece is reduced and a piece is broadcast
 * as soon as it is final: the LAN stages hide behind the wide-area ones instead of adding
 * to them. Every rank of a cluster starts them in the same order (MPI's rule for
 * nonblocking collectives): reduces round by round, the other clusters' chunks first
 * (their links wait for them); broadcasts of this cluster's chunk first (final after the
 * first phase), then the others' round by round.
 *
 * Parts are combined in cluster order and the cluster reduce keeps rank order, so
 * non-commutative operations keep MPI's order.
 *
 * Chosen: the model's choice for large M on more than two clusters.
 * Cost: L_w + g_w(M/C) + max(g_w(M/C), L_w), the cluster stages hidden behind it.
 */
#include <stdlib.h>
#include <string.h>

#include "coll_algorithms.h"

/* Segment s travels with tag base + s: segments leave as they are ready, not in order,
 * and must meet their receives (other collectives' tags are below 8000). */
#define TAG_SPLIT_SCATTER 16384
#define TAG_SPLIT_GATHER (TAG_SPLIT_SCATTER + 1024)
#define SEGS_PER_PIECE 4 /* 64 KiB pieces with the default segment */
#define MAX_PIECES 16    /* per chunk: a call's nonblocking collectives stay few */

/* Elements [first(k), first(k+1)) are cluster k's chunk; segment s of a chunk of n elements
 * is [n s / S, n (s+1) / S) within it; piece r of a chunk is its segments
 * [S r / R, S (r+1) / R). */
static int part_first(int count, int parts, int k) { return (int)((long)count * k / parts); }

struct split {
    struct ist_hier *h;
    MPI_Datatype type;
    MPI_Aint ext;
    MPI_Op op;
    int count;
    int nseg, npiece;  /* per chunk */
    int *reduce_order; /* piece ids (chunk * npiece + round), in the order started */
    int *bcast_order;
};

static int chunk_first(const struct split *sp, int k) { return part_first(sp->count, sp->h->nclusters, k); }
static int chunk_len(const struct split *sp, int k) { return chunk_first(sp, k + 1) - chunk_first(sp, k); }
/* Segment s of cluster k's chunk: its offset in the chunk, its start in the whole vector
 * and its length, in elements. */
static int seg_offset(const struct split *sp, int k, int s) { return part_first(chunk_len(sp, k), sp->nseg, s); }
static int seg_first(const struct split *sp, int k, int s) { return chunk_first(sp, k) + seg_offset(sp, k, s); }
static int seg_len(const struct split *sp, int k, int s) { return seg_first(sp, k, s + 1) - seg_first(sp, k, s); }
static char *at(const struct split *sp, const void *buf, int element)
{
    return (char *)buf + (MPI_Aint)element * sp->ext;
}
/* Piece p = k * R + r: its first segment, the piece a segment is in, its elements. */
static int piece_seg(const struct split *sp, int r) { return part_first(sp->nseg, sp->npiece, r); }
static int piece_of(const struct split *sp, int k, int s)
{
    int r = 0;
    while (piece_seg(sp, r + 1) <= s) r++;
    return k * sp->npiece + r;
}
static int piece_first(const struct split *sp, int p)
{
    return seg_first(sp, p / sp->npiece, piece_seg(sp, p % sp->npiece));
}
static int piece_len(const struct split *sp, int p)
{
    return seg_first(sp, p / sp->npiece, piece_seg(sp, p % sp->npiece + 1)) - piece_first(sp, p);
}

/* Segments per chunk: the smallest chunk in segments of ist_wan_segment(h) bytes, at most
 * 1024 (a call's requests stay bounded: larger segments past 16 MiB per chunk). */
static int segments(const struct ist_hier *h, int count, int nclusters, MPI_Datatype type)
{
    const long size = ist_type_bytes(1, type);
    long chunk_elems = count / nclusters;
    long per_seg = ist_wan_segment(h) / (size > 0 ? size : 1);
    if (per_seg < 1) per_seg = 1;
    long n = (chunk_elems + per_seg - 1) / per_seg;
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

static void orders(struct split *sp)
{
    int n = sp->h->nclusters, c = sp->h->my_cluster, R = sp->npiece, i = 0, j = 0;
    sp->reduce_order = malloc((size_t)(n * R) * sizeof(int));
    sp->bcast_order = malloc((size_t)(n * R) * sizeof(int));
    for (int r = 0; r < R; r++) sp->bcast_order[j++] = c * R + r;
    for (int r = 0; r < R; r++)
        for (int d = 1; d <= n; d++) {
            int k = (c + d) % n;
            sp->reduce_order[i++] = k * R + r;
            if (k != c) sp->bcast_order[j++] = k * R + r;
        }
}

static int start_reduce(const struct split *sp, int i, const void *in, void *out, MPI_Request *req)
{
    int p = sp->reduce_order[i];
    return PMPI_Ireduce(at(sp, in, piece_first(sp, p)), out ? at(sp, out, piece_first(sp, p)) : NULL,
                       piece_len(sp, p), sp->type, sp->op, 0, sp->h->cluster_comm, req);
}

static int start_bcast(const struct split *sp, int i, void *buf, MPI_Request *req)
{
    int p = sp->bcast_order[i];
    return PMPI_Ibcast(at(sp, buf, piece_first(sp, p)), piece_len(sp, p), sp->type, 0, sp->h->cluster_comm, req);
}

/* A rank other than the coordinator: its part of every piece's reduce and broadcast. */
static int member(const struct split *sp, const void *in, void *recvbuf)
{
    int P = sp->h->nclusters * sp->npiece, rc = MPI_SUCCESS, started = 0;
    MPI_Request *req = malloc(2 * (size_t)P * sizeof *req);
    for (int i = 0; i < P && rc == MPI_SUCCESS; i++) rc = start_reduce(sp, i, in, NULL, &req[started++]);
    for (int i = 0; i < P && rc == MPI_SUCCESS; i++) rc = start_bcast(sp, i, recvbuf, &req[started++]);
    int wrc = ist_h_waitall(started, req);
    free(req);
    return rc == MPI_SUCCESS ? wrc : rc;
}

/* The coordinator's state while its requests complete. */
struct coord {
    const struct split *sp;
    void *recvbuf;
    struct ist_tmp reduced;  /* the cluster's partial result, the whole vector */
    struct ist_tmp *partial; /* other clusters' parts of this cluster's chunk */
    int *arrived;            /* segment of this chunk -> parts in (of nclusters) */
    int *left;               /* piece -> segments not final yet */
    int next_bcast;
    struct ist_reqs later; /* sends and broadcasts: waited for at the end */
};

/* Segment s of a piece of this chunk is final: broadcast what pieces are, in order. */
static int segment_final(struct coord *co, int piece)
{
    const struct split *sp = co->sp;
    int rc = MPI_SUCCESS, P = sp->h->nclusters * sp->npiece;
    co->left[piece]--;
    while (rc == MPI_SUCCESS && co->next_bcast < P && co->left[sp->bcast_order[co->next_bcast]] == 0)
        rc = start_bcast(sp, co->next_bcast++, co->recvbuf, ist_reqs_next(&co->later));
    return rc;
}

/* Every part of segment s of this cluster's chunk is in: fold them in cluster order into
 * recvbuf and send the result to every other coordinator. */
static int part_in(struct coord *co, int s)
{
    const struct split *sp = co->sp;
    struct ist_hier *h = sp->h;
    int c = h->my_cluster, n = h->nclusters, rc = MPI_SUCCESS;
    if (++co->arrived[s] < n) return MPI_SUCCESS;
    int off = seg_offset(sp, c, s), len = seg_len(sp, c, s);
    char *result = at(sp, co->recvbuf, seg_first(sp, c, s));
    void **parts = malloc((size_t)n * sizeof *parts);
    for (int k = 0; k < n; k++)
        parts[k] = k == c ? at(sp, co->reduced.base, seg_first(sp, c, s)) : at(sp, co->partial[k].base, off);
    rc = ist_copy_typed(ist_fold(parts, n, len, sp->type, sp->op), result, len, sp->type);
    for (int k = 0; k < n && rc == MPI_SUCCESS; k++)
        if (k != c)
            rc = ist_h_isend_typed(h, result, len, sp->type, h->first[k], TAG_SPLIT_GATHER + s,
                                   ist_reqs_next(&co->later));
    free(parts);
    return rc == MPI_SUCCESS ? segment_final(co, piece_of(sp, c, s)) : rc;
}

/* Piece reduce_order[i] of the cluster's reduce is done: send its segments to the cluster
 * that owns its chunk, or count them in when it is this cluster's. */
static int piece_reduced(struct coord *co, int i)
{
    const struct split *sp = co->sp;
    struct ist_hier *h = sp->h;
    int p = sp->reduce_order[i], k = p / sp->npiece, r = p % sp->npiece, rc = MPI_SUCCESS;
    for (int s = piece_seg(sp, r); s < piece_seg(sp, r + 1) && rc == MPI_SUCCESS; s++)
        rc = k == h->my_cluster
                 ? part_in(co, s)
                 : ist_h_isend_typed(h, at(sp, co->reduced.base, seg_first(sp, k, s)), seg_len(sp, k, s),
                                     sp->type, h->first[k], TAG_SPLIT_SCATTER + s, ist_reqs_next(&co->later));
    return rc;
}

/* The coordinator: waits on its cluster's reduces and every wide-area receive at once,
 * and acts on each as it completes. */
static int coordinator(const struct split *sp, const void *in, void *recvbuf)
{
    struct ist_hier *h = sp->h;
    int c = h->my_cluster, n = h->nclusters, S = sp->nseg, P = n * sp->npiece, rc;
    struct coord co = {.sp = sp, .recvbuf = recvbuf};
    co.partial = calloc((size_t)n, sizeof *co.partial);
    co.arrived = calloc((size_t)S, sizeof *co.arrived);
    co.left = malloc((size_t)P * sizeof *co.left);
    for (int p = 0; p < P; p++) co.left[p] = piece_seg(sp, p % sp->npiece + 1) - piece_seg(sp, p % sp->npiece);
    /* [0, P): the reduces; then for each other cluster (j = 0 .. n-2) its S parts of this
     * chunk; then for each its S segments of its own chunk */
    int ntrack = P + 2 * (n - 1) * S, started = 0;
    MPI_Request *track = malloc((size_t)ntrack * sizeof *track);
    rc = ist_tmp_alloc(&co.reduced, sp->count, sp->type);
    for (int i = 0; i < P && rc == MPI_SUCCESS; i++) rc = start_reduce(sp, i, in, co.reduced.base, &track[started++]);
    for (int j = 0; j < n - 1 && rc == MPI_SUCCESS; j++) {
        int k = (c + 1 + j) % n;
        rc = ist_tmp_alloc(&co.partial[k], chunk_len(sp, c), sp->type);
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++)
            rc = ist_h_irecv_typed(h, at(sp, co.partial[k].base, seg_offset(sp, c, s)), seg_len(sp, c, s), sp->type,
                                   h->first[k], TAG_SPLIT_SCATTER + s, &track[started++]);
    }
    for (int j = 0; j < n - 1 && rc == MPI_SUCCESS; j++) {
        int k = (c + 1 + j) % n;
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++)
            rc = ist_h_irecv_typed(h, at(sp, recvbuf, seg_first(sp, k, s)), seg_len(sp, k, s), sp->type, h->first[k],
                                   TAG_SPLIT_GATHER + s, &track[started++]);
    }
    for (int done = 0; done < started && rc == MPI_SUCCESS; done++) {
        int i;
        rc = ist_world_waitany(started, track, &i, MPI_STATUS_IGNORE); /* sleeps when it should */
        if (rc != MPI_SUCCESS) break;
        if (i < P) {
            rc = piece_reduced(&co, i);
        } else if (i < P + (n - 1) * S) {
            rc = part_in(&co, (i - P) % S);
        } else {
            int j = (i - P - (n - 1) * S) / S;
            rc = segment_final(&co, piece_of(sp, (c + 1 + j) % n, (i - P) % S));
        }
    }
    if (rc != MPI_SUCCESS) ist_h_waitall(started, track); /* nothing left pending on our buffers */
    int wrc = ist_reqs_wait(&co.later);
    for (int k = 0; k < n; k++) ist_tmp_free(&co.partial[k]);
    ist_tmp_free(&co.reduced);
    free(co.partial);
    free(co.arrived);
    free(co.left);
    free(track);
    return rc == MPI_SUCCESS ? wrc : rc;
}

int ist_allreduce_split(struct ist_hier *h, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                        MPI_Op op)
{
    struct split sp = {h, type, ist_extent(type), op, count, 0, 0, NULL, NULL};
    sp.nseg = segments(h, count, h->nclusters, type);
    sp.npiece = (sp.nseg + SEGS_PER_PIECE - 1) / SEGS_PER_PIECE;
    if (sp.npiece > MAX_PIECES) sp.npiece = MAX_PIECES;
    orders(&sp);
    /* In place, the input is copied first: recvbuf takes results while the reduces read. */
    struct ist_tmp copy = {0};
    const void *in = sendbuf;
    int rc = MPI_SUCCESS;
    if (sendbuf == MPI_IN_PLACE) {
        rc = ist_tmp_alloc(&copy, count, type);
        if (rc == MPI_SUCCESS) rc = ist_copy_typed(recvbuf, copy.base, count, type);
        in = copy.base;
    }
    if (rc == MPI_SUCCESS)
        rc = h->cluster_rank[h->rank] == 0 ? coordinator(&sp, in, recvbuf) : member(&sp, in, recvbuf);
    ist_tmp_free(&copy);
    free(sp.reduce_order);
    free(sp.bcast_order);
    return rc;
}
