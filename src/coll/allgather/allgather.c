/* Allgather and Allgatherv: the entries; one algorithm, hierarchical
 * (allgather_hierarchical.c), called through the generated table ist_allgather_algorithms
 * (src/coll/registry.toml). */
#include <stdlib.h>

#include "coll_algorithms.h"

/* Either form (counts NULL: the regular one): where each rank's block goes, and the call. */
static int allgather(struct ist_hier *h, enum ist_coll_id id, const void *sendbuf, int sendcount,
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, const int *recvcounts,
                     const int *displs, MPI_Datatype recvtype, int *answer)
{
    ist_hier_log(h, id, "cluster gather, coordinators exchange directly, cluster bcast");
    struct ist_block mine = {sendbuf, sendcount, sendtype};
    struct ist_block *all = ist_rank_blocks(h, recvbuf, recvcount, recvcounts, displs, recvtype);
    int rc = ist_allgather_algorithms[IST_ALLGATHER_DEFAULT](h, sendbuf == MPI_IN_PLACE ? NULL : &mine, all);
    free(all);
    return ist_hier_served(answer, rc);
}

int ist_wan_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHER, comm, ist_type_bytes(recvcount, recvtype), IST_NO_ROOT);
    if (!h) return 0;
    return allgather(h, IST_COLL_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                     recvtype, answer);
}

int ist_wan_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHERV, comm, ist_counts_bytes(comm, recvcounts, recvtype), IST_NO_ROOT);
    if (!h) return 0;
    return allgather(h, IST_COLL_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                     recvtype, answer);
}
