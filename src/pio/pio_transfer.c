/* pio's reads and writes: planned over the servers (pio_layout.c), scheduled
 * (pio_schedule.c), each wait for a server with the client's deadline (pio_client.c). */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "pio_client.h"
#include "pio_layout.h"
#include "pio_protocol.h"
#include "units.h"

/* ---- writes -------------------------------------------------------------------------- */

/* A chunk in flight: its message, the send and the server's reply. */
struct slot {
    char *buf;
    size_t cap;
    int server;
    struct pio_msg reply;
};

static int send_chunk(struct pio_file *f, const struct pio_schedule *sc, const struct pio_chunk *ch,
                      const char *data, struct slot *slot, MPI_Request *send, MPI_Request *reply)
{
    const struct pio_ctx *c = f->ctx;
    size_t size = sizeof(struct pio_msg) + (size_t)ch->n * sizeof(struct pio_wire_extent) + (size_t)ch->bytes;
    if (size > slot->cap) {
        char *grown = realloc(slot->buf, size);
        if (!grown) return pio_fail(PIO_EINVAL, "pio: out of memory");
        slot->buf = grown;
        slot->cap = size;
    }
    struct pio_msg m = {.op = PIO_OP_WRITE, .file = f->id, .n = ch->n, .client = c->client_index};
    memcpy(slot->buf, &m, sizeof m);
    struct pio_wire_extent *w = (struct pio_wire_extent *)(slot->buf + sizeof m);
    char *p = (char *)(w + ch->n);
    for (int i = 0; i < ch->n; i++) {
        const struct pio_extent *e = &sc->e[ch->first + i];
        w[i] = (struct pio_wire_extent){e->local, e->len};
        memcpy(p, data + e->mem, (size_t)e->len);
        p += e->len;
    }
    slot->server = ch->server;
    int rank = c->servers[ch->server];
    MPI_Irecv(&slot->reply, sizeof slot->reply, MPI_BYTE, rank, PIO_TAG_REPLY, c->comm, reply);
    MPI_Isend(slot->buf, (int)size, MPI_BYTE, rank, PIO_TAG_REQUEST, c->comm, send);
    return PIO_OK;
}

void pio_abort(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 500000000};
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return; this tells the compiler so */
}

/* The paper's strategies have one piece in flight: the next leaves when the server has
 * acknowledged the last. window-IOS keeps up to pio_window_pieces() in flight, in hash-IOS's
 * order, at most its share (window / servers, rounded up) to any one server, so that the
 * pieces in flight are spread over the servers and the acknowledgement round trips overlap
 * with transfers. */
int pio_write_planned(struct pio_file *f, const struct pio_extents *lists, const char *data)
{
    struct pio_ctx *c = f->ctx;
    struct pio_schedule sc;
    int rc = pio_schedule_build(lists, c->nservers, c->block, c->strategy, c->client_index, c->seed, &sc);
    if (rc) return rc;
    int window = c->strategy == PIO_WINDOW_IOS ? pio_window_pieces(c->window, c->block) : 1, busy = 0;
    int per_server = (window + c->nservers - 1) / c->nservers;
    struct slot *slot = calloc((size_t)window, sizeof *slot);
    MPI_Request *send = malloc(2 * (size_t)window * sizeof *send), *reply = send + window;
    int *who = malloc((size_t)window * sizeof *who), *to = calloc((size_t)c->nservers, sizeof *to);
    if (!slot || !send || !who || !to) {
        free(slot), free(send), free(who), free(to);
        pio_schedule_free(&sc);
        return pio_fail(PIO_EINVAL, "pio: out of memory");
    }
    for (int i = 0; i < window; i++) send[i] = reply[i] = MPI_REQUEST_NULL;
    long fatal = pio_test_hook("ISTHMUS_PIO_TEST_DIE_AFTER", c->client_index);
    int k = 0;
    while (k < sc.nchunks || busy > 0) {
        /* Send the next chunk if a slot is free and its server has less than its share. */
        int free_slot = -1;
        for (int i = 0; i < window && free_slot < 0; i++)
            if (reply[i] == MPI_REQUEST_NULL) free_slot = i;
        if (!rc && k < sc.nchunks && free_slot >= 0 && to[sc.chunk[k].server] < per_server) {
            if (fatal >= 0 && k == fatal) raise(SIGKILL); /* the fault test's dying client */
            rc = send_chunk(f, &sc, &sc.chunk[k], data, &slot[free_slot], &send[free_slot], &reply[free_slot]);
            if (rc) break;
            who[free_slot] = sc.chunk[k].server;
            to[who[free_slot]]++;
            busy++;
            k++;
            continue;
        }
        if (busy == 0) break; /* an error stopped the sending */
        int i;
        MPI_Status st;
        int wrc = pio_wait_any(c, window, reply, who, &i, &st);
        if (wrc) {
            pio_abandon(send, 2 * window);
            pio_schedule_free(&sc); /* the slots' buffers stay: MPI may still use them */
            free(send), free(who), free(to);
            return wrc;
        }
        MPI_Wait(&send[i], MPI_STATUS_IGNORE); /* the server has the whole message */
        busy--;
        to[who[i]]--;
        if (!rc && slot[i].reply.status) rc = pio_reply_error(c, &slot[i].reply, slot[i].server, "writing", f->name);
    }
    for (int i = 0; i < window; i++) free(slot[i].buf);
    free(slot), free(send), free(who), free(to);
    pio_schedule_free(&sc);
    return rc;
}

static int check_access(const struct pio_file *f, int want, const void *buf, int64_t len)
{
    if (!(f->flags & want))
        return pio_fail(PIO_EINVAL, "pio: %s is open %s", f->name, want == PIO_WRONLY ? "read-only" : "write-only");
    if (len > 0 && !buf) return pio_fail(PIO_EINVAL, "pio: a NULL buffer for %lld bytes", (long long)len);
    return PIO_OK;
}

static int plan(const struct pio_file *f, int64_t pos, int64_t len, struct pio_extents **lists, int64_t *end)
{
    *lists = calloc((size_t)f->ctx->nservers, sizeof **lists);
    if (!*lists) return pio_fail(PIO_EINVAL, "pio: out of memory");
    if (f->filetype.n) return pio_plan_typemap(&f->layout, &f->filetype, f->disp, pos, len, *lists, end);
    return pio_plan(&f->layout, &f->view, pos, len, *lists, end);
}

static void free_plan(const struct pio_file *f, struct pio_extents *lists)
{
    for (int s = 0; lists && s < f->ctx->nservers; s++) pio_extents_free(&lists[s]);
    free(lists);
}

int pio_write_at(pio_file *f, int64_t pos, const void *buf, int64_t len)
{
    int rc = check_access(f, PIO_WRONLY, buf, len);
    if (rc) return rc;
    struct pio_extents *lists;
    int64_t end;
    rc = plan(f, pos, len, &lists, &end);
    if (!rc && len > 0) rc = pio_write_planned(f, lists, buf);
    if (!rc && end > f->known_size) f->known_size = end;
    free_plan(f, lists);
    return rc;
}

/* ---- reads --------------------------------------------------------------------------- */

/* Copies stream bytes [off, off + len) of one server's extents into the buffer. */
static void scatter(const struct pio_extents *x, int64_t off, const char *src, int64_t len, char *dst)
{
    int64_t base = 0;
    for (int i = 0; i < x->n && len > 0; i++) {
        const struct pio_extent *e = &x->e[i];
        if (off < base + e->len) {
            int64_t within = off - base, take = e->len - within < len ? e->len - within : len;
            memcpy(dst + e->mem + within, src, (size_t)take);
            src += take;
            off += take;
            len -= take;
        }
        base += e->len;
    }
}

/* Every server gets its part of the request at once and decides the order of its pieces;
 * the client keeps receives posted for each server that still owes it data (one, or with
 * window-IOS this client's share of the server's window), so that the servers' sends
 * (rendezvous ones from MPI's eager limit on) proceed side by side. */
int pio_read_planned(struct pio_file *f, const struct pio_extents *lists, char *buf)
{
    struct pio_ctx *c = f->ctx;
    int n = c->nservers, rc = PIO_OK;
    int window = c->strategy == PIO_WINDOW_IOS ? pio_window_pieces(c->window, c->block) : 1;
    int per = (window + c->nclients - 1) / c->nclients; /* receives per server */
    uint64_t id = ++c->next_request;
    char **req = calloc((size_t)n, sizeof *req), **in = calloc((size_t)(n * per), sizeof *in);
    MPI_Request *sends = malloc((size_t)n * sizeof *sends), *recvs = malloc((size_t)(n * per) * sizeof *recvs);
    int64_t *left = calloc((size_t)n, sizeof *left);
    int *who = malloc((size_t)(n * per) * sizeof *who), *posted = calloc((size_t)n, sizeof *posted);
    size_t cap = sizeof(struct pio_msg) + (size_t)c->block;
    if (!req || !in || !sends || !recvs || !left || !who || !posted) {
        rc = pio_fail(PIO_EINVAL, "pio: out of memory");
        goto out;
    }
    for (int j = 0; j < n * per; j++) {
        recvs[j] = MPI_REQUEST_NULL;
        who[j] = j / per;
    }
    for (int s = 0; s < n; s++) sends[s] = MPI_REQUEST_NULL;
    for (int s = 0; s < n; s++) {
        if (lists[s].bytes == 0) continue;
        size_t size = sizeof(struct pio_msg) + (size_t)lists[s].n * sizeof(struct pio_wire_extent);
        if (!(req[s] = malloc(size))) {
            rc = pio_fail(PIO_EINVAL, "pio: out of memory");
            break;
        }
        struct pio_msg m = {.op = PIO_OP_READ, .file = f->id, .n = lists[s].n, .client = c->client_index,
                            .strategy = c->strategy, .window = window, .block = c->block, .id = id,
                            .b = lists[s].bytes};
        memcpy(req[s], &m, sizeof m);
        struct pio_wire_extent *w = (struct pio_wire_extent *)(req[s] + sizeof m);
        for (int i = 0; i < lists[s].n; i++) w[i] = (struct pio_wire_extent){lists[s].e[i].local, lists[s].e[i].len};
        left[s] = lists[s].bytes;
        /* a piece is b bytes but for each server's last: ceil(left / b) more are to come */
        for (int r = 0; r < per && rc == PIO_OK && r < (left[s] + c->block - 1) / c->block; r++) {
            if (!(in[s * per + r] = malloc(cap))) {
                rc = pio_fail(PIO_EINVAL, "pio: out of memory");
                break;
            }
            MPI_Irecv(in[s * per + r], (int)cap, MPI_BYTE, c->servers[s], PIO_TAG_DATA, c->comm, &recvs[s * per + r]);
            posted[s]++;
        }
        if (rc) break;
        MPI_Isend(req[s], (int)size, MPI_BYTE, c->servers[s], PIO_TAG_REQUEST, c->comm, &sends[s]);
    }
    for (;;) {
        int j;
        MPI_Status st;
        if (rc || (rc = pio_wait_any(c, n * per, recvs, who, &j, &st)) || j == MPI_UNDEFINED) break;
        int s = who[j];
        struct pio_msg m;
        memcpy(&m, in[j], sizeof m);
        posted[s]--;
        if (m.id == id && m.status) {
            rc = pio_reply_error(c, &m, s, "reading", f->name);
            break;
        }
        if (m.id == id) { /* else a late answer to a read that failed earlier */
            scatter(&lists[s], m.a, in[j] + sizeof m, m.b, buf);
            left[s] -= m.b;
        }
        if (posted[s] < (left[s] + c->block - 1) / c->block) {
            MPI_Irecv(in[j], (int)cap, MPI_BYTE, c->servers[s], PIO_TAG_DATA, c->comm, &recvs[j]);
            posted[s]++;
        }
    }
    if (rc && sends && recvs) { /* the buffers stay: MPI may still use them */
        pio_abandon(sends, n);
        pio_abandon(recvs, n * per);
        free(sends), free(recvs), free(left), free(who), free(posted);
        return rc;
    }
    for (int j = 0; j < n * per && recvs; j++)
        if (recvs[j] != MPI_REQUEST_NULL) { /* a server that owed nothing more */
            MPI_Cancel(&recvs[j]);
            MPI_Wait(&recvs[j], MPI_STATUS_IGNORE);
        }
    for (int s = 0; s < n && sends; s++)
        if (sends[s] != MPI_REQUEST_NULL) MPI_Wait(&sends[s], MPI_STATUS_IGNORE);
out:
    for (int s = 0; s < n && req; s++) free(req[s]);
    for (int j = 0; j < n * per && in; j++) free(in[j]);
    free(req), free(in), free(sends), free(recvs), free(left), free(who), free(posted);
    return rc;
}

int pio_read_at(pio_file *f, int64_t pos, void *buf, int64_t len)
{
    int rc = check_access(f, PIO_RDONLY, buf, len);
    if (rc) return rc;
    struct pio_extents *lists;
    int64_t end;
    rc = plan(f, pos, len, &lists, &end);
    if (!rc && end > f->known_size) { /* others may have written since: ask the servers */
        int64_t size;
        rc = pio_size(f, &size);
        if (!rc && end > size)
            rc = pio_fail(PIO_ERANGE, "pio: reading %s up to byte %lld: past its end (%lld bytes)", f->name,
                          (long long)end, (long long)size);
    }
    if (!rc && len > 0) rc = pio_read_planned(f, lists, buf);
    free_plan(f, lists);
    return rc;
}

/* The collective forms: every client starts together (what the scheduling strategies
 * are about), and all return the lowest code any client had. */
int pio_write_at_all(pio_file *f, int64_t pos, const void *buf, int64_t len)
{
    int rc = pio_two_phase_write(f, check_access(f, PIO_WRONLY, buf, len), pos, buf, len);
    if (rc != PIO_DIRECT) return rc;
    MPI_Barrier(f->comm);
    return pio_agree(f->comm, pio_write_at(f, pos, buf, len));
}

int pio_read_at_all(pio_file *f, int64_t pos, void *buf, int64_t len)
{
    int rc = pio_two_phase_read(f, check_access(f, PIO_RDONLY, buf, len), pos, buf, len);
    if (rc != PIO_DIRECT) return rc;
    MPI_Barrier(f->comm);
    return pio_agree(f->comm, pio_read_at(f, pos, buf, len));
}
