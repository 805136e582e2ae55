/* The MPI calls the layer carries across forwarders (docs/zipper.md).
 *
 * The generated wrappers (tools/genwrap.py, ZIP_CALLS) call ist_zip_X first when zipper
 * forwarding is active. Each returns 1 when it has served the call (the communicator
 * spans sites; the MPI return code in *rc), or 0 to let the wrapper go on to the native
 * MPI: the communicator lies in one site. Waits, tests and persistent requests are in
 * zip_persist.c: in zipper mode the layer always waits by testing (sleep_wait.c), each
 * test moves the engine, and the MPI itself tests the generalized requests. */
#include <stdlib.h>

#include "hier.h"
#include "hier_calls.h"
#include "zip.h"
#include "zip_calls.h"
#include "zip_engine.h"

#define SPANNING(comm)                                  \
    struct ist_zcomm *c = ist_zip_comm(comm);           \
    if (!c) return 0

static int send_blocking(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm, int sync, int *rc)
{
    SPANNING(comm);
    struct ist_zop *op = ist_zip_isend(c, buf, count, type, dest, tag, sync);
    *rc = ist_zip_wait_ops(1, &op, MPI_STATUSES_IGNORE);
    return 1;
}

static int send_nonblocking(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                            MPI_Comm comm, int sync, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_give_handle(ist_zip_isend(c, buf, count, type, dest, tag, sync), request);
    return 1;
}

int ist_zip_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_zip_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 1, rc);
}

/* Buffered and ready sends complete like eager sends: the engine buffers them itself. */
int ist_zip_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_zip_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_zip_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_zip_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 1, request, rc);
}

int ist_zip_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_zip_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_zip_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Status *status, int *rc)
{
    SPANNING(comm);
    struct ist_zop *op = ist_zip_irecv(c, buf, count, type, source, tag);
    *rc = ist_zip_wait_ops(1, &op, status == MPI_STATUS_IGNORE ? MPI_STATUSES_IGNORE : status);
    return 1;
}

int ist_zip_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_give_handle(ist_zip_irecv(c, buf, count, type, source, tag), request);
    return 1;
}

int ist_zip_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                     MPI_Comm comm, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    struct ist_zop *ops[2] = {ist_zip_irecv(c, recvbuf, recvcount, recvtype, source, recvtag),
                              ist_zip_isend(c, sendbuf, sendcount, sendtype, dest, sendtag, 0)};
    MPI_Status st[2];
    *rc = ist_zip_wait_ops(2, ops, st);
    if (*rc == MPI_ERR_IN_STATUS) *rc = st[0].MPI_ERROR;
    if (status != MPI_STATUS_IGNORE) *status = st[0];
    return 1;
}

int ist_zip_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag,
                             int source, int recvtag, MPI_Comm comm, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    struct ist_tmp copy;
    if ((*rc = ist_tmp_alloc(&copy, count, type)) != MPI_SUCCESS) return 1;
    ist_copy_typed(buf, copy.base, count, type);
    struct ist_zop *ops[2] = {ist_zip_irecv(c, buf, count, type, source, recvtag),
                              ist_zip_isend(c, copy.base, count, type, dest, sendtag, 0)};
    MPI_Status st[2];
    *rc = ist_zip_wait_ops(2, ops, st);
    if (*rc == MPI_ERR_IN_STATUS) *rc = st[0].MPI_ERROR;
    if (status != MPI_STATUS_IGNORE) *status = st[0];
    ist_tmp_free(&copy);
    return 1;
}

int ist_zip_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    ist_zip_progress();
    *rc = MPI_SUCCESS;
    *flag = 0;
    if (source == MPI_PROC_NULL) {
        *rc = PMPI_Iprobe(MPI_PROC_NULL, tag, c->local, flag, status);
        return 1;
    }
    int local = source == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->local_rank[source];
    if ((source == MPI_ANY_SOURCE || local < 0) && ist_zip_iprobe_forwarded(c, source, tag, status)) {
        *flag = 1;
        return 1;
    }
    if (source == MPI_ANY_SOURCE || local >= 0) {
        MPI_Status st;
        *rc = PMPI_Iprobe(local, tag, c->local, flag, &st);
        if (*flag) {
            st.MPI_SOURCE = c->from_local[st.MPI_SOURCE];
            if (status != MPI_STATUS_IGNORE) *status = st;
        }
    }
    return 1;
}

int ist_zip_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    (void)c;
    int flag = 0;
    for (int tries = 0; ist_zip_Iprobe(source, tag, comm, &flag, status, rc) && *rc == MPI_SUCCESS && !flag; tries++)
        ist_zip_idle(tries);
    return 1;
}

int ist_zip_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                    MPI_Status *status, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_improbe(c, source, tag, flag, message, status);
    return 1;
}

int ist_zip_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status,
                   int *rc)
{
    SPANNING(comm);
    int flag = 0;
    for (int tries = 0; (*rc = ist_zip_improbe(c, source, tag, &flag, message, status)) == MPI_SUCCESS && !flag; tries++)
        ist_zip_idle(tries);
    return 1;
}

/* Only messages the layer handed out need it; the others are the native MPI's. */
int ist_zip_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status,
                  int *rc)
{
    return ist_zip_mrecv(buf, count, type, message, status, rc);
}

int ist_zip_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                   MPI_Request *request, int *rc)
{
    return ist_zip_imrecv(buf, count, type, message, request, rc);
}

/* ---- collectives -----------------------------------------------------------------------
 * The cluster-aware algorithm first (src/coll: one wide-area message per cluster, which
 * now travels through the forwarders); where none applies, zip_coll.c's simple ones. */

#define CLUSTER_AWARE(name, ...)                                  \
    do {                                                          \
        if (ist_hier_enabled) {                                   \
            const int ist_h = ist_hier_##name(__VA_ARGS__);       \
            if (ist_h != IST_HIER_DECLINED) {                     \
                *rc = ist_h;                                      \
                return 1;                                         \
            }                                                     \
        }                                                         \
    } while (0)

int ist_zip_Barrier(MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Barrier, comm);
    *rc = ist_zip_barrier(c);
    return 1;
}

int ist_zip_Bcast(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Bcast, buffer, count, type, root, comm);
    *rc = ist_zip_bcast(c, buffer, count, type, root);
    return 1;
}

int ist_zip_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Reduce, sendbuf, recvbuf, count, type, op, root, comm);
    *rc = ist_zip_reduce(c, sendbuf, recvbuf, count, type, op, root);
    return 1;
}

int ist_zip_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Allreduce, sendbuf, recvbuf, count, type, op, comm);
    /* In place, every rank's part is in recvbuf: the root reduces in place, the others send it. */
    const void *mine = sendbuf == MPI_IN_PLACE && c->rank != 0 ? recvbuf : sendbuf;
    *rc = ist_zip_reduce(c, mine, recvbuf, count, type, op, 0);
    if (*rc == MPI_SUCCESS) *rc = ist_zip_bcast(c, recvbuf, count, type, 0);
    return 1;
}

/* Fixed counts as the v-forms' arrays: count at i * count. */
static void uniform(int size, int count, int **counts, int **displs)
{
    *counts = malloc(sizeof **counts * (size_t)size);
    *displs = malloc(sizeof **displs * (size_t)size);
    for (int i = 0; i < size; i++) {
        (*counts)[i] = count;
        (*displs)[i] = i * count;
    }
}

int ist_zip_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Gather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int *counts, *displs;
    uniform(c->size, recvcount, &counts, &displs);
    *rc = ist_zip_gatherv(c, sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, root);
    free(counts);
    free(displs);
    return 1;
}

int ist_zip_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                    MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Gatherv, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    *rc = ist_zip_gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
    return 1;
}

int ist_zip_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Scatter, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int *counts, *displs;
    uniform(c->size, sendcount, &counts, &displs);
    *rc = ist_zip_scatterv(c, sendbuf, counts, displs, sendtype, recvbuf, recvcount, recvtype, root);
    free(counts);
    free(displs);
    return 1;
}

int ist_zip_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Scatterv, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    *rc = ist_zip_scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
    return 1;
}

int ist_zip_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Allgatherv, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    /* Gather at rank 0, then broadcast the whole receive buffer as one indexed type. */
    if (sendbuf == MPI_IN_PLACE && c->rank != 0) {
        MPI_Aint lb, ext;
        PMPI_Type_get_extent(recvtype, &lb, &ext);
        sendbuf = (const char *)recvbuf + displs[c->rank] * ext;
        sendcount = recvcounts[c->rank];
        sendtype = recvtype;
    }
    *rc = ist_zip_gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, 0);
    if (*rc != MPI_SUCCESS) return 1;
    MPI_Datatype all;
    PMPI_Type_indexed(c->size, recvcounts, displs, recvtype, &all);
    PMPI_Type_commit(&all);
    *rc = ist_zip_bcast(c, recvbuf, 1, all, 0);
    PMPI_Type_free(&all);
    return 1;
}

int ist_zip_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Allgather, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    int *counts, *displs;
    uniform(c->size, recvcount, &counts, &displs);
    ist_zip_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, counts, displs, recvtype, comm, rc);
    free(counts);
    free(displs);
    return 1;
}

int ist_zip_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Alltoall, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    int *scounts, *sdispls, *rcounts, *rdispls;
    uniform(c->size, sendcount, &scounts, &sdispls);
    uniform(c->size, recvcount, &rcounts, &rdispls);
    *rc = ist_zip_alltoallv(c, sendbuf, scounts, sdispls, sendtype, recvbuf, rcounts, rdispls, recvtype);
    free(scounts), free(sdispls), free(rcounts), free(rdispls);
    return 1;
}

int ist_zip_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Alltoallv, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    *rc = ist_zip_alltoallv(c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
    return 1;
}

int ist_zip_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Scan, sendbuf, recvbuf, count, type, op, comm);
    *rc = ist_zip_scan(c, sendbuf, recvbuf, count, type, op, 0);
    return 1;
}

int ist_zip_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Exscan, sendbuf, recvbuf, count, type, op, comm);
    *rc = ist_zip_scan(c, sendbuf, recvbuf, count, type, op, 1);
    return 1;
}

int ist_zip_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Reduce_scatter, sendbuf, recvbuf, recvcounts, type, op, comm);
    *rc = ist_zip_reduce_scatter(c, sendbuf, recvbuf, recvcounts, type, op);
    return 1;
}

int ist_zip_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                 MPI_Datatype type, MPI_Op op, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Reduce_scatter_block, sendbuf, recvbuf, recvcount, type, op, comm);
    int *counts = malloc(sizeof *counts * (size_t)c->size);
    for (int r = 0; r < c->size; r++) counts[r] = recvcount;
    *rc = ist_zip_reduce_scatter(c, sendbuf, recvbuf, counts, type, op);
    free(counts);
    return 1;
}

int ist_zip_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    CLUSTER_AWARE(Alltoallw, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
    *rc = ist_zip_alltoallw(c, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                            recvtypes);
    return 1;
}

/* ---- communicators ---------------------------------------------------------------- */

int ist_zip_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm, int *rc)
{
    SPANNING(comm);
    /* The same members, a new context from rank 0; the native part duplicated natively,
     * so that attributes are copied by their keyvals' copy functions as MPI says. */
    uint64_t context = c->rank == 0 ? ist_zip_new_contexts(1) : 0;
    *rc = ist_zip_bcast(c, &context, 1, MPI_UINT64_T, 0);
    MPI_Comm native = MPI_COMM_NULL;
    if (*rc == MPI_SUCCESS) *rc = PMPI_Comm_dup(c->local, &native);
    if (*rc == MPI_SUCCESS) *rc = ist_zip_register(native, context, c->size, c->rank, c->world, newcomm);
    struct ist_zcomm *d = *rc == MPI_SUCCESS ? ist_zip_comm(*newcomm) : NULL;
    if (d) d->topo = ist_zip_copy_topo(c->topo);
    return 1;
}

int ist_zip_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_split(c, color, key, newcomm);
    return 1;
}

int ist_zip_Comm_free(MPI_Comm *comm, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(*comm);
    if (!c) return 0;
    *rc = ist_zip_free_comm(c);
    if (*rc == MPI_SUCCESS) *comm = MPI_COMM_NULL;
    return 1;
}
