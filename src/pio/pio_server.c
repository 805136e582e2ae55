/* pio's I/O server: a loop over the clients' requests. Writes are written with pwrite and
 * acknowledged (so a client that dies mid-write leaves only whole pieces of its own
 * behind); reads are queued and served piece by piece (at most the request's schedule
 * block b at a time) in the order of the request's strategy, between the handling of
 * new requests:
 *   first-IOS   the request that arrived first is served to its end first;
 *   random-IOS  a random pending request (seeded by server);
 *   hash-IOS    at step j, server s serves client (s + j) mod n_clients if it waits;
 *   window-IOS  hash-IOS's order with the request's window of pieces in flight, at most
 *               a client's share (window / clients, rounded up) to any one client.
 * Server 0 also keeps each file's layout in DIR/server-0/NAME.pio-meta. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pio_layout.h"
#include "pio_protocol.h"
#include "pio_server.h"

struct open_file {
    int id, fd;
    int64_t shared; /* server 0: the file's shared pointer (MPI-IO), bytes of the view */
};

struct read_request {
    int client, rank, fd, n, next;
    int strategy, window;
    int64_t block, stream, within; /* stream: bytes served so far; within: into extent `next` */
    uint64_t id;
    struct pio_wire_extent *e;
};

struct server {
    struct pio_ctx *c;
    struct open_file *files;
    int nfiles, capfiles;
    struct read_request **reads; /* in order of arrival */
    int nreads, capreads;
    unsigned random_state;
    int hash_step;
    struct {
        char *buf;
        size_t cap;
        int client;
        MPI_Request req;
    } slot[PIO_MAX_WINDOW];
};

static int find_file(const struct server *sv, int id)
{
    for (int i = 0; i < sv->nfiles; i++)
        if (sv->files[i].id == id) return i;
    return -1;
}

static void reply(const struct server *sv, int rank, struct pio_msg m)
{
    MPI_Send(&m, sizeof m, MPI_BYTE, rank, PIO_TAG_REPLY, sv->c->comm);
}

static struct pio_msg failure(int code, int err)
{
    return (struct pio_msg){.status = code, .flags = err};
}

static int full_pwrite(int fd, const char *p, int64_t len, int64_t off)
{
    while (len > 0) {
        ssize_t w = pwrite(fd, p, (size_t)len, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        off += w;
        len -= w;
    }
    return 0;
}

/* Reads up to len bytes; what lies past the end of the data file (a hole) reads as 0. */
static int full_pread(int fd, char *p, int64_t len, int64_t off)
{
    while (len > 0) {
        ssize_t r = pread(fd, p, (size_t)len, off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) {
            memset(p, 0, (size_t)len);
            return 0;
        }
        p += r;
        off += r;
        len -= r;
    }
    return 0;
}

/* The layout file: written whole under another name, then renamed, so that it is always
 * either the old one or the new one. */
static int write_layout(const char *path, int64_t stripe, int servers)
{
    char tmp[4400];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return -1;
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "isthmus-pio 1\nstripe %lld\nservers %d\n", (long long)stripe, servers);
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int read_layout(const char *path, int64_t *stripe, int *servers)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long long s;
    int ok = fscanf(f, "isthmus-pio 1 stripe %lld servers %d", &s, servers) == 2 && s > 0;
    fclose(f);
    *stripe = s;
    if (!ok) errno = EINVAL;
    return ok ? 0 : -1;
}

static struct pio_msg do_open(struct server *sv, const struct pio_msg *m, const char *name)
{
    struct pio_ctx *c = sv->c;
    char path[4400];
    int64_t stripe = m->a;
    if (c->server_index == 0) {
        pio_meta_path(c, name, path, sizeof path);
        int servers;
        int exists = read_layout(path, &stripe, &servers) == 0;
        if (!exists && errno != ENOENT) return failure(PIO_EIO, errno);
        if ((m->flags & PIO_CREATE) && (!exists || (m->flags & PIO_TRUNC))) {
            stripe = m->a;
            if (write_layout(path, stripe, m->n) != 0) return failure(PIO_EIO, errno);
        } else if (!exists) {
            return failure(PIO_ENOENT, ENOENT);
        } else if (servers != m->n) {
            struct pio_msg r = failure(PIO_ELAYOUT, 0);
            r.b = servers;
            return r;
        }
    }
    pio_data_path(c, name, path, sizeof path);
    int flags = O_RDWR | (m->flags & PIO_CREATE ? O_CREAT : 0) | (m->flags & PIO_TRUNC ? O_TRUNC : 0);
    int fd = open(path, flags, 0644);
    if (fd < 0) return failure(errno == ENOENT ? PIO_ENOENT : PIO_EIO, errno);
    if (sv->nfiles == sv->capfiles) {
        int cap = sv->capfiles ? 2 * sv->capfiles : 8;
        struct open_file *grown = realloc(sv->files, (size_t)cap * sizeof *grown);
        if (!grown) {
            close(fd);
            return failure(PIO_EIO, ENOMEM);
        }
        sv->files = grown;
        sv->capfiles = cap;
    }
    sv->files[sv->nfiles++] = (struct open_file){m->file, fd, 0};
    struct stat st;
    fstat(fd, &st);
    return (struct pio_msg){.a = stripe, .b = st.st_size};
}

static struct pio_msg do_delete(struct server *sv, const char *name)
{
    char path[4400];
    pio_data_path(sv->c, name, path, sizeof path);
    if (unlink(path) != 0) return failure(errno == ENOENT ? PIO_ENOENT : PIO_EIO, errno);
    if (sv->c->server_index == 0) {
        pio_meta_path(sv->c, name, path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT) return failure(PIO_EIO, errno);
    }
    return (struct pio_msg){0};
}

static struct pio_msg do_write(struct server *sv, int fd, const struct pio_msg *m, const char *payload)
{
    (void)sv;
    const struct pio_wire_extent *w = (const struct pio_wire_extent *)payload;
    const char *data = (const char *)(w + m->n);
    for (int i = 0; i < m->n; i++) {
        if (full_pwrite(fd, data, w[i].len, w[i].local) != 0) return failure(PIO_EIO, errno);
        data += w[i].len;
    }
    return (struct pio_msg){0};
}

static int queue_read(struct server *sv, int fd, int rank, const struct pio_msg *m, const char *payload)
{
    struct read_request *r = calloc(1, sizeof *r);
    if (!r || !(r->e = malloc((size_t)m->n * sizeof *r->e))) {
        free(r);
        return -1;
    }
    memcpy(r->e, payload, (size_t)m->n * sizeof *r->e);
    r->client = m->client;
    r->rank = rank;
    r->fd = fd;
    r->n = m->n;
    r->strategy = m->strategy;
    r->window = m->strategy == PIO_WINDOW_IOS && m->window >= 1 && m->window <= PIO_MAX_WINDOW ? m->window : 1;
    r->block = m->block;
    r->id = m->id;
    if (sv->nreads == sv->capreads) {
        int cap = sv->capreads ? 2 * sv->capreads : 8;
        struct read_request **grown = realloc(sv->reads, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(r->e);
            free(r);
            return -1;
        }
        sv->reads = grown;
        sv->capreads = cap;
    }
    sv->reads[sv->nreads++] = r;
    return 0;
}

/* Whether client may not get another piece now: it has its share of the window in flight. */
static int in_flight_to(const struct server *sv, int client)
{
    int n = 0, share = (sv->reads[0]->window + sv->c->nclients - 1) / sv->c->nclients;
    for (int i = 0; i < PIO_MAX_WINDOW; i++) n += sv->slot[i].req != MPI_REQUEST_NULL && sv->slot[i].client == client;
    return n >= share;
}

/* The pending read to serve next, by the oldest request's strategy; -1 if none may go now. */
static int pick_read(struct server *sv)
{
    int strategy = sv->reads[0]->strategy, n = sv->c->nclients;
    if (strategy == PIO_FIRST_IOS) return in_flight_to(sv, sv->reads[0]->client) ? -1 : 0;
    if (strategy == PIO_RANDOM_IOS) {
        int i = (int)(pio_random(&sv->random_state) % (unsigned)sv->nreads);
        return in_flight_to(sv, sv->reads[i]->client) ? -1 : i;
    }
    /* hash and window: the next client in the rotation that waits and has no piece in flight */
    for (int t = 0; t < n; t++) {
        int client = (sv->c->server_index + sv->hash_step + t) % n;
        if (in_flight_to(sv, client)) continue;
        for (int i = 0; i < sv->nreads; i++)
            if (sv->reads[i]->client == client) {
                sv->hash_step += t + 1;
                return i;
            }
    }
    return -1;
}

static void drop_read(struct server *sv, int i)
{
    free(sv->reads[i]->e);
    free(sv->reads[i]);
    memmove(&sv->reads[i], &sv->reads[i + 1], (size_t)(sv->nreads - i - 1) * sizeof sv->reads[0]);
    sv->nreads--;
}

/* Sends the next piece of read i from slot k. */
static void serve_read(struct server *sv, int i, int k)
{
    struct read_request *r = sv->reads[i];
    size_t need = sizeof(struct pio_msg) + (size_t)r->block;
    if (need > sv->slot[k].cap) {
        char *grown = realloc(sv->slot[k].buf, need);
        if (!grown) return; /* tried again on the next turn */
        sv->slot[k].buf = grown;
        sv->slot[k].cap = need;
    }
    char *p = sv->slot[k].buf + sizeof(struct pio_msg);
    struct pio_msg m = {.op = PIO_OP_DATA, .id = r->id, .a = r->stream};
    while (m.b < r->block && r->next < r->n) {
        struct pio_wire_extent *e = &r->e[r->next];
        int64_t take = e->len - r->within < r->block - m.b ? e->len - r->within : r->block - m.b;
        if (full_pread(r->fd, p + m.b, take, e->local + r->within) != 0) {
            m.status = PIO_EIO;
            m.flags = errno;
            m.b = 0;
            r->next = r->n;
            break;
        }
        m.b += take;
        r->within += take;
        if (r->within == e->len) {
            r->next++;
            r->within = 0;
        }
    }
    r->stream += m.b;
    memcpy(sv->slot[k].buf, &m, sizeof m);
    sv->slot[k].client = r->client;
    MPI_Isend(sv->slot[k].buf, (int)(sizeof m + (size_t)m.b), MPI_BYTE, r->rank, PIO_TAG_DATA, sv->c->comm,
              &sv->slot[k].req);
    if (r->next == r->n) drop_read(sv, i);
}

/* Handles one request; returns 1 on shutdown. */
static int handle(struct server *sv, int rank, const struct pio_msg *m, const char *payload)
{
    if (m->op == PIO_OP_SHUTDOWN) return 1;
    if (m->op == PIO_OP_OPEN) {
        reply(sv, rank, do_open(sv, m, payload));
        return 0;
    }
    if (m->op == PIO_OP_DELETE) {
        reply(sv, rank, do_delete(sv, payload));
        return 0;
    }
    int f = find_file(sv, m->file);
    if (f < 0) {
        if (m->op == PIO_OP_READ) {
            struct pio_msg d = {.op = PIO_OP_DATA, .id = m->id, .status = PIO_EIO, .flags = EBADF};
            MPI_Send(&d, sizeof d, MPI_BYTE, rank, PIO_TAG_DATA, sv->c->comm);
        } else {
            reply(sv, rank, failure(PIO_EIO, EBADF));
        }
        return 0;
    }
    int fd = sv->files[f].fd;
    struct stat st;
    switch (m->op) {
    case PIO_OP_WRITE:
        reply(sv, rank, do_write(sv, fd, m, payload));
        break;
    case PIO_OP_READ:
        if (queue_read(sv, fd, rank, m, payload) != 0) {
            struct pio_msg d = {.op = PIO_OP_DATA, .id = m->id, .status = PIO_EIO, .flags = ENOMEM};
            MPI_Send(&d, sizeof d, MPI_BYTE, rank, PIO_TAG_DATA, sv->c->comm);
        }
        break;
    case PIO_OP_FLUSH:
        reply(sv, rank, fsync(fd) == 0 ? (struct pio_msg){0} : failure(PIO_EIO, errno));
        break;
    case PIO_OP_STAT:
        fstat(fd, &st);
        reply(sv, rank, (struct pio_msg){.b = st.st_size});
        break;
    case PIO_OP_TRUNCATE: {
        struct pio_layout l = {m->block, sv->c->nservers};
        int64_t local = pio_local_size(&l, sv->c->server_index, m->a);
        reply(sv, rank, ftruncate(fd, local) == 0 ? (struct pio_msg){0} : failure(PIO_EIO, errno));
        break;
    }
    case PIO_OP_SHARED: {
        struct pio_msg r = {.b = sv->files[f].shared};
        sv->files[f].shared = m->flags ? m->a : sv->files[f].shared + m->a;
        reply(sv, rank, r);
        break;
    }
    case PIO_OP_CLOSE: {
        int ok = fsync(fd) == 0;
        int err = errno;
        ok = close(fd) == 0 && ok;
        sv->files[f] = sv->files[--sv->nfiles];
        reply(sv, rank, ok ? (struct pio_msg){0} : failure(PIO_EIO, err));
        break;
    }
    default:
        reply(sv, rank, failure(PIO_EINVAL, EINVAL));
    }
    return 0;
}

/* Requests being received. A server takes in several at once (matched probes, so that
 * each is received exactly once) while the bytes being received stay within the window
 * (ISTHMUS_PIO_WINDOW; at least one request at a time, at most PIO_INCOMING): across a
 * WAN the rendezvous handshakes of several pieces then overlap instead of costing a round
 * trip each, while on a LAN (a window of a few pieces) large pieces still come one after
 * the other instead of all the clients' at once into one port. Requests of one client in
 * flight together are write pieces, which may be written in any order (they never
 * overlap); everything else a client sends waits for the answers to what it sent before. */
#define PIO_INCOMING 16
struct incoming {
    char *buf;
    size_t cap;
    int source, count;
    MPI_Request req;
};

/* Starts receiving the requests that fit: 0, or -1 out of memory. */
static int take_requests(const struct pio_ctx *c, struct incoming *in)
{
    int64_t receiving = 0;
    for (int k = 0; k < PIO_INCOMING; k++)
        if (in[k].req != MPI_REQUEST_NULL) receiving += in[k].count;
    for (int k = 0; k < PIO_INCOMING; k++) {
        if (in[k].req != MPI_REQUEST_NULL) continue;
        int flag, count;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, PIO_TAG_REQUEST, c->comm, &flag, &st);
        if (!flag) return 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (receiving > 0 && receiving + count > c->window) return 0;
        MPI_Message msg;
        MPI_Improbe(st.MPI_SOURCE, PIO_TAG_REQUEST, c->comm, &flag, &msg, &st); /* the same message */
        if ((size_t)count > in[k].cap) {
            char *grown = realloc(in[k].buf, (size_t)count);
            if (!grown) return -1;
            in[k].buf = grown;
            in[k].cap = (size_t)count;
        }
        in[k].source = st.MPI_SOURCE;
        in[k].count = count;
        receiving += count;
        MPI_Imrecv(in[k].buf, count, MPI_BYTE, &msg, &in[k].req);
    }
    return 0;
}

int pio_serve(struct pio_ctx *c)
{
    struct server sv = {.c = c, .random_state = c->seed * 2654435761u + (unsigned)c->server_index + 1};
    for (int k = 0; k < PIO_MAX_WINDOW; k++) sv.slot[k].req = MPI_REQUEST_NULL;
    struct incoming in[PIO_INCOMING] = {0};
    for (int k = 0; k < PIO_INCOMING; k++) in[k].req = MPI_REQUEST_NULL;
    int spins = 0, done = 0, nomem = 0;
    long requests = 0, stall = pio_test_hook("ISTHMUS_PIO_TEST_SERVER_STALL", c->server_index),
         die = pio_test_hook("ISTHMUS_PIO_TEST_SERVER_DIE", c->server_index);
    while (!done && !nomem) {
        int flag, k;
        for (k = 0; k < PIO_MAX_WINDOW; k++)
            if (sv.slot[k].req != MPI_REQUEST_NULL) MPI_Test(&sv.slot[k].req, &flag, MPI_STATUS_IGNORE);
        nomem = take_requests(c, in) != 0;
        int handled = 0;
        for (k = 0; k < PIO_INCOMING && !done; k++) {
            if (in[k].req == MPI_REQUEST_NULL) continue;
            MPI_Test(&in[k].req, &flag, MPI_STATUS_IGNORE);
            if (!flag) continue;
            handled = 1;
            struct pio_msg m;
            memcpy(&m, in[k].buf, sizeof m);
            if (requests++ == die) raise(SIGKILL);
            while (requests > stall && stall >= 0) pause(); /* until the launcher ends the job */
            done = handle(&sv, in[k].source, &m, in[k].buf + sizeof m);
            spins = 0;
        }
        if (handled) continue;
        if (sv.nreads > 0) {
            int window = sv.reads[0]->window, i;
            for (k = 0; k < window; k++)
                if (sv.slot[k].req == MPI_REQUEST_NULL) break;
            if (k < window && (i = pick_read(&sv)) >= 0) {
                serve_read(&sv, i, k);
                spins = 0;
                continue;
            }
        }
        pio_nap(&spins);
    }
    for (int k = 0; k < PIO_MAX_WINDOW; k++) {
        if (sv.slot[k].req != MPI_REQUEST_NULL) MPI_Wait(&sv.slot[k].req, MPI_STATUS_IGNORE);
        free(sv.slot[k].buf);
    }
    for (int k = 0; k < PIO_INCOMING; k++) {
        if (in[k].req != MPI_REQUEST_NULL) { /* nothing is left in flight after a shutdown */
            MPI_Cancel(&in[k].req);
            MPI_Wait(&in[k].req, MPI_STATUS_IGNORE);
        }
        free(in[k].buf);
    }
    for (int i = 0; i < sv.nfiles; i++) {
        fsync(sv.files[i].fd);
        close(sv.files[i].fd);
    }
    while (sv.nreads > 0) drop_read(&sv, 0);
    free(sv.reads);
    free(sv.files);
    return done ? PIO_OK : pio_fail(PIO_EIO, "pio: I/O server %d: out of memory", c->server_index);
}
