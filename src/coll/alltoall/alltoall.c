/* Alltoall, Alltoallv, Alltoallw: the entries and the choice between two algorithms;
 * each block crosses one link once in both, and both have one wide-area latency on the
 * critical path:
 *   aggregated (alltoall_aggregated.c): one message per ordered pair of clusters, through
 *     the coordinators; the default;
 *   direct (alltoall_direct.c): every block straight to its rank; only when forced.
 * Blocks travel packed, so that any datatypes, also different per peer, work. */
#include <stdlib.h>

#include "coll_algorithms.h"

/* The blocks of the three forms; in place, what is sent is taken from the receive side. */
static struct ist_block *blocks(int n, const void *buf, const int *counts, const int *displs,
                                int count, MPI_Datatype type, const MPI_Datatype *types, int bytes_displs)
{
    struct ist_block *b = malloc((size_t)n * sizeof *b);
    for (int j = 0; j < n; j++) {
        MPI_Datatype t = types ? types[j] : type;
        MPI_Aint at = displs ? (MPI_Aint)displs[j] * (bytes_displs ? 1 : ist_extent(t))
                             : (MPI_Aint)j * count * ist_extent(t);
        b[j] = (struct ist_block){(const char *)buf + at, counts ? counts[j] : count, t};
    }
    return b;
}

static int run(struct ist_hier *h, enum ist_coll_id id, struct ist_block *send, struct ist_block *recv)
{
    int algorithm = h->algorithm != IST_ALG_NONE ? h->algorithm : IST_ALLTOALL_DEFAULT;
    int direct = algorithm == IST_ALG_DIRECT;
    ist_hier_log(h, id, "%s",
                 direct ? "every block straight to its rank" : "one message per cluster pair through the coordinators");
    int rc = ist_alltoall_algorithms[algorithm](h, send, recv);
    free(send);
    free(recv);
    return ist_hier_leave(rc);
}

int ist_wan_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLTOALL, comm, ist_type_bytes(recvcount, recvtype), IST_NO_ROOT);
    if (!h) return 0;
    int in_place = sendbuf == MPI_IN_PLACE;
    return ist_answered(answer, run(h, IST_COLL_ALLTOALL, blocks(h->size, in_place ? recvbuf : sendbuf, NULL, NULL, in_place ? recvcount : sendcount,
                         in_place ? recvtype : sendtype, NULL, 0),
               blocks(h->size, recvbuf, NULL, NULL, recvcount, recvtype, NULL, 0)));
}

int ist_wan_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_ALLTOALLV, comm,
        IST_BYTES_LOCAL(sendbuf == MPI_IN_PLACE ? ist_counts_bytes(comm, recvcounts, recvtype)
                                                : ist_counts_bytes(comm, sendcounts, sendtype)), IST_NO_ROOT);
    if (!h) return 0;
    int in_place = sendbuf == MPI_IN_PLACE;
    return ist_answered(answer, run(h, IST_COLL_ALLTOALLV, in_place ? blocks(h->size, recvbuf, recvcounts, rdispls, 0, recvtype, NULL, 0)
                           : blocks(h->size, sendbuf, sendcounts, sdispls, 0, sendtype, NULL, 0),
               blocks(h->size, recvbuf, recvcounts, rdispls, 0, recvtype, NULL, 0)));
}

int ist_wan_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(
        IST_COLL_ALLTOALLW, comm,
        IST_BYTES_LOCAL(sendbuf == MPI_IN_PLACE ? ist_countsw_bytes(comm, recvcounts, recvtypes)
                                                : ist_countsw_bytes(comm, sendcounts, sendtypes)), IST_NO_ROOT);
    if (!h) return 0;
    int in_place = sendbuf == MPI_IN_PLACE;
    return ist_answered(answer, run(h, IST_COLL_ALLTOALLW, in_place ? blocks(h->size, recvbuf, recvcounts, rdispls, 0, MPI_DATATYPE_NULL, recvtypes, 1)
                           : blocks(h->size, sendbuf, sendcounts, sdispls, 0, MPI_DATATYPE_NULL, sendtypes, 1),
               blocks(h->size, recvbuf, recvcounts, rdispls, 0, MPI_DATATYPE_NULL, recvtypes, 1)));
}
