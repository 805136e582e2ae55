/* Allgather and Allgatherv: the entries; one algorithm, hierarchical
 * (allgather_hierarchical.c), called through the generated table ist_allgather_algorithms
 * (src/coll/registry.toml). */
#include <stdlib.h>

#include "coll_algorithms.h"

int ist_wan_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHER, comm, ist_type_bytes(recvcount, recvtype));
    if (!h) return 0;
    ist_hier_log(h, IST_COLL_ALLGATHER, "cluster gather, coordinators exchange directly, cluster bcast");
    struct ist_block mine = {sendbuf, sendcount, sendtype};
    struct ist_block *all = malloc((size_t)h->size * sizeof *all);
    MPI_Aint ext = ist_extent(recvtype);
    for (int r = 0; r < h->size; r++)
        all[r] = (struct ist_block){(char *)recvbuf + (MPI_Aint)r * recvcount * ext, recvcount, recvtype};
    int rc = ist_allgather_algorithms[IST_ALLGATHER_DEFAULT](h, sendbuf == MPI_IN_PLACE ? NULL : &mine, all);
    free(all);
    return ist_hier_served(answer, rc);
}

int ist_wan_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHERV, comm, ist_counts_bytes(comm, recvcounts, recvtype));
    if (!h) return 0;
    ist_hier_log(h, IST_COLL_ALLGATHERV, "cluster gather, coordinators exchange directly, cluster bcast");
    struct ist_block mine = {sendbuf, sendcount, sendtype};
    struct ist_block *all = malloc((size_t)h->size * sizeof *all);
    MPI_Aint ext = ist_extent(recvtype);
    for (int r = 0; r < h->size; r++)
        all[r] = (struct ist_block){(char *)recvbuf + (MPI_Aint)displs[r] * ext, recvcounts[r], recvtype};
    int rc = ist_allgather_algorithms[IST_ALLGATHER_DEFAULT](h, sendbuf == MPI_IN_PLACE ? NULL : &mine, all);
    free(all);
    return ist_hier_served(answer, rc);
}
