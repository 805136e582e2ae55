/* Allreduce: each cluster reduces to its coordinator with the MPI's reduce; coordinators
 * send their partial results to every other coordinator at once and each combines them
 * in cluster order ("direct": one wide-area latency, each partial result crosses each
 * link once), or, for large messages, reduce-scatter and allgather among themselves
 * ("split", coll_allreduce_split.c: 2M/C per link, its two phases overlapping, and the
 * cluster stages pipelined with them); each cluster then broadcasts the result. The model's wide-area parameters choose: L + g(M)
 * against L + g(M/C) + max(g(M/C), L). A non-commutative operation keeps MPI's order when
 * every cluster's ranks are consecutive; otherwise the native allreduce runs. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

#define TAG_ALLREDUCE 7004

static int exchange(struct ist_hier *h, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
    return ist_h_fold_clusters(h, recvbuf, count, datatype, op, TAG_ALLREDUCE, 1);
}

/* split (reduce-scatter + allgather) or direct, forced or by the model. */
static int use_split(const struct ist_hier *h, int count, MPI_Datatype type)
{
    const char *forced = ist_hier_algorithm(IST_COLL_ALLREDUCE);
    if (strcmp(forced, "split") == 0) return count >= h->nclusters;
    if (strcmp(forced, "direct") == 0 || count < h->nclusters) return 0;
    int size;
    PMPI_Type_size(type, &size);
    const struct ist_plogp_class *w = &ist_hier_model()->wan;
    double m = (double)count * size;
    double direct = w->L + ist_plogp_at(w, w->g, m);
    /* split's phases overlap (coll_allreduce_split.c): the second waits for the first's
     * first segment, L after it started, or follows its last on the link */
    double part = ist_plogp_at(w, w->g, m / h->nclusters);
    double split = w->L + part + (part > w->L ? part : w->L);
    return split < direct;
}

int ist_hier_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLREDUCE, comm, ist_type_bytes(count, datatype));
    if (!h) return IST_HIER_DECLINED;
    int commute;
    PMPI_Op_commutative(op, &commute);
    if (!commute && !h->contiguous) return ist_hier_leave(IST_HIER_DECLINED);
    if (count == 0) return ist_hier_leave(MPI_SUCCESS);
    int split = use_split(h, count, datatype);
    ist_hier_log(h, IST_COLL_ALLREDUCE, "cluster reduce, coordinators %s, cluster bcast",
                 split ? "reduce-scatter and allgather" : "exchange directly");
    /* split pipelines the cluster's reduce and broadcast with its wide-area phases */
    if (split) return ist_hier_leave(ist_allreduce_split(h, sendbuf, recvbuf, count, datatype, op));
    int rc;
    if (h->local_rank[h->rank] == 0) {
        rc = MPI_Reduce(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : sendbuf, recvbuf, count, datatype,
                        op, 0, h->local);
        if (rc == MPI_SUCCESS) rc = exchange(h, recvbuf, count, datatype, op);
    } else {
        rc = MPI_Reduce(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, NULL, count, datatype, op, 0,
                        h->local);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Bcast(recvbuf, count, datatype, 0, h->local);
    return ist_hier_leave(rc);
}
