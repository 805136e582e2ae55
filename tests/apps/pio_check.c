/* pio's correctness, property-based: seeded random views, regions, schedules and client
 * counts, every byte checked.
 *
 *   pio_check write SEED FILES   open FILES files at once; per file a random nested-strided
 *                                view per client (disjoint: clients interleave block by
 *                                block) written in random pieces with the collective call
 *                                (zero-length pieces included), then an unaligned region
 *                                per client with the independent call; a random strategy
 *                                and schedule block per file. Then every client reads its
 *                                own bytes back and its neighbour's, and the error cases.
 *   pio_check verify SEED FILES WRITERS
 *                                reopen the files written by WRITERS clients (any number of
 *                                clients now), read each whole, and check every byte: what
 *                                the writers' plan covered holds the pattern, the rest 0.
 *   pio_check crash SEED N       every client writes its own region of "crash-SEED" and
 *                                flushes; then client 1 alone rewrites its region with
 *                                another pattern and is killed after N pieces (pio's test
 *                                hook ISTHMUS_PIO_TEST_DIE_AFTER; the others wait and are
 *                                killed with it).
 *   pio_check after-crash SEED WRITERS
 *                                every other client's region holds its first pattern,
 *                                client 1's each byte either pattern.
 * PIO_CHECK_STRATEGY=window (or first, random, hash) gives every file that strategy instead
 * of a random one.
 * Prints "pio_check: ... 0 mismatches" on success; exits 1 on any mismatch or error. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pio.h"

static int me, nclients;
static MPI_Comm clients; /* pio's client ranks */
static long mismatches;

static unsigned next(unsigned *s)
{
    unsigned x = *s ? *s : 1;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static int64_t rnd(unsigned *s, int64_t lo, int64_t hi) { return lo + (int64_t)(next(s) % (unsigned)(hi - lo + 1)); }

/* The byte every file offset holds. */
static unsigned char pattern(int file, int64_t x)
{
    return (unsigned char)(((uint64_t)x * 2654435761u + (uint64_t)file * 40503u + 7) >> 11);
}

static void die(int rc, const char *what)
{
    pio_abort(1, "pio_check: client %d: %s: %s (%d)", me, what, pio_last_error(), rc);
}

/* One file's plan, the same in every client and in every job that checks it. */
struct plan {
    struct pio_view view; /* client 0's; client c's starts c blocks later */
    int64_t region_base, region;   /* client c owns [base + c region, base + (c+1) region) */
    int strategy;
    int64_t block;
};

static struct plan make_plan(int seed, int file, int writers)
{
    unsigned s = (unsigned)(seed * 7919 + file * 104729 + 1);
    struct plan p = {.view = {.offset = rnd(&s, 0, 3000), .levels = (int)rnd(&s, 0, 2)}};
    p.view.block = rnd(&s, 1, 3) == 1 ? rnd(&s, 1, 40) : rnd(&s, 100, 9000);
    if (p.view.levels == 0) p.view.levels = 1, p.view.count[0] = 1;
    else {
        p.view.count[0] = rnd(&s, 1, 6);
        p.view.stride[0] = writers * p.view.block + rnd(&s, 0, 2) * p.view.block;
        if (p.view.levels == 2) {
            p.view.count[1] = rnd(&s, 1, 4);
            p.view.stride[1] = (p.view.count[0] - 1) * p.view.stride[0] + writers * p.view.block + rnd(&s, 0, 500);
        }
    }
    if (p.view.count[0] == 1) p.view.stride[0] = 1; /* unused */
    int64_t extent = p.view.block;
    for (int k = 0; k < p.view.levels; k++) extent = (p.view.count[k] - 1) * p.view.stride[k] + extent;
    p.region_base = p.view.offset + extent + writers * p.view.block + rnd(&s, 0, 999);
    p.region = rnd(&s, 1, 200000);
    p.strategy = (int)rnd(&s, PIO_FIRST_IOS, PIO_WINDOW_IOS);
    p.block = rnd(&s, 1, 4) == 1 ? rnd(&s, 1, 5000) : 1 << rnd(&s, 12, 20);
    const char *forced = getenv("PIO_CHECK_STRATEGY");
    if (forced && *forced) p.strategy = pio_strategy_parse(forced);
    return p;
}

static struct pio_view view_of(const struct plan *p, int client)
{
    struct pio_view v = p->view;
    v.offset += client * p->view.block;
    return v;
}

/* Client c's unaligned part of its region: [lo, hi). */
static void region_of(const struct plan *p, int seed, int file, int client, int64_t *lo, int64_t *hi)
{
    unsigned s = (unsigned)(seed * 31 + file * 17 + client * 13 + 5);
    int64_t a = rnd(&s, 0, p->region), b = rnd(&s, 0, p->region);
    *lo = p->region_base + client * p->region + (a < b ? a : b);
    *hi = p->region_base + client * p->region + (a < b ? b : a);
}

/* Fills buf with the pattern of the view's stream [pos, pos + len). */
static void fill_view(int file, const struct pio_view *v, int64_t pos, int64_t len, unsigned char *buf)
{
    for (int64_t i = 0; i < len; i++) {
        int64_t p = pos + i, q = p / v->block, off = v->offset + p % v->block;
        for (int k = 0; k < v->levels; k++) {
            off += (q % v->count[k]) * v->stride[k];
            q /= v->count[k];
        }
        buf[i] = pattern(file, off);
    }
}

static void expect_view(int file, const struct pio_view *v, const unsigned char *got, int64_t len, const char *what)
{
    unsigned char *want = malloc((size_t)len + 1);
    fill_view(file, v, 0, len, want);
    for (int64_t i = 0; i < len; i++)
        if (got[i] != want[i]) {
            if (mismatches++ < 5)
                fprintf(stderr, "pio_check: client %d: file %d, %s: byte %lld of the view is %d, expected %d\n", me,
                        file, what, (long long)i, got[i], want[i]);
        }
    free(want);
}

static char *file_name(int seed, int file)
{
    static char name[64];
    snprintf(name, sizeof name, "check-%d-%d", seed, file);
    return name;
}

static void write_files(pio_ctx *ctx, int seed, int nfiles)
{
    pio_file **f = calloc((size_t)nfiles, sizeof *f);
    struct plan *p = calloc((size_t)nfiles, sizeof *p);
    int64_t total = 0;
    for (int i = 0; i < nfiles; i++) {
        int rc = pio_open(ctx, file_name(seed, i), PIO_RDWR | PIO_CREATE | PIO_TRUNC, &f[i]);
        if (rc) die(rc, "open");
        p[i] = make_plan(seed, i, nclients);
    }
    /* The files' writes interleave: piece k of every file, then piece k + 1. */
    enum { PIECES = 4 };
    struct pio_view *v = calloc((size_t)nfiles, sizeof *v);
    unsigned char **data = calloc((size_t)nfiles, sizeof *data);
    int64_t (*cut)[PIECES + 1] = calloc((size_t)nfiles, sizeof *cut);
    unsigned s = (unsigned)(seed * 3 + me + 11);
    for (int i = 0; i < nfiles; i++) {
        v[i] = view_of(&p[i], me);
        int64_t len = pio_view_length(&v[i]);
        data[i] = malloc((size_t)len + 1);
        fill_view(i, &v[i], 0, len, data[i]);
        cut[i][0] = 0;
        cut[i][PIECES] = len;
        for (int k = 1; k < PIECES; k++) cut[i][k] = rnd(&s, cut[i][k - 1], len); /* some pieces empty */
        int rc = pio_set_view(f[i], &v[i]);
        if (rc) die(rc, "set_view");
        if ((rc = pio_set_schedule(ctx, p[i].strategy, p[i].block))) die(rc, "set_schedule");
        total += len;
    }
    for (int k = 0; k < PIECES; k++)
        for (int i = 0; i < nfiles; i++) {
            pio_set_schedule(ctx, p[i].strategy, p[i].block);
            int rc = pio_write_at_all(f[i], cut[i][k], data[i] + cut[i][k], cut[i][k + 1] - cut[i][k]);
            if (rc) die(rc, "write_at_all");
        }
    /* The unaligned regions, independently, through the whole-file view. */
    for (int i = 0; i < nfiles; i++) {
        int64_t lo, hi;
        region_of(&p[i], seed, i, me, &lo, &hi);
        unsigned char *r = malloc((size_t)(hi - lo) + 1);
        for (int64_t x = lo; x < hi; x++) r[x - lo] = pattern(i, x);
        pio_set_view(f[i], NULL);
        int rc = pio_write_at(f[i], lo, r, hi - lo);
        if (rc) die(rc, "write_at");
        rc = pio_flush(f[i]);
        if (rc) die(rc, "flush");
        memset(r, 0, (size_t)(hi - lo));
        if ((rc = pio_read_at(f[i], lo, r, hi - lo))) die(rc, "read_at of own region");
        for (int64_t x = lo; x < hi; x++)
            if (r[x - lo] != pattern(i, x) && mismatches++ < 5)
                fprintf(stderr, "pio_check: client %d: file %d: region byte %lld wrong\n", me, i, (long long)x);
        total += hi - lo;
        free(r);
    }
    /* Read back: own view (independent, in pieces), then the next client's (collective). */
    for (int i = 0; i < nfiles; i++) {
        int64_t len = pio_view_length(&v[i]);
        unsigned char *got = calloc((size_t)len + 1, 1);
        pio_set_view(f[i], &v[i]);
        for (int k = 0; k < PIECES; k++) {
            int rc = pio_read_at(f[i], cut[i][k], got + cut[i][k], cut[i][k + 1] - cut[i][k]);
            if (rc) die(rc, "read_at of own view");
        }
        expect_view(i, &v[i], got, len, "own view");
        free(got);
    }
    for (int i = 0; i < nfiles; i++) {
        struct pio_view w = view_of(&p[i], (me + 1) % nclients);
        int64_t len = pio_view_length(&w);
        unsigned char *got = calloc((size_t)len + 1, 1);
        pio_set_view(f[i], &w);
        pio_set_schedule(ctx, p[i].strategy, p[i].block);
        int rc = pio_read_at_all(f[i], 0, got, len);
        if (rc) die(rc, "read_at_all of the next client's view");
        expect_view(i, &w, got, len, "next client's view");
        free(got);
    }
    /* Errors: a read past the end moves nothing; a bad view; a missing file. */
    MPI_Barrier(clients); /* no client extends the file any more */
    int64_t size;
    int rc = pio_size(f[0], &size);
    if (rc) die(rc, "size");
    unsigned char probe[16];
    memset(probe, 0xab, sizeof probe);
    pio_set_view(f[0], NULL);
    rc = pio_read_at(f[0], size - 4, probe, 16);
    if (rc != PIO_ERANGE || !strstr(pio_last_error(), "past its end") || probe[0] != 0xab) {
        fprintf(stderr, "pio_check: a read past the end gave %d (%s)\n", rc, pio_last_error());
        mismatches++;
    }
    struct pio_view bad = {.block = 10, .levels = 1, .count = {3}, .stride = {4}};
    if (pio_set_view(f[0], &bad) != PIO_EINVAL) mismatches++;
    if (me == 0) printf("pio_check: %s\n", pio_last_error());
    for (int i = 0; i < nfiles; i++)
        if ((rc = pio_close(f[i]))) die(rc, "close");
    pio_file *missing;
    rc = pio_open(ctx, "no-such-file", PIO_RDONLY, &missing);
    if (rc != PIO_ENOENT) {
        fprintf(stderr, "pio_check: opening a missing file gave %d\n", rc);
        mismatches++;
    }
    if (me == 0) printf("pio_check: %s\n", pio_last_error());
    long long bytes = total;
    for (int i = 0; i < nfiles; i++) free(data[i]);
    free(data), free(cut), free(v), free(p), free(f);
    if (me == 0) printf("pio_check: client 0 wrote %lld bytes\n", bytes);
}

static void verify_files(pio_ctx *ctx, int seed, int nfiles, int writers)
{
    for (int i = 0; i < nfiles; i++) {
        pio_file *f;
        int rc = pio_open(ctx, file_name(seed, i), PIO_RDONLY, &f);
        if (rc) die(rc, "reopen");
        struct plan p = make_plan(seed, i, writers);
        /* Which bytes the writers wrote, and so the size the file must have. */
        int64_t size = 0;
        for (int c = 0; c < writers; c++) {
            struct pio_view v = view_of(&p, c);
            int64_t len = pio_view_length(&v), q = (len - 1) / v.block, off = v.offset + v.block;
            for (int k = 0; k < v.levels; k++) {
                off += (q % v.count[k]) * v.stride[k];
                q /= v.count[k];
            }
            if (off > size) size = off;
            int64_t lo, hi;
            region_of(&p, seed, i, c, &lo, &hi);
            if (hi > lo && hi > size) size = hi;
        }
        unsigned char *written = calloc((size_t)size + 1, 1);
        for (int c = 0; c < writers; c++) {
            struct pio_view v = view_of(&p, c);
            int64_t len = pio_view_length(&v);
            for (int64_t b = 0; b < len; b += v.block) {
                int64_t q = b / v.block, off = v.offset;
                for (int k = 0; k < v.levels; k++) {
                    off += (q % v.count[k]) * v.stride[k];
                    q /= v.count[k];
                }
                memset(written + off, 1, (size_t)v.block);
            }
            int64_t lo, hi;
            region_of(&p, seed, i, c, &lo, &hi);
            memset(written + lo, 1, (size_t)(hi - lo));
        }
        int64_t got_size;
        if ((rc = pio_size(f, &got_size))) die(rc, "size");
        if (got_size != size) {
            fprintf(stderr, "pio_check: file %d has %lld bytes, expected %lld\n", i, (long long)got_size,
                    (long long)size);
            mismatches++;
        }
        int64_t lo = size * me / nclients, hi = size * (me + 1) / nclients;
        unsigned char *got = malloc((size_t)(hi - lo) + 1);
        if ((rc = pio_read_at_all(f, lo, got, hi - lo))) die(rc, "read_at_all");
        for (int64_t x = lo; x < hi; x++) {
            unsigned char want = written[x] ? pattern(i, x) : 0;
            if (got[x - lo] != want && mismatches++ < 5)
                fprintf(stderr, "pio_check: client %d: file %d byte %lld is %d, expected %d\n", me, i, (long long)x,
                        got[x - lo], want);
        }
        free(got), free(written);
        if ((rc = pio_close(f))) die(rc, "close");
    }
}

enum { CRASH_REGION = 300007, FIRST = 100, SECOND = 200 };

static void crash(pio_ctx *ctx, int seed, const char *pieces)
{
    char name[64];
    snprintf(name, sizeof name, "crash-%d", seed);
    pio_file *f;
    int rc = pio_open(ctx, name, PIO_RDWR | PIO_CREATE | PIO_TRUNC, &f);
    if (rc) die(rc, "open");
    unsigned char *r = malloc(CRASH_REGION);
    int64_t lo = (int64_t)me * CRASH_REGION;
    for (int64_t x = 0; x < CRASH_REGION; x++) r[x] = pattern(FIRST, lo + x);
    if ((rc = pio_write_at_all(f, lo, r, CRASH_REGION)) || (rc = pio_flush(f))) die(rc, "first write");
    MPI_Barrier(clients);
    if (me == 1) {
        for (int64_t x = 0; x < CRASH_REGION; x++) r[x] = pattern(SECOND, lo + x);
        char hook[64];
        snprintf(hook, sizeof hook, "1:%s", pieces);
        setenv("ISTHMUS_PIO_TEST_DIE_AFTER", hook, 1);
        pio_write_at(f, lo, r, CRASH_REGION); /* dies in here */
        fprintf(stderr, "pio_check: client 1 should have died (ISTHMUS_PIO_TEST_DIE_AFTER)\n");
        mismatches++;
    }
    MPI_Barrier(clients);
    free(r);
    pio_close(f);
}

static void after_crash(pio_ctx *ctx, int seed, int writers)
{
    char name[64];
    snprintf(name, sizeof name, "crash-%d", seed);
    pio_file *f;
    int rc = pio_open(ctx, name, PIO_RDONLY, &f);
    if (rc) die(rc, "reopen");
    int64_t size = (int64_t)writers * CRASH_REGION, lo = size * me / nclients, hi = size * (me + 1) / nclients;
    unsigned char *got = malloc((size_t)(hi - lo) + 1);
    long second = 0;
    if ((rc = pio_read_at_all(f, lo, got, hi - lo))) die(rc, "read");
    for (int64_t x = lo; x < hi; x++) {
        int owner = (int)(x / CRASH_REGION);
        int first = got[x - lo] == pattern(FIRST, x);
        second += owner == 1 && !first && got[x - lo] == pattern(SECOND, x);
        if (!first && (owner != 1 || got[x - lo] != pattern(SECOND, x)) && mismatches++ < 5)
            fprintf(stderr, "pio_check: byte %lld of client %d's region is %d\n", (long long)x, owner, got[x - lo]);
    }
    long all;
    MPI_Reduce(&second, &all, 1, MPI_LONG, MPI_SUM, 0, clients);
    if (me == 0) printf("pio_check: %ld bytes of client 1's region hold its second pattern\n", all);
    free(got);
    pio_close(f);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    pio_ctx *ctx;
    int rc = pio_init(MPI_COMM_WORLD, NULL, &ctx, &clients);
    if (rc == PIO_SERVED) {
        MPI_Finalize();
        return 0;
    }
    if (rc) {
        int world;
        MPI_Comm_rank(MPI_COMM_WORLD, &world);
        if (world == 0) fprintf(stderr, "%s\n", pio_last_error());
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_rank(clients, &me);
    MPI_Comm_size(clients, &nclients);
    const char *mode = argc > 1 ? argv[1] : "";
    int need = strcmp(mode, "verify") == 0 ? 5 : 4;
    if (argc < need) {
        if (me == 0)
            fprintf(stderr, "usage: pio_check write SEED FILES | verify SEED FILES WRITERS | crash SEED PIECES | "
                            "after-crash SEED WRITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int seed = atoi(argv[2]), nfiles = atoi(argv[3]);
    if (strcmp(mode, "write") == 0) write_files(ctx, seed, nfiles);
    else if (strcmp(mode, "verify") == 0) verify_files(ctx, seed, nfiles, atoi(argv[4]));
    else if (strcmp(mode, "crash") == 0) crash(ctx, seed, argv[3]);
    else after_crash(ctx, seed, nfiles);
    long all;
    MPI_Allreduce(&mismatches, &all, 1, MPI_LONG, MPI_SUM, clients);
    if (me == 0)
        printf("pio_check: %s, seed %d, %d clients: %ld mismatches\n", mode, seed, nclients, all);
    pio_finalize(ctx);
    MPI_Comm_free(&clients);
    MPI_Finalize();
    return all != 0;
}
