/* What a pio client and a pio server share (pio_protocol.c): the context of a job's ranks
 * in their roles, where a server keeps a file, the fault tests' hooks, and the wire
 * protocol. Neither side includes the other's internals; the client starts the server's
 * loop through pio_server.h. */
#ifndef ISTHMUS_PIO_PROTOCOL_H
#define ISTHMUS_PIO_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "pio.h"

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
    PIO_OP_TRUNCATE, /* a = the logical size, block = the stripe; reply status */
    PIO_OP_SHARED,   /* server 0: the shared file pointer; reply b = its value before:
                        flags 0 adds a, 1 sets it to a (MPI-IO's, in the caller's units) */
    PIO_OP_DELETE,   /* payload: the name; the server's part (and server 0's layout) removed */
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

/* Between the tests of a wait for the other side: back off from testing to short sleeps,
 * then longer ones, as every wait of isthmus does (src/util/backoff.h): servers and
 * clients share cores here. *spins counts the failed tests; 0 after progress. */
static inline void pio_nap(int *spins)
{
    static const struct ist_backoff naps = {.spins = 64, .hold = 1936, .min_ns = 2000, .max_ns = 50000};
    ist_backoff_sleep(&naps, (*spins)++);
}

#endif
