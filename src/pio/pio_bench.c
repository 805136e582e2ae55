/* pio_bench: the paper's experiments (docs/pio.md, Benchmark). For each repetition:
 *   raw     every I/O server writes its share of the data to a local file (1 MiB pwrites,
 *           fsync) and reads it back: the servers' own throughput, the bound pio aims at;
 *   mpiio   the clients write and read the same pattern through MPI-IO
 *           (MPI_File_write_at_all / read_at_all, MPI_File_sync) on a local file: ROMIO's
 *           data do not cross the network at all;
 *   mpiio-servers  the same with the I/O servers as ROMIO's aggregators (two-phase
 *           collective buffering, cb_nodes = the servers): the data cross the same network
 *           to the same hosts as pio's, the architecture MPI-IO has on a cluster with I/O
 *           nodes;
 *   pio     the same through pio, for every strategy and schedule block b.
 * Workloads: "contiguous" (each client writes, then reads, its own region of --size bytes)
 * and "btio" (BTIO's nested-strided pattern: an N^3 array of 40-byte records over a
 * q x q grid of clients, each owning an N x N/q x N/q column, for --steps time steps).
 * Writes are timed to the end of the fsync (pio_close, MPI_File_sync); reads from the
 * page cache for every method alike. Every read is compared with what was written.
 * Output: JSON lines on stdout (a header, then one record per measurement). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../bench/bench_common.h"
#include "pio.h"

#define RAW_PIECE (1 << 20)

struct options {
    const char *workload;
    int64_t size;   /* contiguous: bytes per client */
    int n, steps;   /* btio: array side, time steps */
    int64_t min_block, max_block;
    int strategies[PIO_STRATEGIES], nstrategies;
    int repeat;
};

static int world_rank;

static void usage_error(const char *fmt, const char *value)
{
    if (world_rank == 0) {
        fprintf(stderr, "pio_bench: ");
        fprintf(stderr, fmt, value);
        fprintf(stderr, "\nusage: pio_bench [--workload contiguous|btio] [--size BYTES] [--class S|W|A] "
                        "[--steps N] [--blocks MIN:MAX] [--strategies first,random,hash,window] [--repeat N]\n");
    }
    MPI_Finalize();
    exit(2);
}

static int64_t number(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || x < 1) usage_error(what, s);
    return x;
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){"contiguous", 16 << 20, 24, 20, 4096, 8 << 20, {0}, 0, 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage_error("%s needs a value", a);
        i++;
        if (!strcmp(a, "--workload")) {
            if (strcmp(v, "contiguous") && strcmp(v, "btio")) usage_error("--workload %s: expected contiguous or btio", v);
            o->workload = v;
        } else if (!strcmp(a, "--size")) o->size = number(v, "--size %s: expected bytes per client");
        else if (!strcmp(a, "--steps")) o->steps = (int)number(v, "--steps %s: expected a number of time steps");
        else if (!strcmp(a, "--repeat")) o->repeat = (int)number(v, "--repeat %s: expected a whole number");
        else if (!strcmp(a, "--class")) {
            if (!strcmp(v, "S")) o->n = 12;
            else if (!strcmp(v, "W")) o->n = 24;
            else if (!strcmp(v, "A")) o->n = 64;
            else usage_error("--class %s: expected S, W or A", v);
        } else if (!strcmp(a, "--blocks")) {
            const char *colon = strchr(v, ':');
            if (!colon) usage_error("--blocks %s: expected MIN:MAX in bytes", v);
            char lo[32];
            snprintf(lo, sizeof lo, "%.*s", (int)(colon - v), v);
            o->min_block = number(lo, "--blocks %s: expected MIN:MAX in bytes");
            o->max_block = number(colon + 1, "--blocks %s: expected MIN:MAX in bytes");
            if (o->max_block < o->min_block || o->max_block > (1 << 30))
                usage_error("--blocks %s: expected MIN <= MAX <= 1 GiB", v);
        } else if (!strcmp(a, "--strategies")) {
            char list[128];
            snprintf(list, sizeof list, "%s", v);
            o->nstrategies = 0;
            for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                int s = pio_strategy_parse(t);
                if (s < 0 || o->nstrategies == PIO_STRATEGIES) usage_error("--strategies: %s is not first, random, hash or window", t);
                o->strategies[o->nstrategies++] = s;
            }
        } else usage_error("unknown option %s", a);
    }
    if (o->nstrategies == 0)
        for (int s = PIO_FIRST_IOS; s < PIO_STRATEGIES; s++) o->strategies[o->nstrategies++] = s;
}

/* One measurement, printed by `printer` (world rank 0 for raw, client 0 for the rest). */
static void record(int printer, const struct options *o, const char *method, int strategy, int64_t block,
                   const char *op, int rep, int64_t bytes, double seconds)
{
    if (!printer) return;
    printf("{\"record\": \"pio\", \"workload\": \"%s\", \"method\": \"%s\", \"strategy\": %s%s%s, \"block\": ",
           o->workload, method, strategy ? "\"" : "", strategy ? pio_strategy_name(strategy) : "null",
           strategy ? "\"" : "");
    if (block) printf("%lld", (long long)block);
    else printf("null");
    printf(", \"op\": \"%s\", \"rep\": %d, \"bytes\": %lld, \"seconds\": %.6f, \"mb_s\": %.3f}\n", op, rep,
           (long long)bytes, seconds, bytes / seconds / 1e6);
    fflush(stdout);
}

/* The longest time any rank of comm took (world rank 0 must be in comm). */
static double slowest(double t, MPI_Comm comm)
{
    double max;
    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, comm);
    return max;
}

static unsigned char pattern(int64_t x, int rep) { return (unsigned char)((x * 131 + rep * 7 + (x >> 12)) & 0xff); }

/* ---- the servers' own throughput ------------------------------------------------------ */

/* Which I/O server world rank `rank` is (ISTHMUS_PIO_SERVERS), or -1. */
static int server_of(int rank)
{
    const char *v = getenv("ISTHMUS_PIO_SERVERS");
    int i = 0;
    for (const char *p = v; p && *p; i++) {
        char *end;
        if (strtol(p, &end, 10) == rank) return i;
        p = *end ? end + 1 : end;
    }
    return -1;
}

static int server_index(void) { return server_of(world_rank); }

/* This rank's place among the ranks that are not servers (pio's client index), or -1. */
static int client_index(void)
{
    if (server_index() >= 0) return -1;
    int below = 0;
    for (int r = 0; r < world_rank; r++) below += server_of(r) < 0;
    return below;
}

static int count_servers(void)
{
    const char *v = getenv("ISTHMUS_PIO_SERVERS");
    int n = v && *v ? 1 : 0;
    for (; v && *v; v++) n += *v == ',';
    return n;
}

static void raw(const struct options *o, int rep, int64_t total)
{
    int s = server_index(), n = count_servers();
    const char *dir = getenv("ISTHMUS_PIO_DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/server-%d", dir ? dir : "/tmp/isthmus-pio", s);
    if (s >= 0) mkdir(path, 0755); /* pio_init makes it too, later */
    strcat(path, "/raw-bench");
    int64_t share = total / n;
    char *buf = malloc(RAW_PIECE);
    for (int i = 0; i < RAW_PIECE; i++) buf[i] = (char)pattern(i, rep);
    double t[2] = {0, 0};
    for (int op = 0; op < 2; op++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (s >= 0) {
            int fd = op == 0 ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open(path, O_RDONLY);
            if (fd < 0) {
                pio_abort(1, "pio_bench: %s: %s", path, strerror(errno));
            }
            for (int64_t off = 0; off < share; off += RAW_PIECE) {
                size_t len = (size_t)(share - off < RAW_PIECE ? share - off : RAW_PIECE);
                ssize_t done = op == 0 ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
                if (done != (ssize_t)len) {
                    pio_abort(1, "pio_bench: %s: short %s", path, op == 0 ? "write" : "read");
                }
            }
            if (op == 0) fsync(fd);
            close(fd);
        }
        t[op] = slowest(MPI_Wtime() - t0, MPI_COMM_WORLD);
    }
    if (s >= 0) unlink(path);
    free(buf);
    record(world_rank == 0, o, "raw", 0, 0, "write", rep, share * n, t[0]);
    record(world_rank == 0, o, "raw", 0, 0, "read", rep, share * n, t[1]);
}

/* ---- a client's part of the workload ----------------------------------------------- */

struct part {
    int first;            /* client 0: prints the records */
    struct pio_view view; /* where the client's bytes are */
    int64_t bytes, total;
    MPI_Datatype filetype; /* the same for MPI-IO */
    MPI_Offset disp;
};

static struct part client_part(const struct options *o, int me, int clients)
{
    struct part p = {.first = me == 0};
    if (!strcmp(o->workload, "contiguous")) {
        p.view = (struct pio_view){.offset = me * o->size};
        p.bytes = o->size;
        p.total = o->size * clients;
        p.filetype = MPI_BYTE;
        p.disp = me * o->size;
        return p;
    }
    int q = 1;
    while ((q + 1) * (q + 1) <= clients) q++;
    if (q * q != clients || o->n % q) {
        if (world_rank == 0) /* every rank gets here, in the shape check of main */
            pio_abort(2, "pio_bench: btio needs a square number of clients that divides the array side %d "
                         "(this job has %d clients)", o->n, clients);
        for (;;) pause(); /* until rank 0's abort ends the job, after its message */
    }
    int64_t n = o->n, rec = 40, row = n * rec, side = n / q;
    p.view = (struct pio_view){.offset = ((me / q) * side * n * n + (me % q) * side * n) * rec, .block = row,
                               .levels = 3, .count = {side, side, o->steps}, .stride = {row, n * row, n * n * row}};
    p.bytes = pio_view_length(&p.view);
    p.total = p.bytes * clients;
    MPI_Datatype r, plane, column;
    MPI_Type_contiguous((int)row, MPI_BYTE, &r);
    MPI_Type_create_hvector((int)side, 1, row, r, &plane);
    MPI_Type_create_hvector((int)side, 1, n * row, plane, &column);
    MPI_Type_create_hvector(o->steps, 1, n * n * row, column, &p.filetype);
    MPI_Type_commit(&p.filetype);
    MPI_Type_free(&r), MPI_Type_free(&plane), MPI_Type_free(&column);
    p.disp = p.view.offset;
    return p;
}

static void check(const unsigned char *got, const unsigned char *want, int64_t len, const char *what)
{
    if (memcmp(got, want, (size_t)len) != 0) {
        pio_abort(1, "pio_bench: %s read back other bytes than were written", what);
    }
}

static void fail(int rc, const char *what)
{
    pio_abort(1, "pio_bench: %s: %s (%d)", what, pio_last_error(), rc);
}

/* MPI-IO over comm (the clients, or every rank with the servers first); ranks with no
 * part (the servers) take part in the collective calls with nothing of their own. */
static void mpiio(const struct options *o, int rep, const char *method, MPI_Comm comm, MPI_Info info,
                  const struct part *p, unsigned char *data, unsigned char *back)
{
    const char *dir = getenv("ISTHMUS_PIO_DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/%s-bench", dir ? dir : "/tmp/isthmus-pio", method);
    double t[2];
    int64_t bytes = p ? p->bytes : 0;
    for (int op = 0; op < 2; op++) {
        MPI_File fh;
        int rc = MPI_File_open(comm, path, op == 0 ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY, info, &fh);
        if (rc != MPI_SUCCESS) {
            pio_abort(1, "pio_bench: MPI_File_open %s failed", path);
        }
        MPI_File_set_view(fh, p ? p->disp : 0, MPI_BYTE, p ? p->filetype : MPI_BYTE, "native", info);
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        if (op == 0) {
            MPI_File_write_at_all(fh, 0, data, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
            MPI_File_sync(fh);
        } else {
            MPI_File_read_at_all(fh, 0, back, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        t[op] = slowest(MPI_Wtime() - t0, comm);
        MPI_File_close(&fh);
    }
    if (p) check(back, data, p->bytes, method);
    int me;
    MPI_Comm_rank(comm, &me);
    if (me == 0) MPI_File_delete(path, MPI_INFO_NULL);
    int64_t total = p ? p->total : 0;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_MAX, comm);
    record(p && p->first, o, method, 0, 0, "write", rep, total, t[0]);
    record(p && p->first, o, method, 0, 0, "read", rep, total, t[1]);
}

/* Each client's bytes: the pattern of their file offsets, so every method's file is the same. */
static unsigned char *client_data(const struct part *p, int rep)
{
    unsigned char *data = malloc((size_t)p->bytes + 1);
    for (int64_t i = 0; i < p->bytes; i++) data[i] = pattern(p->view.offset * 7 + i, rep);
    return data;
}

/* MPI-IO on every rank, the servers first in the communicator so that ROMIO's first
 * cb_nodes ranks, its aggregators, are the servers: two-phase I/O sends every client's
 * bytes to them across the network, and they write the file. */
static void mpiio_servers(const struct options *o, int rep, int nservers)
{
    int s = server_index(), c = client_index(), world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, s >= 0 ? s : nservers + c, &comm);
    MPI_Info info;
    MPI_Info_create(&info);
    char aggregators[16];
    snprintf(aggregators, sizeof aggregators, "%d", nservers);
    MPI_Info_set(info, "cb_config_list", "*:*"); /* every rank may aggregate (one host name here) */
    MPI_Info_set(info, "cb_nodes", aggregators);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
    struct part p = {0};
    unsigned char *data = NULL, *back = NULL;
    if (s < 0) {
        p = client_part(o, c, world - nservers);
        data = client_data(&p, rep);
        back = calloc((size_t)p.bytes + 1, 1);
    }
    mpiio(o, rep, "mpiio-servers", comm, info, s < 0 ? &p : NULL, data, back);
    if (s < 0 && p.filetype != MPI_BYTE) MPI_Type_free(&p.filetype);
    free(data), free(back);
    MPI_Info_free(&info);
    MPI_Comm_free(&comm);
}

static void pio(const struct options *o, int rep, pio_ctx *ctx, MPI_Comm clients, const struct part *p,
                unsigned char *data, unsigned char *back, int strategy, int64_t block)
{
    int rc = pio_set_schedule(ctx, strategy, block);
    if (rc) fail(rc, "schedule");
    double t[2];
    for (int op = 0; op < 2; op++) {
        pio_file *f;
        if ((rc = pio_open(ctx, "pio-bench", op == 0 ? PIO_WRONLY | PIO_CREATE | PIO_TRUNC : PIO_RDONLY, &f)))
            fail(rc, "open");
        if ((rc = pio_set_view(f, &p->view))) fail(rc, "view");
        MPI_Barrier(clients);
        double t0 = MPI_Wtime();
        if (op == 0) {
            if ((rc = pio_write_at_all(f, 0, data, p->bytes)) || (rc = pio_close(f))) fail(rc, "write");
        } else if ((rc = pio_read_at_all(f, 0, back, p->bytes))) {
            fail(rc, "read");
        }
        t[op] = slowest(MPI_Wtime() - t0, clients);
        if (op == 1 && (rc = pio_close(f))) fail(rc, "close");
    }
    check(back, data, p->bytes, "pio");
    memset(back, 0, (size_t)p->bytes);
    int me;
    MPI_Comm_rank(clients, &me);
    record(me == 0, o, "pio", strategy, block, "write", rep, p->total, t[0]);
    record(me == 0, o, "pio", strategy, block, "read", rep, p->total, t[1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    struct options o;
    parse(argc, argv, &o);
    struct bench_options header = {.min_size = (long)o.min_block, .max_size = (long)o.max_block,
                                   .iterations = o.repeat};
    bench_header("pio", argc, argv, &header);
    int nservers = count_servers();
    if (nservers == 0) usage_error("%s", "no I/O servers: run it with isthmus run on a platform with an [io] table");
    for (int rep = 0; rep < o.repeat; rep++) {
        /* The same bytes in every method: the clients' total. */
        int world;
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        struct part shape = client_part(&o, 0, world - nservers);
        bench_progress("pio_bench", "repetition %d of %d: the servers alone", rep + 1, o.repeat);
        raw(&o, rep, shape.total);
        if (shape.filetype != MPI_BYTE) MPI_Type_free(&shape.filetype);
        bench_progress("pio_bench", "repetition %d of %d: MPI-IO through the servers", rep + 1, o.repeat);
        mpiio_servers(&o, rep, nservers);
        pio_ctx *ctx;
        MPI_Comm clients;
        int rc = pio_init(MPI_COMM_WORLD, NULL, &ctx, &clients);
        if (rc == PIO_SERVED) continue;
        if (rc) fail(rc, "init");
        int me, n;
        MPI_Comm_rank(clients, &me);
        MPI_Comm_size(clients, &n);
        struct part p = client_part(&o, me, n);
        unsigned char *data = client_data(&p, rep), *back = calloc((size_t)p.bytes + 1, 1);
        bench_progress("pio_bench", "repetition %d of %d: MPI-IO", rep + 1, o.repeat);
        mpiio(&o, rep, "mpiio", clients, MPI_INFO_NULL, &p, data, back);
        for (int s = 0; s < o.nstrategies; s++) {
            bench_progress("pio_bench", "repetition %d of %d: %s-IOS", rep + 1, o.repeat,
                           pio_strategy_name(o.strategies[s]));
            for (int64_t b = o.min_block; b <= o.max_block; b *= 2) pio(&o, rep, ctx, clients, &p, data, back, o.strategies[s], b);
        }
        if (p.filetype != MPI_BYTE) MPI_Type_free(&p.filetype);
        free(data), free(back);
        pio_finalize(ctx);
        MPI_Comm_free(&clients);
    }
    MPI_Finalize();
    return 0;
}
