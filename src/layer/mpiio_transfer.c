/* MPI-IO on pio (mpiio.h, docs/mpiio.md): reads and writes of files pio holds, in every
 * form MPI-IO has. Explicit offsets, the individual pointer and the shared pointer give a
 * position in the view; the transfer is pio's independent (pio_read_at) or collective
 * (pio_read_at_all) one, whose plan follows the view (pio_set_view_datatype).
 *
 * When: a read or write on a file named "pio:NAME" with [io] mpiio = true. Cost: pio's
 * transfer, plus one copy through a packed buffer when the memory datatype is not a
 * predefined one (MPI_Pack/Unpack); a read that may reach past the end of the file, one
 * round trip to every server for the size; the shared pointer, one to server 0; the
 * ordered forms, an allreduce and an exclusive scan over the file's communicator.
 * Nonblocking forms are carried out at once and return a request already complete (a
 * generalized request); split collectives are the collective form at _begin. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "mpiio.h"
#include "mpiio_file.h"
#include "pio_calls.h"

enum { READ = 0, WRITE = 1 };
enum { INDEPENDENT = 0, COLLECTIVE = 1 };

static int is_predefined(MPI_Datatype type)
{
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    return combiner == MPI_COMBINER_NAMED;
}

static void set_status(MPI_Status *status, MPI_Count bytes)
{
    if (status == MPI_STATUS_IGNORE) return;
    PMPI_Status_set_elements_x(status, MPI_BYTE, bytes);
    PMPI_Status_set_cancelled(status, 0);
}

/* Reads [pos, pos + len) of the view, but not past the end of the file: a read that pio
 * refuses as past the end (PIO_ERANGE, every client told when collective) is cut at the
 * end of the file and made again. *done gets the bytes read. */
static int read_clipped(pio_file *file, int collective, int64_t pos, void *data, int64_t len, int64_t *done)
{
    int rc = collective ? pio_read_at_all(file, pos, data, len) : pio_read_at(file, pos, data, len);
    *done = len;
    if (rc != PIO_ERANGE) return rc;
    int64_t size = 0;
    rc = pio_size(file, &size);
    if (rc) return rc;
    int64_t below = pio_view_bytes_below(file, size) - pos;
    *done = below < 0 ? 0 : below < len ? below : len;
    return collective ? pio_read_at_all(file, pos, data, *done) : pio_read_at(file, pos, data, *done);
}

/* One transfer of count elements of type at etype `offset` of the view. */
static int transfer(MPI_File fh, int write, int collective, MPI_Offset offset, void *buf, int count,
                    MPI_Datatype type, MPI_Count *moved, const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    *moved = 0;
    int access = f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
    if ((write && access == MPI_MODE_RDONLY) || (!write && access == MPI_MODE_WRONLY))
        return ist_pio_fail(fh, call, write ? "the file is open read-only" : "the file is open write-only");
    int size = 0;
    PMPI_Type_size(type, &size);
    int64_t len = (int64_t)count * size, pos = (int64_t)offset * f->etype_size;
    if (count < 0 || offset < 0) return ist_pio_fail(fh, call, "a negative count or offset");
    /* Predefined types are contiguous in memory; others travel packed (in their type map's
     * order, which is the stream's). */
    char *data = buf, *packed = NULL;
    if (len > 0 && !is_predefined(type)) {
        packed = malloc((size_t)len);
        if (!packed) return ist_pio_fail(fh, call, "out of memory for the packed buffer");
        int at = 0;
        if (write) PMPI_Pack(buf, count, type, packed, (int)len, &at, MPI_COMM_SELF);
        data = packed;
    }
    int64_t done = len;
    ist_depth++;
    int rc;
    if (write) rc = collective ? pio_write_at_all(f->file, pos, data, len) : pio_write_at(f->file, pos, data, len);
    else rc = read_clipped(f->file, collective, pos, data, len, &done);
    ist_depth--;
    if (!rc && packed && !write) {
        int at = 0;
        PMPI_Unpack(packed, (int)len, &at, buf, (int)(done / size), type, MPI_COMM_SELF);
    }
    free(packed);
    if (rc) return ist_pio_error(fh, call, rc);
    *moved = done;
    return MPI_SUCCESS;
}

/* The blocking forms: an explicit offset, or the individual pointer (INDIVIDUAL), which
 * moves by the whole etypes transferred. */
#define INDIVIDUAL (-1)
static int blocking(MPI_File fh, int write, int collective, MPI_Offset offset, void *buf, int count,
                    MPI_Datatype type, MPI_Status *status, const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    int individual = offset == INDIVIDUAL;
    MPI_Count moved = 0;
    int rc = transfer(fh, write, collective, individual ? f->pointer : offset, buf, count, type, &moved, call);
    if (rc == MPI_SUCCESS && individual) f->pointer += moved / f->etype_size;
    if (rc == MPI_SUCCESS) set_status(status, moved);
    return rc;
}

/* ---- nonblocking: done at once, a generalized request already complete -------------- */

static int query_done(void *state, MPI_Status *status)
{
    set_status(status, *(MPI_Count *)state);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_done(void *state)
{
    free(state);
    return MPI_SUCCESS;
}

static int cancel_done(void *state, int complete)
{
    (void)state, (void)complete;
    return MPI_SUCCESS;
}

static int completed(int rc, MPI_Count moved, MPI_Request *request)
{
    MPI_Count *state = malloc(sizeof *state);
    if (!state) return MPI_ERR_NO_MEM;
    *state = moved;
    PMPI_Grequest_start(query_done, free_done, cancel_done, state, request);
    PMPI_Grequest_complete(*request);
    return rc;
}

static int nonblocking(MPI_File fh, int write, int collective, MPI_Offset offset, void *buf, int count,
                       MPI_Datatype type, MPI_Request *request, const char *call)
{
    MPI_Status status;
    MPI_Count moved = 0;
    int rc = blocking(fh, write, collective, offset, buf, count, type, &status, call);
    if (rc == MPI_SUCCESS) PMPI_Get_elements_x(&status, MPI_BYTE, &moved);
    return completed(rc, moved, request);
}

/* ---- the shared pointer -------------------------------------------------------------- */

/* Independent: this rank's etypes reserved at the shared pointer, one round trip. */
static int shared(MPI_File fh, int write, void *buf, int count, MPI_Datatype type, MPI_Count *moved,
                  const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    int size = 0;
    PMPI_Type_size(type, &size);
    int64_t at = 0;
    ist_depth++;
    int rc = pio_shared_pointer(f->file, 0, (int64_t)count * size / f->etype_size, &at);
    ist_depth--;
    if (rc) return ist_pio_error(fh, call, rc);
    return transfer(fh, write, INDEPENDENT, at, buf, count, type, moved, call);
}

/* Collective, in rank order: rank 0 reserves everyone's etypes at once, each rank's place
 * is the exclusive scan of the counts before it. */
static int ordered(MPI_File fh, int write, void *buf, int count, MPI_Datatype type, MPI_Count *moved,
                   const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    int size = 0, rank;
    PMPI_Type_size(type, &size);
    PMPI_Comm_rank(f->comm, &rank);
    long long mine = (long long)count * size / f->etype_size, before = 0, total = 0, base = 0;
    PMPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, f->comm);
    if (rank == 0) before = 0; /* MPI_Exscan leaves rank 0's undefined */
    PMPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, f->comm);
    int rc = PIO_OK;
    if (rank == 0) {
        int64_t at = 0;
        ist_depth++;
        rc = pio_shared_pointer(f->file, 0, total, &at);
        ist_depth--;
        base = at;
    }
    long long sent[2] = {base, rc};
    PMPI_Bcast(sent, 2, MPI_LONG_LONG, 0, f->comm);
    if (sent[1]) return ist_pio_error(fh, call, (int)sent[1]);
    return transfer(fh, write, COLLECTIVE, sent[0] + before, buf, count, type, moved, call);
}

/* ---- the entries (pio_calls.h) ------------------------------------------------------- */

#define OFFSET_CALLS(op, write, type_buf)                                                                   \
    int ist_pio_File_##op##_at(MPI_File fh, MPI_Offset offset, type_buf buf, int count, MPI_Datatype t,    \
                               MPI_Status *status)                                                         \
    {                                                                                                      \
        if (offset < 0) return ist_pio_fail(fh, "MPI_File_" #op "_at", "a negative offset");               \
        return blocking(fh, write, INDEPENDENT, offset, (void *)buf, count, t, status, "MPI_File_" #op "_at"); \
    }                                                                                                      \
    int ist_pio_File_##op##_at_all(MPI_File fh, MPI_Offset offset, type_buf buf, int count,                \
                                   MPI_Datatype t, MPI_Status *status)                                     \
    {                                                                                                      \
        if (offset < 0) offset = INT64_MAX; /* refused by transfer, on every rank of the collective */     \
        return blocking(fh, write, COLLECTIVE, offset, (void *)buf, count, t, status,                      \
                        "MPI_File_" #op "_at_all");                                                        \
    }                                                                                                      \
    int ist_pio_File_i##op##_at(MPI_File fh, MPI_Offset offset, type_buf buf, int count, MPI_Datatype t,   \
                                MPI_Request *request)                                                      \
    {                                                                                                      \
        if (offset < 0) return ist_pio_fail(fh, "MPI_File_i" #op "_at", "a negative offset");              \
        return nonblocking(fh, write, INDEPENDENT, offset, (void *)buf, count, t, request,                 \
                           "MPI_File_i" #op "_at");                                                        \
    }                                                                                                      \
    int ist_pio_File_i##op##_at_all(MPI_File fh, MPI_Offset offset, type_buf buf, int count,               \
                                    MPI_Datatype t, MPI_Request *request)                                  \
    {                                                                                                      \
        if (offset < 0) offset = INT64_MAX;                                                                \
        return nonblocking(fh, write, COLLECTIVE, offset, (void *)buf, count, t, request,                  \
                           "MPI_File_i" #op "_at_all");                                                    \
    }                                                                                                      \
    int ist_pio_File_##op(MPI_File fh, type_buf buf, int count, MPI_Datatype t, MPI_Status *status)        \
    {                                                                                                      \
        return blocking(fh, write, INDEPENDENT, INDIVIDUAL, (void *)buf, count, t, status, "MPI_File_" #op);       \
    }                                                                                                      \
    int ist_pio_File_##op##_all(MPI_File fh, type_buf buf, int count, MPI_Datatype t, MPI_Status *status)  \
    {                                                                                                      \
        return blocking(fh, write, COLLECTIVE, INDIVIDUAL, (void *)buf, count, t, status, "MPI_File_" #op "_all"); \
    }                                                                                                      \
    int ist_pio_File_i##op(MPI_File fh, type_buf buf, int count, MPI_Datatype t, MPI_Request *request)     \
    {                                                                                                      \
        return nonblocking(fh, write, INDEPENDENT, INDIVIDUAL, (void *)buf, count, t, request, "MPI_File_i" #op);  \
    }                                                                                                      \
    int ist_pio_File_i##op##_all(MPI_File fh, type_buf buf, int count, MPI_Datatype t,                     \
                                 MPI_Request *request)                                                     \
    {                                                                                                      \
        return nonblocking(fh, write, COLLECTIVE, INDIVIDUAL, (void *)buf, count, t, request,                      \
                           "MPI_File_i" #op "_all");                                                       \
    }                                                                                                      \
    int ist_pio_File_##op##_shared(MPI_File fh, type_buf buf, int count, MPI_Datatype t,                   \
                                   MPI_Status *status)                                                     \
    {                                                                                                      \
        MPI_Count moved = 0;                                                                               \
        int rc = shared(fh, write, (void *)buf, count, t, &moved, "MPI_File_" #op "_shared");              \
        if (rc == MPI_SUCCESS) set_status(status, moved);                                                  \
        return rc;                                                                                         \
    }                                                                                                      \
    int ist_pio_File_i##op##_shared(MPI_File fh, type_buf buf, int count, MPI_Datatype t,                  \
                                    MPI_Request *request)                                                  \
    {                                                                                                      \
        MPI_Count moved = 0;                                                                               \
        int rc = shared(fh, write, (void *)buf, count, t, &moved, "MPI_File_i" #op "_shared");             \
        return completed(rc, moved, request);                                                              \
    }                                                                                                      \
    int ist_pio_File_##op##_ordered(MPI_File fh, type_buf buf, int count, MPI_Datatype t,                  \
                                    MPI_Status *status)                                                    \
    {                                                                                                      \
        MPI_Count moved = 0;                                                                               \
        int rc = ordered(fh, write, (void *)buf, count, t, &moved, "MPI_File_" #op "_ordered");            \
        if (rc == MPI_SUCCESS) set_status(status, moved);                                                  \
        return rc;                                                                                         \
    }

OFFSET_CALLS(read, READ, void *)
OFFSET_CALLS(write, WRITE, const void *)

/* ---- split collectives: the collective form at _begin, its status kept for _end -------- */

static int split_begin(MPI_File fh, int rc, MPI_Count moved, const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    if (f->split_open) return ist_pio_fail(fh, call, "a split collective is already active on this file");
    f->split_open = rc == MPI_SUCCESS;
    f->split_bytes = moved;
    return rc;
}

static int split_end(MPI_File fh, MPI_Status *status, const char *call)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    if (!f->split_open) return ist_pio_fail(fh, call, "no split collective was begun on this file");
    f->split_open = 0;
    set_status(status, f->split_bytes);
    return MPI_SUCCESS;
}

#define SPLIT_CALLS(op, type_buf)                                                                           \
    int ist_pio_File_##op##_at_all_begin(MPI_File fh, MPI_Offset offset, type_buf buf, int count,           \
                                         MPI_Datatype t)                                                    \
    {                                                                                                       \
        MPI_Status st;                                                                                      \
        MPI_Count moved = 0;                                                                                \
        int rc = ist_pio_File_##op##_at_all(fh, offset, buf, count, t, &st);                                \
        if (rc == MPI_SUCCESS) PMPI_Get_elements_x(&st, MPI_BYTE, &moved);                                  \
        return split_begin(fh, rc, moved, "MPI_File_" #op "_at_all_begin");                                 \
    }                                                                                                       \
    int ist_pio_File_##op##_all_begin(MPI_File fh, type_buf buf, int count, MPI_Datatype t)                 \
    {                                                                                                       \
        MPI_Status st;                                                                                      \
        MPI_Count moved = 0;                                                                                \
        int rc = ist_pio_File_##op##_all(fh, buf, count, t, &st);                                           \
        if (rc == MPI_SUCCESS) PMPI_Get_elements_x(&st, MPI_BYTE, &moved);                                  \
        return split_begin(fh, rc, moved, "MPI_File_" #op "_all_begin");                                    \
    }                                                                                                       \
    int ist_pio_File_##op##_ordered_begin(MPI_File fh, type_buf buf, int count, MPI_Datatype t)             \
    {                                                                                                       \
        MPI_Count moved = 0;                                                                                \
        int rc = ordered(fh, op##_DIRECTION, (void *)buf, count, t, &moved, "MPI_File_" #op "_ordered_begin"); \
        return split_begin(fh, rc, moved, "MPI_File_" #op "_ordered_begin");                                 \
    }                                                                                                       \
    int ist_pio_File_##op##_at_all_end(MPI_File fh, type_buf buf, MPI_Status *status)                       \
    {                                                                                                       \
        (void)buf;                                                                                          \
        return split_end(fh, status, "MPI_File_" #op "_at_all_end");                                        \
    }                                                                                                       \
    int ist_pio_File_##op##_all_end(MPI_File fh, type_buf buf, MPI_Status *status)                          \
    {                                                                                                       \
        (void)buf;                                                                                          \
        return split_end(fh, status, "MPI_File_" #op "_all_end");                                           \
    }                                                                                                       \
    int ist_pio_File_##op##_ordered_end(MPI_File fh, type_buf buf, MPI_Status *status)                      \
    {                                                                                                       \
        (void)buf;                                                                                          \
        return split_end(fh, status, "MPI_File_" #op "_ordered_end");                                       \
    }

#define read_DIRECTION READ
#define write_DIRECTION WRITE
SPLIT_CALLS(read, void *)
SPLIT_CALLS(write, const void *)
