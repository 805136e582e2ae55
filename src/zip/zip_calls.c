/* The MPI calls the layer carries across forwarders (docs/zipper.md).
 *
 * The generated wrappers (tools/genwrap.py, ZIP_CALLS) call ist_zip_X first when zipper
 * forwarding is active. Each returns 1 when it has served the call (the communicator
 * spans sites; the MPI return code in *rc), or 0 to let the wrapper go on to the native
 * MPI: the communicator lies in one site, or the call only needs the engine to move
 * first (tests, which the native MPI then does on generalized requests). Blocking waits
 * need nothing here: in zipper mode the layer always waits by testing
 * (sleep_wait.c), and each test moves the engine. */
#include <stdlib.h>

#include "hier.h"
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

/* Tests: move the engine, then let the native MPI test (generalized requests too). */
int ist_zip_Test(MPI_Request *request, int *flag, MPI_Status *status, int *rc)
{
    (void)request, (void)flag, (void)status, (void)rc;
    ist_zip_progress();
    return 0;
}

int ist_zip_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[], int *rc)
{
    (void)count, (void)requests, (void)flag, (void)statuses, (void)rc;
    ist_zip_progress();
    return 0;
}

int ist_zip_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status, int *rc)
{
    (void)count, (void)requests, (void)index, (void)flag, (void)status, (void)rc;
    ist_zip_progress();
    return 0;
}

int ist_zip_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                     MPI_Status statuses[], int *rc)
{
    (void)incount, (void)requests, (void)outcount, (void)indices, (void)statuses, (void)rc;
    ist_zip_progress();
    return 0;
}

int ist_zip_Request_free(MPI_Request *request, int *rc)
{
    *rc = MPI_SUCCESS;
    return ist_zip_request_free(request);
}

/* ---- collectives ---------------------------------------------------------------------- */

int ist_zip_Barrier(MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_barrier(c);
    return 1;
}

int ist_zip_Bcast(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_bcast(c, buffer, count, type, root);
    return 1;
}

int ist_zip_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_reduce(c, sendbuf, recvbuf, count, type, op, root);
    return 1;
}

int ist_zip_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm, int *rc)
{
    SPANNING(comm);
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
    *rc = ist_zip_gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
    return 1;
}

int ist_zip_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, int *rc)
{
    SPANNING(comm);
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
    *rc = ist_zip_scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
    return 1;
}

int ist_zip_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, int *rc)
{
    SPANNING(comm);
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
    *rc = ist_zip_alltoallv(c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
    return 1;
}

/* ---- communicators ---------------------------------------------------------------- */

int ist_zip_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_split(c, 0, c->rank, newcomm);
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
