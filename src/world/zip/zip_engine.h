/* Between the engine (zip_engine.c) and the world's set-up (zip_world.c). */
#ifndef ISTHMUS_ZIP_ENGINE_H
#define ISTHMUS_ZIP_ENGINE_H

#include <mpi.h>
#include <stdint.h>

#include "zip.h"

struct ist_zip_world {
    int world_rank, world_size;
    int site;         /* this job's site */
    int *site_of;     /* world rank -> site */
    int *site_rank_of;    /* world rank -> its rank in its site's job */
    int *hosted_by;   /* world rank -> the forwarder on its own (zipper) host, or -1 */
};
extern struct ist_zip_world ist_zip;

struct forwarder_address {
    int fd;         /* connected, non-blocking */
    char text[64];  /* ADDRESS:PORT, for messages */
};

/* ---- the transport (zip_transport.c): connections, frames, whole messages ---------- */

/* Kinds of layer messages. EAGER and SYNC carry their data; a synchronous one is
 * acknowledged (ACK) when matched. A large message, or one past the sender's credit, is
 * announced (RTS, no data), matched, asked for (CTS), and its data then come as bulk
 * frames (ist_zip_send_bulk), not as a message. CREDIT gives a sender back eager credit. */
enum zmsg_kind { ZMSG_EAGER, ZMSG_SYNC, ZMSG_ACK, ZMSG_RTS, ZMSG_CTS, ZMSG_CREDIT = 6 };

/* The layer's header, at the start of a message's first frame. */
struct zmsg_hdr {
    uint64_t context;
    int32_t tag;
    uint32_t kind;
    uint64_t bytes; /* the data that follow; for RTS the size announced; CREDIT: bytes given */
    uint32_t id;    /* SYNC/ACK: the send; RTS/CTS and its bulk frames: the rendezvous */
    uint32_t pad;
};

/* A message from another site: whole (or, for RTS, its announcement). */
struct zmsg {
    struct zmsg *next;
    struct zmsg_hdr h;
    int src_world;
    size_t got;
    char *data; /* h.bytes bytes, except for RTS: NULL */
};

void ist_zip_engine_start(struct forwarder_address *addrs, int n);
void ist_zip_credit_init(void); /* the engine's eager credit, once the world is known */
/* Queue a message to world rank dst: the header, then bytes from data (which must stay
 * until it is written; `owned` is freed then). done, if not NULL, is called with arg
 * once the last byte is written to the forwarder's socket. */
void ist_zip_send_message(int dst, const struct zmsg_hdr *h, const void *data, size_t bytes,
                          void *owned, void (*done)(void *), void *arg);
/* Queue the data of rendezvous `id` to world rank dst as bulk frames (src/forward/wire.h), each
 * saying where its bytes go, striped over every forwarder (zip_transport.c says how);
 * done(arg) once the last byte is written. */
void ist_zip_send_bulk(int dst, uint32_t id, const void *data, size_t bytes, void *owned,
                       void (*done)(void *), void *arg);
/* Which forwarder connection takes the next bulk slice (zip_stripe.c): the connections'
 * sockets, what connection i accepted, and whether it takes a slice of `slice` bytes now
 * (it is expected to deliver it before any other would). */
void ist_zip_stripe_start(const int *fds, int n);
void ist_zip_stripe_wrote(int i, size_t bytes);
int ist_zip_stripe_takes(int i, size_t slice);
/* Write what the sockets take; read and hand every whole message to the engine. */
void ist_zip_transport_progress(void);
/* The engine's receivers (set by ist_zip_credit_init): every whole message, and bytes
 * [offset, offset + len) of rendezvous id from world rank src. */
void ist_zip_transport_receivers(void (*message)(struct zmsg *m),
                                 void (*bulk)(int src, uint32_t id, uint64_t offset,
                                              const char *p, size_t len));
/* Something else to move in every ist_zip_progress (zip_collectives.c's schedules). */
void ist_zip_on_progress(void (*fn)(void));
void ist_zip_engine_send_raw(int forwarder, uint32_t kind);
/* The engine's, for matched probes (zip_mprobe.c). */
struct zmsg *ist_zip_take_unexpected(struct ist_zcomm *c, int source, int tag);
struct ist_zop *ist_zip_new_recv_op(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type);
void ist_zip_deliver(struct ist_zop *op, struct zmsg *m);
void ist_zip_native_op(struct ist_zop *op);
int ist_zip_engine_flushed(void);
int ist_zip_engine_forwarders(void);
int ist_zip_engine_fd(int forwarder);
/* Print "isthmus: rank R: MESSAGE" and end the whole run (zip_state.c). */
void ist_zip_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
