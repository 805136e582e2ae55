/* File views from MPI datatypes (pio_datatype.c): an MPI-IO view's filetype as the list of
 * contiguous byte blocks it selects, in the order of the view's stream, as ROMIO flattens
 * it (ADIOI_Flatten) and pio's requests are planned from. */
#ifndef ISTHMUS_PIO_DATATYPE_H
#define ISTHMUS_PIO_DATATYPE_H

#include <mpi.h>
#include <stdint.h>

struct pio_block {
    int64_t off, len; /* bytes from the start of the datatype's instance */
};

/* One instance of a datatype: its blocks in typemap (stream) order, adjacent ones merged,
 * its lower bound and extent (the next instance starts `extent` bytes later), and its
 * size (the bytes of data it holds). */
struct pio_typemap {
    int64_t lb, extent, size;
    int n, cap;
    struct pio_block *b;
};

/* The typemap of `type`, decoded with MPI_Type_get_envelope/contents: every combiner of
 * MPI-3.1 but the deprecated *_INTEGER forms and Fortran parameterized types of unknown
 * size. PIO_OK, or PIO_EINVAL with the reason in pio_last_error() (out is then empty). */
int pio_typemap_of(MPI_Datatype type, struct pio_typemap *out);
/* A filetype's typemap fit for a view: displacements non-negative and nondecreasing, no
 * byte twice, also across instances (MPI-IO's rule for filetypes). PIO_OK or PIO_EINVAL. */
int pio_typemap_check_view(const struct pio_typemap *t);
/* The file offset of byte `pos` of a view's stream: instance pos / size, at disp. */
int64_t pio_typemap_offset(const struct pio_typemap *t, int64_t disp, int64_t pos);
void pio_typemap_free(struct pio_typemap *t);

#endif
