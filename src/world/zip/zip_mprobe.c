/* Matched probes on communicators that span sites: Mprobe, Improbe, Mrecv, Imrecv.
 *
 * A message handle must be the MPI's own (the application may pass it to Mrecv, Imrecv or
 * compare it with MPI_MESSAGE_NULL). A native message found by MPI_Improbe on the
 * communicator's native part is one. A forwarded message is matched by the probe (MPI
 * says so), its data taken in, and then sent by this rank to itself on a private
 * duplicate of MPI_COMM_SELF and matched there, which makes it one; its source and tag
 * are kept here until Mrecv or Imrecv takes it. */
#include <stdlib.h>

#include "zip.h"
#include "zip_engine.h"


struct matched {
    struct matched *next;
    MPI_Message handle;
    struct ist_zcomm *comm; /* a native message: translate its source through comm */
    int injected;           /* a forwarded one: its own source and tag */
    int source, tag;
    MPI_Request self_send;
    char *data;
};
static struct matched *matched_head;
static MPI_Comm self_comm = MPI_COMM_NULL;

static struct matched *remember(MPI_Message handle, struct ist_zcomm *c)
{
    struct matched *m = calloc(1, sizeof *m);
    if (!m) ist_zip_fatal("out of memory");
    m->handle = handle;
    m->comm = c;
    m->self_send = MPI_REQUEST_NULL;
    m->next = matched_head;
    matched_head = m;
    return m;
}

static struct matched *recall(MPI_Message handle)
{
    for (struct matched **p = &matched_head; *p; p = &(*p)->next)
        if ((*p)->handle == handle) {
            struct matched *m = *p;
            *p = m->next;
            return m;
        }
    return NULL;
}

int ist_zip_improbe(struct ist_zcomm *c, int source, int tag, int *flag, MPI_Message *message,
                    MPI_Status *status)
{
    ist_zip_progress();
    *flag = 0;
    if (source == MPI_PROC_NULL) return PMPI_Improbe(source, tag, c->site_comm, flag, message, status);
    int site_rank = source == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->site_rank[source];
    struct zmsg *m = source == MPI_ANY_SOURCE || site_rank < 0 ? ist_zip_take_unexpected(c, source, tag) : NULL;
    if (m) {
        /* Matched now: take its data (a rendezvous fetches them), then send them to self. */
        char *data = malloc(m->h.bytes ? m->h.bytes : 1);
        if (!data) ist_zip_fatal("out of memory for a message of %llu bytes", (unsigned long long)m->h.bytes);
        struct ist_zop *op = ist_zip_new_recv_op(c, data, (int)m->h.bytes, MPI_BYTE);
        ist_zip_deliver(op, m);
        MPI_Status st;
        ist_zip_wait_ops(1, &op, &st);
        if (self_comm == MPI_COMM_NULL) PMPI_Comm_dup(MPI_COMM_SELF, &self_comm);
        int bytes;
        PMPI_Get_count(&st, MPI_BYTE, &bytes);
        MPI_Request send;
        PMPI_Isend(data, bytes, MPI_BYTE, 0, 0, self_comm, &send);
        MPI_Message handle;
        PMPI_Mprobe(0, 0, self_comm, &handle, MPI_STATUS_IGNORE);
        struct matched *k = remember(handle, c);
        k->injected = 1;
        k->source = st.MPI_SOURCE;
        k->tag = st.MPI_TAG;
        k->self_send = send;
        k->data = data;
        if (status != MPI_STATUS_IGNORE) *status = st;
        *message = handle;
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (source != MPI_ANY_SOURCE && site_rank < 0) return MPI_SUCCESS;
    MPI_Status st;
    int rc = PMPI_Improbe(site_rank, tag, c->site_comm, flag, message, &st);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    remember(*message, c);
    st.MPI_SOURCE = c->from_site[st.MPI_SOURCE];
    if (status != MPI_STATUS_IGNORE) *status = st;
    return MPI_SUCCESS;
}

static void forget(struct matched *k)
{
    if (k->injected) {
        PMPI_Wait(&k->self_send, MPI_STATUS_IGNORE);
        free(k->data);
    }
    free(k);
}

int ist_zip_mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status,
                  int *rc)
{
    struct matched *k = recall(*message);
    if (!k) return 0;
    MPI_Status st;
    *rc = PMPI_Mrecv(buf, count, type, message, &st);
    if (k->injected) {
        st.MPI_SOURCE = k->source;
        st.MPI_TAG = k->tag;
    } else if (st.MPI_SOURCE >= 0) {
        st.MPI_SOURCE = k->comm->from_site[st.MPI_SOURCE];
    }
    if (status != MPI_STATUS_IGNORE) *status = st;
    forget(k);
    return 1;
}

int ist_zip_imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                   MPI_Request *request, int *rc)
{
    struct matched *k = recall(*message);
    if (!k) return 0;
    struct ist_zop *op = ist_zip_new_recv_op(k->comm, buf, count, type);
    if (k->injected) { /* the data are here: receive them now */
        MPI_Status st;
        *rc = PMPI_Mrecv(buf, count, type, message, &st);
        op->st_source = k->source;
        op->st_tag = k->tag;
        op->st_error = *rc;
        MPI_Count n;
        PMPI_Get_elements_x(&st, MPI_BYTE, &n);
        op->st_bytes = (long long)n;
        op->done = 1;
    } else {
        *rc = PMPI_Imrecv(buf, count, type, message, &op->native);
        ist_zip_native_op(op);
    }
    forget(k);
    if (*rc == MPI_SUCCESS) *rc = ist_zip_give_handle(op, request);
    return 1;
}
