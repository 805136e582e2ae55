/* Datatype helpers (datatype.h). The site's MPI answers every question (PMPI_ only). */
#include <stdlib.h>

#include "datatype.h"

long ist_type_bytes(int count, MPI_Datatype type)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(type, &size);
    return (long)count * (long)size;
}

MPI_Aint ist_extent(MPI_Datatype type)
{
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(type, &lb, &extent);
    return extent;
}

int ist_type_contiguous(int count, MPI_Datatype type, MPI_Aint *offset)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    *offset = true_lb;
    const long size = ist_type_bytes(1, type);
    return count <= 1 ? true_extent == size : (extent == size && true_extent == size);
}

int ist_tmp_alloc(struct ist_tmp *t, int count, MPI_Datatype type)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    size_t bytes = count > 0 ? (size_t)true_extent + (size_t)(count - 1) * (size_t)extent : 1;
    t->mem = malloc(bytes ? bytes : 1);
    t->base = t->mem ? t->mem - true_lb : NULL;
    return t->mem ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void ist_tmp_free(struct ist_tmp *t)
{
    free(t->mem);
    t->mem = t->base = NULL;
}

int ist_copy_typed(const void *src, void *dst, int count, MPI_Datatype type)
{
    if (count == 0 || src == dst) return MPI_SUCCESS;
    return PMPI_Sendrecv(src, count, type, 0, 0, dst, count, type, 0, 0, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
}

long ist_packed_size(int count, MPI_Datatype type)
{
    int size = 0;
    PMPI_Pack_size(count, type, MPI_COMM_SELF, &size);
    return size;
}

int ist_pack(const void *buf, int count, MPI_Datatype type, char *out, long size, long *pos)
{
    int p = (int)*pos;
    int rc = PMPI_Pack(buf, count, type, out, (int)size, &p, MPI_COMM_SELF);
    *pos = p;
    return rc;
}

int ist_unpack(const char *in, long size, long *pos, void *buf, int count, MPI_Datatype type)
{
    int p = (int)*pos;
    int rc = PMPI_Unpack(in, (int)size, &p, buf, count, type, MPI_COMM_SELF);
    *pos = p;
    return rc;
}
