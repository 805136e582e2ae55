/* What libisthmus needs to know about an MPI datatype, and buffers of one: sizes,
 * extents, contiguity, temporary buffers, typed copies and packing. No communicator
 * (MPI_COMM_SELF at most): the bottom of the C side (docs/architecture.md). */
#ifndef ISTHMUS_DATATYPE_H
#define ISTHMUS_DATATYPE_H

#include <mpi.h>

/* count elements of type, in bytes (the type's size, not its extent). */
long ist_type_bytes(int count, MPI_Datatype type);
MPI_Aint ist_extent(MPI_Datatype type);
/* Whether count elements of type lie in memory as one block of ist_type_bytes(count,
 * type) bytes, starting at buf + *offset (the true lower bound). */
int ist_type_contiguous(int count, MPI_Datatype type, MPI_Aint *offset);

/* A temporary buffer for count elements of type: base is where element 0 goes. */
struct ist_tmp {
    char *mem;
    char *base;
};
int ist_tmp_alloc(struct ist_tmp *t, int count, MPI_Datatype type);
void ist_tmp_free(struct ist_tmp *t);
/* dst = src for count elements of type (any datatype). */
int ist_copy_typed(const void *src, void *dst, int count, MPI_Datatype type);
/* Bytes of count elements of type, packed. */
long ist_packed_size(int count, MPI_Datatype type);
/* Pack count elements at buf into out (at *pos, advanced). */
int ist_pack(const void *buf, int count, MPI_Datatype type, char *out, long size, long *pos);
int ist_unpack(const char *in, long size, long *pos, void *buf, int count, MPI_Datatype type);

#endif
