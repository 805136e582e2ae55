/* Allreduce, direct: each cluster reduces to its coordinator with the MPI's reduce; the
 * coordinators send their partial results to every other coordinator at once (in
 * wide-area segments) and each combines them in cluster order; each cluster then
 * broadcasts the result. One wide-area latency, each partial result crosses each link
 * once.
 *
 * Chosen (allreduce.c): while the model puts L_w + g_w(M) below split's cost, always with
 * fewer elements than clusters, or when forced.
 * Cost: reduce_l(n, M) + L_w + g_w(M) + bcast_l(n, M); C(C-1) wide-area messages of M. */
#include "coll_algorithms.h"

#define TAG_ALLREDUCE 7004

int ist_allreduce_direct(struct ist_hier *h, const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype datatype, MPI_Op op)
{
    int rc;
    if (h->cluster_rank[h->rank] == 0) {
        rc = ist_own_Reduce(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : sendbuf, recvbuf, count, datatype,
                        op, 0, h->cluster_comm);
        if (rc == MPI_SUCCESS) rc = ist_h_fold_clusters(h, recvbuf, count, datatype, op, TAG_ALLREDUCE, 1);
    } else {
        rc = ist_own_Reduce(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, NULL, count, datatype, op, 0,
                        h->cluster_comm);
    }
    if (rc == MPI_SUCCESS) rc = ist_own_Bcast(recvbuf, count, datatype, 0, h->cluster_comm);
    return rc;
}
