/* MPI-IO on pio (mpiio.h, docs/mpiio.md): the hidden servers, and a file's life and state
 * (open, close, delete, view, pointers, size, hints); reads and writes are in
 * mpiio_transfer.c.
 *
 * When: with [io] mpiio = true, for files named "pio:NAME". Cost: an open is pio's (a
 * round trip to every server) plus the MPI's own open of /dev/null on MPI_COMM_SELF (the
 * handle the application holds); a call on any file first looks its handle up among the
 * files pio holds (a list as long as the files open). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "mpiio.h"
#include "mpiio_file.h"
#include "pio_calls.h"

int ist_pio_on;
static pio_ctx *ctx;
static MPI_Comm clients = MPI_COMM_NULL;
static struct ist_pio_file *files; /* the files pio holds, a list */

/* ---- the servers --------------------------------------------------------------------- */

static _Noreturn void end_job(int status, const char *fmt, const char *what)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        fprintf(stderr, fmt, what);
        fputc('\n', stderr);
    }
    ist_mpich_finalize_begin();
    PMPI_Finalize();
    exit(status);
}

void ist_pio_start(int fortran)
{
    const char *on = getenv("ISTHMUS_PIO_MPIIO");
    if (!on || strcmp(on, "1") != 0) return;
    if (fortran)
        end_job(2, "isthmus: %s: MPI-IO on pio ([io] mpiio = true) serves C programs; "
                   "this one is Fortran (docs/mpiio.md)", "mpiio");
    if (getenv("ISTHMUS_ZIP_SITES") && *getenv("ISTHMUS_ZIP_SITES"))
        end_job(2, "isthmus: %s: MPI-IO on pio does not run under zipper forwarding yet", "mpiio");
    ist_depth++; /* pio's own MPI calls pass through the wrappers */
    int rc = pio_init(MPI_COMM_WORLD, NULL, &ctx, &clients);
    ist_depth--;
    if (rc == PIO_SERVED) { /* a server: the clients have finalized */
        ist_mpich_finalize_begin();
        PMPI_Finalize();
        exit(0);
    }
    if (rc != PIO_OK) end_job(2, "isthmus: %s", pio_last_error());
    ist_pio_on = 1;
    ist_app_world = clients;
}

void ist_pio_stop(void)
{
    if (!ist_pio_on) return;
    while (files) { /* left open by the application: closed, as MPI_Finalize would */
        MPI_File fh = files->handle;
        ist_pio_File_close(&fh);
    }
    ist_depth++;
    pio_finalize(ctx);
    ist_depth--;
    ist_app_world = MPI_COMM_WORLD;
    PMPI_Comm_free(&clients);
    ist_pio_on = 0;
}

/* ---- handles and errors -------------------------------------------------------------- */

struct ist_pio_file *ist_pio_of(MPI_File fh)
{
    for (struct ist_pio_file *f = files; f; f = f->next)
        if (f->handle == fh) return f;
    return NULL;
}

int ist_pio_holds(MPI_File fh) { return ist_pio_of(fh) != NULL; }

/* The file's error handler; before there is a file, MPI_FILE_NULL's, which the MPI lets
 * no one call: fatal ends the job, any other returns the class. */
static void raise(MPI_File fh, int class)
{
    if (fh != MPI_FILE_NULL) {
        PMPI_File_call_errhandler(fh, class);
        return;
    }
    MPI_Errhandler eh = MPI_ERRORS_RETURN;
    PMPI_File_get_errhandler(MPI_FILE_NULL, &eh);
    if (eh == MPI_ERRORS_ARE_FATAL) PMPI_Abort(MPI_COMM_WORLD, class);
    if (eh != MPI_ERRORS_RETURN && eh != MPI_ERRORS_ARE_FATAL) PMPI_Errhandler_free(&eh);
}

int ist_pio_error(MPI_File fh, const char *call, int code)
{
    int class = code == PIO_ENOENT ? MPI_ERR_NO_SUCH_FILE
              : code == PIO_EINVAL ? MPI_ERR_ARG
              : code == PIO_EMPI   ? MPI_ERR_OTHER
                                   : MPI_ERR_IO;
    fprintf(stderr, "isthmus: %s: %s\n", call, pio_last_error());
    raise(fh, class);
    return class;
}

int ist_pio_fail(MPI_File fh, const char *call, const char *why)
{
    fprintf(stderr, "isthmus: %s: %s\n", call, why);
    raise(fh, MPI_ERR_ARG);
    return MPI_ERR_ARG;
}

int ist_pio_refuse(MPI_File fh, const char *call)
{
    const struct ist_pio_file *f = ist_pio_of(fh);
    fprintf(stderr, "isthmus: %s on pio:%s: not supported by MPI-IO on pio (docs/mpiio.md)\n", call,
            f ? f->name : "?");
    raise(fh, MPI_ERR_UNSUPPORTED_OPERATION);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

/* A refusal before there is a file: MPI_FILE_NULL's error handler, as MPI_File_open's. */
static int refuse_open(const char *name, const char *why)
{
    fprintf(stderr, "isthmus: MPI_File_open of '%s': %s (docs/mpiio.md)\n", name, why);
    raise(MPI_FILE_NULL, MPI_ERR_UNSUPPORTED_OPERATION);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

/* A datatype as get_view returns it: predefined ones themselves, others a copy. */
static MPI_Datatype kept(MPI_Datatype type)
{
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED) return type;
    MPI_Datatype copy;
    PMPI_Type_dup(type, &copy);
    return copy;
}

static void drop(MPI_Datatype *type)
{
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(*type, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(type);
}

/* ---- open, close, delete ------------------------------------------------------------- */

int ist_pio_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    const char *name = filename + 4;
    if (!ist_pio_on) return refuse_open(filename, "pio is off: give the platform's [io] table mpiio = true");
    int access = amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
    if (access != MPI_MODE_RDONLY && access != MPI_MODE_WRONLY && access != MPI_MODE_RDWR)
        return refuse_open(filename, "expected exactly one of MPI_MODE_RDONLY, WRONLY, RDWR");
    if (amode & (MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_SEQUENTIAL))
        return refuse_open(filename, "MPI_MODE_EXCL, DELETE_ON_CLOSE and SEQUENTIAL are not supported");
    int flags = (access == MPI_MODE_RDONLY ? PIO_RDONLY : access == MPI_MODE_WRONLY ? PIO_WRONLY : PIO_RDWR) |
                (amode & MPI_MODE_CREATE ? PIO_CREATE : 0);
    struct ist_pio_file *f = calloc(1, sizeof *f);
    if (!f) return refuse_open(filename, "out of memory");
    ist_depth++;
    int rc = pio_open_on(ctx, comm, name, flags, &f->file);
    int64_t size = 0;
    if (!rc && (amode & MPI_MODE_APPEND)) rc = pio_size(f->file, &size);
    ist_depth--;
    if (rc) {
        free(f);
        return ist_pio_error(MPI_FILE_NULL, "MPI_File_open", rc);
    }
    if (PMPI_File_open(MPI_COMM_SELF, "/dev/null", MPI_MODE_RDONLY, MPI_INFO_NULL, &f->handle)) {
        ist_depth++;
        pio_close(f->file);
        ist_depth--;
        free(f);
        return refuse_open(filename, "the MPI could not open /dev/null, the handle behind a pio file");
    }
    PMPI_Comm_dup(comm, &f->comm);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->amode = amode;
    if (info == MPI_INFO_NULL) PMPI_Info_create(&f->info);
    else PMPI_Info_dup(info, &f->info);
    f->etype = f->filetype = MPI_BYTE;
    f->etype_size = 1;
    f->pointer = size;
    f->next = files;
    files = f;
    *fh = f->handle;
    if (size) ist_pio_File_seek_shared(f->handle, size, MPI_SEEK_SET);
    return MPI_SUCCESS;
}

int ist_pio_File_close(MPI_File *fh)
{
    struct ist_pio_file *f = ist_pio_of(*fh), **link = &files;
    while (*link != f) link = &(*link)->next;
    *link = f->next;
    ist_depth++;
    int rc = pio_close(f->file);
    ist_depth--;
    MPI_File handle = f->handle;
    PMPI_Comm_free(&f->comm);
    PMPI_Info_free(&f->info);
    drop(&f->etype);
    drop(&f->filetype);
    free(f);
    int mrc = rc ? ist_pio_error(handle, "MPI_File_close", rc) : MPI_SUCCESS;
    PMPI_File_close(&handle);
    *fh = MPI_FILE_NULL;
    return mrc;
}

int ist_pio_File_delete(const char *filename, MPI_Info info)
{
    (void)info;
    if (!ist_pio_on) return refuse_open(filename, "pio is off: give the platform's [io] table mpiio = true");
    ist_depth++;
    int rc = pio_delete(ctx, filename + 4);
    ist_depth--;
    return rc ? ist_pio_error(MPI_FILE_NULL, "MPI_File_delete", rc) : MPI_SUCCESS;
}

/* ---- the view and the pointers ------------------------------------------------------- */

int ist_pio_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                          const char *datarep, MPI_Info info)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    (void)info;
    if (strcmp(datarep, "native") != 0) return ist_pio_refuse(fh, "MPI_File_set_view with a datarep but \"native\"");
    int esize = 0;
    PMPI_Type_size(etype, &esize);
    if (esize <= 0) return ist_pio_fail(fh, "MPI_File_set_view", "an etype that holds no data");
    ist_depth++;
    int rc = pio_set_view_datatype(f->file, disp, filetype);
    ist_depth--;
    if (rc) return ist_pio_error(fh, "MPI_File_set_view", rc);
    drop(&f->etype);
    drop(&f->filetype);
    f->etype = kept(etype);
    f->filetype = kept(filetype);
    f->etype_size = esize;
    f->disp = disp;
    f->pointer = 0;
    snprintf(f->datarep, sizeof f->datarep, "%s", datarep);
    return ist_pio_File_seek_shared(fh, 0, MPI_SEEK_SET); /* collective, as set_view is */
}

int ist_pio_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                          char *datarep)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    *disp = f->disp;
    *etype = kept(f->etype);
    *filetype = kept(f->filetype);
    strcpy(datarep, "native");
    return MPI_SUCCESS;
}

/* The view's end of file, in etypes: how many of its etypes lie below the file's size. */
static int end_of_file(struct ist_pio_file *f, MPI_Offset *end)
{
    int64_t size = 0;
    ist_depth++;
    int rc = pio_size(f->file, &size);
    ist_depth--;
    if (!rc) *end = pio_view_bytes_below(f->file, size) / f->etype_size;
    return rc;
}

int ist_pio_File_seek(MPI_File fh, MPI_Offset offset, int whence)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    MPI_Offset base = whence == MPI_SEEK_CUR ? f->pointer : 0;
    if (whence == MPI_SEEK_END) {
        int rc = end_of_file(f, &base);
        if (rc) return ist_pio_error(fh, "MPI_File_seek", rc);
    }
    if (base + offset < 0) return ist_pio_fail(fh, "MPI_File_seek", "a position before the view's start");
    f->pointer = base + offset;
    return MPI_SUCCESS;
}

int ist_pio_File_get_position(MPI_File fh, MPI_Offset *offset)
{
    *offset = ist_pio_of(fh)->pointer;
    return MPI_SUCCESS;
}

int ist_pio_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    *disp = pio_view_offset(f->file, offset * f->etype_size);
    return MPI_SUCCESS;
}

/* Collective, every rank with the same arguments: rank 0 moves the pointer server 0 keeps. */
int ist_pio_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    int rank, rc = PIO_OK;
    PMPI_Comm_rank(f->comm, &rank);
    PMPI_Barrier(f->comm); /* every rank's use of the old pointer has ended */
    if (rank == 0) {
        int64_t now = 0;
        MPI_Offset base = 0;
        ist_depth++;
        if (whence == MPI_SEEK_CUR) rc = pio_shared_pointer(f->file, 0, 0, &now);
        ist_depth--;
        base = now;
        if (!rc && whence == MPI_SEEK_END) rc = end_of_file(f, &base);
        ist_depth++;
        if (!rc) rc = pio_shared_pointer(f->file, 1, base + offset, NULL);
        ist_depth--;
    }
    PMPI_Bcast(&rc, 1, MPI_INT, 0, f->comm);
    return rc ? ist_pio_error(fh, "MPI_File_seek_shared", rc) : MPI_SUCCESS;
}

int ist_pio_File_get_position_shared(MPI_File fh, MPI_Offset *offset)
{
    int64_t now = 0;
    ist_depth++;
    int rc = pio_shared_pointer(ist_pio_of(fh)->file, 0, 0, &now);
    ist_depth--;
    *offset = now;
    return rc ? ist_pio_error(fh, "MPI_File_get_position_shared", rc) : MPI_SUCCESS;
}

/* ---- size, sync, and what the file was opened with ------------------------------------ */

int ist_pio_File_get_size(MPI_File fh, MPI_Offset *size)
{
    int64_t bytes = 0;
    ist_depth++;
    int rc = pio_size(ist_pio_of(fh)->file, &bytes);
    ist_depth--;
    *size = bytes;
    return rc ? ist_pio_error(fh, "MPI_File_get_size", rc) : MPI_SUCCESS;
}

int ist_pio_File_set_size(MPI_File fh, MPI_Offset size)
{
    ist_depth++;
    int rc = pio_set_size(ist_pio_of(fh)->file, size);
    ist_depth--;
    return rc ? ist_pio_error(fh, "MPI_File_set_size", rc) : MPI_SUCCESS;
}

int ist_pio_File_preallocate(MPI_File fh, MPI_Offset size)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    MPI_Offset now = 0, largest = 0;
    int rc = ist_pio_File_get_size(fh, &now);
    PMPI_Allreduce(&now, &largest, 1, MPI_OFFSET, MPI_MAX, f->comm);
    if (rc == MPI_SUCCESS && largest < size) rc = ist_pio_File_set_size(fh, size);
    return rc;
}

int ist_pio_File_sync(MPI_File fh)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    ist_depth++;
    int rc = pio_flush(f->file);
    ist_depth--;
    PMPI_Barrier(f->comm); /* collective: every rank's writes are on disk when it returns */
    return rc ? ist_pio_error(fh, "MPI_File_sync", rc) : MPI_SUCCESS;
}

int ist_pio_File_get_amode(MPI_File fh, int *amode)
{
    *amode = ist_pio_of(fh)->amode;
    return MPI_SUCCESS;
}

int ist_pio_File_get_group(MPI_File fh, MPI_Group *group) { return PMPI_Comm_group(ist_pio_of(fh)->comm, group); }

int ist_pio_File_get_info(MPI_File fh, MPI_Info *info_used) { return PMPI_Info_dup(ist_pio_of(fh)->info, info_used); }

int ist_pio_File_set_info(MPI_File fh, MPI_Info info)
{
    struct ist_pio_file *f = ist_pio_of(fh);
    if (info == MPI_INFO_NULL) return MPI_SUCCESS;
    PMPI_Info_free(&f->info);
    return PMPI_Info_dup(info, &f->info);
}

int ist_pio_File_get_atomicity(MPI_File fh, int *flag)
{
    (void)fh;
    *flag = 0;
    return MPI_SUCCESS;
}

int ist_pio_File_set_atomicity(MPI_File fh, int flag)
{
    if (flag) return ist_pio_refuse(fh, "MPI_File_set_atomicity with flag 1 (atomic mode)");
    return MPI_SUCCESS;
}

int ist_pio_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent)
{
    (void)fh;
    MPI_Aint lb;
    return PMPI_Type_get_extent(datatype, &lb, extent);
}
