/* Fortran entries written by hand for the unprofiled calls src/world/zip answers for
 * spanning communicators (communicator size and rank, groups, topologies: group '-' of
 * src/layer/mpi_functions.txt, which gets no generated Fortran). Open MPI's Fortran calls
 * PMPI_X past the C functions, so under Open MPI these convert the arguments and call
 * ist_world_X; MPICH's Fortran calls the C MPI_X by itself and needs none. Fortran
 * integers and LOGICALs are C ints here (gfortran: .true. is 1). */
#ifndef ISTHMUS_ZIP_FORTRAN_H
#define ISTHMUS_ZIP_FORTRAN_H

#include <mpi.h>

#ifdef OPEN_MPI
/* name_ is the entry; the other spellings are aliases of it. */
#define IST_ZIP_FORTRAN(lower, upper, params)                              \
    void lower params __attribute__((alias(#lower "_")));                  \
    void lower##__ params __attribute__((alias(#lower "_")));              \
    void upper params __attribute__((alias(#lower "_")));
#endif

#endif
