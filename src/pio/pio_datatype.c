/* A datatype's typemap as contiguous blocks (pio_datatype.h), decoded recursively from
 * MPI_Type_get_envelope/contents as ROMIO's ADIOI_Flatten does: each constructor places
 * copies of its old type's blocks, whose own typemap is decoded once.
 *
 * When: at MPI_File_set_view on a file pio serves, once per view. Cost: proportional to
 * the blocks of one instance of the filetype (a vector of n blocks: n), not to its extent;
 * a darray of a process's share of an array: one block per row of its share. */
#include <stdlib.h>
#include <string.h>

#include "pio_client.h"
#include "pio_datatype.h"
#include "pio_layout.h"

static int add(struct pio_typemap *t, int64_t off, int64_t len)
{
    if (len <= 0) return PIO_OK;
    t->size += len;
    if (t->n && t->b[t->n - 1].off + t->b[t->n - 1].len == off) { /* adjacent: merge */
        t->b[t->n - 1].len += len;
        return PIO_OK;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        struct pio_block *b = realloc(t->b, (size_t)cap * sizeof *b);
        if (!b) return pio_fail(PIO_EINVAL, "pio: out of memory decoding a datatype");
        t->b = b;
        t->cap = cap;
    }
    t->b[t->n++] = (struct pio_block){off, len};
    return PIO_OK;
}

/* `count` instances of `old` one after the other (extent apart), from `off` on. */
static int place(struct pio_typemap *t, const struct pio_typemap *old, int64_t off, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        for (int k = 0; k < old->n; k++) {
            int rc = add(t, off + i * old->extent + old->b[k].off, old->b[k].len);
            if (rc) return rc;
        }
    return PIO_OK;
}

/* A darray's owned indices along one dimension (MPI-3.1 section 4.1.4), as intervals
 * [lo, hi) of the global index in order; returns how many. */
static int darray_dim(int64_t g, int dist, int darg, int p, int c, int64_t *lo, int64_t *hi)
{
    int n = 0;
    if (dist == MPI_DISTRIBUTE_NONE) {
        lo[n] = 0, hi[n++] = g;
    } else if (dist == MPI_DISTRIBUTE_BLOCK) {
        int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        int64_t a = c * b, z = a + b < g ? a + b : g;
        if (a < z) lo[n] = a, hi[n++] = z;
    } else { /* cyclic(b) */
        int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        for (int64_t a = c * b; a < g; a += p * b) lo[n] = a, hi[n++] = a + b < g ? a + b : g;
    }
    return n;
}

#define MAX_DIMS 16

/* The elements of an nd-dimensional array of `old` (extents `sizes`) whose index along
 * dimension d lies in one of its n[d] intervals [lo[d][i], hi[d][i]), in the array's order
 * (C: the last dimension fastest; Fortran: the first): subarrays and darrays. */
static int grid(struct pio_typemap *t, const struct pio_typemap *old, int nd, const int64_t *sizes,
                int64_t *const *lo, int64_t *const *hi, const int *n, int order)
{
    int dim[MAX_DIMS]; /* dim[k]: the k-th dimension, slowest first */
    int64_t stride[MAX_DIMS], s = 1;
    for (int k = 0; k < nd; k++) dim[k] = order == MPI_ORDER_C ? k : nd - 1 - k;
    for (int k = nd - 1; k >= 0; k--) stride[dim[k]] = s, s *= sizes[dim[k]];
    for (int d = 0; d < nd; d++)
        if (n[d] == 0) return PIO_OK; /* nothing of the array is selected */
    /* the outer dimensions walk index by index (an odometer), the innermost by intervals */
    int at[MAX_DIMS] = {0};
    int64_t idx[MAX_DIMS];
    for (int k = 0; k < nd - 1; k++) idx[k] = lo[dim[k]][0];
    const int in = dim[nd - 1];
    for (;;) {
        int64_t base = 0;
        for (int k = 0; k < nd - 1; k++) base += idx[k] * stride[dim[k]];
        for (int i = 0; i < n[in]; i++) {
            int rc = place(t, old, (base + lo[in][i]) * old->extent, hi[in][i] - lo[in][i]);
            if (rc) return rc;
        }
        int k = nd - 2;
        for (; k >= 0; k--) { /* the next index of dimension dim[k], carrying into slower ones */
            int d = dim[k];
            if (++idx[k] < hi[d][at[k]]) break;
            if (++at[k] < n[d]) {
                idx[k] = lo[d][at[k]];
                break;
            }
            at[k] = 0;
            idx[k] = lo[d][0];
        }
        if (k < 0) return PIO_OK;
    }
}

static int decode(MPI_Datatype type, struct pio_typemap *t);

/* The typemap of a type got from MPI_Type_get_contents, which is freed after (unless
 * predefined, which may not be). */
static int decode_old(MPI_Datatype old, struct pio_typemap *t)
{
    int ni, na, nd, combiner;
    int rc = decode(old, t);
    MPI_Type_get_envelope(old, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED) MPI_Type_free(&old);
    return rc;
}

/* A subarray's or darray's intervals per dimension, then its elements (grid). */
static int array_type(struct pio_typemap *t, const int *ints, MPI_Datatype oldtype, int darray)
{
    struct pio_typemap old = {0};
    int rc = decode_old(oldtype, &old);
    const int nd = ints[darray ? 2 : 0];
    if (rc == PIO_OK && (nd < 1 || nd > MAX_DIMS))
        rc = pio_fail(PIO_EINVAL, "pio: a file view of %d dimensions: at most %d", nd, MAX_DIMS);
    /* subarray: ndims, sizes, subsizes, starts, order; darray: size, rank, ndims, gsizes,
     * distribs, dargs, psizes, order */
    const int *sz = darray ? ints + 3 : ints + 1;
    int64_t sizes[MAX_DIMS], *lo[MAX_DIMS] = {0}, *hi[MAX_DIMS] = {0};
    int n[MAX_DIMS], coord[MAX_DIMS], rank = darray ? ints[1] : 0;
    for (int d = nd - 1; rc == PIO_OK && darray && d >= 0; d--) { /* the grid is row-major */
        coord[d] = rank % ints[3 + 3 * nd + d];
        rank /= ints[3 + 3 * nd + d];
    }
    for (int d = 0; rc == PIO_OK && d < nd; d++) {
        sizes[d] = sz[d];
        lo[d] = malloc((size_t)(sizes[d] + 1) * sizeof(int64_t));
        hi[d] = malloc((size_t)(sizes[d] + 1) * sizeof(int64_t));
        if (!lo[d] || !hi[d]) rc = pio_fail(PIO_EINVAL, "pio: out of memory decoding a datatype");
        else if (darray)
            n[d] = darray_dim(sizes[d], ints[3 + nd + d], ints[3 + 2 * nd + d],
                              ints[3 + 3 * nd + d], coord[d], lo[d], hi[d]);
        else { /* one interval: [start, start + subsize) */
            lo[d][0] = sz[2 * nd + d];
            hi[d][0] = lo[d][0] + sz[nd + d];
            n[d] = hi[d][0] > lo[d][0];
        }
    }
    if (rc == PIO_OK)
        rc = grid(t, &old, nd, sizes, lo, hi, n, darray ? ints[3 + 4 * nd] : ints[1 + 3 * nd]);
    pio_typemap_free(&old);
    for (int d = 0; d < MAX_DIMS; d++) free(lo[d]), free(hi[d]);
    return rc;
}

/* Every other constructor: copies of its old type's typemap, where the constructor says
 * (ints and addrs as MPI_Type_get_contents gives them, MPI-3.1 section 4.1.13). */
static int constructed(struct pio_typemap *t, int combiner, const int *ints, const MPI_Aint *addrs,
                       MPI_Datatype *types)
{
    if (combiner == MPI_COMBINER_SUBARRAY) return array_type(t, ints, types[0], 0);
    if (combiner == MPI_COMBINER_DARRAY) return array_type(t, ints, types[0], 1);
    int rc = PIO_OK;
    if (combiner == MPI_COMBINER_STRUCT) {
        for (int i = 0; i < ints[0]; i++) {
            struct pio_typemap old = {0};
            int r = decode_old(types[i], &old);
            if (rc == PIO_OK) rc = r ? r : place(t, &old, addrs[i], ints[1 + i]);
            pio_typemap_free(&old);
        }
        return rc;
    }
    struct pio_typemap old = {0};
    if ((rc = decode_old(types[0], &old)) != PIO_OK) return rc;
    const int64_t e = old.extent, n = ints[0];
    switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: rc = place(t, &old, 0, 1); break;
    case MPI_COMBINER_CONTIGUOUS: rc = place(t, &old, 0, n); break;
    case MPI_COMBINER_VECTOR: /* count, blocklength, stride (in old's extents) */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, i * ints[2] * e, ints[1]);
        break;
    case MPI_COMBINER_HVECTOR: /* count, blocklength; stride in bytes */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, i * addrs[0], ints[1]);
        break;
    case MPI_COMBINER_INDEXED: /* count, blocklengths[count], displacements[count] */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, ints[1 + n + i] * e, ints[1 + i]);
        break;
    case MPI_COMBINER_HINDEXED: /* count, blocklengths[count]; displacements in bytes */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, addrs[i], ints[1 + i]);
        break;
    case MPI_COMBINER_INDEXED_BLOCK: /* count, blocklength, displacements[count] */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, ints[2 + i] * e, ints[1]);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK: /* count, blocklength; displacements in bytes */
        for (int64_t i = 0; i < n && !rc; i++) rc = place(t, &old, addrs[i], ints[1]);
        break;
    default:
        rc = pio_fail(PIO_EINVAL, "pio: a file view built with MPI combiner %d (a deprecated "
                      "*_INTEGER constructor): not supported", combiner);
    }
    pio_typemap_free(&old);
    return rc;
}

static int decode(MPI_Datatype type, struct pio_typemap *t)
{
    memset(t, 0, sizeof *t);
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    int ni, na, nd, combiner, rc;
    MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED || combiner == MPI_COMBINER_F90_REAL ||
        combiner == MPI_COMBINER_F90_COMPLEX || combiner == MPI_COMBINER_F90_INTEGER) {
        int size = 0;
        MPI_Type_size(type, &size);
        rc = add(t, 0, size);
    } else {
        int *ints = malloc((size_t)(ni + 1) * sizeof *ints);
        MPI_Aint *addrs = malloc((size_t)(na + 1) * sizeof *addrs);
        MPI_Datatype *types = malloc((size_t)(nd + 1) * sizeof *types);
        if (!ints || !addrs || !types) rc = pio_fail(PIO_EINVAL, "pio: out of memory decoding a datatype");
        else {
            MPI_Type_get_contents(type, ni, na, nd, ints, addrs, types);
            rc = constructed(t, combiner, ints, addrs, types);
        }
        free(ints);
        free(addrs);
        free(types);
    }
    t->lb = lb;
    t->extent = extent;
    if (rc) pio_typemap_free(t);
    return rc;
}

int pio_typemap_of(MPI_Datatype type, struct pio_typemap *out)
{
    if (type == MPI_DATATYPE_NULL) {
        memset(out, 0, sizeof *out);
        return pio_fail(PIO_EINVAL, "pio: a file view with MPI_DATATYPE_NULL: expected a datatype");
    }
    return decode(type, out);
}

int pio_set_view_datatype(pio_file *f, int64_t disp, MPI_Datatype filetype)
{
    if (disp < 0) return pio_fail(PIO_EINVAL, "pio: view displacement %lld: expected >= 0", (long long)disp);
    struct pio_typemap t;
    int rc = pio_typemap_of(filetype, &t);
    if (!rc) rc = pio_typemap_check_view(&t);
    if (rc) {
        pio_typemap_free(&t);
        return rc;
    }
    pio_typemap_free(&f->filetype);
    if (t.n == 1 && t.b[0].len == t.extent) {
        /* Instances that touch (MPI_BYTE, a contiguous type): the file from one offset on,
         * planned in pieces of stripes rather than of instances. */
        f->view = (struct pio_view){.offset = disp + t.b[0].off};
        pio_typemap_free(&t);
        return PIO_OK;
    }
    f->filetype = t;
    f->disp = disp;
    return PIO_OK;
}

int64_t pio_view_offset(const pio_file *f, int64_t pos)
{
    if (f->filetype.n) return pio_typemap_offset(&f->filetype, f->disp, pos);
    return pio_nested_offset(&f->view, pos);
}

int64_t pio_view_bytes_below(const pio_file *f, int64_t size)
{
    /* Offsets grow with the position (views never go back): bisect for the first position
     * at or past `size`, below an upper bound of the positions that can be. */
    int64_t lo = 0, hi;
    if (f->filetype.n) hi = (size / (f->filetype.extent > 0 ? f->filetype.extent : 1) + 2) * f->filetype.size;
    else if (f->view.levels == 0) return size > f->view.offset ? size - f->view.offset : 0;
    else hi = pio_view_length(&f->view);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (pio_view_offset(f, mid) < size) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
