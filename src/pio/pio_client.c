/* pio's client side: roles and settings (pio_init), files (open, close, flush, size);
 * reads and writes planned over the servers and scheduled are in pio_transfer.c. Every wait for a server has a deadline: a server that stops answering
 * is an error after the timeout, never a hang. */
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
#include "pio_server.h"
#include "units.h"


static const char *const strategy_names[PIO_STRATEGIES] = {"default", "first", "random", "hash", "window"};

const char *pio_strategy_name(int strategy)
{
    return strategy > 0 && strategy < PIO_STRATEGIES ? strategy_names[strategy] : "?";
}

int pio_strategy_parse(const char *name)
{
    for (int s = 1; s < PIO_STRATEGIES; s++)
        if (strcmp(name, strategy_names[s]) == 0) return s;
    return -1;
}

/* ---- settings ------------------------------------------------------------------------ */

/* A whole number, or with size set, a size with units ("64KiB", src/util/units.h). */
static int env_number(const char *var, int size, int64_t min, int64_t max, int64_t *out)
{
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    long bytes = 0;
    long long x = size ? (ist_parse_size(v, &bytes) == 0 ? bytes : -1) : strtoll(v, &end, 10);
    if (errno || (end && *end) || x < min || x > max)
        return pio_fail(PIO_EINVAL, "pio: %s=%s: expected %s from %lld to %lld", var, v,
                        size ? "a size (such as 64KiB)" : "a whole number", (long long)min,
                        (long long)max);
    *out = x;
    return 1;
}

static int parse_servers(struct pio_ctx *c, const struct pio_options *o)
{
    int n = 0, cap = 16, *list = malloc((size_t)cap * sizeof *list);
    if (!list) return pio_fail(PIO_EINVAL, "pio: out of memory");
    if (o && o->nservers > 0) {
        if (o->nservers > cap && !(list = realloc(list, (size_t)(cap = o->nservers) * sizeof *list)))
            return pio_fail(PIO_EINVAL, "pio: out of memory");
        for (; n < o->nservers; n++) list[n] = o->servers[n];
    } else {
        const char *v = getenv("ISTHMUS_PIO_SERVERS");
        if (!v || !*v) {
            free(list);
            return pio_fail(PIO_EINVAL, "pio: no I/O servers: give the platform an [io] table (isthmus run "
                                        "passes it as ISTHMUS_PIO_SERVERS) or pio_options.servers");
        }
        for (const char *p = v; *p;) {
            char *end;
            long r = strtol(p, &end, 10);
            if (end == p || (*end && *end != ',')) {
                free(list);
                return pio_fail(PIO_EINVAL, "pio: ISTHMUS_PIO_SERVERS=%s: expected ranks separated by commas", v);
            }
            if (n == cap && !(list = realloc(list, (size_t)(cap *= 2) * sizeof *list)))
                return pio_fail(PIO_EINVAL, "pio: out of memory");
            list[n++] = (int)r;
            p = *end ? end + 1 : end;
        }
    }
    c->servers = list;
    c->nservers = n;
    c->role = malloc((size_t)c->size * sizeof *c->role);
    if (!c->role) return pio_fail(PIO_EINVAL, "pio: out of memory");
    for (int r = 0; r < c->size; r++) c->role[r] = 0;
    for (int i = 0; i < n; i++) {
        if (list[i] < 0 || list[i] >= c->size)
            return pio_fail(PIO_EINVAL, "pio: I/O server rank %d: the job has ranks 0 to %d", list[i], c->size - 1);
        if (c->role[list[i]]) return pio_fail(PIO_EINVAL, "pio: I/O server rank %d given twice", list[i]);
        c->role[list[i]] = 1;
    }
    if (n >= c->size)
        return pio_fail(PIO_EINVAL, "pio: all %d ranks are I/O servers: at least one client is needed", c->size);
    int clients = 0;
    for (int r = 0; r < c->size; r++) c->role[r] = c->role[r] ? 0 : -1 - clients++;
    for (int i = 0; i < n; i++) c->role[list[i]] = i;
    c->nclients = clients;
    c->server_index = c->role[c->rank] >= 0 ? c->role[c->rank] : -1;
    c->client_index = c->role[c->rank] < 0 ? -1 - c->role[c->rank] : -1;
    return PIO_OK;
}

/* A setting: the caller's value when it gave one, else the environment's (a size with
 * units when size is set), else dflt. */
static int setting(int64_t given, const char *var, int size, int64_t min, int64_t max, int64_t dflt,
                   int64_t *out)
{
    *out = dflt;
    if (given) {
        *out = given;
        return PIO_OK;
    }
    int rc = env_number(var, size, min, max, out);
    return rc < 0 ? rc : PIO_OK;
}

static int configure(struct pio_ctx *c, const struct pio_options *o)
{
    static const struct pio_options none;
    if (!o) o = &none;
    int rc = parse_servers(c, o);
    if (rc) return rc;
    const char *dir = o->directory ? o->directory : getenv("ISTHMUS_PIO_DIR");
    if (!dir || !*dir) dir = "/tmp/isthmus-pio";
    if (strlen(dir) + 64 >= sizeof c->directory)
        return pio_fail(PIO_EINVAL, "pio: directory %.64s...: too long", dir);
    strcpy(c->directory, dir);
    int64_t stripe, block, timeout, seed, window;
    if ((rc = setting(o->stripe, "ISTHMUS_PIO_STRIPE", 1, 1, 1 << 30, 65536, &stripe)) ||
        (rc = setting(o->window, "ISTHMUS_PIO_WINDOW", 1, 0, 1LL << 40, 0, &window)) ||
        (rc = setting(o->block, "ISTHMUS_PIO_BLOCK", 1, 1, 1 << 30, stripe, &block)) ||
        (rc = setting(o->timeout > 0, "ISTHMUS_PIO_TIMEOUT", 0, 1, 86400, 20, &timeout)) ||
        (rc = setting(o->seed, "ISTHMUS_PIO_SEED", 0, 0, 0xffffffffLL, 1, &seed)))
        return rc;
    if (stripe < 1 || stripe > (1 << 30))
        return pio_fail(PIO_EINVAL, "pio: stripe %lld: expected 1 byte to 1 GiB", (long long)stripe);
    c->stripe = stripe;
    c->timeout = o->timeout > 0 ? o->timeout : (double)timeout;
    c->seed = (unsigned)seed;
    c->window = window;
    int strategy = o->strategy ? o->strategy : PIO_HASH_IOS;
    const char *s = getenv("ISTHMUS_PIO_STRATEGY");
    if (!o->strategy && s && *s && (strategy = pio_strategy_parse(s)) < 0)
        return pio_fail(PIO_EINVAL, "pio: ISTHMUS_PIO_STRATEGY=%s: expected first, random, hash or window", s);
    return pio_set_schedule(c, strategy, block);
}

int pio_set_schedule(pio_ctx *c, int strategy, int64_t block)
{
    if (strategy < 1 || strategy >= PIO_STRATEGIES)
        return pio_fail(PIO_EINVAL, "pio: strategy %d: expected PIO_FIRST_IOS, PIO_RANDOM_IOS, PIO_HASH_IOS or "
                                    "PIO_WINDOW_IOS", strategy);
    if (block < 1 || block > (1 << 30))
        return pio_fail(PIO_EINVAL, "pio: schedule block %lld: expected 1 byte to 1 GiB", (long long)block);
    c->strategy = strategy;
    c->block = block;
    return PIO_OK;
}

/* Every rank of comm returns the lowest code any rank had, with that rank's message. */
int pio_agree(MPI_Comm comm, int rc)
{
    int me, in[2], out[2];
    MPI_Comm_rank(comm, &me);
    in[0] = rc;
    in[1] = me;
    MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm);
    if (out[0] == PIO_OK) return PIO_OK;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", pio_last_error());
    MPI_Bcast(msg, sizeof msg, MPI_CHAR, out[1], comm);
    return pio_fail(out[0], "%s", msg);
}

static int prepare_directory(const struct pio_ctx *c)
{
    struct stat st;
    if (stat(c->directory, &st) != 0 || !S_ISDIR(st.st_mode))
        return pio_fail(PIO_ENOENT, "pio: I/O server %d: directory %s does not exist (the platform's io.directory)",
                        c->server_index, c->directory);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/server-%d", c->directory, c->server_index);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST)
        return pio_fail(PIO_EIO, "pio: I/O server %d: cannot make %s: %s", c->server_index, sub, strerror(errno));
    return PIO_OK;
}

static void free_ctx(struct pio_ctx *c)
{
    free(c->servers);
    free(c->role);
    free(c);
}

int pio_init(MPI_Comm comm, const struct pio_options *o, pio_ctx **out, MPI_Comm *clients)
{
    *out = NULL;
    *clients = MPI_COMM_NULL;
    struct pio_ctx *c = calloc(1, sizeof *c);
    if (!c) return pio_fail(PIO_EINVAL, "pio: out of memory");
    MPI_Comm_dup(comm, &c->comm);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->server_index = c->client_index = -1;
    int rc = configure(c, o);
    if (rc == PIO_OK && c->server_index >= 0) rc = prepare_directory(c);
    rc = pio_agree(c->comm, rc);
    if (rc) {
        MPI_Comm_free(&c->comm);
        free_ctx(c);
        return rc;
    }
    MPI_Comm split;
    MPI_Comm_split(c->comm, c->server_index >= 0, c->rank, &split);
    if (c->server_index >= 0) {
        MPI_Comm_free(&split);
        rc = pio_serve(c);
        MPI_Comm_free(&c->comm);
        free_ctx(c);
        return rc ? rc : PIO_SERVED;
    }
    MPI_Comm_dup(split, &c->clients);
    *clients = split;
    *out = c;
    return PIO_OK;
}

/* ---- waiting with a deadline --------------------------------------------------------- */

/* After a server failed to answer: its requests are cancelled and released, and their
 * buffers must stay allocated (MPI may still touch them); the context is unusable now. */
void pio_abandon(MPI_Request *r, int n)
{
    for (int i = 0; i < n; i++)
        if (r[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&r[i]);
            MPI_Request_free(&r[i]);
        }
}

/* Waits for one of n requests; *index gets which. who[i] names request i's server. */
int pio_wait_any(const struct pio_ctx *c, int n, MPI_Request *r, const int *who, int *index, MPI_Status *st)
{
    double since = MPI_Wtime();
    int spins = 0;
    for (;;) {
        int flag;
        if (MPI_Testany(n, r, index, &flag, st) != MPI_SUCCESS) return pio_fail(PIO_EMPI, "pio: MPI_Testany failed");
        if (flag) return PIO_OK;
        if (MPI_Wtime() - since > c->timeout) {
            int s = -1;
            for (int i = 0; i < n && s < 0; i++)
                if (r[i] != MPI_REQUEST_NULL) s = who[i];
            return pio_fail(PIO_ETIMEDOUT, "pio: I/O server %d (rank %d) did not answer within %g s", s,
                            s >= 0 ? c->servers[s] : -1, c->timeout);
        }
        pio_nap(&spins);
    }
}

int pio_ask_servers(const struct pio_ctx *c, struct pio_msg req, const void *payload, int plen,
                       const int *listed, struct pio_msg *replies)
{
    int n = c->nservers;
    MPI_Request *r = malloc(2 * (size_t)n * sizeof *r);
    int *who = malloc(2 * (size_t)n * sizeof *who);
    char *msg = malloc(sizeof req + (size_t)plen);
    if (!r || !who || !msg) {
        free(r), free(who), free(msg);
        return pio_fail(PIO_EINVAL, "pio: out of memory");
    }
    memcpy(msg, &req, sizeof req);
    if (plen) memcpy(msg + sizeof req, payload, (size_t)plen);
    for (int s = 0; s < n; s++) {
        who[s] = who[n + s] = s;
        r[s] = r[n + s] = MPI_REQUEST_NULL;
        if (listed && !listed[s]) continue;
        MPI_Irecv(&replies[s], sizeof replies[s], MPI_BYTE, c->servers[s], PIO_TAG_REPLY, c->comm, &r[s]);
        MPI_Isend(msg, (int)sizeof req + plen, MPI_BYTE, c->servers[s], PIO_TAG_REQUEST, c->comm, &r[n + s]);
    }
    int rc = PIO_OK;
    for (;;) {
        int i;
        MPI_Status st;
        rc = pio_wait_any(c, 2 * n, r, who, &i, &st);
        if (rc || i == MPI_UNDEFINED) break;
    }
    if (rc) {
        pio_abandon(r, 2 * n); /* msg and the replies stay allocated: MPI may still use them */
        free(r), free(who);
        return rc;
    }
    free(r), free(who), free(msg);
    return rc;
}

int pio_reply_error(const struct pio_ctx *c, const struct pio_msg *rep, int s, const char *what, const char *name)
{
    if (rep->status == PIO_ENOENT)
        return pio_fail(PIO_ENOENT, "pio: %s: no such file (no layout in %s/server-0)", name, c->directory);
    if (rep->status == PIO_ELAYOUT)
        return pio_fail(PIO_ELAYOUT, "pio: %s was striped over %lld I/O servers; this job has %d", name,
                        (long long)rep->b, c->nservers);
    return pio_fail(rep->status, "pio: I/O server %d: %s %s failed: %s", s, what, name, strerror(rep->flags));
}

/* ---- files --------------------------------------------------------------------------- */

int pio_check_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 200 || strchr(name, '/') || name[0] == '.')
        return pio_fail(PIO_EINVAL, "pio: file name '%s': expected 1-200 characters, no '/', not starting with '.'",
                        name ? name : "(null)");
    return PIO_OK;
}

static int stat_size(struct pio_file *f, int64_t *size)
{
    const struct pio_ctx *c = f->ctx;
    struct pio_msg req = {.op = PIO_OP_STAT, .file = f->id}, *rep = calloc((size_t)c->nservers, sizeof *rep);
    if (!rep) return pio_fail(PIO_EINVAL, "pio: out of memory");
    int rc = pio_ask_servers(c, req, NULL, 0, NULL, rep);
    *size = 0;
    for (int s = 0; !rc && s < c->nservers; s++) {
        if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "stat of", f->name);
        int64_t end = pio_logical_end(&f->layout, s, rep[s].b);
        if (end > *size) *size = end;
    }
    free(rep);
    return rc;
}

/* Client 0 opens the file on server 0 (which keeps the layout), then on the others. */
static int open_on_servers(struct pio_file *f, int flags)
{
    const struct pio_ctx *c = f->ctx;
    int n = c->nservers, rc;
    struct pio_msg req = {.op = PIO_OP_OPEN, .file = f->id, .flags = flags, .n = n, .a = c->stripe};
    struct pio_msg *rep = calloc((size_t)n, sizeof *rep);
    int *listed = calloc((size_t)n, sizeof *listed);
    if (!rep || !listed) {
        free(rep), free(listed);
        return pio_fail(PIO_EINVAL, "pio: out of memory");
    }
    listed[0] = 1;
    rc = pio_ask_servers(c, req, f->name, (int)strlen(f->name) + 1, listed, rep);
    if (!rc && rep[0].status) rc = pio_reply_error(c, &rep[0], 0, "opening", f->name);
    if (!rc) {
        f->layout = (struct pio_layout){rep[0].a, n};
        f->known_size = pio_logical_end(&f->layout, 0, rep[0].b);
        req.a = rep[0].a;
        req.flags |= PIO_CREATE; /* the layout exists: a server with no data yet makes its file */
        for (int s = 0; s < n; s++) listed[s] = s > 0;
        if (n > 1) rc = pio_ask_servers(c, req, f->name, (int)strlen(f->name) + 1, listed, rep);
        for (int s = 1; !rc && s < n; s++) {
            if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "opening", f->name);
            int64_t end = pio_logical_end(&f->layout, s, rep[s].b);
            if (end > f->known_size) f->known_size = end;
        }
    }
    free(rep), free(listed);
    return rc;
}

int pio_open(pio_ctx *c, const char *name, int flags, pio_file **out)
{
    return pio_open_on(c, c->clients, name, flags, out);
}

int pio_open_on(pio_ctx *c, MPI_Comm comm, const char *name, int flags, pio_file **out)
{
    *out = NULL;
    if (c->client_index < 0) return pio_fail(PIO_EINVAL, "pio: pio_open on an I/O server");
    struct pio_file *f = calloc(1, sizeof *f);
    int rc = f ? pio_check_name(name) : pio_fail(PIO_EINVAL, "pio: out of memory");
    if (!rc && ((flags & PIO_RDWR) == 0 || (flags & ~(PIO_RDWR | PIO_CREATE | PIO_TRUNC))))
        rc = pio_fail(PIO_EINVAL, "pio: open flags %#x: expected PIO_RDONLY, PIO_WRONLY or PIO_RDWR, with "
                                  "PIO_CREATE and PIO_TRUNC", (unsigned)flags);
    if (!rc && (flags & PIO_TRUNC) && !(flags & PIO_WRONLY))
        rc = pio_fail(PIO_EINVAL, "pio: PIO_TRUNC needs write access");
    rc = pio_agree(comm, rc);
    if (rc) {
        free(f);
        return rc;
    }
    MPI_Comm_dup(comm, &f->comm);
    MPI_Comm_rank(f->comm, &f->rank);
    f->cluster = MPI_COMM_NULL;
    f->ctx = c;
    f->flags = flags;
    /* Ids unique among every client's files: the opener's index and its own count. */
    f->id = (c->client_index << 20) + (c->next_file++ & 0xfffff);
    MPI_Bcast(&f->id, 1, MPI_INT, 0, f->comm);
    snprintf(f->name, sizeof f->name, "%s", name);
    if (f->rank == 0) rc = open_on_servers(f, flags);
    rc = pio_agree(f->comm, rc);
    int64_t shared[2] = {f->layout.stripe, f->known_size};
    MPI_Bcast(shared, 2, MPI_INT64_T, 0, f->comm);
    f->layout = (struct pio_layout){shared[0], c->nservers};
    f->known_size = shared[1];
    if (rc) {
        MPI_Comm_free(&f->comm);
        free(f);
        return rc;
    }
    *out = f;
    return PIO_OK;
}

int pio_flush(pio_file *f)
{
    const struct pio_ctx *c = f->ctx;
    struct pio_msg req = {.op = PIO_OP_FLUSH, .file = f->id}, *rep = calloc((size_t)c->nservers, sizeof *rep);
    if (!rep) return pio_fail(PIO_EINVAL, "pio: out of memory");
    int rc = pio_ask_servers(c, req, NULL, 0, NULL, rep);
    for (int s = 0; !rc && s < c->nservers; s++)
        if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "fsync of", f->name);
    free(rep);
    return rc;
}

int pio_close(pio_file *f)
{
    struct pio_ctx *c = f->ctx;
    int rc = PIO_OK;
    MPI_Barrier(f->comm); /* every client's writes have been acknowledged */
    if (f->rank == 0) {
        struct pio_msg req = {.op = PIO_OP_CLOSE, .file = f->id}, *rep = calloc((size_t)c->nservers, sizeof *rep);
        rc = rep ? pio_ask_servers(c, req, NULL, 0, NULL, rep) : pio_fail(PIO_EINVAL, "pio: out of memory");
        for (int s = 0; !rc && s < c->nservers; s++)
            if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "closing", f->name);
        free(rep);
    }
    rc = pio_agree(f->comm, rc);
    MPI_Comm_free(&f->comm);
    if (f->cluster != MPI_COMM_NULL) MPI_Comm_free(&f->cluster);
    pio_typemap_free(&f->filetype);
    free(f);
    return rc;
}

int pio_size(pio_file *f, int64_t *size)
{
    int rc = stat_size(f, size);
    if (!rc && *size > f->known_size) f->known_size = *size;
    return rc;
}

int pio_set_view(pio_file *f, const struct pio_view *v)
{
    struct pio_view whole = {0};
    if (!v) v = &whole;
    int rc = pio_view_check(v);
    if (!rc) {
        f->view = *v;
        pio_typemap_free(&f->filetype);
    }
    return rc;
}

int pio_finalize(pio_ctx *c)
{
    MPI_Barrier(c->clients);
    if (c->client_index == 0) {
        struct pio_msg req = {.op = PIO_OP_SHUTDOWN};
        for (int s = 0; s < c->nservers; s++)
            MPI_Send(&req, sizeof req, MPI_BYTE, c->servers[s], PIO_TAG_REQUEST, c->comm);
    }
    MPI_Comm_free(&c->clients);
    MPI_Comm_free(&c->comm);
    free_ctx(c);
    return PIO_OK;
}
