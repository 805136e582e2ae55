/* pio: files striped over I/O-server ranks, with decentralized request scheduling
 * (Isaila, Singh, Carretero, Garcia: "On evaluating decentralized parallel I/O scheduling
 * strategies for parallel file systems"). Reference: docs/pio.md.
 *
 * Some ranks of a job are I/O servers (named by the platform's [io] table, passed by
 * `isthmus run` in ISTHMUS_PIO_*), the others are clients. pio_init is called by every
 * rank: on a server it serves until the clients call pio_finalize and returns PIO_SERVED;
 * on a client it returns PIO_OK and a communicator of the clients alone, which the
 * application then uses where it used MPI_COMM_WORLD.
 *
 * A file of logical size S is cut into stripes of `stripe` bytes, stripe k on server
 * k mod N, at offset (k / N) * stripe of that server's data file DIR/server-<i>/<name>.
 * The layout (stripe, N) is kept in DIR/server-0/<name>.pio-meta; the size is derived
 * from the data files, so a job that died leaves no stale size behind.
 *
 * Every call returns PIO_OK (0) or a negative PIO_E* code; pio_last_error() then says
 * what was wrong in one line. Nothing is sent before a request has been checked. */
#ifndef ISTHMUS_PIO_H
#define ISTHMUS_PIO_H

#include <mpi.h>
#include <stdint.h>

enum {
    PIO_OK = 0,
    PIO_SERVED = 1,       /* pio_init on a server rank: the clients have finished */
    PIO_EINVAL = -1,      /* a bad argument: view, name, flags, options */
    PIO_ENOENT = -2,      /* no such file, or a server directory that does not exist */
    PIO_ERANGE = -3,      /* a read past the end of the file or of the view */
    PIO_ELAYOUT = -4,     /* the file was striped over another number of servers */
    PIO_EIO = -5,         /* a server's read, write or fsync failed */
    PIO_ETIMEDOUT = -6,   /* a server did not answer within the timeout */
    PIO_EMPI = -7,        /* an MPI call failed */
};

/* Request scheduling (docs/pio.md): the order in which a client sends the pieces of a
 * write to the servers, and in which a server sends the pieces of reads to the clients. */
enum pio_strategy {
    PIO_DEFAULT = 0,    /* in pio_options: the environment's, else hash-IOS */
    PIO_FIRST_IOS,      /* in file-offset order */
    PIO_RANDOM_IOS,     /* a random server (client) with pieces left, seeded */
    PIO_HASH_IOS,       /* at step j, client i sends to server (i + j) mod N */
    PIO_WINDOW_IOS,     /* hash-IOS order with a window of pieces in flight (docs/pio.md) */
    PIO_STRATEGIES
};

struct pio_options {
    /* Zero or NULL fields take the environment's value (ISTHMUS_PIO_*), then the default. */
    int nservers;             /* ISTHMUS_PIO_SERVERS: comma-separated ranks of comm */
    const int *servers;
    const char *directory;    /* ISTHMUS_PIO_DIR; must exist */
    int64_t stripe;           /* ISTHMUS_PIO_STRIPE, bytes; default 65536 */
    int strategy;             /* ISTHMUS_PIO_STRATEGY (first, random, hash, window); default hash */
    int64_t block;            /* ISTHMUS_PIO_BLOCK, the schedule block b; default the stripe */
    double timeout;           /* ISTHMUS_PIO_TIMEOUT, seconds a server may stay silent; 30 */
    unsigned seed;            /* random-IOS; ISTHMUS_PIO_SEED; default 1 */
    int64_t window;           /* window-IOS: bytes in flight per client (writes) and per server
                                 (reads); ISTHMUS_PIO_WINDOW, which isthmus run sets to the
                                 bandwidth-delay product between clients and servers; default
                                 0: two pieces */
};

typedef struct pio_ctx pio_ctx;
typedef struct pio_file pio_file;

int pio_init(MPI_Comm comm, const struct pio_options *options, pio_ctx **ctx, MPI_Comm *clients);
int pio_finalize(pio_ctx *ctx); /* collective over the clients; frees ctx */

/* Scheduling for the following calls of this client (servers take a read's from it). */
int pio_set_schedule(pio_ctx *ctx, int strategy, int64_t block);

#define PIO_RDONLY 0x1
#define PIO_WRONLY 0x2
#define PIO_RDWR 0x3
#define PIO_CREATE 0x4
#define PIO_TRUNC 0x8

/* Collective over the clients. name: 1-200 characters, no '/', not starting with '.'. */
int pio_open(pio_ctx *ctx, const char *name, int flags, pio_file **file);
/* The same, collective over comm: any clients (MPI_COMM_SELF: one alone). The file's
 * collective calls are then collective over comm. */
int pio_open_on(pio_ctx *ctx, MPI_Comm comm, const char *name, int flags, pio_file **file);
/* Collective; returns once every server has written and fsync'ed the file. */
int pio_close(pio_file *file);
/* This client's writes so far are written and fsync'ed on every server. */
int pio_flush(pio_file *file);
int pio_size(pio_file *file, int64_t *size);

/* A view: the file bytes a client reads and writes, in order, as one logical stream.
 * Blocks of `block` contiguous bytes; level 0 repeats a block count[0] times every
 * stride[0] bytes, level 1 repeats that count[1] times every stride[1] bytes, and so on
 * (BTIO's nested-strided pattern has two levels); the whole starts at `offset`. With no
 * levels the view is the file from `offset` on. Strides must keep repetitions apart. */
#define PIO_MAX_LEVELS 4
struct pio_view {
    int64_t offset;
    int64_t block; /* with levels == 0: ignored */
    int levels;
    int64_t count[PIO_MAX_LEVELS];
    int64_t stride[PIO_MAX_LEVELS];
};

/* Bytes a view covers (INT64_MAX - offset for a view with no levels). */
int64_t pio_view_length(const struct pio_view *view);

/* This client's view of the file (NULL: the whole file, from offset 0). Local. */
int pio_set_view(pio_file *file, const struct pio_view *view);

/* This client's view as MPI-IO's (MPI_File_set_view): `filetype` tiled from byte `disp`,
 * any MPI-3.1 datatype whose typemap MPI-IO accepts as a filetype (pio_datatype.h). Local;
 * pio_set_view replaces it. PIO_OK, or PIO_EINVAL with the reason. */
int pio_set_view_datatype(pio_file *file, int64_t disp, MPI_Datatype filetype);

/* pos is a position in the view's stream. The _all forms are collective over the
 * clients (every client calls, with its own arguments, length 0 allowed). */
int pio_write_at(pio_file *file, int64_t pos, const void *buf, int64_t len);
int pio_read_at(pio_file *file, int64_t pos, void *buf, int64_t len);
int pio_write_at_all(pio_file *file, int64_t pos, const void *buf, int64_t len);
int pio_read_at_all(pio_file *file, int64_t pos, void *buf, int64_t len);

/* Collective: the file's size becomes `size` (truncated or extended with zeros), after
 * every client's writes so far. */
int pio_set_size(pio_file *file, int64_t size);
/* The file's shared pointer (MPI-IO's, in the caller's units; 0 at open), kept by
 * server 0: *before gets its value, then it becomes value (set) or grows by it. */
int pio_shared_pointer(pio_file *file, int set, int64_t value, int64_t *before);

/* Removes a file that no client has open (any one client may call it). */
int pio_delete(pio_ctx *ctx, const char *name);
/* The file offset of byte `pos` of this client's view's stream. */
int64_t pio_view_offset(const pio_file *file, int64_t pos);
/* How many bytes of this client's view's stream lie below file offset `size`. */
int64_t pio_view_bytes_below(const pio_file *file, int64_t size);

const char *pio_last_error(void);
/* Prints one line (fmt, a newline added) on stderr and ends the job with MPI_Abort(code),
 * after a pause that lets the launcher forward the line: the abort's kill can otherwise
 * overtake a rank's last output (seen with MPICH's hydra). */
_Noreturn void pio_abort(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pio_strategy_name(int strategy);
int pio_strategy_parse(const char *name); /* -1 when unknown */

#endif
