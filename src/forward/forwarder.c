/* isthmus-forward: the process on a zipper host that relays MPI traffic between clusters
 * whose networks cannot reach each other (docs/zipper.md).
 *
 *   isthmus-forward --listen ADDR:PORT [--listen ADDR:PORT ...] --ranks N [--name NAME]
 *                   [--queue BYTES] [--startup-timeout SECONDS] [--stats FILE]
 *
 * Every rank of the job connects to it and says hello with its world rank; when all N
 * have, it tells each READY. From then on it relays DATA and BULK frames (src/forward/wire.h) to the
 * connection of their destination rank. One event loop (epoll) serves every connection
 * in both directions at once: reading one connection never waits for writing another.
 *
 * Cut-through: a frame joins its destination's queue as soon as its header has come, and
 * whatever of it has arrived is written on at once, so bytes leave while the rest of the
 * frame (and of the message) is still arriving; only the frame at the head of a queue is
 * ever partly filled, and frames never interleave on a connection. Few system calls: one
 * read takes everything a connection has (up to STAGE bytes, many small frames), and a
 * destination is written to right away, with one writev over its queue; epoll's EPOLLOUT is
 * asked for only when a socket is full.
 *
 * Memory is bounded: frames waiting for one destination take at most --queue bytes (plus
 * one frame); past that the forwarder stops reading from the connections that send to it
 * until half of it has drained, and TCP's own flow control holds the senders.
 *
 * The run ends when every rank has said BYE and closed its connection (exit 0). A rank
 * that closes without BYE has died: the forwarder names it and exits 1, and every rank
 * still connected sees its connection close and ends too; `isthmus run` then stops the
 * clusters' jobs. With --stats, what it carried (forward_stats.h) is written when the run
 * ends well. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "forward_stats.h"
#include "wire.h"

#define MAX_LISTEN 4
#define DEFAULT_QUEUE (4L << 20)

#define STAGE (256 * 1024)

struct frame {
    struct frame *next;
    size_t size;   /* header + payload */
    size_t filled; /* bytes of it arrived so far (cut-through: it may be sent before whole) */
    size_t sent;
    double arrived; /* when its last byte came (forward_stats.h) */
    char data[];   /* struct ist_zip_frame, then the payload */
};

struct conn {
    int fd;
    int rank;       /* -1 until its hello */
    int said_bye;
    int reading;    /* EPOLLIN wanted */
    int writing;    /* EPOLLOUT wanted */
    int paused_for; /* the destination rank whose queue is full, or -1 */
    char peer[INET_ADDRSTRLEN]; /* the rank's host address, for messages */
    int same_host;              /* it connected from this host's own address */
    /* input: a header split between reads, and the frame being filled */
    struct ist_zip_frame hdr;
    size_t hdr_got;
    struct frame *in;
    size_t discard; /* payload bytes still to come of a frame dropped (its rank has ended) */
    /* output */
    struct frame *head, *tail;
    long queued;
    long long bytes_in, bytes_out;
};

static const char *name = "forwarder";
static int nranks;
static long queue_limit = DEFAULT_QUEUE;
static struct conn **by_rank;
static struct conn **conns;
static int nconns, cap_conns;
static int hellos, byes_closed;
static int epfd;
static volatile sig_atomic_t stop_signal;
static double read_at; /* when the read being cut into frames returned */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "isthmus-forward %s: ", name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void on_signal(int sig) { stop_signal = sig; }

static void update_events(struct conn *c)
{
    struct epoll_event ev = {.events = (c->reading ? EPOLLIN : 0) | (c->writing ? EPOLLOUT : 0),
                             .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
}

static void write_conn(struct conn *c);

/* f (perhaps only partly filled) joins to's queue, and goes out as far as it can. */
static void enqueue(struct conn *to, struct frame *f)
{
    f->next = NULL;
    f->sent = 0;
    if (to->tail) to->tail->next = f;
    else to->head = f;
    to->tail = f;
    to->queued += (long)f->filled;
    if (!to->writing) write_conn(to);
}

static struct frame *new_frame(uint32_t kind, uint32_t src, uint32_t dst, uint32_t len)
{
    struct frame *f = malloc(sizeof *f + sizeof(struct ist_zip_frame) + len);
    if (!f) die("out of memory");
    struct ist_zip_frame h = {kind, src, dst, len};
    memcpy(f->data, &h, sizeof h);
    f->size = sizeof h + len;
    f->filled = sizeof h;
    f->arrived = read_at;
    return f;
}

static const char *who(const struct conn *c)
{
    static char buf[96];
    if (c->rank < 0) snprintf(buf, sizeof buf, "a rank on %s that had not said hello", c->peer);
    else snprintf(buf, sizeof buf, "rank %d on %s", c->rank, c->peer);
    return buf;
}

/* A frame's header has arrived from c (HELLO, READY and BYE have no payload: they are
 * whole; a DATA frame fills in as its bytes come, and is relayed meanwhile). */
static void handle_frame(struct conn *c, struct frame *f)
{
    struct ist_zip_frame h;
    memcpy(&h, f->data, sizeof h);
    if (h.kind != IST_ZIP_DATA && h.kind != IST_ZIP_BULK && h.len != 0)
        die("frame of kind %u with %u payload bytes from %s (expected none)", h.kind, h.len, who(c));
    switch (h.kind) {
    case IST_ZIP_HELLO:
        if (c->rank >= 0 || h.src >= (uint32_t)nranks || by_rank[h.src] || h.dst != (uint32_t)nranks)
            die("bad hello from %s (rank %u of %u; expected a new rank of %d)", who(c), h.src,
                h.dst, nranks);
        c->rank = (int)h.src;
        by_rank[h.src] = c;
        free(f);
        if (++hellos == nranks)
            for (int r = 0; r < nranks; r++) enqueue(by_rank[r], new_frame(IST_ZIP_READY, 0, (uint32_t)r, 0));
        return;
    case IST_ZIP_BYE:
        c->said_bye = 1;
        free(f);
        return;
    case IST_ZIP_DATA:
    case IST_ZIP_BULK: {
        if (c->rank < 0 || h.dst >= (uint32_t)nranks || !by_rank[h.dst] || hellos < nranks)
            die("frame from %s to rank %u before every rank said hello", who(c), h.dst);
        struct conn *to = by_rank[h.dst];
        if (to->said_bye || to->fd < 0) { /* e.g. credit given back to a rank that has ended */
            c->discard = h.len;
            fwd_stats_dropped(h.len);
            free(f);
            return;
        }
        if (h.len > 0) c->in = f;
        enqueue(to, f);
        if (to->queued > queue_limit) { /* hold this sender until `to` drains */
            c->paused_for = (int)h.dst;
            fwd_stats_held(c->rank, (int)h.dst);
            c->reading = 0;
            update_events(c);
        }
        return;
    }
    default:
        die("frame of unknown kind %u from %s", h.kind, who(c));
    }
}

static void drop_queue(struct conn *c)
{
    while (c->head) {
        struct frame *f = c->head;
        c->head = f->next;
        for (int i = 0; i < nconns && f->filled < f->size; i++)
            if (conns[i]->in == f) { /* its source goes on reading it, into nowhere */
                conns[i]->in = NULL;
                conns[i]->discard = f->size - f->filled;
            }
        fwd_stats_dropped(f->size - sizeof(struct ist_zip_frame));
        free(f);
    }
    c->tail = NULL;
    c->queued = 0;
}

static void close_conn(struct conn *c)
{
    if (!c->said_bye)
        die("%s closed its connection before MPI_Finalize: it or its cluster's job ended", who(c));
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    drop_queue(c);
    byes_closed++;
}

/* Bytes for c's frame in progress: into the frame, and on to its destination at once. */
static void fill(struct conn *c, const char *p, size_t n)
{
    struct frame *f = c->in;
    memcpy(f->data + f->filled, p, n);
    f->filled += n;
    if (f->filled == f->size) {
        c->in = NULL;
        f->arrived = read_at;
    }
    struct ist_zip_frame h;
    memcpy(&h, f->data, sizeof h);
    struct conn *to = by_rank[h.dst];
    to->queued += (long)n;
    if (to->head == f && !to->writing) write_conn(to);
}

/* Everything c has to read (up to STAGE bytes a round), cut into frames. */
static void read_conn(struct conn *c)
{
    static char stage[STAGE];
    for (int rounds = 0; rounds < 4 && c->reading && c->fd >= 0; rounds++) {
        ssize_t n = read(c->fd, stage, sizeof stage);
        if (n == 0) {
            close_conn(c);
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            if (errno == ECONNRESET) {
                close_conn(c);
                return;
            }
            die("reading from %s: %s", who(c), strerror(errno));
        }
        c->bytes_in += n;
        read_at = fwd_now();
        const char *p = stage;
        size_t left = (size_t)n;
        while (left > 0) {
            if (c->discard) {
                size_t take = c->discard < left ? c->discard : left;
                c->discard -= take;
                p += take;
                left -= take;
                continue;
            }
            if (c->in) { /* the rest of a frame in progress */
                size_t want = c->in->size - c->in->filled, take = want < left ? want : left;
                fill(c, p, take);
                p += take;
                left -= take;
                continue;
            }
            size_t take = sizeof c->hdr - c->hdr_got < left ? sizeof c->hdr - c->hdr_got : left;
            memcpy((char *)&c->hdr + c->hdr_got, p, take);
            c->hdr_got += take;
            p += take;
            left -= take;
            if (c->hdr_got < sizeof c->hdr) break;
            c->hdr_got = 0;
            if (c->hdr.len > IST_ZIP_FRAME_MAX)
                die("frame of %u bytes from %s (at most %d)", c->hdr.len, who(c), IST_ZIP_FRAME_MAX);
            struct frame *f = new_frame(c->hdr.kind, c->hdr.src, c->hdr.dst, c->hdr.len);
            handle_frame(c, f); /* may stop reading c: the rest of this read still goes in */
            if (c->fd < 0) return;
        }
        if ((size_t)n < sizeof stage) return; /* drained */
    }
}

/* As much of c's queue as the socket takes, in one writev; the frame at the head may be
 * partly filled (cut-through): it goes out as far as it has come. EPOLLOUT is wanted only
 * while the socket is full. */
static void write_conn(struct conn *c)
{
    if (c->fd < 0) return;
    int full = 0;
    while (c->head && c->head->sent < c->head->filled) {
        struct iovec iov[32];
        int n = 0;
        for (struct frame *f = c->head; f && n < 32 && f->sent < f->filled; f = f->next) {
            iov[n].iov_base = f->data + f->sent;
            iov[n++].iov_len = f->filled - f->sent;
            if (f->filled < f->size) break; /* nothing after it may pass it */
        }
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                full = 1;
                break;
            }
            if (c->said_bye) { /* it has ended: what was left for it does not matter */
                drop_queue(c);
                close_conn(c);
                return;
            }
            die("writing to %s: %s", who(c), strerror(errno));
        }
        c->bytes_out += w;
        c->queued -= w;
        double now = fwd_now();
        while (w > 0) {
            struct frame *f = c->head;
            size_t left = f->filled - f->sent;
            if ((size_t)w < left) {
                f->sent += (size_t)w;
                break;
            }
            w -= (ssize_t)left;
            f->sent = f->filled;
            if (f->sent < f->size) break; /* the rest of it has not come yet */
            struct ist_zip_frame h;
            memcpy(&h, f->data, sizeof h);
            if (h.kind == IST_ZIP_DATA || h.kind == IST_ZIP_BULK)
                fwd_stats_frame((int)h.src, (int)h.dst, h.len, f->arrived, now);
            c->head = f->next;
            if (!c->head) c->tail = NULL;
            free(f);
        }
    }
    if (full != c->writing) {
        c->writing = full;
        update_events(c);
    }
}

/* Senders held for c's queue read again once it has drained to half. */
static void resume_senders(const struct conn *c)
{
    if (c->rank < 0 || c->queued > queue_limit / 2) return;
    for (int i = 0; i < nconns; i++) {
        struct conn *s = conns[i];
        if (s->fd >= 0 && s->paused_for == c->rank) {
            s->paused_for = -1;
            s->reading = 1;
            update_events(s);
            read_conn(s);
        }
    }
}

static void accept_all(int lfd)
{
    for (;;) {
        struct sockaddr_in from;
        socklen_t fromlen = sizeof from;
        int fd = accept4(lfd, (struct sockaddr *)&from, &fromlen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            die("accept: %s", strerror(errno));
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (nconns == cap_conns) {
            cap_conns = cap_conns ? 2 * cap_conns : 16;
            conns = realloc(conns, (size_t)cap_conns * sizeof *conns);
            if (!conns) die("out of memory");
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) die("out of memory");
        c->fd = fd;
        inet_ntop(AF_INET, &from.sin_addr, c->peer, sizeof c->peer);
        struct sockaddr_in here;
        socklen_t herelen = sizeof here;
        c->same_host = getsockname(fd, (struct sockaddr *)&here, &herelen) == 0 &&
                       here.sin_addr.s_addr == from.sin_addr.s_addr;
        c->rank = -1;
        c->paused_for = -1;
        c->reading = 1;
        conns[nconns++] = c;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
    }
}

static int listen_on(const char *spec)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof host) die("--listen %s: expected ADDRESS:PORT", spec);
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (*end || port < 1 || port > 65535 || inet_pton(AF_INET, host, &a.sin_addr) != 1)
        die("--listen %s: expected an IPv4 ADDRESS:PORT", spec);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0)
        die("cannot listen on %s: %s", spec, strerror(errno));
    return fd;
}

static long number(const char *opt, const char *v, long lo)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < lo) die("%s %s: expected a whole number of at least %ld", opt, v, lo);
    return n;
}

int main(int argc, char **argv)
{
    const char *listen_specs[MAX_LISTEN];
    int nlisten = 0;
    long startup_timeout = 120;
    const char *stats = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("%s: expected a value after it", argv[i]);
        if (strcmp(argv[i], "--listen") == 0 && nlisten < MAX_LISTEN) listen_specs[nlisten++] = v;
        else if (strcmp(argv[i], "--ranks") == 0) nranks = (int)number("--ranks", v, 1);
        else if (strcmp(argv[i], "--name") == 0) name = v;
        else if (strcmp(argv[i], "--queue") == 0) queue_limit = number("--queue", v, IST_ZIP_FRAME_MAX);
        else if (strcmp(argv[i], "--startup-timeout") == 0) startup_timeout = number("--startup-timeout", v, 1);
        else if (strcmp(argv[i], "--stats") == 0) stats = v;
        else die("%s: unknown option (expected --listen, --ranks, --name, --queue, --startup-timeout, --stats)", argv[i]);
        i++;
    }
    if (!nlisten || !nranks) die("expected --listen ADDRESS:PORT and --ranks N");
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    by_rank = calloc((size_t)nranks, sizeof *by_rank);
    fwd_stats_init(nranks);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    int lfds[MAX_LISTEN];
    for (int i = 0; i < nlisten; i++) {
        lfds[i] = listen_on(listen_specs[i]);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        ev.data.u64 = (uint64_t)i + 1; /* listeners: small numbers, connections: pointers */
        epoll_ctl(epfd, EPOLL_CTL_ADD, lfds[i], &ev);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (byes_closed < nranks) {
        struct epoll_event evs[64];
        int n = epoll_wait(epfd, evs, 64, 1000);
        if (stop_signal) die("stopped by signal %d", (int)stop_signal);
        if (n < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
        if (hellos < nranks) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec > startup_timeout)
                die("%d of %d ranks connected in %ld s", hellos, nranks, startup_timeout);
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 <= MAX_LISTEN) {
                accept_all(lfds[evs[i].data.u64 - 1]);
                continue;
            }
            struct conn *c = evs[i].data.ptr;
            if (c->fd >= 0 && (evs[i].events & EPOLLOUT)) {
                write_conn(c);
                if (c->fd >= 0) resume_senders(c);
            }
            if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c->reading)
                read_conn(c);
        }
    }
    if (stats) {
        for (int i = 0; i < nconns; i++)
            if (conns[i]->rank >= 0) fwd_stats_connection(conns[i]->rank, conns[i]->peer, conns[i]->same_host,
                                     conns[i]->bytes_in, conns[i]->bytes_out);
        if (fwd_stats_write(stats, name, fwd_now() - t0.tv_sec - 1e-9 * (double)t0.tv_nsec) != 0)
            die("--stats %s: cannot write it: %s", stats, strerror(errno));
    }
    return 0;
}
