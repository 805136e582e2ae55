/* The ranks' connections to the forwarders: messages and bulk data out as frames, frames
 * in (docs/zipper.md, "The message path").
 *
 * Two kinds of traffic leave a rank:
 *   - messages (eager data, announcements, CTS, ACK, CREDIT): each on the connection to
 *     its pair's forwarder, in the order they were queued: every message between two
 *     ranks takes one path, so MPI's order per pair holds;
 *   - bulk data (a rendezvous's bytes once the receiver has asked for them): slices of at
 *     most a frame, each saying where it goes, taken by a forwarder connection that has
 *     room and is expected to deliver it first (zip_stripe.c): striping over every zipper
 *     host, a faster zipper link takes more slices, and a slow one stops taking them when
 *     it would finish after the fast one. The kernel keeps at most IST_ZIP_UNSENT bytes unsent on a connection
 *     (TCP_NOTSENT_LOWAT), so a slow link holds only a little of a message, and a message
 *     waits behind at most that much bulk data (messages go first at every frame's end).
 * A frame is written straight from the message or the user's buffer with its headers in
 * one writev: nothing is copied here, a message of hundreds of MiB never exists twice.
 *
 * In: one read takes everything a connection has; messages are assembled (frames of one
 * source's messages arrive in order, at most two frames each) and handed to the engine;
 * bulk slices are handed on piece by piece as they are read, straight to where they go. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "world.h"
#include "zip.h"
#include "zip_engine.h"
#include "wire.h"

#define IST_ZIP_UNSENT (128 * 1024)
#define BULK_SLICE (IST_ZIP_FRAME_MAX - (int)sizeof(struct ist_zip_bulk))

struct outmsg {
    struct outmsg *next;
    int dst;
    struct zmsg_hdr h;
    const char *data;
    size_t bytes, off; /* data written so far */
    void *owned;
    void (*done)(void *);
    void *arg;
};

/* A rendezvous's data on their way out. */
struct bulk {
    struct bulk *next;
    int dst;
    int only;      /* the forwarder on either rank's host, the one that takes it all; -1: any */
    uint32_t id;
    const char *data;
    size_t bytes, handed, written; /* bytes given to frames; of those, written */
    void *owned;
    void (*done)(void *);
    void *arg;
};

struct forwarder {
    int fd;
    char address[64];
    struct outmsg *head, *tail;
    /* the frame being written: headers, then a slice of a message's or a bulk's data */
    int writing;             /* 0 none, 1 of the message at head, 2 of `bulk` */
    struct bulk *bulk;
    char prefix[sizeof(struct ist_zip_frame) + sizeof(struct zmsg_hdr)];
    size_t prefix_len, prefix_sent;
    const char *slice;
    size_t slice_len, slice_sent;
    /* the frame being read */
    struct ist_zip_frame hdr;
    size_t hdr_got;
    struct ist_zip_bulk bhdr;
    size_t bhdr_got;
    char *payload;
    size_t payload_got;
};

static struct forwarder *fwds;
/* Where whole messages and bulk data go: the engine's (ist_zip_transport_receivers). */
static void (*on_message)(struct zmsg *m);
static void (*on_bulk)(int src, uint32_t id, uint64_t offset, const char *p, size_t len);

void ist_zip_transport_receivers(void (*message)(struct zmsg *m),
                                 void (*bulk)(int src, uint32_t id, uint64_t offset,
                                              const char *p, size_t len))
{
    on_message = message;
    on_bulk = bulk;
}
static int nfwds;
static struct zmsg **assembling; /* world rank -> its message being assembled */
static struct bulk *bulk_head, *bulk_tail; /* with bytes not yet given to a frame */

void ist_zip_engine_start(struct forwarder_address *addrs, int n)
{
    nfwds = n;
    fwds = calloc((size_t)n, sizeof *fwds);
    assembling = calloc((size_t)ist_zip.world_size, sizeof *assembling);
    if (!fwds || !assembling) ist_zip_fatal("out of memory");
    int *fds = malloc((size_t)n * sizeof *fds);
    if (!fds) ist_zip_fatal("out of memory");
    for (int i = 0; i < n; i++) {
        fwds[i].fd = fds[i] = addrs[i].fd;
        snprintf(fwds[i].address, sizeof fwds[i].address, "%s", addrs[i].text);
        fwds[i].payload = malloc(IST_ZIP_FRAME_MAX);
        if (!fwds[i].payload) ist_zip_fatal("out of memory");
        int lowat = IST_ZIP_UNSENT;
        setsockopt(fwds[i].fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
    }
    ist_zip_stripe_start(fds, n);
    free(fds);
}

int ist_zip_engine_forwarders(void) { return nfwds; }
int ist_zip_engine_fd(int i) { return fwds[i].fd; }

/* The forwarder on the host of a or b (the lower rank's first), or -1: a rank on a
 * zipper host reaches the other sites through its own host's forwarder, with no network
 * hop on its side; through another it would cross two networks. */
static int hosted_forwarder(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    return ist_zip.hosted_by[lo] >= 0 ? ist_zip.hosted_by[lo] : ist_zip.hosted_by[hi];
}

/* The forwarder that carries every message between world ranks a and b, both ways: a
 * hosted one, else the pair's sum, stirred so that pairs (i, i + n) with i = 0, 1, ...
 * and the pairs of one rank with all others both spread over the k forwarders. */
static struct forwarder *forwarder_of(int a, int b)
{
    int at = hosted_forwarder(a, b);
    if (at >= 0) return &fwds[at];
    unsigned k = (unsigned)nfwds, sum = (unsigned)(a + b);
    return &fwds[(sum + sum / k) % k];
}

void ist_zip_send_message(int dst, const struct zmsg_hdr *h, const void *data, size_t bytes,
                          void *owned, void (*done)(void *), void *arg)
{
    struct outmsg *o = calloc(1, sizeof *o);
    if (!o) ist_zip_fatal("out of memory");
    *o = (struct outmsg){.dst = dst, .h = *h, .data = data, .bytes = bytes, .owned = owned,
                         .done = done, .arg = arg};
    struct forwarder *f = forwarder_of(ist_zip.world_rank, dst);
    if (f->tail) f->tail->next = o;
    else f->head = o;
    f->tail = o;
}

void ist_zip_send_bulk(int dst, uint32_t id, const void *data, size_t bytes, void *owned,
                       void (*done)(void *), void *arg)
{
    if (bytes == 0) {
        free(owned);
        if (done) done(arg);
        return;
    }
    struct bulk *b = calloc(1, sizeof *b);
    if (!b) ist_zip_fatal("out of memory");
    *b = (struct bulk){.dst = dst, .only = hosted_forwarder(ist_zip.world_rank, dst), .id = id,
                       .data = data, .bytes = bytes, .owned = owned, .done = done, .arg = arg};
    if (bulk_tail) bulk_tail->next = b;
    else bulk_head = b;
    bulk_tail = b;
}

/* The first bulk that f may take a slice of (its link keeps up: zip_stripe.c), and the
 * one before it in the queue; NULL when none. */
static struct bulk *bulk_for(struct forwarder *f, struct bulk **before)
{
    int me = (int)(f - fwds), keeps_up = -1;
    *before = NULL;
    for (struct bulk *b = bulk_head; b; *before = b, b = b->next) {
        if (b->only == me) return b;
        if (b->only >= 0) continue;
        if (keeps_up < 0) keeps_up = ist_zip_stripe_takes(me, (size_t)BULK_SLICE);
        if (keeps_up) return b;
    }
    return NULL;
}

/* Set up f's next frame: the next of the message at its head, else a bulk slice; 0 when
 * there is nothing to write. */
static int next_frame(struct forwarder *f)
{
    struct bulk *b, *before;
    struct ist_zip_frame fh = {IST_ZIP_DATA, (uint32_t)ist_zip.world_rank, 0, 0};
    size_t hl = 0;
    if (f->head) {
        struct outmsg *o = f->head;
        int first = o->off == 0 && f->prefix_len == 0;
        size_t room = IST_ZIP_FRAME_MAX - (first ? sizeof o->h : 0);
        f->slice = o->data + o->off;
        f->slice_len = o->bytes - o->off < room ? o->bytes - o->off : room;
        fh.dst = (uint32_t)o->dst;
        fh.len = (uint32_t)(f->slice_len + (first ? sizeof o->h : 0));
        if (first) {
            memcpy(f->prefix + sizeof fh, &o->h, sizeof o->h);
            hl = sizeof o->h;
        }
        f->writing = 1;
    } else if (bulk_head && (b = bulk_for(f, &before)) != NULL) {
        struct ist_zip_bulk bh = {b->id, 0, b->handed};
        f->slice = b->data + b->handed;
        f->slice_len = b->bytes - b->handed < (size_t)BULK_SLICE ? b->bytes - b->handed : (size_t)BULK_SLICE;
        b->handed += f->slice_len;
        if (b->handed == b->bytes) { /* every byte has a frame: no other forwarder takes it */
            if (before) before->next = b->next;
            else bulk_head = b->next;
            if (bulk_tail == b) bulk_tail = before;
        }
        fh.kind = IST_ZIP_BULK;
        fh.dst = (uint32_t)b->dst;
        fh.len = (uint32_t)(sizeof bh + f->slice_len);
        memcpy(f->prefix + sizeof fh, &bh, sizeof bh);
        hl = sizeof bh;
        f->bulk = b;
        f->writing = 2;
    } else {
        return 0;
    }
    memcpy(f->prefix, &fh, sizeof fh);
    f->prefix_len = sizeof fh + hl;
    f->prefix_sent = f->slice_sent = 0;
    return 1;
}

/* The frame f has written whole. */
static void frame_written(struct forwarder *f)
{
    if (f->writing == 1) {
        struct outmsg *o = f->head;
        o->off += f->slice_len;
        if (o->off == o->bytes && (o->bytes > 0 || f->prefix_len > sizeof(struct ist_zip_frame))) {
            f->head = o->next;
            if (!f->head) f->tail = NULL;
            free(o->owned);
            if (o->done) o->done(o->arg);
            free(o);
        }
    } else {
        struct bulk *b = f->bulk;
        b->written += f->slice_len;
        if (b->written == b->bytes) {
            free(b->owned);
            if (b->done) b->done(b->arg);
            free(b);
        }
        f->bulk = NULL;
    }
    f->writing = 0;
    f->prefix_len = 0;
}

static void flush(struct forwarder *f)
{
    for (;;) {
        if (!f->writing && !next_frame(f)) return;
        struct iovec iov[2] = {
            {f->prefix + f->prefix_sent, f->prefix_len - f->prefix_sent},
            {(char *)f->slice + f->slice_sent, f->slice_len - f->slice_sent},
        };
        ssize_t w = writev(f->fd, iov, f->slice_len ? 2 : 1);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            ist_zip_fatal("the connection to the forwarder at %s failed (%s): the forwarder or "
                          "another rank ended", f->address, strerror(errno));
        }
        ist_zip_stripe_wrote((int)(f - fwds), (size_t)w);
        size_t into_prefix = (size_t)w < iov[0].iov_len ? (size_t)w : iov[0].iov_len;
        f->prefix_sent += into_prefix;
        f->slice_sent += (size_t)w - into_prefix;
        if (f->prefix_sent < f->prefix_len || f->slice_sent < f->slice_len) return; /* full */
        frame_written(f);
    }
}

/* Whether f has something to write (then a wait also wakes when its socket has room): a
 * bulk slice only when it would take one (not one of a pair whose forwarder is another). */
static int has_output(struct forwarder *f)
{
    struct bulk *before;
    return f->writing || f->head || (bulk_head && bulk_for(f, &before) != NULL);
}

int ist_zip_engine_flushed(void)
{
    for (int i = 0; i < nfwds; i++) {
        flush(&fwds[i]);
        if (has_output(&fwds[i])) return 0;
    }
    return 1;
}

/* A frame of the forwarder protocol itself (hello, bye), written at once. */
void ist_zip_engine_send_raw(int i, uint32_t kind)
{
    struct ist_zip_frame h = {kind, (uint32_t)ist_zip.world_rank, (uint32_t)ist_zip.world_size, 0};
    const char *p = (const char *)&h;
    size_t left = sizeof h;
    while (left > 0) {
        ssize_t w = write(fwds[i].fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* the forwarder is gone: nothing more to say to it */
        p += w;
        left -= (size_t)w;
    }
}

/* A whole frame's payload from world rank src. */
static void frame_arrived(int src, const char *p, size_t len)
{
    struct zmsg *m = assembling[src];
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m || len < sizeof m->h) ist_zip_fatal("a short frame from rank %d", src);
        memcpy(&m->h, p, sizeof m->h);
        m->src_world = src;
        p += sizeof m->h;
        len -= sizeof m->h;
        if (m->h.kind == ZMSG_RTS || m->h.kind == ZMSG_CREDIT) { /* no data follow */
            on_message(m);
            return;
        }
        m->data = malloc(m->h.bytes ? m->h.bytes : 1);
        if (!m->data)
            ist_zip_fatal("out of memory for a message of %llu bytes", (unsigned long long)m->h.bytes);
    }
    if (m->got + len > m->h.bytes) ist_zip_fatal("a message from rank %d longer than it said", src);
    memcpy(m->data + m->got, p, len);
    m->got += len;
    if (m->got == m->h.bytes) {
        assembling[src] = NULL;
        on_message(m);
    } else {
        assembling[src] = m;
    }
}

static void frame_done(struct forwarder *f, const char *payload)
{
    if (f->hdr.kind != IST_ZIP_DATA) return;
    frame_arrived((int)f->hdr.src, payload, f->hdr.len);
}

/* Everything the forwarder has sent (one read takes many small frames). A message frame
 * whole in what was read is taken from there; one split between reads is completed in
 * f->payload. Bulk bytes go on as they come, straight to where they belong. */
static void read_forwarder(struct forwarder *f)
{
    static char stage[256 * 1024];
    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n = read(f->fd, stage, sizeof stage);
        if (n == 0)
            ist_zip_fatal("the forwarder at %s closed the connection: it or another rank ended",
                          f->address);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            ist_zip_fatal("reading from the forwarder at %s: %s", f->address, strerror(errno));
        }
        const char *p = stage;
        size_t left = (size_t)n;
        while (left > 0) {
            size_t take;
            if (f->hdr_got < sizeof f->hdr) {
                take = sizeof f->hdr - f->hdr_got < left ? sizeof f->hdr - f->hdr_got : left;
                memcpy((char *)&f->hdr + f->hdr_got, p, take);
                f->hdr_got += take;
                p += take;
                left -= take;
                if (f->hdr_got < sizeof f->hdr) break;
                if (f->hdr.len > IST_ZIP_FRAME_MAX)
                    ist_zip_fatal("a frame of %u bytes from the forwarder at %s", f->hdr.len, f->address);
                if ((f->hdr.kind != IST_ZIP_DATA && f->hdr.kind != IST_ZIP_BULK) ||
                    f->hdr.src >= (uint32_t)ist_zip.world_size ||
                    (f->hdr.kind == IST_ZIP_BULK && f->hdr.len <= sizeof f->bhdr))
                    ist_zip_fatal("a frame of kind %u from rank %u from the forwarder at %s",
                                  f->hdr.kind, f->hdr.src, f->address);
                f->payload_got = f->bhdr_got = 0;
                if (f->hdr.kind == IST_ZIP_DATA && left >= f->hdr.len) { /* whole: no copy */
                    frame_done(f, p);
                    p += f->hdr.len;
                    left -= f->hdr.len;
                    f->hdr_got = 0;
                }
                continue;
            }
            if (f->hdr.kind == IST_ZIP_BULK) {
                if (f->bhdr_got < sizeof f->bhdr) {
                    take = sizeof f->bhdr - f->bhdr_got < left ? sizeof f->bhdr - f->bhdr_got : left;
                    memcpy((char *)&f->bhdr + f->bhdr_got, p, take);
                    f->bhdr_got += take;
                    f->payload_got += take;
                } else {
                    size_t want = f->hdr.len - f->payload_got;
                    take = want < left ? want : left;
                    on_bulk((int)f->hdr.src, f->bhdr.id,
                                         f->bhdr.offset + (f->payload_got - sizeof f->bhdr), p, take);
                    f->payload_got += take;
                }
                p += take;
                left -= take;
                if (f->payload_got == f->hdr.len) f->hdr_got = 0;
                continue;
            }
            size_t want = f->hdr.len - f->payload_got;
            take = want < left ? want : left;
            memcpy(f->payload + f->payload_got, p, take);
            f->payload_got += take;
            p += take;
            left -= take;
            if (f->payload_got == f->hdr.len) {
                frame_done(f, f->payload);
                f->hdr_got = 0;
            }
        }
        if ((size_t)n < sizeof stage) return; /* drained */
    }
}

void ist_zip_transport_progress(void)
{
    for (int i = 0; i < nfwds; i++) {
        flush(&fwds[i]);
        read_forwarder(&fwds[i]);
    }
}

/* Pause between tries of a wait as the sleeping waits do (ist_wait_pause_ns): a forwarder
 * with something to read, or with room for what this rank has to write, ends it early. */
void ist_zip_idle(int tries)
{
    long pause_ns = ist_wait_pause_ns(tries); /* real time */
    if (pause_ns <= 0) return;
    struct pollfd pfd[16];
    int n = nfwds < 16 ? nfwds : 16;
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = fwds[i].fd,
                                 .events = (short)(POLLIN | (has_output(&fwds[i]) ? POLLOUT : 0))};
    ist_real_ppoll(pfd, (nfds_t)n, pause_ns);
}
