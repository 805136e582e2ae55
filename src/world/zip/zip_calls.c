/* The MPI calls the layer carries across forwarders (docs/zipper.md).
 *
 * The generated wrappers (tools/genwrap.py, ZIP_CALLS) call ist_span_X first when zipper
 * forwarding is active. Each returns 1 when it has served the call (the communicator
 * spans sites; the MPI return code in *rc), or 0 to let the wrapper go on to the native
 * MPI: the communicator lies in one site. Waits, tests and persistent requests are in
 * zip_persist.c: in zipper mode the layer always waits by testing (src/world/wait.c), each
 * test moves the engine, and the MPI itself tests the generalized requests. */
#include <stdlib.h>

#include "zip.h"
#include "world_calls.h"
#include "datatype.h"
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

int ist_span_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_span_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 1, rc);
}

/* Buffered and ready sends complete like eager sends: the engine buffers them itself. */
int ist_span_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_span_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, int *rc)
{
    return send_blocking(buf, count, type, dest, tag, comm, 0, rc);
}

int ist_span_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_span_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 1, request, rc);
}

int ist_span_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_span_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    return send_nonblocking(buf, count, type, dest, tag, comm, 0, request, rc);
}

int ist_span_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Status *status, int *rc)
{
    SPANNING(comm);
    struct ist_zop *op = ist_zip_irecv(c, buf, count, type, source, tag);
    *rc = ist_zip_wait_ops(1, &op, status == MPI_STATUS_IGNORE ? MPI_STATUSES_IGNORE : status);
    return 1;
}

int ist_span_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_give_handle(ist_zip_irecv(c, buf, count, type, source, tag), request);
    return 1;
}

int ist_span_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
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

int ist_span_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag,
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

int ist_span_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    ist_zip_progress();
    *rc = MPI_SUCCESS;
    *flag = 0;
    if (source == MPI_PROC_NULL) {
        *rc = PMPI_Iprobe(MPI_PROC_NULL, tag, c->site_comm, flag, status);
        return 1;
    }
    int site_rank = source == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->site_rank[source];
    if ((source == MPI_ANY_SOURCE || site_rank < 0) && ist_zip_iprobe_forwarded(c, source, tag, status)) {
        *flag = 1;
        return 1;
    }
    if (source == MPI_ANY_SOURCE || site_rank >= 0) {
        MPI_Status st;
        *rc = PMPI_Iprobe(site_rank, tag, c->site_comm, flag, &st);
        if (*flag) {
            st.MPI_SOURCE = c->from_site[st.MPI_SOURCE];
            if (status != MPI_STATUS_IGNORE) *status = st;
        }
    }
    return 1;
}

int ist_span_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status, int *rc)
{
    SPANNING(comm);
    (void)c;
    int flag = 0;
    for (int tries = 0; ist_span_Iprobe(source, tag, comm, &flag, status, rc) && *rc == MPI_SUCCESS && !flag; tries++)
        ist_zip_idle(tries);
    return 1;
}

int ist_span_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                    MPI_Status *status, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_improbe(c, source, tag, flag, message, status);
    return 1;
}

int ist_span_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status,
                   int *rc)
{
    SPANNING(comm);
    int flag = 0;
    for (int tries = 0; (*rc = ist_zip_improbe(c, source, tag, &flag, message, status)) == MPI_SUCCESS && !flag; tries++)
        ist_zip_idle(tries);
    return 1;
}

/* Only messages the layer handed out need it; the others are the native MPI's. */
int ist_span_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status,
                  int *rc)
{
    return ist_zip_mrecv(buf, count, type, message, status, rc);
}

int ist_span_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                   MPI_Request *request, int *rc)
{
    return ist_zip_imrecv(buf, count, type, message, request, rc);
}

/* The collectives' entries, blocking and nonblocking: zip_collectives.c. */

/* ---- communicators ---------------------------------------------------------------- */

int ist_span_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm, int *rc)
{
    SPANNING(comm);
    /* The same members, a new context from rank 0; the native part duplicated natively,
     * so that attributes are copied by their keyvals' copy functions as MPI says. */
    uint64_t context = c->rank == 0 ? ist_zip_new_contexts(1) : 0;
    *rc = ist_zip_bcast(c, &context, 1, MPI_UINT64_T, 0);
    MPI_Comm native = MPI_COMM_NULL;
    if (*rc == MPI_SUCCESS) *rc = PMPI_Comm_dup(c->site_comm, &native);
    if (*rc == MPI_SUCCESS) *rc = ist_zip_register(native, context, c->size, c->rank, c->world, newcomm);
    struct ist_zcomm *d = *rc == MPI_SUCCESS ? ist_zip_comm(*newcomm) : NULL;
    if (d) {
        d->topo = ist_zip_copy_topo(c->topo);
        d->free_topo = c->free_topo;
    }
    return 1;
}

int ist_span_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, int *rc)
{
    SPANNING(comm);
    *rc = ist_zip_split(c, color, key, newcomm);
    return 1;
}

int ist_span_Comm_free(MPI_Comm *comm, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(*comm);
    if (!c) return 0;
    *rc = ist_zip_free_comm(c);
    if (*rc == MPI_SUCCESS) *comm = MPI_COMM_NULL;
    return 1;
}
