/* Allreduce: the entry and the choice between its two algorithms, both of which reduce
 * in each cluster first and broadcast there last:
 *   direct (allreduce_direct.c): coordinators exchange whole partial results;
 *   split (allreduce_split.c): coordinators reduce-scatter then allgather, pipelined.
 * Unless one is forced (collectives.algorithm.allreduce), the model's wide-area
 * parameters choose: direct costs L + g(M), split L + g(M/C) + max(g(M/C), L); with fewer
 * elements than clusters only direct applies. A non-commutative operation keeps MPI's
 * order when every cluster's ranks are consecutive; otherwise the native allreduce runs. */
#include <stdlib.h>

#include "coll_algorithms.h"

/* split (reduce-scatter + allgather) or direct, forced or by the model. */
static int use_split(const struct ist_hier *h, int count, MPI_Datatype type)
{
    if (h->algorithm == IST_ALG_SPLIT) return count >= h->nclusters;
    if (h->algorithm == IST_ALG_DIRECT || count < h->nclusters) return 0;
    const long size = ist_type_bytes(1, type);
    const struct ist_plogp_class *w = &h->model->wan;
    double m = (double)count * size;
    double direct = w->L + ist_plogp_at(w, w->g, m);
    /* split's phases overlap (allreduce_split.c): the second waits for the first's
     * first segment, L after it started, or follows its last on the link */
    double part = ist_plogp_at(w, w->g, m / h->nclusters);
    double split = w->L + part + (part > w->L ? part : w->L);
    return split < direct;
}

int ist_wan_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLREDUCE, comm, ist_type_bytes(count, datatype), IST_NO_ROOT);
    if (!h) return 0;
    int commute;
    PMPI_Op_commutative(op, &commute);
    if (!commute && !h->contiguous) return ist_hier_decline();
    if (count == 0) return ist_hier_served(answer, MPI_SUCCESS);
    int split = use_split(h, count, datatype);
    ist_hier_log(h, IST_COLL_ALLREDUCE, "cluster reduce, coordinators %s, cluster bcast",
                 split ? "reduce-scatter and allgather" : "exchange directly");
    /* split pipelines the cluster's reduce and broadcast with its wide-area phases */
    ist_allreduce_algorithm *run = ist_allreduce_algorithms[split ? IST_ALG_SPLIT : IST_ALG_DIRECT];
    return ist_hier_served(answer, run(h, sendbuf, recvbuf, count, datatype, op));
}
