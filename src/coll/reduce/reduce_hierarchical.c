/* Reduce: each cluster reduces to one rank (the root in its own cluster, the coordinator
 * elsewhere) with the MPI's reduce; those send their partial results straight to the
 * root, which combines them in cluster order: one wide-area latency, and each partial
 * result crosses one link once (in segments under the MPI's eager limit: hier.h). A
 * non-commutative operation keeps MPI's order of operands when every cluster's ranks are
 * consecutive; otherwise the native reduce runs.
 *
 * Chosen: the model predicts it faster; a non-commutative operation only when every
 * cluster's ranks are consecutive.
 * Cost: reduce_l(n, M) + L_w + (C-1) g_w(M).
 */
#include <stdlib.h>

#include "hier.h"

#define TAG_REDUCE 7003

int ist_wan_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_REDUCE, comm, ist_type_bytes(count, datatype), root);
    if (!h) return 0;
    int commute;
    PMPI_Op_commutative(op, &commute);
    if (!commute && !h->contiguous) return ist_hier_decline();
    if (count == 0) return ist_hier_served(answer, MPI_SUCCESS);
    ist_hier_log(h, IST_COLL_REDUCE, "cluster reduce, partials straight to the root");
    int rootc = h->cluster_of[root];
    int lroot = h->my_cluster == rootc ? h->cluster_rank[root] : 0;
    int rc;
    if (h->rank == root) {
        rc = ist_own_Reduce(sendbuf, recvbuf, count, datatype, op, lroot, h->cluster_comm);
        /* the root is its cluster's coordinator here (rootc == my_cluster) */
        if (rc == MPI_SUCCESS)
            rc = ist_h_fold_clusters(h, recvbuf, count, datatype, op, TAG_REDUCE, 0);
    } else if (h->my_cluster != rootc && h->cluster_rank[h->rank] == 0) {
        struct ist_tmp part;
        rc = ist_tmp_alloc(&part, count, datatype);
        if (rc == MPI_SUCCESS) rc = ist_own_Reduce(sendbuf, part.base, count, datatype, op, 0, h->cluster_comm);
        struct ist_reqs q = {0};
        if (rc == MPI_SUCCESS)
            rc = ist_h_isend_typed_segments(h, part.base, count, datatype, root, TAG_REDUCE, &q);
        int waited = ist_reqs_wait(&q);
        if (rc == MPI_SUCCESS) rc = waited;
        ist_tmp_free(&part);
    } else {
        rc = ist_own_Reduce(sendbuf, NULL, count, datatype, op, lroot, h->cluster_comm);
    }
    return ist_hier_served(answer, rc);
}
