/* MPI-IO on pio (docs/mpiio.md): unmodified programs' files named "pio:NAME" are striped
 * over pio's I/O servers (src/pio), the others go to the MPI's own MPI-IO untouched.
 *
 * With the platform's [io] mpiio = true (ISTHMUS_PIO_MPIIO=1), the servers are ranks of
 * the job the application never sees: at MPI_Init they serve until the clients finalize,
 * and the application's MPI_COMM_WORLD is the other ranks (ist_app_world, world.h). A file
 * pio holds has a real MPI_File behind its handle (an MPI-IO file of /dev/null, opened on
 * MPI_COMM_SELF), so that the calls pio need not serve (error handlers, c2f) are the
 * MPI's own; the generated wrappers send every other call on such a file here
 * (pio_calls.h: ist_pio_X, with MPI_File_X's arguments). */
#ifndef ISTHMUS_MPIIO_H
#define ISTHMUS_MPIIO_H

#include <mpi.h>
#include <string.h>

extern int ist_pio_on; /* ISTHMUS_PIO_MPIIO: servers hidden in the job, pio: files */

/* Whether fh is a file pio holds. */
int ist_pio_holds(MPI_File fh);
static inline int ist_pio_handle(MPI_File fh)
{
    return ist_pio_on && fh != MPI_FILE_NULL && ist_pio_holds(fh);
}
/* Whether a name selects pio (its prefix, "pio:"); without [io] mpiio, MPI_File_open says
 * so in one line rather than passing the name to the MPI. */
static inline int ist_pio_name(const char *name)
{
    return name && strncmp(name, "pio:", 4) == 0;
}
/* A call pio does not serve on its files: one line on stderr naming it, and the file's
 * error handler called with MPI_ERR_UNSUPPORTED_OPERATION. */
int ist_pio_refuse(MPI_File fh, const char *call);

/* At MPI_Init, right after the MPI's: with [io] mpiio, a server rank serves and ends its
 * process when the clients finalize (it never returns); a client sets ist_app_world.
 * From Fortran (fortran set) it ends the job with one line: not served yet. */
void ist_pio_start(int fortran);
/* At MPI_Finalize, before the MPI's: the clients release the servers. */
void ist_pio_stop(void);

#endif
