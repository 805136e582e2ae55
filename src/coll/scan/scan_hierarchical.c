/* Scan and Exscan, when every cluster's ranks are consecutive (otherwise the native scan
 * runs: a prefix over interleaved clusters does not split by cluster). Each cluster scans
 * with the MPI's own; the last rank of each cluster sends the cluster's total straight to
 * the coordinators of all later clusters (one wide-area latency, in eager segments), which combine the totals
 * before them in order and broadcast that prefix in the cluster; every rank then puts the
 * prefix in front of its own result.
 *
 * Chosen: the model predicts it faster, and every cluster's ranks are consecutive (a
 * prefix over interleaved clusters does not split by cluster).
 * Cost: scan_l(n, M) + L_w + (C-1) g_w(M) + bcast_l(n, M).
 */
#include <stdlib.h>

#include "hier.h"

#define TAG_SCAN 7010

static int scan(struct ist_hier *h, const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype type, MPI_Op op, int exclusive)
{
    int c = h->my_cluster, lr = h->cluster_rank[h->rank], nl = h->count[c], rc;
    int last = lr == nl - 1, coord = lr == 0;
    struct ist_tmp own = {0}, total = {0};
    /* my own contribution, before an in-place scan overwrites it */
    rc = ist_tmp_alloc(&own, count, type);
    if (rc == MPI_SUCCESS)
        rc = ist_copy_typed(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, own.base, count, type);
    if (rc == MPI_SUCCESS)
        rc = exclusive ? ist_own_Exscan(sendbuf, recvbuf, count, type, op, h->cluster_comm)
                       : ist_own_Scan(sendbuf, recvbuf, count, type, op, h->cluster_comm);
    /* the cluster's total, at its last rank: the inclusive result, or exclusive op own */
    if (rc == MPI_SUCCESS && last && c < h->nclusters - 1) {
        rc = ist_tmp_alloc(&total, count, type);
        if (rc == MPI_SUCCESS)
            rc = ist_copy_typed(exclusive ? own.base : recvbuf, total.base, count, type);
        if (rc == MPI_SUCCESS && exclusive && nl > 1) rc = PMPI_Reduce_local(recvbuf, total.base, count, type, op);
        struct ist_reqs q = {0};
        for (int k = c + 1; k < h->nclusters && rc == MPI_SUCCESS; k++)
            rc = ist_h_isend_typed_segments(h, total.base, count, type, h->first[k], TAG_SCAN, &q);
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
    }
    if (c == 0) {
        ist_tmp_free(&own);
        ist_tmp_free(&total);
        return rc;
    }
    /* the prefix of all earlier clusters, combined in order at the coordinator */
    struct ist_tmp prefix = {0};
    if (rc == MPI_SUCCESS) rc = ist_tmp_alloc(&prefix, count, type);
    if (coord && rc == MPI_SUCCESS) {
        struct ist_tmp *parts = calloc((size_t)c, sizeof *parts);
        void **p = malloc((size_t)c * sizeof *p);
        struct ist_reqs q = {0};
        for (int k = 0; k < c && rc == MPI_SUCCESS; k++) {
            rc = ist_tmp_alloc(&parts[k], count, type);
            p[k] = parts[k].base;
            if (rc == MPI_SUCCESS) {
                int from = h->members[h->member_start[k] + h->count[k] - 1];
                rc = ist_h_irecv_typed_segments(h, p[k], count, type, from, TAG_SCAN, &q);
            }
        }
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
        if (rc == MPI_SUCCESS) rc = ist_copy_typed(ist_fold(p, c, count, type, op), prefix.base, count, type);
        for (int k = 0; k < c; k++) ist_tmp_free(&parts[k]);
        free(parts);
        free(p);
    }
    if (rc == MPI_SUCCESS) rc = ist_own_Bcast(prefix.base, count, type, 0, h->cluster_comm);
    /* result = prefix op mine; the first rank of a cluster has no exclusive result of its own */
    if (rc == MPI_SUCCESS) {
        if (exclusive && coord) rc = ist_copy_typed(prefix.base, recvbuf, count, type);
        else rc = PMPI_Reduce_local(prefix.base, recvbuf, count, type, op);
    }
    ist_tmp_free(&prefix);
    ist_tmp_free(&own);
    ist_tmp_free(&total);
    return rc;
}

int ist_wan_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_SCAN, comm, ist_type_bytes(count, datatype), IST_NO_ROOT);
    if (!h) return 0;
    if (!h->contiguous) return ist_hier_decline();
    ist_hier_log(h, IST_COLL_SCAN, "cluster scan, cluster totals straight to later clusters");
    return ist_hier_served(answer, count ? scan(h, sendbuf, recvbuf, count, datatype, op, 0) : MPI_SUCCESS);
}

int ist_wan_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_EXSCAN, comm, ist_type_bytes(count, datatype), IST_NO_ROOT);
    if (!h) return 0;
    if (!h->contiguous) return ist_hier_decline();
    ist_hier_log(h, IST_COLL_EXSCAN, "cluster exscan, cluster totals straight to later clusters");
    return ist_hier_served(answer, count ? scan(h, sendbuf, recvbuf, count, datatype, op, 1) : MPI_SUCCESS);
}
