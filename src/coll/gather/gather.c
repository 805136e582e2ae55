/* Gather and Gatherv: the entries, and the choice between two algorithms (the selector's
 * way for this call, h->way, or the one forced):
 *   hierarchical (gather_hierarchical.c): one message per cluster to the root; the default;
 *   linear (gather_linear.c): every block straight to the root, in eager segments.
 * Both through the generated table ist_gather_algorithms (src/coll/registry.toml). */
#include <stdlib.h>

#include "coll_algorithms.h"

/* The root's receive blocks of either form (counts NULL: the regular one), and the way
 * the call takes: ours or the linear one (h->way). */
static int gather(struct ist_hier *h, enum ist_coll_id id, const void *sendbuf, int sendcount,
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, const int *recvcounts,
                  const int *displs, MPI_Datatype recvtype, int root)
{
    ist_hier_log(h, id, "%s",
                 h->way == IST_WAY_LINEAR ? "linear in eager segments, every block straight to the root"
                                          : "cluster gather, one message per cluster to the root");
    struct ist_block mine = {sendbuf, sendcount, sendtype}, *recv = NULL;
    if (h->rank == root) recv = ist_rank_blocks(h, recvbuf, recvcount, recvcounts, displs, recvtype);
    const struct ist_block *own = sendbuf == MPI_IN_PLACE && h->rank == root ? NULL : &mine;
    int rc = ist_gather_algorithms[h->way == IST_WAY_LINEAR ? IST_ALG_LINEAR : IST_ALG_HIERARCHICAL](h, own, root, recv);
    free(recv);
    return ist_hier_leave(rc);
}

int ist_wan_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_GATHER, comm,
        sendbuf == MPI_IN_PLACE ? ist_type_bytes(recvcount, recvtype) : ist_type_bytes(sendcount, sendtype), root);
    if (!h) return 0;
    return ist_answered(answer, gather(h, IST_COLL_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                  recvtype, root));
}

int ist_wan_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_GATHERV, comm, IST_BYTES_LOCAL(sendbuf == MPI_IN_PLACE ? 0 : ist_type_bytes(sendcount, sendtype)), root);
    if (!h) return 0;
    return ist_answered(answer, gather(h, IST_COLL_GATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                  recvtype, root));
}
