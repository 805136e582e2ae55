/* Striping and views: a request (a range of a view's stream) as extents per server.
 *
 * Round-robin striping: logical byte x is in stripe k = x / S, stored on server k mod N at
 * (k / N) S + x mod S of its data file. A view maps stream position p to a file offset
 * by mixed-radix digits of the block index p / block (docs/pio.md). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pio_layout.h"

static char last_error[512];

int pio_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *pio_last_error(void) { return last_error; }

int pio_view_check(const struct pio_view *v)
{
    if (v->offset < 0) return pio_fail(PIO_EINVAL, "pio: view offset %lld: expected >= 0", (long long)v->offset);
    if (v->levels < 0 || v->levels > PIO_MAX_LEVELS)
        return pio_fail(PIO_EINVAL, "pio: view with %d levels: expected 0 to %d", v->levels, PIO_MAX_LEVELS);
    if (v->levels == 0) return PIO_OK;
    if (v->block < 1) return pio_fail(PIO_EINVAL, "pio: view block %lld: expected >= 1 byte", (long long)v->block);
    int64_t extent = v->block, bytes = v->block; /* of the levels inside the current one */
    for (int k = 0; k < v->levels; k++) {
        if (v->count[k] < 1)
            return pio_fail(PIO_EINVAL, "pio: view level %d count %lld: expected >= 1", k, (long long)v->count[k]);
        if (v->count[k] > 1 && v->stride[k] < extent)
            return pio_fail(PIO_EINVAL,
                            "pio: view level %d stride %lld: expected >= %lld, the extent of the level inside "
                            "it (repetitions would overlap)",
                            k, (long long)v->stride[k], (long long)extent);
        int64_t span, total;
        if (__builtin_mul_overflow(v->count[k] - 1, v->stride[k], &span) ||
            __builtin_add_overflow(span, extent, &extent) ||
            __builtin_mul_overflow(bytes, v->count[k], &total) || __builtin_add_overflow(extent, v->offset, &span))
            return pio_fail(PIO_EINVAL, "pio: view level %d: the view is larger than 2^63 bytes", k);
        bytes = total;
    }
    return PIO_OK;
}

int64_t pio_view_length(const struct pio_view *v)
{
    if (v->levels == 0) return INT64_MAX - v->offset;
    int64_t n = v->block;
    for (int k = 0; k < v->levels; k++) n *= v->count[k];
    return n;
}

int pio_extents_add(struct pio_extents *x, struct pio_extent e)
{
    if (x->n > 0) {
        struct pio_extent *last = &x->e[x->n - 1];
        if (last->local + last->len == e.local && last->mem + last->len == e.mem) {
            last->len += e.len;
            x->bytes += e.len;
            return PIO_OK;
        }
    }
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 8;
        struct pio_extent *grown = realloc(x->e, (size_t)cap * sizeof *grown);
        if (!grown) return pio_fail(PIO_EINVAL, "pio: out of memory planning a request");
        x->e = grown;
        x->cap = cap;
    }
    x->e[x->n++] = e;
    x->bytes += e.len;
    return PIO_OK;
}

void pio_extents_free(struct pio_extents *x)
{
    free(x->e);
    *x = (struct pio_extents){0};
}

int pio_plan_range(const struct pio_layout *l, int64_t off, int64_t len, int64_t mem, struct pio_extents *lists)
{
    while (len > 0) {
        int64_t k = off / l->stripe, within = off % l->stripe;
        int64_t piece = l->stripe - within < len ? l->stripe - within : len;
        struct pio_extent e = {off, (k / l->nservers) * l->stripe + within, piece, mem};
        int rc = pio_extents_add(&lists[k % l->nservers], e);
        if (rc) return rc;
        off += piece;
        mem += piece;
        len -= piece;
    }
    return PIO_OK;
}

int64_t pio_nested_offset(const struct pio_view *v, int64_t pos)
{
    if (v->levels == 0) return v->offset + pos;
    int64_t q = pos / v->block, off = v->offset + pos % v->block;
    for (int k = 0; k < v->levels; k++) { /* the block index's mixed-radix digits */
        off += (q % v->count[k]) * v->stride[k];
        q /= v->count[k];
    }
    return off;
}

int pio_plan(const struct pio_layout *l, const struct pio_view *v, int64_t pos, int64_t len,
             struct pio_extents *lists, int64_t *end)
{
    *end = 0;
    int64_t vlen = pio_view_length(v);
    if (pos < 0 || len < 0 || pos > vlen || len > vlen - pos)
        return pio_fail(PIO_ERANGE, "pio: bytes [%lld, %lld) of the view: outside the view's %lld bytes",
                        (long long)pos, (long long)pos + len, (long long)vlen);
    if (len == 0) return PIO_OK;
    if (v->levels == 0) {
        *end = v->offset + pos + len;
        return pio_plan_range(l, v->offset + pos, len, 0, lists);
    }
    int64_t mem = 0;
    while (mem < len) {
        int64_t p = pos + mem, within = p % v->block, off = pio_nested_offset(v, p);
        int64_t run = v->block - within < len - mem ? v->block - within : len - mem;
        int rc = pio_plan_range(l, off, run, mem, lists);
        if (rc) return rc;
        if (off + run > *end) *end = off + run;
        mem += run;
    }
    return PIO_OK;
}

int pio_plan_typemap(const struct pio_layout *l, const struct pio_typemap *t, int64_t disp, int64_t pos,
                     int64_t len, struct pio_extents *lists, int64_t *end)
{
    *end = 0;
    int64_t last, span = 0;
    if (pos < 0 || len < 0 || __builtin_add_overflow(pos, len, &last) ||
        __builtin_mul_overflow(last / t->size + 1, t->extent, &span) || __builtin_add_overflow(span, disp, &span))
        return pio_fail(PIO_ERANGE, "pio: bytes [%lld, %lld) of the view: beyond the largest file offset",
                        (long long)pos, (long long)pos + len);
    if (len == 0) return PIO_OK;
    /* The block of the first byte, then block after block, instance after instance. */
    int64_t instance = pos / t->size, within = pos % t->size, mem = 0;
    int k = 0;
    for (; within >= t->b[k].len; k++) within -= t->b[k].len;
    while (mem < len) {
        int64_t off = disp + instance * t->extent + t->b[k].off + within;
        int64_t run = t->b[k].len - within < len - mem ? t->b[k].len - within : len - mem;
        int rc = pio_plan_range(l, off, run, mem, lists);
        if (rc) return rc;
        if (off + run > *end) *end = off + run;
        mem += run;
        within = 0;
        if (++k == t->n) k = 0, instance++;
    }
    return PIO_OK;
}

int64_t pio_logical_end(const struct pio_layout *l, int server, int64_t local_size)
{
    if (local_size <= 0) return 0;
    int64_t last = local_size - 1, k = last / l->stripe;
    return (k * l->nservers + server) * l->stripe + last % l->stripe + 1;
}

int64_t pio_local_size(const struct pio_layout *l, int server, int64_t size)
{
    int64_t whole = size / l->stripe, rest = size % l->stripe; /* stripes 0..whole-1 are full */
    int64_t mine = whole / l->nservers + (server < whole % l->nservers);
    return mine * l->stripe + (whole % l->nservers == server ? rest : 0);
}

int pio_typemap_check_view(const struct pio_typemap *t)
{
    if (t->size == 0) return pio_fail(PIO_EINVAL, "pio: a filetype that holds no data");
    for (int i = 0; i < t->n; i++) {
        if (t->b[i].off < 0)
            return pio_fail(PIO_EINVAL, "pio: a filetype with a negative displacement (%lld): "
                            "MPI-IO requires them non-negative", (long long)t->b[i].off);
        if (i && t->b[i].off < t->b[i - 1].off + t->b[i - 1].len)
            return pio_fail(PIO_EINVAL, "pio: a filetype whose displacements decrease or overlap "
                            "(at %lld): MPI-IO requires them nondecreasing", (long long)t->b[i].off);
    }
    const struct pio_block *last = &t->b[t->n - 1];
    if (last->off + last->len > t->extent + t->b[0].off)
        return pio_fail(PIO_EINVAL, "pio: a filetype of extent %lld with data up to byte %lld: "
                        "its instances would overlap", (long long)t->extent,
                        (long long)(last->off + last->len));
    return PIO_OK;
}

int64_t pio_typemap_offset(const struct pio_typemap *t, int64_t disp, int64_t pos)
{
    int64_t instance = pos / t->size, rest = pos % t->size;
    int k = 0;
    for (; k < t->n - 1 && rest >= t->b[k].len; k++) rest -= t->b[k].len; /* its block */
    return disp + instance * t->extent + t->b[k].off + rest;
}

void pio_typemap_free(struct pio_typemap *t)
{
    free(t->b);
    memset(t, 0, sizeof *t);
}
