/* Allreduce between coordinators for large messages: a reduce-scatter then an allgather
 * over the clusters (each coordinator owns 1/C of the vector). Each link carries 2M/C
 * instead of M, for one more wide-area latency: the choice in coll_allreduce.c weighs
 * L + g(M) against 2L + 2 g(M/C) with the model's wide-area parameters.
 *
 * The two phases are pipelined: each chunk travels in segments, and a coordinator sends a
 * segment of its own chunk back out (the allgather) as soon as every other cluster's part
 * of that segment is in, while the rest of the reduce-scatter still streams. The second
 * phase then queues behind the first on each link instead of waiting for it, and the link
 * stays busy: about L + 2M/(CB) instead of 2(L + M/(CB)). Segments are of
 * ist_wan_segment() bytes, under the MPI's eager limit: a rendezvous handshake sent after
 * the first phase's data would wait behind them in the wide-area queue (hier.h). Parts
 * are combined in cluster order, so non-commutative operations keep MPI's order. */
#include <stdlib.h>

#include "hier.h"

#define TAG_SPLIT_SCATTER 7011
#define TAG_SPLIT_GATHER 7012
/* Elements [first(k), first(k+1)) are cluster k's chunk; segment s of a chunk of n elements
 * is [n s / S, n (s+1) / S) within it. */
static int part_first(int count, int parts, int k) { return (int)((long)count * k / parts); }

struct split {
    struct ist_hier *h;
    MPI_Datatype type;
    MPI_Aint ext;
    int count, nseg;
};

static int chunk_first(const struct split *sp, int k) { return part_first(sp->count, sp->h->nclusters, k); }
static int chunk_len(const struct split *sp, int k) { return chunk_first(sp, k + 1) - chunk_first(sp, k); }
/* Segment s of cluster k's chunk: its offset in the chunk, its start in the whole vector
 * and its length, in elements. */
static int seg_offset(const struct split *sp, int k, int s) { return part_first(chunk_len(sp, k), sp->nseg, s); }
static int seg_first(const struct split *sp, int k, int s) { return chunk_first(sp, k) + seg_offset(sp, k, s); }
static int seg_len(const struct split *sp, int k, int s) { return seg_first(sp, k, s + 1) - seg_first(sp, k, s); }
static char *at(const struct split *sp, void *buf, int element) { return (char *)buf + (MPI_Aint)element * sp->ext; }

static int segments(int count, int nclusters, MPI_Datatype type)
{
    int size;
    PMPI_Type_size(type, &size);
    long seg = ist_wan_segment();
    long chunk_elems = count / nclusters; /* the smallest chunk */
    long per_seg = seg / (size > 0 ? size : 1);
    if (per_seg < 1) per_seg = 1;
    long n = (chunk_elems + per_seg - 1) / per_seg;
    /* at most 1024 per chunk, so that a call's requests stay bounded (larger segments
     * past 16 MiB per chunk) */
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* Segment s of this cluster's chunk has all its parts: fold them in cluster order into
 * recvbuf and send the result to every other coordinator. */
static int finish_segment(const struct split *sp, void *recvbuf, struct ist_tmp *partial, int s,
                          MPI_Op op, MPI_Request *sends)
{
    struct ist_hier *h = sp->h;
    int c = h->my_cluster, n = h->nclusters, rc = MPI_SUCCESS;
    int off = seg_offset(sp, c, s), len = seg_len(sp, c, s);
    char *mine = at(sp, recvbuf, seg_first(sp, c, s));
    void **parts = malloc((size_t)n * sizeof *parts);
    for (int k = 0; k < n; k++) parts[k] = k == c ? mine : at(sp, partial[k].base, off);
    rc = ist_copy_typed(ist_fold(parts, n, len, sp->type, op), mine, len, sp->type);
    for (int k = 0, i = 0; k < n && rc == MPI_SUCCESS; k++)
        if (k != c) rc = ist_h_isend_typed(h, mine, len, sp->type, h->first[k], TAG_SPLIT_GATHER, &sends[i++]);
    free(parts);
    return rc;
}

int ist_allreduce_split(struct ist_hier *h, void *recvbuf, int count, MPI_Datatype type, MPI_Op op)
{
    struct split sp = {h, type, ist_extent(type), count, segments(count, h->nclusters, type)};
    int c = h->my_cluster, n = h->nclusters, S = sp.nseg, rc = MPI_SUCCESS;
    int mine = chunk_len(&sp, c);
    /* Phase 1 sends from a snapshot: phase 2 writes the other chunks of recvbuf meanwhile. */
    struct ist_tmp snapshot = {0}, *partial = calloc((size_t)n, sizeof *partial);
    size_t per_phase = (size_t)(n - 1) * (size_t)S;
    MPI_Request *scatter_recv = malloc(per_phase * sizeof *scatter_recv);
    MPI_Request *rest = malloc(3 * per_phase * sizeof *rest); /* sends of both phases, gather recvs */
    int *arrived = calloc((size_t)S, sizeof *arrived), nrest = 0, nrecv = 0;
    rc = ist_tmp_alloc(&snapshot, count, type);
    if (rc == MPI_SUCCESS) rc = ist_copy_typed(recvbuf, snapshot.base, count, type);
    /* every receive first: the other clusters' parts of my chunk, then their reduced chunks */
    for (int k = 0; k < n && rc == MPI_SUCCESS; k++) {
        if (k == c) continue;
        rc = ist_tmp_alloc(&partial[k], mine, type);
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++)
            rc = ist_h_irecv_typed(h, at(&sp, partial[k].base, seg_offset(&sp, c, s)),
                                   seg_len(&sp, c, s), type, h->first[k], TAG_SPLIT_SCATTER, &scatter_recv[nrecv++]);
        for (int s = 0; s < S && rc == MPI_SUCCESS; s++)
            rc = ist_h_irecv_typed(h, at(&sp, recvbuf, seg_first(&sp, k, s)), seg_len(&sp, k, s), type,
                                   h->first[k], TAG_SPLIT_GATHER, &rest[nrest++]);
    }
    /* reduce-scatter sends, segment by segment across all links at once */
    for (int s = 0; s < S && rc == MPI_SUCCESS; s++)
        for (int k = 0; k < n && rc == MPI_SUCCESS; k++)
            if (k != c)
                rc = ist_h_isend_typed(h, at(&sp, snapshot.base, seg_first(&sp, k, s)), seg_len(&sp, k, s), type,
                                       h->first[k], TAG_SPLIT_SCATTER, &rest[nrest++]);
    /* as each segment of my chunk completes, reduce it and start its allgather */
    for (int done = 0; done < nrecv && rc == MPI_SUCCESS; done++) {
        int index;
        rc = MPI_Waitany(nrecv, scatter_recv, &index, MPI_STATUS_IGNORE); /* sleeps when it should */
        int s = index % S;
        if (rc == MPI_SUCCESS && ++arrived[s] == n - 1) {
            rc = finish_segment(&sp, recvbuf, partial, s, op, &rest[nrest]);
            nrest += n - 1;
        }
    }
    if (rc == MPI_SUCCESS) rc = ist_h_waitall(nrest, rest);
    for (int k = 0; k < n; k++) ist_tmp_free(&partial[k]);
    ist_tmp_free(&snapshot);
    free(partial);
    free(scatter_recv);
    free(rest);
    free(arrived);
    return rc;
}
