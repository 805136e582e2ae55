/* The layer's side of zipper forwarding (docs/zipper.md): one MPI_COMM_WORLD over several
 * native jobs, one per site (the clusters one launcher reaches), joined by forwarders.
 *
 * A communicator that spans sites is a struct ist_zcomm. The application holds a native
 * handle for it: MPI_COMM_WORLD, or the native communicator of its members in this
 * site. Messages between members of one site go through the native MPI on that
 * communicator; messages between sites go as DATA frames through a forwarder, tagged
 * with the communicator's context id. Each pair of world ranks always uses one path and
 * one forwarder, so MPI's order per pair holds; receives are matched here, in the order
 * they were posted, against forwarded messages and (by MPI_Improbe) native ones.
 *
 * Active when ISTHMUS_ZIP_SITES is set (isthmus run sets it on zipper platforms):
 *   ISTHMUS_ZIP_SITES=0,0,1,1     the site of every world rank, in world order
 *   ISTHMUS_ZIP_SITE=0            this job's site
 *   ISTHMUS_ZIP_FORWARDERS=A:P,.. the forwarders, in the same order on every rank */
#ifndef ISTHMUS_ZIP_H
#define ISTHMUS_ZIP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "world.h" /* ist_multi_site; ist_answered, the convention of ist_span_X */

/* A communicator whose members are in more than one site. */
struct ist_zcomm {
    MPI_Comm handle;  /* what the application holds */
    MPI_Comm site_comm; /* the members in this site, in communicator order (native) */
    uint64_t context; /* forwarded messages carry it; equal on every member */
    int size, rank;
    int *world;       /* communicator rank -> world rank */
    int *site_rank;  /* communicator rank -> rank in `site_comm`, or -1 in another site */
    int *from_site;  /* rank in `site_comm` -> communicator rank */
    struct ist_zcomm *coll; /* the collectives' own: context + 1, a duplicate of local */
    struct ist_ztopo *topo; /* a Cartesian or graph topology (zip_topo.c), or NULL */
    void (*free_topo)(struct ist_ztopo *t); /* ... and its own free, set with it */
    unsigned icoll_seq;     /* nonblocking collectives started on it (zip_collectives.c) */
};
struct ist_ztopo;
void ist_zip_free_topo(struct ist_ztopo *t);
struct ist_ztopo *ist_zip_copy_topo(const struct ist_ztopo *t);

/* An operation under way: a send or receive, internal or the application's. */
enum ist_zop_kind { IST_ZOP_SEND, IST_ZOP_RECV, IST_ZOP_COLL };
struct ist_zop {
    enum ist_zop_kind kind;
    struct ist_zcomm *comm;
    void *buf;
    int count;
    MPI_Datatype type;
    int peer, tag;          /* communicator rank (or MPI_ANY_SOURCE), tag (or MPI_ANY_TAG) */
    int done;
    MPI_Request native;     /* a native request under way, or MPI_REQUEST_NULL */
    uint32_t sync_id;       /* the message id a send or receive waits on (ACK, CTS, bulk data) */
    int rdv_peer;           /* ... and the world rank it comes from */
    /* a rendezvous receive: the size announced, what has come, where it goes (the user's
     * buffer when contiguous, else rdv_pack, unpacked at the end), and what fits */
    long long rdv_bytes, rdv_got, rdv_fits;
    char *rdv_into, *rdv_pack;
    /* the status, when done */
    int st_source, st_tag, st_error, cancelled;
    long long st_bytes;
    /* the application's handle (a generalized request), when it has one */
    MPI_Request greq;
    int has_greq, user_freed, greq_freed;
    struct ist_zop *next, *prev; /* in the engine's list it is on */
    void *list;                  /* that list, or NULL */
};

void ist_zip_init(void);     /* after the native MPI_Init */
void ist_zip_finalize(void); /* before the native MPI_Finalize */

/* The spanning communicator of a handle, or NULL when the native MPI serves it; the
 * registry's own add and remove (zip_state.c). */
struct ist_zcomm *ist_zip_comm(MPI_Comm handle);
void ist_zip_comms_add(struct ist_zcomm *c);
void ist_zip_comms_remove(struct ist_zcomm *c);
/* End the whole run (every site) with a message naming `call`, when comm spans sites. */
void ist_zip_native_only(MPI_Comm comm, const char *call);
void ist_zip_refuse(const char *call, const char *why) __attribute__((noreturn));

/* Communicators (zip_world.c). */
int ist_zip_split(struct ist_zcomm *c, int color, int key, MPI_Comm *newcomm);
/* A block of `count` communicator contexts of this rank's own. */
uint64_t ist_zip_new_contexts(int count);
/* The communicator of n members (world ranks; me among them) over the native communicator
 * of this site's members: registered when it spans sites; *newcomm = native either way. */
int ist_zip_register(MPI_Comm native, uint64_t context, int n, int me, const int *world,
                     MPI_Comm *newcomm);
int ist_zip_free_comm(struct ist_zcomm *c);

/* The engine (zip_engine.c). */
struct ist_zop *ist_zip_isend(struct ist_zcomm *c, const void *buf, int count, MPI_Datatype type,
                              int dest, int tag, int sync);
struct ist_zop *ist_zip_irecv(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type,
                              int source, int tag);
void ist_zip_progress(void);
/* A nonblocking collective's op (done by ist_zip_complete_op), and the schedules' turn
 * in every progress (zip_collectives.c). */
struct ist_zop *ist_zip_coll_op(struct ist_zcomm *c);
void ist_zip_complete_op(struct ist_zop *op);
void ist_zip_schedules_progress(void);
/* Wait until every op is done, driving the engine and sleeping between tries; copies
 * the statuses (statuses may be MPI_STATUSES_IGNORE) and frees the ops. */
int ist_zip_wait_ops(int n, struct ist_zop **ops, MPI_Status *statuses);
/* A forwarded message waiting to be received that matches: its status (no removal). */
int ist_zip_iprobe_forwarded(struct ist_zcomm *c, int source, int tag, MPI_Status *status);
/* Matched probes (a message handle is always the MPI's own; zip_engine.c says how). */
int ist_zip_improbe(struct ist_zcomm *c, int source, int tag, int *flag, MPI_Message *message,
                    MPI_Status *status);
int ist_zip_mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status,
                  int *rc);
int ist_zip_imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message,
                   MPI_Request *request, int *rc);
void ist_zip_status_of(const struct ist_zop *op, MPI_Status *status);
void ist_zip_free_op(struct ist_zop *op);
/* Give op an application handle (a generalized request, completed by the engine). */
int ist_zip_give_handle(struct ist_zop *op, MPI_Request *request);
/* Request_free of an application handle the engine owns: 1 if it was one. */
int ist_zip_request_free(MPI_Request *request);
/* Sleep a little between tries of a wait (the engine's sockets wake it early). */
void ist_zip_idle(int tries);

/* The zipper's own blocking collectives on a spanning communicator (zip_collectives.c). */
int ist_zip_bcast(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type, int root);
int ist_zip_gatherv(struct ist_zcomm *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, int root);

#endif
