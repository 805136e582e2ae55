/* pio's layout of files over servers and the planning and scheduling of requests
 * (pio_layout.c, pio_schedule.c): no MPI, shared by the client and the server, and the
 * one-line error every pio call reports through (pio_fail, pio_last_error). */
#ifndef ISTHMUS_PIO_LAYOUT_H
#define ISTHMUS_PIO_LAYOUT_H

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

/* A view as MPI-IO defines one: a filetype tiled from a displacement. One instance of the
 * filetype is its blocks in typemap (stream) order, adjacent ones merged, its lower bound
 * and extent (the next instance starts `extent` bytes later), and its size (the bytes of
 * data it holds); pio_datatype.c makes it from an MPI datatype. */
struct pio_block {
    int64_t off, len; /* bytes from the start of the datatype's instance */
};
struct pio_typemap {
    int64_t lb, extent, size;
    int n, cap;
    struct pio_block *b;
};

/* A filetype's typemap fit for a view: displacements non-negative and nondecreasing, no
 * byte twice, also across instances (MPI-IO's rule for filetypes). PIO_OK or PIO_EINVAL. */
int pio_typemap_check_view(const struct pio_typemap *t);
/* The file offset of byte `pos` of a view's stream: instance pos / size, at disp. */
int64_t pio_typemap_offset(const struct pio_typemap *t, int64_t disp, int64_t pos);
void pio_typemap_free(struct pio_typemap *t);

/* The file offset of byte `pos` of a nested-strided view's stream. */
int64_t pio_nested_offset(const struct pio_view *v, int64_t pos);
/* The view's checks; 0, or PIO_EINVAL with the reason in pio_last_error(). */
int pio_view_check(const struct pio_view *v);
/* [pos, pos + len) of the view's stream as extents per server (lists[0..nservers) start
 * empty), coalesced where both the server's file and the buffer are contiguous; *end is
 * one past the highest file offset touched (0 when len is 0). PIO_OK or PIO_EINVAL. */
int pio_plan(const struct pio_layout *l, const struct pio_view *v, int64_t pos, int64_t len,
             struct pio_extents *lists, int64_t *end);
/* The same for a filetype's view (checked by pio_typemap_check_view), from disp. */
int pio_plan_typemap(const struct pio_layout *l, const struct pio_typemap *t, int64_t disp, int64_t pos,
                     int64_t len, struct pio_extents *lists, int64_t *end);
void pio_extents_free(struct pio_extents *x);
/* File bytes [off, off + len), at buffer position mem, as extents per server (cut at
 * stripe boundaries). */
int pio_plan_range(const struct pio_layout *l, int64_t off, int64_t len, int64_t mem, struct pio_extents *lists);
int pio_extents_add(struct pio_extents *x, struct pio_extent e);
/* The size of server s's data file for a file of logical size `size`. */
int64_t pio_local_size(const struct pio_layout *l, int server, int64_t size);
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

#endif
