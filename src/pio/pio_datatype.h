/* File views from MPI datatypes (pio_datatype.c): an MPI-IO view's filetype as the list of
 * contiguous byte blocks it selects, in the order of the view's stream, as ROMIO flattens
 * it (ADIOI_Flatten) and pio's requests are planned from. */
#ifndef ISTHMUS_PIO_DATATYPE_H
#define ISTHMUS_PIO_DATATYPE_H

#include <mpi.h>
#include <stdint.h>

#include "pio_layout.h" /* struct pio_typemap, and what needs no MPI */

/* The typemap of `type`, decoded with MPI_Type_get_envelope/contents: every combiner of
 * MPI-3.1 but the deprecated *_INTEGER forms and Fortran parameterized types of unknown
 * size. PIO_OK, or PIO_EINVAL with the reason in pio_last_error() (out is then empty). */
int pio_typemap_of(MPI_Datatype type, struct pio_typemap *out);

#endif
