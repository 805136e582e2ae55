/* The engine of zipper forwarding in each rank: the connections to the forwarders, the
 * messages under way, and the matching of receives (docs/zipper.md).
 *
 * A message to another site is one layer header (struct zmsg_hdr) and its packed bytes,
 * cut into DATA frames of at most IST_ZIP_FRAME_MAX bytes on the connection to the
 * pair's forwarder. A send is complete once its frames are queued here (eager, buffered
 * in this rank), a synchronous send once the receiver has matched it and acknowledged.
 * The receiver assembles each source's frames in order into whole messages and matches
 * them, in the order they complete, against the posted receives (the oldest matching
 * receive wins, as MPI requires); what matches none waits in the unexpected list.
 * Receives that may match a member of this site also look for native messages with
 * MPI_Improbe, oldest receive first, and take them with MPI_Imrecv.
 *
 * Nothing here runs by itself: the layer calls ist_zip_progress in every call that
 * touches a spanning communicator and in every wait, so the engine moves as long as
 * the application is inside MPI (as a single-threaded MPI's progress does). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "zip.h"
#include "zip_engine.h"
#include "zip_wire.h"

enum zmsg_kind { ZMSG_EAGER = 0, ZMSG_SYNC = 1, ZMSG_ACK = 2 };

/* The layer's header, at the start of a message's first frame. */
struct zmsg_hdr {
    uint64_t context;
    int32_t tag;
    uint32_t pad;
    uint64_t bytes;
    uint32_t kind;
    uint32_t sync_id;
};

/* A message from another site, whole or being assembled. */
struct zmsg {
    struct zmsg *next;
    uint64_t context;
    uint32_t kind, sync_id;
    int tag;
    int src_world;
    size_t bytes, got;
    char *data;
};

struct outframe {
    struct outframe *next;
    size_t size, sent;
    char data[];
};

struct forwarder {
    int fd;
    char address[64];
    struct outframe *head, *tail;
    /* the frame being read */
    struct ist_zip_frame hdr;
    size_t hdr_got;
    char *payload;
    size_t payload_got;
};

struct ist_zip_world ist_zip;

static struct forwarder *fwds;
static int nfwds;
static struct zmsg **assembling; /* world rank -> its message being assembled */
static struct zmsg *unexpected_head, *unexpected_tail;
static uint32_t next_sync_id = 1;
static int in_progress;

/* The engine's lists of ops: receives not yet matched (in posting order), ops with a
 * native request under way, synchronous sends waiting for their acknowledgement, and
 * cancelled receives to complete at the next progress. */
struct oplist {
    struct ist_zop *head, *tail;
};
static struct oplist posted, native_ops, sync_waits, cancelled;

static void list_add(struct oplist *l, struct ist_zop *op)
{
    op->next = NULL;
    op->prev = l->tail;
    if (l->tail) l->tail->next = op;
    else l->head = op;
    l->tail = op;
    op->list = l;
}

static void list_remove(struct oplist *l, struct ist_zop *op)
{
    if (op->prev) op->prev->next = op->next;
    else l->head = op->next;
    if (op->next) op->next->prev = op->prev;
    else l->tail = op->prev;
    op->next = op->prev = NULL;
    op->list = NULL;
}

void ist_zip_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus: rank %d: %s\n", ist_zip.world_rank, msg);
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

/* ---- connections ------------------------------------------------------------------ */

void ist_zip_engine_start(struct forwarder_address *addrs, int n)
{
    nfwds = n;
    fwds = calloc((size_t)n, sizeof *fwds);
    assembling = calloc((size_t)ist_zip.world_size, sizeof *assembling);
    if (!fwds || !assembling) ist_zip_fatal("out of memory");
    for (int i = 0; i < n; i++) {
        fwds[i].fd = addrs[i].fd;
        snprintf(fwds[i].address, sizeof fwds[i].address, "%s", addrs[i].text);
        fwds[i].payload = malloc(IST_ZIP_FRAME_MAX);
        if (!fwds[i].payload) ist_zip_fatal("out of memory");
    }
}

/* The forwarder that carries every message between world ranks a and b. */
static struct forwarder *forwarder_of(int a, int b)
{
    return &fwds[(unsigned)(a + b) % (unsigned)nfwds];
}

static void queue_frame(struct forwarder *f, struct outframe *o)
{
    o->next = NULL;
    o->sent = 0;
    if (f->tail) f->tail->next = o;
    else f->head = o;
    f->tail = o;
}

static struct outframe *new_frame(int dst, size_t len)
{
    struct outframe *o = malloc(sizeof *o + sizeof(struct ist_zip_frame) + len);
    if (!o) ist_zip_fatal("out of memory for a frame of %zu bytes", len);
    struct ist_zip_frame h = {IST_ZIP_DATA, (uint32_t)ist_zip.world_rank, (uint32_t)dst, (uint32_t)len};
    memcpy(o->data, &h, sizeof h);
    o->size = sizeof h + len;
    return o;
}

/* Queue a message of `bytes` packed bytes at data to world rank dst. */
static void queue_message(int dst, const struct zmsg_hdr *mh, const char *data, size_t bytes)
{
    struct forwarder *f = forwarder_of(ist_zip.world_rank, dst);
    size_t first = bytes;
    if (first > IST_ZIP_FRAME_MAX - sizeof *mh) first = IST_ZIP_FRAME_MAX - sizeof *mh;
    struct outframe *o = new_frame(dst, sizeof *mh + first);
    memcpy(o->data + sizeof(struct ist_zip_frame), mh, sizeof *mh);
    memcpy(o->data + sizeof(struct ist_zip_frame) + sizeof *mh, data, first);
    queue_frame(f, o);
    for (size_t at = first; at < bytes; at += IST_ZIP_FRAME_MAX) {
        size_t len = bytes - at < IST_ZIP_FRAME_MAX ? bytes - at : IST_ZIP_FRAME_MAX;
        o = new_frame(dst, len);
        memcpy(o->data + sizeof(struct ist_zip_frame), data + at, len);
        queue_frame(f, o);
    }
}

static void flush(struct forwarder *f)
{
    while (f->head) {
        struct iovec iov[32];
        int n = 0;
        for (struct outframe *o = f->head; o && n < 32; o = o->next, n++) {
            iov[n].iov_base = o->data + o->sent;
            iov[n].iov_len = o->size - o->sent;
        }
        ssize_t w = writev(f->fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            ist_zip_fatal("the connection to the forwarder at %s failed (%s): the forwarder or "
                          "another rank ended", f->address, strerror(errno));
        }
        while (w > 0) {
            struct outframe *o = f->head;
            size_t left = o->size - o->sent;
            if ((size_t)w < left) {
                o->sent += (size_t)w;
                break;
            }
            w -= (ssize_t)left;
            f->head = o->next;
            if (!f->head) f->tail = NULL;
            free(o);
        }
    }
}

int ist_zip_engine_flushed(void)
{
    for (int i = 0; i < nfwds; i++)
        if (fwds[i].head) return 0;
    return 1;
}

void ist_zip_engine_send_raw(int i, uint32_t kind)
{
    struct outframe *o = malloc(sizeof *o + sizeof(struct ist_zip_frame));
    if (!o) ist_zip_fatal("out of memory");
    struct ist_zip_frame h = {kind, (uint32_t)ist_zip.world_rank, (uint32_t)ist_zip.world_size, 0};
    memcpy(o->data, &h, sizeof h);
    o->size = sizeof h;
    queue_frame(&fwds[i], o);
    flush(&fwds[i]);
}

int ist_zip_engine_forwarders(void) { return nfwds; }
int ist_zip_engine_fd(int i) { return fwds[i].fd; }

/* ---- receiving ---------------------------------------------------------------------- */

static int world_to_comm(const struct ist_zcomm *c, int world)
{
    if (c->handle == MPI_COMM_WORLD) return world;
    for (int r = 0; r < c->size; r++)
        if (c->world[r] == world) return r;
    return MPI_UNDEFINED;
}

static int matches(const struct ist_zop *op, const struct zmsg *m)
{
    return op->comm->context == m->context && (op->tag == MPI_ANY_TAG || op->tag == m->tag) &&
           (op->peer == MPI_ANY_SOURCE || op->comm->world[op->peer] == m->src_world);
}

static void complete(struct ist_zop *op)
{
    op->done = 1;
    if (!op->has_greq) return;
    PMPI_Grequest_complete(op->greq);
    if (op->user_freed) PMPI_Request_free(&op->greq); /* its free_fn frees op */
}

static void send_ack(int dst, uint32_t sync_id)
{
    struct zmsg_hdr mh = {0, 0, 0, 0, ZMSG_ACK, sync_id};
    queue_message(dst, &mh, NULL, 0);
}

static long long type_size(MPI_Datatype type)
{
    MPI_Count size;
    PMPI_Type_size_x(type, &size);
    return (long long)size;
}

/* Whether count elements of type lie in one block from buf + *offset. */
static int contiguous(int count, MPI_Datatype type, MPI_Aint *offset)
{
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &tlb, &textent);
    *offset = tlb;
    long long size = type_size(type);
    return count <= 1 ? size == textent : (size == extent && size == textent);
}

/* Deliver a forwarded message into op's buffer. */
static void receive_into(struct ist_zop *op, struct zmsg *m)
{
    long long esize = type_size(op->type);
    long long capacity = esize * op->count;
    long long bytes = (long long)m->bytes;
    op->st_error = MPI_SUCCESS;
    if (bytes > capacity) {
        op->st_error = MPI_ERR_TRUNCATE;
        bytes = capacity;
    }
    if (bytes > 0 && esize > 0) {
        MPI_Aint offset;
        int whole = (int)(bytes / esize);
        if (contiguous(op->count, op->type, &offset)) {
            memcpy((char *)op->buf + offset, m->data, (size_t)bytes);
        } else {
            int pos = 0;
            PMPI_Unpack(m->data, (int)bytes, &pos, op->buf, whole, op->type, MPI_COMM_SELF);
        }
    }
    op->st_source = world_to_comm(op->comm, m->src_world);
    op->st_tag = m->tag;
    op->st_bytes = bytes;
    if (m->kind == ZMSG_SYNC) send_ack(m->src_world, m->sync_id);
    free(m->data);
    free(m);
    complete(op);
}

static void message_arrived(struct zmsg *m)
{
    if (m->kind == ZMSG_ACK) {
        for (struct ist_zop *op = sync_waits.head; op; op = op->next)
            if (op->sync_id == m->sync_id) {
                list_remove(&sync_waits, op);
                complete(op);
                break;
            }
        free(m->data);
        free(m);
        return;
    }
    for (struct ist_zop *op = posted.head; op; op = op->next)
        if (matches(op, m)) {
            list_remove(&posted, op);
            receive_into(op, m);
            return;
        }
    m->next = NULL;
    if (unexpected_tail) unexpected_tail->next = m;
    else unexpected_head = m;
    unexpected_tail = m;
}

/* A whole frame's payload from world rank src. */
static void frame_arrived(int src, const char *p, size_t len)
{
    struct zmsg *m = assembling[src];
    if (!m) {
        struct zmsg_hdr mh;
        if (len < sizeof mh) ist_zip_fatal("a short frame from rank %d", src);
        memcpy(&mh, p, sizeof mh);
        m = calloc(1, sizeof *m);
        m->data = malloc(mh.bytes ? mh.bytes : 1);
        if (!m || !m->data) ist_zip_fatal("out of memory for a message of %llu bytes", (unsigned long long)mh.bytes);
        m->context = mh.context;
        m->tag = mh.tag;
        m->kind = mh.kind;
        m->sync_id = mh.sync_id;
        m->bytes = mh.bytes;
        m->src_world = src;
        p += sizeof mh;
        len -= sizeof mh;
    }
    if (m->got + len > m->bytes) ist_zip_fatal("a message from rank %d longer than it said", src);
    memcpy(m->data + m->got, p, len);
    m->got += len;
    if (m->got == m->bytes) {
        assembling[src] = NULL;
        message_arrived(m);
    } else {
        assembling[src] = m;
    }
}

static void read_forwarder(struct forwarder *f)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n;
        if (f->hdr_got < sizeof f->hdr) {
            n = read(f->fd, (char *)&f->hdr + f->hdr_got, sizeof f->hdr - f->hdr_got);
            if (n > 0) {
                f->hdr_got += (size_t)n;
                if (f->hdr_got == sizeof f->hdr && f->hdr.len > IST_ZIP_FRAME_MAX)
                    ist_zip_fatal("a frame of %u bytes from the forwarder at %s", f->hdr.len, f->address);
            }
        } else {
            n = read(f->fd, f->payload + f->payload_got, f->hdr.len - f->payload_got);
            if (n > 0) f->payload_got += (size_t)n;
        }
        if (n == 0)
            ist_zip_fatal("the forwarder at %s closed the connection: it or another rank ended",
                          f->address);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            ist_zip_fatal("reading from the forwarder at %s: %s", f->address, strerror(errno));
        }
        if (f->hdr_got == sizeof f->hdr && f->payload_got == f->hdr.len) {
            if (f->hdr.kind == IST_ZIP_DATA) {
                if (f->hdr.src >= (uint32_t)ist_zip.world_size)
                    ist_zip_fatal("a frame from rank %u of %d", f->hdr.src, ist_zip.world_size);
                frame_arrived((int)f->hdr.src, f->payload, f->hdr.len);
            }
            f->hdr_got = 0;
            f->payload_got = 0;
        }
    }
}

/* ---- native messages ------------------------------------------------------------------ */

static void finish_native(struct ist_zop *op, const MPI_Status *st)
{
    if (op->kind == IST_ZOP_RECV) {
        op->st_source = st->MPI_SOURCE >= 0 ? op->comm->from_local[st->MPI_SOURCE] : st->MPI_SOURCE;
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

static void progress_native(void)
{
    for (struct ist_zop *op = posted.head, *next; op; op = next) {
        next = op->next;
        struct ist_zcomm *c = op->comm;
        if (op->peer != MPI_ANY_SOURCE && c->local_rank[op->peer] < 0) continue;
        int src = op->peer == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->local_rank[op->peer];
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        PMPI_Improbe(src, op->tag, c->local, &flag, &msg, &st);
        if (!flag) continue;
        list_remove(&posted, op);
        PMPI_Imrecv(op->buf, op->count, op->type, &msg, &op->native);
        list_add(&native_ops, op);
    }
    for (struct ist_zop *op = native_ops.head, *next; op; op = next) {
        next = op->next;
        int flag = 0;
        MPI_Status st;
        if (PMPI_Test(&op->native, &flag, &st) != MPI_SUCCESS)
            ist_zip_fatal("a native message on a spanning communicator failed");
        if (!flag) continue;
        list_remove(&native_ops, op);
        finish_native(op, &st);
    }
}

void ist_zip_progress(void)
{
    if (in_progress) return;
    in_progress = 1;
    for (int i = 0; i < nfwds; i++) {
        flush(&fwds[i]);
        read_forwarder(&fwds[i]);
    }
    progress_native();
    while (cancelled.head) {
        struct ist_zop *op = cancelled.head;
        list_remove(&cancelled, op);
        complete(op);
    }
    in_progress = 0;
}

void ist_zip_idle(int tries)
{
    if (tries < 50) return;
    long pause_ns = 5000L << (tries - 50 < 5 ? tries - 50 : 5); /* 5 us doubling to 160 us */
    struct pollfd pfd[16];
    int n = nfwds < 16 ? nfwds : 16;
    for (int i = 0; i < n; i++) pfd[i] = (struct pollfd){.fd = fwds[i].fd, .events = POLLIN};
    struct timespec ts = {0, pause_ns};
    ppoll(pfd, (nfds_t)n, &ts, NULL);
}

/* ---- operations --------------------------------------------------------------------- */

static struct ist_zop *new_op(enum ist_zop_kind kind, struct ist_zcomm *c, void *buf, int count,
                              MPI_Datatype type, int peer, int tag)
{
    struct ist_zop *op = calloc(1, sizeof *op);
    if (!op) ist_zip_fatal("out of memory");
    *op = (struct ist_zop){.kind = kind, .comm = c, .buf = buf, .count = count, .type = type,
                           .peer = peer, .tag = tag, .native = MPI_REQUEST_NULL,
                           .greq = MPI_REQUEST_NULL};
    return op;
}

struct ist_zop *ist_zip_isend(struct ist_zcomm *c, const void *buf, int count, MPI_Datatype type,
                              int dest, int tag, int sync)
{
    struct ist_zop *op = new_op(IST_ZOP_SEND, c, (void *)buf, count, type, dest, tag);
    if (dest == MPI_PROC_NULL || c->local_rank[dest] >= 0) {
        int to = dest == MPI_PROC_NULL ? MPI_PROC_NULL : c->local_rank[dest];
        if (sync) PMPI_Issend(buf, count, type, to, tag, c->local, &op->native);
        else PMPI_Isend(buf, count, type, to, tag, c->local, &op->native);
        list_add(&native_ops, op);
        ist_zip_progress();
        return op;
    }
    long long bytes = type_size(type) * count;
    struct zmsg_hdr mh = {c->context, tag, 0, (uint64_t)bytes, sync ? ZMSG_SYNC : ZMSG_EAGER, 0};
    MPI_Aint offset;
    if (contiguous(count, type, &offset)) {
        if (sync) mh.sync_id = next_sync_id++;
        queue_message(c->world[dest], &mh, (const char *)buf + offset, (size_t)bytes);
    } else {
        char *packed = malloc(bytes ? (size_t)bytes : 1);
        if (!packed) ist_zip_fatal("out of memory packing %lld bytes", bytes);
        int pos = 0;
        PMPI_Pack(buf, count, type, packed, (int)bytes, &pos, MPI_COMM_SELF);
        if (sync) mh.sync_id = next_sync_id++;
        queue_message(c->world[dest], &mh, packed, (size_t)bytes);
        free(packed);
    }
    if (sync) {
        op->sync_id = mh.sync_id;
        list_add(&sync_waits, op);
    } else {
        op->done = 1; /* buffered here */
    }
    ist_zip_progress();
    return op;
}

struct ist_zop *ist_zip_irecv(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type,
                              int source, int tag)
{
    struct ist_zop *op = new_op(IST_ZOP_RECV, c, buf, count, type, source, tag);
    if (source == MPI_PROC_NULL) {
        PMPI_Irecv(buf, count, type, MPI_PROC_NULL, tag, c->local, &op->native);
        list_add(&native_ops, op);
        return op;
    }
    ist_zip_progress();
    for (struct zmsg *m = unexpected_head, *prev = NULL; m; prev = m, m = m->next)
        if (matches(op, m)) {
            if (prev) prev->next = m->next;
            else unexpected_head = m->next;
            if (unexpected_tail == m) unexpected_tail = prev;
            receive_into(op, m);
            return op;
        }
    list_add(&posted, op);
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
                status->MPI_TAG = m->tag;
                status->MPI_ERROR = MPI_SUCCESS;
                PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)m->bytes);
                PMPI_Status_set_cancelled(status, 0);
            }
            return 1;
        }
    return 0;
}

void ist_zip_status_of(const struct ist_zop *op, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE) return;
    status->MPI_SOURCE = op->st_source;
    status->MPI_TAG = op->st_tag;
    status->MPI_ERROR = op->st_error;
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)op->st_bytes);
    PMPI_Status_set_cancelled(status, op->cancelled);
}

void ist_zip_free_op(struct ist_zop *op) { free(op); }

int ist_zip_wait_ops(int n, struct ist_zop **ops, MPI_Status *statuses)
{
    for (int tries = 0;; tries++) {
        ist_zip_progress();
        int all = 1;
        for (int i = 0; i < n; i++) all &= ops[i]->done;
        if (all) break;
        ist_zip_idle(tries);
    }
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        if (ops[i]->st_error != MPI_SUCCESS) rc = n == 1 ? ops[i]->st_error : MPI_ERR_IN_STATUS;
        if (statuses != MPI_STATUSES_IGNORE) ist_zip_status_of(ops[i], &statuses[i]);
        free(ops[i]);
    }
    return rc;
}

/* ---- the application's handles: generalized requests ------------------------------ */

static int greq_query(void *extra, MPI_Status *status)
{
    ist_zip_status_of(extra, status);
    return ((struct ist_zop *)extra)->st_error;
}

static int greq_free(void *extra)
{
    struct ist_zop *op = extra;
    op->greq_freed = 1;
    if (op->done) free(op);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete_already)
{
    struct ist_zop *op = extra;
    if (complete_already || op->list != &posted)
        return MPI_SUCCESS; /* sends and matched receives are not cancelled */
    list_remove(&posted, op);
    op->cancelled = 1;
    op->st_source = MPI_ANY_SOURCE;
    op->st_tag = MPI_ANY_TAG;
    list_add(&cancelled, op);
    return MPI_SUCCESS;
}

int ist_zip_give_handle(struct ist_zop *op, MPI_Request *request)
{
    if (op->kind == IST_ZOP_SEND && op->native != MPI_REQUEST_NULL && !op->done) {
        /* a send inside the site: the native request itself */
        list_remove(&native_ops, op);
        *request = op->native;
        free(op);
        return MPI_SUCCESS;
    }
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, op, &op->greq);
    if (rc != MPI_SUCCESS) return rc;
    op->has_greq = 1;
    *request = op->greq;
    if (op->done) PMPI_Grequest_complete(op->greq);
    return MPI_SUCCESS;
}

/* The live ops with an application handle are found by walking the engine's lists: a
 * Request_free before completion must leave the op to the engine. */
int ist_zip_request_free(MPI_Request *request)
{
    struct oplist *lists[] = {&posted, &native_ops, &sync_waits, &cancelled};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++)
        for (struct ist_zop *op = lists[l]->head; op; op = op->next)
            if (op->has_greq && op->greq == *request && !op->done) {
                op->user_freed = 1;
                *request = MPI_REQUEST_NULL;
                return 1;
            }
    return 0;
}
