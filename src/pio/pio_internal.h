/* pio's internals shared by its files: the layout and planning of requests (pio_layout.c,
 * no MPI), their scheduling (pio_schedule.c, no MPI), the wire protocol (client and
 * server), and error reporting. */
#ifndef ISTHMUS_PIO_INTERNAL_H
#define ISTHMUS_PIO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pio.h"

/* One contiguous piece of a request on one server: `len` bytes at `local` in the server's
 * data file, at `file` in the logical file and at `mem` in the client's buffer. */
struct pio_extent {
    int64_t file, local, len, mem;
};

struct pio_extents {
    struct pio_extent *e;
    int n, cap;
    int64_t bytes;
};

struct pio_layout {
    int64_t stripe;
    int nservers;
};

/* The view's checks; 0, or PIO_EINVAL with the reason in pio_last_error(). */
int pio_view_check(const struct pio_view *v);
/* [pos, pos + len) of the view's stream as extents per server (lists[0..nservers) start
 * empty), coalesced where both the server's file and the buffer are contiguous; *end is
 * one past the highest file offset touched (0 when len is 0). PIO_OK or PIO_EINVAL. */
int pio_plan(const struct pio_layout *l, const struct pio_view *v, int64_t pos, int64_t len,
             struct pio_extents *lists, int64_t *end);
void pio_extents_free(struct pio_extents *x);
int pio_extents_add(struct pio_extents *x, struct pio_extent e);
/* The logical file size implied by `local_size` bytes in server s's data file. */
int64_t pio_logical_end(const struct pio_layout *l, int server, int64_t local_size);

/* A piece of at most `block` bytes of a request for one server: extents
 * [first, first + n) of the schedule's own array. */
struct pio_chunk {
    int server, first, n;
    int64_t bytes, file; /* file: the logical offset of its first byte */
};

struct pio_schedule {
    struct pio_chunk *chunk; /* in the order to send them */
    int nchunks;
    struct pio_extent *e;
    int ne;
};

/* Cuts every server's extents into chunks of at most `block` bytes and orders them by
 * the strategy, for client `client` (hash-IOS) with `seed` (random-IOS). */
int pio_schedule_build(const struct pio_extents *lists, int nservers, int64_t block, int strategy,
                       int client, unsigned seed, struct pio_schedule *out);
void pio_schedule_free(struct pio_schedule *s);
/* window-IOS: pieces of `block` bytes in flight for a window of `window` bytes: enough to
 * cover it, at least 2 (one travelling while the other is written), at most PIO_MAX_WINDOW. */
#define PIO_MAX_WINDOW 64
int pio_window_pieces(int64_t window, int64_t block);
/* xorshift32 step, for random-IOS on both sides (never returns 0 from a nonzero state). */
unsigned pio_random(unsigned *state);

/* Records the one-line message of the error being returned, and returns code. */
int pio_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A context: the job's ranks in their roles, and the settings. */
struct pio_ctx {
    MPI_Comm comm;    /* a private duplicate of the job's communicator: clients and servers */
    MPI_Comm clients; /* the clients alone (a duplicate of the one the application gets) */
    int rank, size, nservers, nclients;
    int *servers;     /* the servers' ranks in comm, in server order */
    int *role;        /* by rank in comm: server index >= 0, or -1 - client index */
    int server_index; /* this rank's, or -1 */
    int client_index; /* this rank's, or -1 */
    char directory[4096];
    int64_t stripe, block;
    int64_t window; /* window-IOS's bytes in flight (0: two pieces) */
    int strategy;
    double timeout;
    unsigned seed;
    int next_file;
    uint64_t next_request;
};

/* The server's loop (pio_server.c): returns when the clients shut it down. */
int pio_serve(struct pio_ctx *c);
/* Where server `index` keeps a file's data, and server 0 its layout. */
int pio_data_path(const struct pio_ctx *c, const char *name, char *out, size_t len);
int pio_meta_path(const struct pio_ctx *c, const char *name, char *out, size_t len);

/* The fault tests' hooks (tests/python/test_pio.py): VAR=I:N in the environment returns N
 * to client or server I, else -1. ISTHMUS_PIO_TEST_DIE_AFTER=C:N kills client C after it
 * has sent N pieces of a write; ISTHMUS_PIO_TEST_SERVER_STALL=S:N stops server S answering
 * after N requests, ISTHMUS_PIO_TEST_SERVER_DIE=S:N kills it then. */
long pio_test_hook(const char *var, int index);

/* The wire protocol, on the context's private duplicate of the job's communicator. */
enum { PIO_TAG_REQUEST = 7101, PIO_TAG_REPLY = 7102, PIO_TAG_DATA = 7103 };
enum {
    PIO_OP_OPEN = 1, /* payload: the name; flags, a = stripe, n = servers; reply a = stripe, b = local size */
    PIO_OP_WRITE,    /* payload: n wire extents then their data; reply status */
    PIO_OP_READ,     /* payload: n wire extents; answered by DATA messages */
    PIO_OP_DATA,     /* server -> client: a = offset in the request's stream, b = length, then data */
    PIO_OP_FLUSH,    /* fsync; reply status */
    PIO_OP_STAT,     /* reply b = local size */
    PIO_OP_CLOSE,    /* fsync and close; reply status */
    PIO_OP_SHUTDOWN,
};

struct pio_msg {
    int32_t op, file, n, status;
    int32_t strategy, flags; /* flags: open flags; in a reply, the errno of a failure */
    int32_t client, window;  /* READ: the sender's client index, and window-IOS's pieces in flight */
    int64_t block, a, b;
    uint64_t id; /* READ: the request's id, echoed in its DATA messages */
};

struct pio_wire_extent {
    int64_t local, len;
};

#endif
