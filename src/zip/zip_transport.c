/* The ranks' connections to the forwarders: messages out as frames, frames in as whole
 * messages (docs/zipper.md, "The message path").
 *
 * Each connection has a queue of outgoing messages. A message is cut into frames only
 * as the socket takes them: the flush writes a frame's headers and a slice of the
 * message's own bytes with one writev, so nothing is copied here and a message of
 * hundreds of MiB never exists twice. Messages leave in the order they were queued (the
 * order per pair of ranks that MPI needs).
 *
 * Incoming frames of one source arrive in order (one path per pair), so each source has
 * at most one message being assembled; whole ones go to ist_zip_message_arrived. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "zip.h"
#include "zip_engine.h"
#include "zip_wire.h"

struct outmsg {
    struct outmsg *next;
    int dst;
    struct zmsg_hdr h;
    const char *data;
    size_t bytes, off; /* data written so far */
    void *owned;
    void (*done)(void *);
    void *arg;
    /* the frame being written: its headers (frame, and the message's in the first) and
     * its slice of data */
    char prefix[sizeof(struct ist_zip_frame) + sizeof(struct zmsg_hdr)];
    size_t prefix_len, prefix_sent, slice, slice_sent;
    int in_frame, first;
};

struct forwarder {
    int fd;
    char address[64];
    struct outmsg *head, *tail;
    /* the frame being read */
    struct ist_zip_frame hdr;
    size_t hdr_got;
    char *payload;
    size_t payload_got;
};

static struct forwarder *fwds;
static int nfwds;
static struct zmsg **assembling; /* world rank -> its message being assembled */

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

int ist_zip_engine_forwarders(void) { return nfwds; }
int ist_zip_engine_fd(int i) { return fwds[i].fd; }

/* The forwarder that carries every message between world ranks a and b, both ways. */
static struct forwarder *forwarder_of(int a, int b)
{
    return &fwds[(unsigned)(a + b) % (unsigned)nfwds];
}

void ist_zip_send_message(int dst, const struct zmsg_hdr *h, const void *data, size_t bytes,
                          void *owned, void (*done)(void *), void *arg)
{
    struct outmsg *o = calloc(1, sizeof *o);
    if (!o) ist_zip_fatal("out of memory");
    *o = (struct outmsg){.dst = dst, .h = *h, .data = data, .bytes = bytes, .owned = owned,
                         .done = done, .arg = arg, .first = 1};
    struct forwarder *f = forwarder_of(ist_zip.world_rank, dst);
    if (f->tail) f->tail->next = o;
    else f->head = o;
    f->tail = o;
}

/* Set up o's next frame: at most IST_ZIP_FRAME_MAX bytes of headers and data. */
static void next_frame(struct outmsg *o)
{
    size_t room = IST_ZIP_FRAME_MAX - (o->first ? sizeof o->h : 0);
    o->slice = o->bytes - o->off < room ? o->bytes - o->off : room;
    struct ist_zip_frame fh = {IST_ZIP_DATA, (uint32_t)ist_zip.world_rank, (uint32_t)o->dst,
                               (uint32_t)(o->slice + (o->first ? sizeof o->h : 0))};
    memcpy(o->prefix, &fh, sizeof fh);
    o->prefix_len = sizeof fh;
    if (o->first) {
        memcpy(o->prefix + sizeof fh, &o->h, sizeof o->h);
        o->prefix_len += sizeof o->h;
    }
    o->prefix_sent = o->slice_sent = 0;
    o->in_frame = 1;
}

static void flush(struct forwarder *f)
{
    while (f->head) {
        struct outmsg *o = f->head;
        if (!o->in_frame) next_frame(o);
        struct iovec iov[2] = {
            {o->prefix + o->prefix_sent, o->prefix_len - o->prefix_sent},
            {(char *)o->data + o->off + o->slice_sent, o->slice - o->slice_sent},
        };
        ssize_t w = writev(f->fd, iov, o->slice ? 2 : 1);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            ist_zip_fatal("the connection to the forwarder at %s failed (%s): the forwarder or "
                          "another rank ended", f->address, strerror(errno));
        }
        size_t into_prefix = (size_t)w < iov[0].iov_len ? (size_t)w : iov[0].iov_len;
        o->prefix_sent += into_prefix;
        o->slice_sent += (size_t)w - into_prefix;
        if (o->prefix_sent < o->prefix_len || o->slice_sent < o->slice) return; /* socket full */
        o->off += o->slice;
        o->first = 0;
        o->in_frame = 0;
        if (o->off < o->bytes) continue;
        f->head = o->next;
        if (!f->head) f->tail = NULL;
        free(o->owned);
        if (o->done) o->done(o->arg);
        free(o);
    }
}

int ist_zip_engine_flushed(void)
{
    for (int i = 0; i < nfwds; i++) {
        flush(&fwds[i]);
        if (fwds[i].head) return 0;
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
            ist_zip_message_arrived(m);
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
        ist_zip_message_arrived(m);
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
            f->hdr_got = 0;
            f->payload_got = 0;
            if (f->hdr.kind == IST_ZIP_DATA) {
                if (f->hdr.src >= (uint32_t)ist_zip.world_size)
                    ist_zip_fatal("a frame from rank %u of %d", f->hdr.src, ist_zip.world_size);
                frame_arrived((int)f->hdr.src, f->payload, f->hdr.len);
            }
        }
    }
}

void ist_zip_transport_progress(void)
{
    for (int i = 0; i < nfwds; i++) {
        flush(&fwds[i]);
        read_forwarder(&fwds[i]);
    }
}

/* Sleep a little between tries of a wait; a forwarder with something to read ends it. */
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
