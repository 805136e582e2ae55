/* The engine of zipper forwarding in each rank: the operations under way and the
 * matching of receives (docs/zipper.md). The connections are zip_transport.c's.
 *
 * Protocol between two ranks of different sites (messages of zip_engine.h):
 *   - eager: a message of at most IST_ZIP_EAGER_LIMIT bytes goes at once with its data
 *     while the sender has credit with that receiver, written from the user's buffer (no
 *     copy when contiguous); the send completes when its last byte is in the socket. Not
 *     sooner: nothing moves while the application is outside MPI, and a send completed
 *     while its bytes still waited here (past TCP_NOTSENT_LOWAT, zip_transport.c) left
 *     them waiting until the next MPI call: a pipelined 512 KiB Bcast whose root then
 *     slept took 8-16 times as long as over a direct link. The receiver gives the credit
 *     back (CREDIT) once the data have left its unexpected list, so what one sender can
 *     pile up unexpected at a receiver is bounded by IST_ZIP_CREDIT. A synchronous eager
 *     send completes on the ACK the receiver sends when it matches the message.
 *   - rendezvous: anything larger, or past the credit, is announced (RTS); when the
 *     receiver matches the announcement it asks for the data (CTS), which then stream from
 *     the sender's own buffer (no copy when contiguous) as bulk frames, striped over the
 *     forwarders, and land where they say, in the user's buffer when it is contiguous (no
 *     copy there either). The send completes when its last byte is written.
 * The receiver assembles messages in the order they come (zip_transport.c) and matches
 * them, in that order, against the posted receives: the oldest receive that matches
 * wins, as MPI requires; what matches none waits in the unexpected list. Receives that
 * may match a member of this site also look for native messages with MPI_Improbe,
 * oldest receive first, and take them with MPI_Imrecv.
 *
 * Nothing here runs by itself: the layer calls ist_zip_progress in every call that
 * touches a spanning communicator and in every wait, so the engine moves as long as the
 * application is inside MPI (as a single-threaded MPI's progress does). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zip.h"
#include "datatype.h"
#include "zip_engine.h"
#include "zip_oplist.h"

#define IST_ZIP_EAGER_LIMIT (64L * 1024)
#define IST_ZIP_CREDIT (1L << 20)        /* eager bytes one sender may have at one receiver */
#define IST_ZIP_CREDIT_ALL (256L << 20) /* ... and all senders together, at most */
#define IST_ZIP_MESSAGE_COST 64          /* what a message costs in credit besides its data */


static struct zmsg *unexpected_head, *unexpected_tail;
static uint32_t next_id = 1;
static int in_progress;
static long credit_per_pair;
static long *credit; /* world rank -> eager bytes this rank may still send it */
static long *owed;   /* world rank -> eager bytes taken from it, not yet given back */

/* The op on l waiting for message id from world rank peer. */
static struct ist_zop *waiting(struct ist_zip_oplist *l, uint32_t id, int peer)
{
    for (struct ist_zop *op = l->head; op; op = op->next)
        if (op->sync_id == id && op->rdv_peer == peer) return op;
    return NULL;
}

static void message_arrived(struct zmsg *m);
static void bulk_arrived(int src, uint32_t id, uint64_t offset, const char *p, size_t len);

void ist_zip_credit_init(void)
{
    ist_zip_transport_receivers(message_arrived, bulk_arrived);
    credit_per_pair = IST_ZIP_CREDIT_ALL / (ist_zip.world_size > 1 ? ist_zip.world_size - 1 : 1);
    if (credit_per_pair > IST_ZIP_CREDIT) credit_per_pair = IST_ZIP_CREDIT;
    if (credit_per_pair < 2 * IST_ZIP_MESSAGE_COST) credit_per_pair = 2 * IST_ZIP_MESSAGE_COST;
    credit = malloc(sizeof *credit * (size_t)ist_zip.world_size);
    owed = calloc((size_t)ist_zip.world_size, sizeof *owed);
    if (!credit || !owed) ist_zip_fatal("out of memory");
    for (int w = 0; w < ist_zip.world_size; w++) credit[w] = credit_per_pair;
}

/* ---- matching ---------------------------------------------------------------------- */

static int world_to_comm(const struct ist_zcomm *c, int world)
{
    if (c->handle == MPI_COMM_WORLD) return world;
    for (int r = 0; r < c->size; r++)
        if (c->world[r] == world) return r;
    return MPI_UNDEFINED;
}

static int matches(const struct ist_zop *op, const struct zmsg *m)
{
    return op->comm->context == m->h.context && (op->tag == MPI_ANY_TAG || op->tag == m->h.tag) &&
           (op->peer == MPI_ANY_SOURCE || op->comm->world[op->peer] == m->src_world);
}

static void complete(struct ist_zop *op)
{
    op->done = 1;
    if (!op->has_greq) return;
    PMPI_Grequest_complete(op->greq);
    if (op->user_freed) PMPI_Request_free(&op->greq); /* its free_fn frees op */
}

static void complete_cb(void *op) { complete(op); }

static void send_control(int dst, uint32_t kind, uint32_t id, uint64_t amount)
{
    /* CREDIT's amount travels in `bytes`, with no data after it (zip_transport.c) */
    struct zmsg_hdr h = {.kind = kind, .id = id, .bytes = kind == ZMSG_CREDIT ? amount : 0};
    ist_zip_send_message(dst, &h, NULL, 0, NULL, NULL, NULL);
}

/* Give a sender back the credit of an eager message that has left the unexpected list. */
static void give_credit(const struct zmsg *m)
{
    if (m->h.kind != ZMSG_EAGER && m->h.kind != ZMSG_SYNC) return;
    owed[m->src_world] += (long)m->h.bytes + IST_ZIP_MESSAGE_COST;
    if (owed[m->src_world] >= credit_per_pair / 2) {
        send_control(m->src_world, ZMSG_CREDIT, 0, (uint64_t)owed[m->src_world]);
        owed[m->src_world] = 0;
    }
}

/* A rendezvous receive whose every byte has come. */
static void rendezvous_done(struct ist_zop *op)
{
    long long esize = ist_type_bytes(1, op->type);
    if (op->rdv_pack) {
        int pos = 0;
        PMPI_Unpack(op->rdv_pack, (int)op->rdv_fits, &pos, op->buf, (int)(op->rdv_fits / esize),
                    op->type, MPI_COMM_SELF);
        free(op->rdv_pack);
        op->rdv_pack = NULL;
    }
    op->st_error = op->rdv_bytes > op->rdv_fits ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    op->st_bytes = op->rdv_fits;
    complete(op);
}

static void bulk_arrived(int src, uint32_t id, uint64_t offset, const char *p, size_t len)
{
    struct ist_zop *op = waiting(&ist_zip_lists.rdata_waits, id, src);
    if (!op || (long long)(offset + len) > op->rdv_bytes)
        ist_zip_fatal("data of rendezvous %u from rank %d that no receive asked for", id, src);
    if ((long long)offset < op->rdv_fits) { /* what the receive has no room for is dropped */
        long long room = op->rdv_fits - (long long)offset;
        memcpy(op->rdv_into + offset, p, (long long)len <= room ? len : (size_t)room);
    }
    op->rdv_got += (long long)len;
    if (op->rdv_got == op->rdv_bytes) {
        ist_zip_list_remove(&ist_zip_lists.rdata_waits, op);
        rendezvous_done(op);
    }
}

/* A matched message for op: an announcement asks for its data, data are delivered. */
static void receive_into(struct ist_zop *op, struct zmsg *m)
{
    if (m->h.kind == ZMSG_RTS) {
        op->sync_id = m->h.id;
        op->rdv_peer = m->src_world;
        op->rdv_bytes = (long long)m->h.bytes;
        op->rdv_got = 0;
        op->st_source = world_to_comm(op->comm, m->src_world);
        op->st_tag = m->h.tag;
        long long capacity = ist_type_bytes(1, op->type) * op->count;
        op->rdv_fits = op->rdv_bytes < capacity ? op->rdv_bytes : capacity;
        MPI_Aint offset;
        if (op->rdv_fits == 0) {
            op->rdv_into = NULL;
        } else if (ist_type_contiguous(op->count, op->type, &offset)) {
            op->rdv_into = (char *)op->buf + offset;
        } else {
            op->rdv_pack = op->rdv_into = malloc((size_t)op->rdv_fits);
            if (!op->rdv_pack) ist_zip_fatal("out of memory for %lld bytes", op->rdv_fits);
        }
        send_control(m->src_world, ZMSG_CTS, m->h.id, 0);
        free(m);
        if (op->rdv_bytes == 0) rendezvous_done(op);
        else ist_zip_list_add(&ist_zip_lists.rdata_waits, op);
        return;
    }
    long long esize = ist_type_bytes(1, op->type);
    long long capacity = esize * op->count;
    long long bytes = (long long)m->h.bytes;
    op->st_error = MPI_SUCCESS;
    if (bytes > capacity) {
        op->st_error = MPI_ERR_TRUNCATE;
        bytes = capacity;
    }
    if (bytes > 0 && esize > 0) {
        MPI_Aint offset;
        if (ist_type_contiguous(op->count, op->type, &offset)) {
            memcpy((char *)op->buf + offset, m->data, (size_t)bytes);
        } else {
            int pos = 0;
            PMPI_Unpack(m->data, (int)bytes, &pos, op->buf, (int)(bytes / esize), op->type, MPI_COMM_SELF);
        }
    }
    op->st_source = world_to_comm(op->comm, m->src_world);
    op->st_tag = m->h.tag;
    op->st_bytes = bytes;
    if (m->h.kind == ZMSG_SYNC) send_control(m->src_world, ZMSG_ACK, m->h.id, 0);
    give_credit(m);
    free(m->data);
    free(m);
    complete(op);
}

/* The data of a rendezvous send, asked for: from the user's buffer, or packed. */
static void send_rdata(struct ist_zop *op)
{
    long long bytes = ist_type_bytes(1, op->type) * op->count;
    MPI_Aint offset;
    if (ist_type_contiguous(op->count, op->type, &offset)) {
        ist_zip_send_bulk(op->rdv_peer, op->sync_id, (const char *)op->buf + offset, (size_t)bytes,
                          NULL, complete_cb, op);
        return;
    }
    char *packed = malloc(bytes ? (size_t)bytes : 1);
    if (!packed) ist_zip_fatal("out of memory packing %lld bytes", bytes);
    int pos = 0;
    PMPI_Pack(op->buf, op->count, op->type, packed, (int)bytes, &pos, MPI_COMM_SELF);
    ist_zip_send_bulk(op->rdv_peer, op->sync_id, packed, (size_t)bytes, packed, complete_cb, op);
}

static void unexpected_add(struct zmsg *m)
{
    m->next = NULL;
    if (unexpected_tail) unexpected_tail->next = m;
    else unexpected_head = m;
    unexpected_tail = m;
}

static void message_arrived(struct zmsg *m)
{
    struct ist_zop *op;
    switch (m->h.kind) {
    case ZMSG_ACK:
        if ((op = waiting(&ist_zip_lists.sync_waits, m->h.id, m->src_world))) {
            ist_zip_list_remove(&ist_zip_lists.sync_waits, op);
            complete(op);
        }
        break;
    case ZMSG_CREDIT:
        credit[m->src_world] += (long)m->h.bytes;
        break;
    case ZMSG_CTS:
        if ((op = waiting(&ist_zip_lists.rts_waits, m->h.id, m->src_world))) {
            ist_zip_list_remove(&ist_zip_lists.rts_waits, op);
            send_rdata(op);
        }
        break;
    default: /* EAGER, SYNC, RTS: to the oldest matching receive, or unexpected */
        for (op = ist_zip_lists.posted.head; op; op = op->next)
            if (matches(op, m)) {
                ist_zip_list_remove(&ist_zip_lists.posted, op);
                receive_into(op, m);
                return;
            }
        unexpected_add(m);
        return;
    }
    free(m->data);
    free(m);
}

/* The oldest unexpected forwarded message that matches (removed from the list), or NULL. */
struct zmsg *ist_zip_take_unexpected(struct ist_zcomm *c, int source, int tag)
{
    struct ist_zop probe = {.comm = c, .peer = source, .tag = tag};
    for (struct zmsg *m = unexpected_head, *prev = NULL; m; prev = m, m = m->next)
        if (matches(&probe, m)) {
            if (prev) prev->next = m->next;
            else unexpected_head = m->next;
            if (unexpected_tail == m) unexpected_tail = prev;
            return m;
        }
    return NULL;
}

/* ---- native messages ------------------------------------------------------------------ */

static void finish_native(struct ist_zop *op, const MPI_Status *st)
{
    if (op->kind == IST_ZOP_RECV) {
        op->st_source = st->MPI_SOURCE >= 0 ? op->comm->from_site[st->MPI_SOURCE] : st->MPI_SOURCE;
        op->st_tag = st->MPI_TAG;
        op->st_error = MPI_SUCCESS; /* MPI_Test leaves MPI_ERROR unset */
        MPI_Count n;
        PMPI_Get_elements_x(st, MPI_BYTE, &n);
        op->st_bytes = (long long)n;
        int flag = 0;
        PMPI_Test_cancelled(st, &flag);
        op->cancelled = flag;
    }
    complete(op);
}

/* Whether two receives on one communicator could match the same message. */
static int overlap(const struct ist_zop *a, const struct ist_zop *b)
{
    return a->comm == b->comm &&
           (a->peer == b->peer || a->peer == MPI_ANY_SOURCE || b->peer == MPI_ANY_SOURCE) &&
           (a->tag == b->tag || a->tag == MPI_ANY_TAG || b->tag == MPI_ANY_TAG);
}

static void progress_native(void)
{
    /* Native messages go to the posted receives oldest first. A receive that found none
     * holds back every later receive that could match the same message: probing for it
     * anyway would hand a message that arrives meanwhile to a younger receive (found by
     * a 4-rank Bcast whose 683-byte segment met the 682-byte receive of the last). */
    enum { HELD_MAX = 64 };
    const struct ist_zop *held[HELD_MAX];
    int nheld = 0;
    for (struct ist_zop *op = ist_zip_lists.posted.head, *next; op; op = next) {
        next = op->next;
        struct ist_zcomm *c = op->comm;
        if (op->peer != MPI_ANY_SOURCE && c->site_rank[op->peer] < 0) continue;
        int blocked = nheld == HELD_MAX;
        for (int i = 0; i < nheld && !blocked; i++) blocked = overlap(held[i], op);
        if (blocked) {
            if (nheld < HELD_MAX) held[nheld++] = op;
            continue;
        }
        int src = op->peer == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->site_rank[op->peer];
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        PMPI_Improbe(src, op->tag, c->site_comm, &flag, &msg, &st);
        if (!flag) {
            held[nheld++] = op;
            continue;
        }
        ist_zip_list_remove(&ist_zip_lists.posted, op);
        PMPI_Imrecv(op->buf, op->count, op->type, &msg, &op->native);
        ist_zip_list_add(&ist_zip_lists.native_ops, op);
    }
    for (struct ist_zop *op = ist_zip_lists.native_ops.head, *next; op; op = next) {
        next = op->next;
        int flag = 0;
        MPI_Status st;
        if (PMPI_Test(&op->native, &flag, &st) != MPI_SUCCESS)
            ist_zip_fatal("a native message on a spanning communicator failed");
        if (!flag) continue;
        ist_zip_list_remove(&ist_zip_lists.native_ops, op);
        finish_native(op, &st);
    }
}

/* What else moves in every progress: the nonblocking collectives' schedules (zip_collectives.c,
 * registered by zip_world.c), so that the engine needs nothing above it. */
static void (*schedules_progress)(void);

void ist_zip_on_progress(void (*fn)(void)) { schedules_progress = fn; }

void ist_zip_progress(void)
{
    if (in_progress) return;
    in_progress = 1;
    ist_zip_transport_progress();
    progress_native();
    if (schedules_progress) schedules_progress();
    while (ist_zip_lists.cancelled.head) {
        struct ist_zop *op = ist_zip_lists.cancelled.head;
        ist_zip_list_remove(&ist_zip_lists.cancelled, op);
        complete(op);
    }
    in_progress = 0;
}

/* ---- operations --------------------------------------------------------------------- */

static struct ist_zop *new_op(enum ist_zop_kind kind, struct ist_zcomm *c, void *buf, int count,
                              MPI_Datatype type, int peer, int tag)
{
    struct ist_zop *op = calloc(1, sizeof *op);
    if (!op) ist_zip_fatal("out of memory");
    *op = (struct ist_zop){.kind = kind, .comm = c, .buf = buf, .count = count, .type = type,
                           .peer = peer, .tag = tag, .native = MPI_REQUEST_NULL,
                           .greq = MPI_REQUEST_NULL, .rdv_peer = -1};
    return op;
}

struct ist_zop *ist_zip_coll_op(struct ist_zcomm *c)
{
    struct ist_zop *op = new_op(IST_ZOP_COLL, c, NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG);
    op->st_source = MPI_ANY_SOURCE;
    op->st_tag = MPI_ANY_TAG;
    return op;
}

void ist_zip_complete_op(struct ist_zop *op) { complete(op); }

struct ist_zop *ist_zip_new_recv_op(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type)
{
    return new_op(IST_ZOP_RECV, c, buf, count, type, MPI_ANY_SOURCE, MPI_ANY_TAG);
}

void ist_zip_native_op(struct ist_zop *op) { ist_zip_list_add(&ist_zip_lists.native_ops, op); }

struct ist_zop *ist_zip_isend(struct ist_zcomm *c, const void *buf, int count, MPI_Datatype type,
                              int dest, int tag, int sync)
{
    struct ist_zop *op = new_op(IST_ZOP_SEND, c, (void *)buf, count, type, dest, tag);
    if (dest == MPI_PROC_NULL || c->site_rank[dest] >= 0) {
        int to = dest == MPI_PROC_NULL ? MPI_PROC_NULL : c->site_rank[dest];
        if (sync) PMPI_Issend(buf, count, type, to, tag, c->site_comm, &op->native);
        else PMPI_Isend(buf, count, type, to, tag, c->site_comm, &op->native);
        ist_zip_list_add(&ist_zip_lists.native_ops, op);
        ist_zip_progress();
        return op;
    }
    int to = c->world[dest];
    long long bytes = ist_type_bytes(1, type) * count;
    long cost = (long)bytes + IST_ZIP_MESSAGE_COST;
    op->rdv_peer = to;
    op->sync_id = next_id++;
    if (bytes <= IST_ZIP_EAGER_LIMIT && credit[to] >= cost) {
        credit[to] -= cost;
        struct zmsg_hdr h = {.context = c->context, .tag = tag, .kind = sync ? ZMSG_SYNC : ZMSG_EAGER,
                             .bytes = (uint64_t)bytes, .id = op->sync_id};
        MPI_Aint offset;
        const char *data;
        char *packed = NULL;
        if (ist_type_contiguous(count, type, &offset)) {
            data = (const char *)buf + offset;
        } else {
            packed = malloc(bytes ? (size_t)bytes : 1);
            if (!packed) ist_zip_fatal("out of memory");
            int pos = 0;
            PMPI_Pack(buf, count, type, packed, (int)bytes, &pos, MPI_COMM_SELF);
            data = packed;
        }
        if (sync) { /* done on the ACK, which comes after the last byte has left */
            ist_zip_send_message(to, &h, data, (size_t)bytes, packed, NULL, NULL);
            ist_zip_list_add(&ist_zip_lists.sync_waits, op);
        } else {
            ist_zip_send_message(to, &h, data, (size_t)bytes, packed, complete_cb, op);
        }
    } else {
        struct zmsg_hdr h = {.context = c->context, .tag = tag, .kind = ZMSG_RTS,
                             .bytes = (uint64_t)bytes, .id = op->sync_id};
        ist_zip_send_message(to, &h, NULL, 0, NULL, NULL, NULL);
        ist_zip_list_add(&ist_zip_lists.rts_waits, op);
    }
    ist_zip_progress();
    return op;
}

void ist_zip_deliver(struct ist_zop *op, struct zmsg *m) { receive_into(op, m); }

struct ist_zop *ist_zip_irecv(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type,
                              int source, int tag)
{
    struct ist_zop *op = new_op(IST_ZOP_RECV, c, buf, count, type, source, tag);
    if (source == MPI_PROC_NULL) {
        PMPI_Irecv(buf, count, type, MPI_PROC_NULL, tag, c->site_comm, &op->native);
        ist_zip_list_add(&ist_zip_lists.native_ops, op);
        return op;
    }
    ist_zip_progress();
    struct zmsg *m = ist_zip_take_unexpected(c, source, tag);
    if (m) {
        receive_into(op, m);
        ist_zip_progress();
        return op;
    }
    ist_zip_list_add(&ist_zip_lists.posted, op);
    ist_zip_progress();
    return op;
}

int ist_zip_iprobe_forwarded(struct ist_zcomm *c, int source, int tag, MPI_Status *status)
{
    struct ist_zop probe = {.comm = c, .peer = source, .tag = tag};
    for (struct zmsg *m = unexpected_head; m; m = m->next)
        if (matches(&probe, m)) {
            if (status != MPI_STATUS_IGNORE) {
                status->MPI_SOURCE = world_to_comm(c, m->src_world);
                status->MPI_TAG = m->h.tag;
                status->MPI_ERROR = MPI_SUCCESS;
                PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)m->h.bytes);
                PMPI_Status_set_cancelled(status, 0);
            }
            return 1;
        }
    return 0;
}
