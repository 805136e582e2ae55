/* pio's planning and scheduling (src/pio/pio_layout.c, pio_schedule.c) against brute
 * force on seeded random layouts, views and requests: every byte of a request lands once,
 * on the server and at the local offset round-robin striping gives it; chunks respect
 * the schedule block; the orders are the strategies'. Prints "N passed, 0 failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pio_layout.h"

static int failures, checks;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        checks++;                                                                                            \
        if (!(cond)) {                                                                                       \
            failures++;                                                                                      \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                                  \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

static unsigned state = 12345;
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(pio_random(&state) % (unsigned)(hi - lo + 1)); }

/* The file offset of view position p, by enumeration of the view's blocks in order. */
static int64_t view_offset(const struct pio_view *v, int64_t p)
{
    if (v->levels == 0) return v->offset + p;
    int64_t q = p / v->block, off = v->offset + p % v->block;
    for (int k = 0; k < v->levels; k++) {
        off += (q % v->count[k]) * v->stride[k];
        q /= v->count[k];
    }
    return off;
}

static struct pio_view random_view(void)
{
    struct pio_view v = {.offset = rnd(0, 5000), .levels = (int)rnd(0, 2)};
    v.block = rnd(1, 700);
    int64_t extent = v.block;
    for (int k = 0; k < v.levels; k++) {
        v.count[k] = rnd(1, 6);
        v.stride[k] = extent + rnd(0, 900);
        extent = (v.count[k] - 1) * v.stride[k] + extent;
    }
    return v;
}

/* A filetype's typemap as MPI-IO allows one: 1-6 blocks in increasing order with gaps,
 * a lower bound before the first, an extent at least up to the last block's end. */
static struct pio_typemap random_typemap(void)
{
    struct pio_typemap t = {.n = (int)rnd(1, 6)};
    t.cap = t.n;
    t.b = calloc((size_t)t.n, sizeof *t.b);
    int64_t at = rnd(0, 300);
    t.lb = at - rnd(0, at);
    for (int i = 0; i < t.n; i++) {
        t.b[i] = (struct pio_block){at, rnd(1, 500)};
        t.size += t.b[i].len;
        at += t.b[i].len + rnd(1, 400);
    }
    t.extent = at - t.lb + rnd(0, 300);
    return t;
}

/* The file offset of stream position p of the request's view: a nested-strided view or
 * a typemap (when it has blocks). */
static int64_t stream_offset(const struct pio_view *v, const struct pio_typemap *t, int64_t disp, int64_t p)
{
    return t->n ? pio_typemap_offset(t, disp, p) : view_offset(v, p);
}

static void check_plan(void)
{
    struct pio_layout l = {rnd(1, 3) == 1 ? rnd(1, 16) : rnd(100, 9000), (int)rnd(1, 5)};
    struct pio_view v = random_view();
    struct pio_typemap t = {0};
    int64_t disp = 0;
    if (rnd(0, 1)) {
        t = random_typemap();
        disp = rnd(0, 5000);
        CHECK(pio_typemap_check_view(&t) == PIO_OK, "a good typemap refused: %s", pio_last_error());
    }
    int64_t vlen = pio_view_length(&v), total = v.levels && !t.n ? vlen : 20000;
    int64_t pos = rnd(0, total), len = rnd(0, total - pos);
    struct pio_extents lists[8] = {0};
    int64_t end;
    int planned = t.n ? pio_plan_typemap(&l, &t, disp, pos, len, lists, &end) : pio_plan(&l, &v, pos, len, lists, &end);
    CHECK(planned == PIO_OK, "plan failed: %s", pio_last_error());
    char *seen = calloc((size_t)len + 1, 1);
    int64_t bytes = 0, want_end = 0;
    for (int s = 0; s < l.nservers; s++) {
        for (int i = 0; i < lists[s].n; i++) {
            const struct pio_extent *e = &lists[s].e[i];
            for (int64_t b = 0; b < e->len; b++) {
                int64_t m = e->mem + b, file = stream_offset(&v, &t, disp, pos + m), k = file / l.stripe;
                CHECK(m >= 0 && m < len && !seen[m], "buffer byte %lld twice or outside", (long long)m);
                seen[m] = 1;
                CHECK(k % l.nservers == s, "file byte %lld on server %d", (long long)file, s);
                CHECK((k / l.nservers) * l.stripe + file % l.stripe == e->local + b, "local offset of %lld",
                      (long long)file);
                if (file + 1 > want_end) want_end = file + 1;
            }
            bytes += e->len;
        }
        CHECK(lists[s].bytes == (s == 0 ? lists[s].bytes : lists[s].bytes), "bytes");
    }
    CHECK(bytes == len, "planned %lld of %lld bytes", (long long)bytes, (long long)len);
    CHECK(end == want_end, "end %lld, expected %lld", (long long)end, (long long)want_end);

    /* A contiguous write from 0: the data files imply exactly the written size. */
    if (v.levels == 0 && v.offset == 0 && pos == 0 && !t.n) {
        int64_t size = 0;
        for (int s = 0; s < l.nservers; s++) {
            int64_t local = 0;
            for (int i = 0; i < lists[s].n; i++)
                if (lists[s].e[i].local + lists[s].e[i].len > local) local = lists[s].e[i].local + lists[s].e[i].len;
            int64_t e = pio_logical_end(&l, s, local);
            if (e > size) size = e;
        }
        CHECK(size == len, "logical size %lld after writing %lld", (long long)size, (long long)len);
    }

    int strategy = (int)rnd(PIO_FIRST_IOS, PIO_WINDOW_IOS), client = (int)rnd(0, 6);
    int64_t block = rnd(1, 3) == 1 ? rnd(1, 50) : rnd(100, 20000);
    struct pio_schedule sc, again;
    CHECK(pio_schedule_build(lists, l.nservers, block, strategy, client, 7, &sc) == PIO_OK, "schedule");
    CHECK(pio_schedule_build(lists, l.nservers, block, strategy, client, 7, &again) == PIO_OK, "schedule");
    memset(seen, 0, (size_t)len + 1);
    int64_t last_file = -1;
    for (int c = 0; c < sc.nchunks; c++) {
        const struct pio_chunk *ch = &sc.chunk[c];
        CHECK(ch->bytes > 0 && ch->bytes <= block, "chunk of %lld bytes, block %lld", (long long)ch->bytes,
              (long long)block);
        CHECK(ch->server == again.chunk[c].server && ch->file == again.chunk[c].file, "not reproducible");
        int64_t sum = 0;
        for (int i = 0; i < ch->n; i++) {
            const struct pio_extent *e = &sc.e[ch->first + i];
            for (int64_t b = 0; b < e->len; b++) {
                CHECK(!seen[e->mem + b], "byte %lld sent twice", (long long)(e->mem + b));
                seen[e->mem + b] = 1;
            }
            sum += e->len;
        }
        CHECK(sum == ch->bytes, "chunk bytes");
        if (strategy == PIO_FIRST_IOS) {
            CHECK(ch->file >= last_file, "first-IOS out of file order");
            last_file = ch->file;
        }
    }
    for (int64_t m = 0; m < len; m++) CHECK(seen[m], "byte %lld never sent", (long long)m);
    /* hash-IOS: the first chunk goes to the first server from (client mod N) on that has one. */
    if ((strategy == PIO_HASH_IOS || strategy == PIO_WINDOW_IOS) && sc.nchunks > 0) {
        int s = client % l.nservers;
        while (lists[s].bytes == 0) s = (s + 1) % l.nservers;
        CHECK(sc.chunk[0].server == s, "hash-IOS starts on server %d, expected %d", sc.chunk[0].server, s);
    }
    pio_schedule_free(&sc);
    pio_schedule_free(&again);
    pio_typemap_free(&t);
    free(seen);
    for (int s = 0; s < l.nservers; s++) pio_extents_free(&lists[s]);
}

/* set_size's truncation: each server's data file holds exactly the stripes' bytes below
 * the size, and the size the data files imply is the size set. */
static void check_local_size(void)
{
    struct pio_layout l = {rnd(1, 50), (int)rnd(1, 5)};
    int64_t size = rnd(0, 2000), implied = 0;
    for (int s = 0; s < l.nservers; s++) {
        int64_t local = pio_local_size(&l, s, size), want = 0;
        for (int64_t x = 0; x < size; x++)
            if ((x / l.stripe) % l.nservers == s) want++;
        CHECK(local == want, "server %d of %d, stripe %lld, size %lld: %lld bytes, expected %lld", s,
              l.nservers, (long long)l.stripe, (long long)size, (long long)local, (long long)want);
        int64_t e = pio_logical_end(&l, s, local);
        if (e > implied) implied = e;
    }
    CHECK(implied == size, "size %lld implies %lld", (long long)size, (long long)implied);
}

static void check_bad_views(void)
{
    struct pio_view overlap = {.offset = 0, .block = 10, .levels = 1, .count = {3}, .stride = {5}};
    CHECK(pio_view_check(&overlap) == PIO_EINVAL && strstr(pio_last_error(), "overlap"), "overlap: %s",
          pio_last_error());
    struct pio_view negative = {.offset = -1};
    CHECK(pio_view_check(&negative) == PIO_EINVAL, "negative offset");
    struct pio_view zero = {.block = 0, .levels = 1, .count = {1}, .stride = {1}};
    CHECK(pio_view_check(&zero) == PIO_EINVAL, "zero block");
    struct pio_view huge = {.block = 1 << 30, .levels = 2, .count = {1 << 30, 1 << 30}, .stride = {1 << 30, 1LL << 60}};
    CHECK(pio_view_check(&huge) == PIO_EINVAL, "overflow");
    struct pio_view ok = {.offset = 3, .block = 4, .levels = 2, .count = {2, 3}, .stride = {10, 30}};
    CHECK(pio_view_check(&ok) == PIO_OK && pio_view_length(&ok) == 24, "a good view");
    struct pio_layout l = {8, 2};
    struct pio_extents lists[2] = {0};
    int64_t end;
    CHECK(pio_plan(&l, &ok, 20, 5, lists, &end) == PIO_ERANGE, "past the view's end");
    struct pio_block two[2] = {{0, 8}, {4, 8}}, wide[1] = {{0, 8}};
    struct pio_typemap overlapping = {.extent = 16, .size = 16, .n = 2, .b = two};
    CHECK(pio_typemap_check_view(&overlapping) == PIO_EINVAL, "overlapping blocks");
    struct pio_typemap short_extent = {.extent = 4, .size = 8, .n = 1, .b = wide};
    CHECK(pio_typemap_check_view(&short_extent) == PIO_EINVAL && strstr(pio_last_error(), "overlap"),
          "instances that overlap: %s", pio_last_error());
    struct pio_typemap far = {.extent = 8, .size = 8, .n = 1, .b = wide};
    CHECK(pio_plan_typemap(&l, &far, 0, INT64_MAX - 4, 4, lists, &end) == PIO_ERANGE, "beyond 2^63");
}

int main(void)
{
    for (int i = 0; i < 3000; i++) check_plan();
    for (int i = 0; i < 500; i++) check_local_size();
    check_bad_views();
    printf("pio layout: %d checks\n%d passed, %d failed\n", checks, checks - failures, failures);
    return failures != 0;
}
