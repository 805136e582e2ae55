/* src/world: the only part of libisthmus that knows whether a communicator spans sites.
 *
 * A site is one native MPI job (the clusters one launcher reaches); with zipper
 * forwarding (src/world/zip, docs/zipper.md) several sites make one MPI_COMM_WORLD and a
 * communicator may span them. Everything above (src/coll, src/layer) sends, waits and
 * makes communicators through this interface and never asks how: natively these are the
 * site's MPI (PMPI_X), waiting as the application's calls do (wait.c); on a spanning
 * communicator the zipper's engine carries them.
 *
 * The wrappers' entries for the application's own calls on spanning communicators,
 * ist_span_X (generated world_calls.h), and the site's MPI waiting as the application's
 * calls do, ist_own_X (generated own_calls.h), belong to this interface too. This header
 * needs neither (src/coll/common/tree.c is compiled alone for SimGrid). */
#ifndef ISTHMUS_WORLD_H
#define ISTHMUS_WORLD_H

#include <mpi.h>

/* The one convention of a call that may decline (src/world's ist_span_X, src/coll's
 * ist_wan_X): it returns 1 when it served the call, its result in *answer, and 0 when it
 * declined, and the caller's next choice serves it (in the end the site's MPI). */
static inline int ist_answered(int *answer, int result)
{
    *answer = result;
    return 1;
}

/* What the application's MPI_COMM_WORLD means: MPI_COMM_WORLD itself, or with I/O
 * servers hidden in the job (src/layer/mpiio.c, docs/mpiio.md) the other ranks alone,
 * set at MPI_Init before ist_world_init. The wrappers map the handle (IST_APP_COMM); the
 * layer's world, topology and ranks are those of this communicator. */
extern MPI_Comm ist_app_world;

/* Set at MPI_Init when this job is one site of several (ISTHMUS_ZIP_SITES). */
extern int ist_multi_site;

/* At MPI_Init, before anything else of the layer communicates: the sites' world, the
 * waiting mode, the layer's own duplicate of MPI_COMM_WORLD (spanning the sites when
 * there are several) and the topology over it. At MPI_Finalize, the reverse. */
void ist_world_init(MPI_Comm *world_dup);
void ist_world_finalize(MPI_Comm *world_dup);

/* Whether comm's members are in more than one site. */
int ist_world_spans(MPI_Comm comm);
/* comm's size: all its members, in every site. */
int ist_world_comm_size(MPI_Comm comm);
/* End the whole run (every site) with a message naming `call`, when comm spans sites:
 * the wrappers of the calls src/world does not carry. */
void ist_world_native_only(MPI_Comm comm, const char *call);

/* The layer's own communicators: collective over comm, not profiled, waiting as the
 * application's calls do, spanning sites when comm does. */
int ist_world_dup(MPI_Comm comm, MPI_Comm *newcomm);
int ist_world_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int ist_world_free(MPI_Comm *comm);

/* The layer's own point-to-point messages and waits, on any communicator. */
int ist_world_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request);
int ist_world_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                    MPI_Comm comm, MPI_Request *request);
int ist_world_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm);
int ist_world_recv(void *buf, int count, MPI_Datatype type, int source, int tag,
                   MPI_Comm comm, MPI_Status *status);
int ist_world_wait(MPI_Request *request, MPI_Status *status);
int ist_world_waitall(int n, MPI_Request requests[], MPI_Status statuses[]);
int ist_world_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status);

/* ---- waiting (wait.c) ------------------------------------------------------------------
 * The waiting mode for oversubscribed runs: set when ISTHMUS_WAIT=sleep, and always with
 * several sites (the zipper's engine moves only inside MPI calls). */
extern int ist_sleep_wait;
void ist_sleep_wait_init(void); /* from ISTHMUS_WAIT, by ist_world_init */
/* Between the tests of a wait: move what carries messages between sites (nothing
 * natively), then pause as ist_wait_pause_ns (src/util/backoff.h) says after `tries`
 * failed tests. */

void ist_world_progress(void);
void ist_world_idle(int tries);
/* Pause real_ns of real time, less when one of the process's sockets has something to
 * read (wait_sockets.c); `tries` as ist_world_idle's. */
void ist_wait_pause(long real_ns, int tries);
/* The next pause that starts a wait scans the process's sockets again (new connections). */
void ist_wait_sockets_rescan(void);
/* Test until done, pausing between tests (wait.c says how long). */
int ist_sleep_until_done(MPI_Request *request, MPI_Status *status);
/* The hand-written sleeping forms (tools/genwrap.py's HAND_SLEEP). */
int ist_sleepwait_Wait(MPI_Request *request, MPI_Status *status);
int ist_sleepwait_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int ist_sleepwait_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int ist_sleepwait_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                           MPI_Status statuses[]);
int ist_sleepwait_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int ist_sleepwait_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                           int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int ist_sleepwait_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
/* A barrier that waits as the sleeping waits do (for the communicator constructors). */
int ist_sleeping_barrier(MPI_Comm comm);
/* Native requests the layer started for itself: waited for as the sleeping waits do in
 * sleep mode, else by the MPI's own wait. */
void ist_wait_all(int n, MPI_Request *requests);
void ist_bcast_waiting(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);

#endif
