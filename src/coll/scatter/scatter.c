/* Scatter and Scatterv: the entries, and the choice between two algorithms (the
 * selector's way for this call, h->way, or the one forced):
 *   hierarchical (scatter_hierarchical.c): one message per cluster from the root; the default;
 *   linear (scatter_linear.c): every block straight from the root, in eager segments.
 * Both through the generated table ist_scatter_algorithms (src/coll/registry.toml). */
#include <stdlib.h>

#include "coll_algorithms.h"

/* The root's send blocks of either form (counts NULL: the regular one), and the way the
 * call takes: ours or the linear one (h->way). */
static int scatter(struct ist_hier *h, enum ist_coll_id id, const void *sendbuf, int sendcount,
                   const int *sendcounts, const int *displs, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root)
{
    ist_hier_log(h, id, "%s",
                 h->way == IST_WAY_LINEAR ? "linear in eager segments, every block straight from the root"
                                          : "one message per cluster from the root, cluster scatter");
    struct ist_block mine = {recvbuf, recvcount, recvtype}, *send = NULL;
    if (h->rank == root) send = ist_rank_blocks(h, sendbuf, sendcount, sendcounts, displs, sendtype);
    const struct ist_block *own = recvbuf == MPI_IN_PLACE && h->rank == root ? NULL : &mine;
    int rc = ist_scatter_algorithms[h->way == IST_WAY_LINEAR ? IST_ALG_LINEAR : IST_ALG_HIERARCHICAL](h, send, root, own);
    free(send);
    return ist_hier_leave(rc);
}

int ist_wan_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_SCATTER, comm,
        recvbuf == MPI_IN_PLACE ? ist_type_bytes(sendcount, sendtype) : ist_type_bytes(recvcount, recvtype), root);
    if (!h) return 0;
    return ist_answered(answer, scatter(h, IST_COLL_SCATTER, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                   recvtype, root));
}

int ist_wan_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_SCATTERV, comm, IST_BYTES_LOCAL(recvbuf == MPI_IN_PLACE ? 0 : ist_type_bytes(recvcount, recvtype)), root);
    if (!h) return 0;
    return ist_answered(answer, scatter(h, IST_COLL_SCATTERV, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount,
                   recvtype, root));
}
