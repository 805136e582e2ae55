/* Allreduce between coordinators for large messages: a reduce-scatter then an allgather
 * over the clusters (each coordinator owns 1/C of the vector). Each link carries 2M/C
 * instead of M, for one more wide-area latency: the choice in coll_allreduce.c weighs
 * L + g(M) against 2L + 2 g(M/C) with the model's wide-area parameters. Parts are combined
 * in cluster order, so non-commutative operations keep MPI's order. */
#include <stdlib.h>

#include "hier.h"

#define TAG_SPLIT_SCATTER 7011
#define TAG_SPLIT_GATHER 7012

/* Elements [first(k), first(k+1)) are cluster k's chunk. */
static int chunk_first(int count, int nclusters, int k) { return (int)((long)count * k / nclusters); }

int ist_allreduce_split(struct ist_hier *h, void *recvbuf, int count, MPI_Datatype type, MPI_Op op)
{
    int c = h->my_cluster, n = h->nclusters, rc = MPI_SUCCESS;
    MPI_Aint ext = ist_extent(type);
    char *base = recvbuf;
    int mine = chunk_first(count, n, c + 1) - chunk_first(count, n, c);
    struct ist_tmp *tmp = calloc((size_t)n, sizeof *tmp);
    void **parts = malloc((size_t)n * sizeof *parts);
    MPI_Request *req = malloc(2 * (size_t)n * sizeof *req);
    int nreq = 0;
    /* 1. reduce-scatter: everybody's partial of my chunk comes to me */
    for (int k = 0; k < n && rc == MPI_SUCCESS; k++) {
        if (k == c) {
            parts[k] = base + (MPI_Aint)chunk_first(count, n, c) * ext;
            continue;
        }
        rc = ist_tmp_alloc(&tmp[k], mine, type);
        parts[k] = tmp[k].base;
        int kf = chunk_first(count, n, k), kn = chunk_first(count, n, k + 1) - kf;
        if (rc == MPI_SUCCESS) rc = ist_h_irecv_typed(h, parts[k], mine, type, h->first[k], TAG_SPLIT_SCATTER, &req[nreq++]);
        if (rc == MPI_SUCCESS)
            rc = ist_h_isend_typed(h, base + (MPI_Aint)kf * ext, kn, type, h->first[k], TAG_SPLIT_SCATTER, &req[nreq++]);
    }
    if (rc == MPI_SUCCESS) rc = ist_h_waitall(nreq, req);
    if (rc == MPI_SUCCESS)
        rc = ist_copy_typed(ist_fold(parts, n, mine, type, op), base + (MPI_Aint)chunk_first(count, n, c) * ext,
                            mine, type);
    /* 2. allgather of the reduced chunks */
    nreq = 0;
    for (int k = 0; k < n && rc == MPI_SUCCESS; k++) {
        if (k == c) continue;
        int kf = chunk_first(count, n, k), kn = chunk_first(count, n, k + 1) - kf;
        rc = ist_h_irecv_typed(h, base + (MPI_Aint)kf * ext, kn, type, h->first[k], TAG_SPLIT_GATHER, &req[nreq++]);
        if (rc == MPI_SUCCESS)
            rc = ist_h_isend_typed(h, base + (MPI_Aint)chunk_first(count, n, c) * ext, mine, type, h->first[k],
                                   TAG_SPLIT_GATHER, &req[nreq++]);
    }
    if (rc == MPI_SUCCESS) rc = ist_h_waitall(nreq, req);
    for (int k = 0; k < n; k++) ist_tmp_free(&tmp[k]);
    free(tmp);
    free(parts);
    free(req);
    return rc;
}
