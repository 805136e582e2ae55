/* pio's datatype decoder (src/pio/pio_datatype.c) against the MPI's own typemaps: for a
 * datatype of every constructor, alone and nested, where every byte of its stream lands
 * (pio_typemap_offset) must be where MPI_Unpack puts it; and the view checks refuse what
 * MPI-IO forbids. Prints "view_check: N datatypes, M bytes compared, K differ" and exits
 * 1 when K > 0. One process: a darray is built for every rank of its grid here. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pio.h"
#include "pio_datatype.h"

static int ntypes, ndiffer;
static long long nbytes;

/* Where MPI_Unpack puts each byte of one instance's stream, relative to its origin. */
static int64_t *oracle(MPI_Datatype t, int size)
{
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(t, &tlb, &text);
    unsigned char *buf = malloc((size_t)text + 1), *stream = malloc((size_t)size + 1);
    unsigned char *origin = buf - tlb;
    int64_t *where = malloc(((size_t)size + 1) * sizeof *where);
    unsigned char *seen = calloc((size_t)text + 1, 1);
    uint32_t *index = calloc((size_t)text + 1, sizeof *index);
    memset(stream, 0xff, (size_t)size); /* which bytes are written */
    memset(buf, 0, (size_t)text);
    int pos = 0;
    MPI_Unpack(stream, size, &pos, origin, 1, t, MPI_COMM_SELF);
    for (MPI_Aint b = 0; b < text; b++) seen[b] = buf[b] == 0xff;
    for (int pass = 0; pass < 3; pass++) { /* each written byte's stream index, 8 bits a pass */
        for (int i = 0; i < size; i++) stream[i] = (unsigned char)(i >> (8 * pass));
        pos = 0;
        MPI_Unpack(stream, size, &pos, origin, 1, t, MPI_COMM_SELF);
        for (MPI_Aint b = 0; b < text; b++) index[b] |= (uint32_t)buf[b] << (8 * pass);
    }
    for (int i = 0; i < size; i++) where[i] = INT64_MIN;
    for (MPI_Aint b = 0; b < text; b++)
        if (seen[b] && index[b] < (uint32_t)size) where[index[b]] = tlb + b;
    free(buf), free(stream), free(seen), free(index);
    return where;
}

/* Frees t unless it is predefined. */
static void done_with(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED) MPI_Type_free(&t);
}

static void check(const char *name, MPI_Datatype t)
{
    MPI_Type_commit(&t);
    int size;
    MPI_Aint lb, extent;
    MPI_Type_size(t, &size);
    MPI_Type_get_extent(t, &lb, &extent);
    struct pio_typemap m;
    ntypes++;
    if (pio_typemap_of(t, &m) != PIO_OK) {
        printf("view_check: %s: %s\n", name, pio_last_error());
        ndiffer++;
        done_with(t);
        return;
    }
    int64_t *where = oracle(t, size);
    int bad = m.size != size || m.lb != lb || m.extent != extent;
    if (bad)
        printf("view_check: %s: size %lld lb %lld extent %lld, MPI says %d %lld %lld\n", name,
               (long long)m.size, (long long)m.lb, (long long)m.extent, size, (long long)lb,
               (long long)extent);
    for (int i = 0; i < size && !bad; i++) {
        int64_t got = pio_typemap_offset(&m, 0, i), next = pio_typemap_offset(&m, 1000, i + size);
        nbytes++;
        if (got != where[i] || next != 1000 + extent + where[i]) {
            printf("view_check: %s: stream byte %d at %lld (next instance %lld), MPI puts it at "
                   "%lld\n", name, i, (long long)got, (long long)next, (long long)where[i]);
            bad = 1;
        }
    }
    ndiffer += bad;
    free(where);
    pio_typemap_free(&m);
    done_with(t);
}

/* A view the checks must refuse, and what the one line says. */
static void refused(const char *name, MPI_Datatype t, const char *says)
{
    MPI_Type_commit(&t);
    struct pio_typemap m;
    ntypes++;
    int rc = pio_typemap_of(t, &m);
    if (rc == PIO_OK) rc = pio_typemap_check_view(&m);
    if (rc == PIO_OK || !strstr(pio_last_error(), says)) {
        printf("view_check: %s: expected a refusal naming '%s', got %d '%s'\n", name, says, rc,
               pio_last_error());
        ndiffer++;
    }
    pio_typemap_free(&m);
    MPI_Type_free(&t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Datatype a, b, c;
    check("int", MPI_INT);
    MPI_Type_contiguous(5, MPI_DOUBLE, &a), check("contiguous", a);
    MPI_Type_vector(4, 3, 7, MPI_INT, &a), check("vector", a);
    MPI_Type_contiguous(3, MPI_SHORT, &b);
    MPI_Type_create_hvector(3, 2, 40, b, &a), check("hvector of contiguous", a);
    MPI_Type_free(&b);
    MPI_Type_indexed(3, (int[]){2, 1, 3}, (int[]){0, 5, 9}, MPI_INT, &a), check("indexed", a);
    MPI_Type_create_hindexed(2, (int[]){3, 1}, (MPI_Aint[]){4, 40}, MPI_CHAR, &a);
    check("hindexed", a);
    MPI_Type_create_indexed_block(3, 2, (int[]){1, 4, 8}, MPI_FLOAT, &a), check("indexed_block", a);
    MPI_Type_create_hindexed_block(2, 3, (MPI_Aint[]){0, 100}, MPI_SHORT, &a);
    check("hindexed_block", a);
    MPI_Type_create_struct(3, (int[]){1, 2, 1}, (MPI_Aint[]){0, 8, 32},
                           (MPI_Datatype[]){MPI_INT, MPI_DOUBLE, MPI_CHAR}, &c);
    MPI_Type_dup(c, &a), check("dup of struct", a);
    MPI_Type_vector(3, 1, 2, c, &a), check("vector of struct", a);
    MPI_Type_free(&c);
    MPI_Type_create_subarray(3, (int[]){6, 5, 4}, (int[]){2, 3, 2}, (int[]){1, 1, 2}, MPI_ORDER_C,
                             MPI_INT, &a);
    check("subarray 3-D C", a);
    MPI_Type_create_subarray(2, (int[]){7, 5}, (int[]){3, 2}, (int[]){4, 1}, MPI_ORDER_FORTRAN,
                             MPI_DOUBLE, &a);
    check("subarray 2-D Fortran", a);
    MPI_Type_vector(2, 2, 3, MPI_INT, &b);
    MPI_Type_create_resized(b, 0, 40, &c);
    MPI_Type_create_subarray(2, (int[]){4, 3}, (int[]){2, 2}, (int[]){1, 0}, MPI_ORDER_C, c, &a);
    check("subarray of resized vector", a);
    MPI_Type_free(&b);
    MPI_Type_free(&c);
    char name[64];
    for (int r = 0; r < 6; r++) { /* every rank of a 2 x 3 grid */
        MPI_Type_create_darray(6, r, 2, (int[]){7, 9},
                               (int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
                               (int[]){MPI_DISTRIBUTE_DFLT_DARG, 2}, (int[]){2, 3}, MPI_ORDER_C,
                               MPI_DOUBLE, &a);
        snprintf(name, sizeof name, "darray block x cyclic(2), rank %d", r), check(name, a);
        MPI_Type_create_darray(6, r, 3, (int[]){5, 4, 6},
                               (int[]){MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK},
                               (int[]){MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, 2},
                               (int[]){2, 1, 3}, MPI_ORDER_FORTRAN, MPI_INT, &a);
        snprintf(name, sizeof name, "darray 3-D Fortran, rank %d", r), check(name, a);
    }
    MPI_Type_vector(2, 1, 3, MPI_INT, &b);
    MPI_Type_create_resized(b, -4, 64, &a), check("resized with a negative lower bound", a);
    MPI_Type_free(&b);
    MPI_Type_create_hindexed(2, (int[]){1, 1}, (MPI_Aint[]){8, 0}, MPI_INT, &a);
    refused("decreasing displacements", a, "decrease");
    MPI_Type_create_hindexed(1, (int[]){1}, (MPI_Aint[]){-8}, MPI_INT, &a);
    refused("a negative displacement", a, "negative");
    MPI_Type_create_resized(MPI_INT, 0, 2, &a);
    refused("instances that overlap", a, "overlap");
    printf("view_check: %d datatypes, %lld bytes compared, %d differ\n", ntypes, nbytes, ndiffer);
    MPI_Finalize();
    return ndiffer ? 1 : 0;
}
