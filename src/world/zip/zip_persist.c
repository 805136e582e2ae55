/* Persistent requests on communicators that span sites (docs/zipper.md).
 *
 * The application's handle must stay valid between MPI_Start and the completion that
 * makes it inactive, and an inactive one must behave as MPI says (a wait returns at once
 * with an empty status). So each persistent request gets a *home*: a native inactive
 * persistent request (a receive from MPI_PROC_NULL on MPI_COMM_SELF), which is what the
 * application holds while it is inactive. MPI_Start puts the generalized request of the
 * operation it starts in the application's variable; when a wait or test completes it
 * (and the MPI sets the variable to MPI_REQUEST_NULL), the home goes back in its place. */
#include <stdlib.h>

#include "world.h"
#include "zip.h"
#include "world_calls.h"
#include "zip_engine.h"

struct persistent {
    struct persistent *next;
    MPI_Request home;   /* what the application holds while inactive */
    MPI_Request active; /* the generalized request of the operation under way, or NULL */
    int send, sync;
    void *buf;
    int count, peer, tag;
    MPI_Datatype type;
    struct ist_zcomm *comm;
};
static struct persistent *all;

static int make(void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                MPI_Request *request, int send, int sync, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(comm);
    if (!c) return 0;
    struct persistent *p = calloc(1, sizeof *p);
    if (!p) ist_zip_fatal("out of memory");
    *p = (struct persistent){all, MPI_REQUEST_NULL, MPI_REQUEST_NULL, send, sync, buf, count,
                             peer, tag, type, c};
    *rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->home);
    all = p;
    *request = p->home;
    return 1;
}

int ist_span_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, MPI_Request *request, int *rc)
{
    return make((void *)buf, count, type, dest, tag, comm, request, 1, 0, rc);
}

int ist_span_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    return make((void *)buf, count, type, dest, tag, comm, request, 1, 1, rc);
}

int ist_span_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    return make((void *)buf, count, type, dest, tag, comm, request, 1, 0, rc);
}

int ist_span_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    return make((void *)buf, count, type, dest, tag, comm, request, 1, 0, rc);
}

int ist_span_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
                      MPI_Comm comm, MPI_Request *request, int *rc)
{
    return make(buf, count, type, source, tag, comm, request, 0, 0, rc);
}

static struct persistent *by_home(MPI_Request r)
{
    for (struct persistent *p = all; p; p = p->next)
        if (p->home == r && r != MPI_REQUEST_NULL) return p;
    return NULL;
}

static struct persistent *by_active(MPI_Request r)
{
    for (struct persistent *p = all; p; p = p->next)
        if (p->active == r && r != MPI_REQUEST_NULL) return p;
    return NULL;
}

static int start(struct persistent *p, MPI_Request *request)
{
    struct ist_zop *op =
        p->send ? ist_zip_isend(p->comm, p->buf, p->count, p->type, p->peer, p->tag, p->sync)
                : ist_zip_irecv(p->comm, p->buf, p->count, p->type, p->peer, p->tag);
    int rc = ist_zip_give_handle(op, &p->active);
    *request = p->active;
    return rc;
}

int ist_span_Start(MPI_Request *request, int *rc)
{
    struct persistent *p = by_home(*request);
    if (!p) return 0;
    *rc = start(p, request);
    return 1;
}

int ist_span_Startall(int count, MPI_Request requests[], int *rc)
{
    if (!all) return 0;
    *rc = MPI_SUCCESS;
    for (int i = 0; i < count && *rc == MPI_SUCCESS; i++) {
        struct persistent *p = by_home(requests[i]);
        *rc = p ? start(p, &requests[i]) : PMPI_Start(&requests[i]);
    }
    return 1;
}

/* ---- completion: the home back in place of a completed operation ------------------- */

/* Before a wait or test: the persistent request behind each entry that is an active one
 * (NULL for the others); NULL when there is none at all. */
static struct persistent **note(int n, const MPI_Request requests[])
{
    if (!all) return NULL;
    struct persistent **was = NULL;
    for (int i = 0; i < n; i++) {
        struct persistent *p = by_active(requests[i]);
        if (!p) continue;
        if (!was) was = calloc((size_t)n, sizeof *was);
        was[i] = p;
    }
    return was;
}

static void restore(int n, MPI_Request requests[], struct persistent **was)
{
    if (!was) return;
    for (int i = 0; i < n; i++)
        if (was[i] && requests[i] == MPI_REQUEST_NULL) {
            requests[i] = was[i]->home;
            was[i]->active = MPI_REQUEST_NULL;
        }
    free(was);
}

#define AROUND(n, requests, call)                          \
    struct persistent **was = note(n, requests);           \
    if (!was) return 0;                                    \
    *rc = (call);                                          \
    restore(n, requests, was);                             \
    return 1

int ist_span_Wait(MPI_Request *request, MPI_Status *status, int *rc)
{
    AROUND(1, request, ist_sleepwait_Wait(request, status));
}

int ist_span_Waitall(int count, MPI_Request requests[], MPI_Status statuses[], int *rc)
{
    AROUND(count, requests, ist_sleepwait_Waitall(count, requests, statuses));
}

int ist_span_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status, int *rc)
{
    AROUND(count, requests, ist_sleepwait_Waitany(count, requests, index, status));
}

int ist_span_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                     MPI_Status statuses[], int *rc)
{
    AROUND(incount, requests, ist_sleepwait_Waitsome(incount, requests, outcount, indices, statuses));
}

int ist_span_Test(MPI_Request *request, int *flag, MPI_Status *status, int *rc)
{
    ist_zip_progress();
    AROUND(1, request, PMPI_Test(request, flag, status));
}

int ist_span_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[], int *rc)
{
    ist_zip_progress();
    AROUND(count, requests, PMPI_Testall(count, requests, flag, statuses));
}

int ist_span_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status,
                    int *rc)
{
    ist_zip_progress();
    AROUND(count, requests, PMPI_Testany(count, requests, index, flag, status));
}

int ist_span_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                     MPI_Status statuses[], int *rc)
{
    ist_zip_progress();
    AROUND(incount, requests, PMPI_Testsome(incount, requests, outcount, indices, statuses));
}

/* Freeing a persistent request: its home, and the operation under way goes on alone. */
int ist_span_Request_free(MPI_Request *request, int *rc)
{
    *rc = MPI_SUCCESS;
    for (struct persistent **pp = &all; *pp; pp = &(*pp)->next) {
        struct persistent *p = *pp;
        if (p->home != *request && p->active != *request) continue;
        if (p->active != MPI_REQUEST_NULL) {
            MPI_Request active = p->active;
            if (!ist_zip_request_free(&active)) PMPI_Request_free(&active);
        }
        *pp = p->next;
        *rc = PMPI_Request_free(&p->home);
        free(p);
        *request = MPI_REQUEST_NULL;
        return 1;
    }
    return ist_zip_request_free(request);
}
