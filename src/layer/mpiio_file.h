/* What mpiio_files.c and mpiio_transfer.c share: a file pio holds, as MPI-IO sees it. */
#ifndef ISTHMUS_MPIIO_FILE_H
#define ISTHMUS_MPIIO_FILE_H

#include <mpi.h>

#include "pio.h"

struct ist_pio_file {
    MPI_File handle;                /* the MPI's file of /dev/null the application holds */
    pio_file *file;
    MPI_Comm comm;                  /* a duplicate of the communicator it was opened on */
    int amode;
    MPI_Info info;
    MPI_Offset disp;                /* the view: etype, filetype as the application gave them */
    MPI_Datatype etype, filetype;
    int etype_size;
    char datarep[32];
    MPI_Offset pointer;             /* the individual file pointer, in etypes */
    MPI_Count split_bytes;          /* a split collective begun and not ended: its bytes */
    int split_open;
    char name[256];
    struct ist_pio_file *next;
};

struct ist_pio_file *ist_pio_of(MPI_File fh);
/* A pio call that failed (code < 0, the reason in pio_last_error): one line on stderr,
 * then the file's error handler with the MPI error class. Returns the class. */
int ist_pio_error(MPI_File fh, const char *call, int code);
/* The same for a reason of the layer's own. */
int ist_pio_fail(MPI_File fh, const char *call, const char *why);
/* seek_shared's work (collective over the file's communicator). */
int ist_pio_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence);

#endif
