/* Two-phase collective I/O, with aggregators per cluster (issue 49 item 2; ROMIO's
 * collective buffering, Thakur et al., made WAN-aware).
 *
 * Phase one: every client cuts its request into the file domains of its cluster's
 * aggregators and sends each the list of its pieces (an all-to-all inside the cluster),
 * with their data for a write; phase two: each aggregator writes what it gathered, or
 * reads what was asked and sends it back, pieces sorted by file offset and merged into
 * runs, as one request scheduled like any other. The aggregators of a cluster are in that
 * cluster, so a byte leaves its cluster once, from the aggregator to the servers, never
 * to an aggregator elsewhere (ROMIO's default picks aggregators by host, wherever they
 * are). The clusters come from the platform (ISTHMUS_CLUSTERS, as `isthmus run` sets it)
 * or ISTHMUS_CLUSTER; without either, all clients are one cluster.
 *
 * When: pio_write_at_all and pio_read_at_all, if the clients' requests interleave in the file and their
 * contiguous runs are smaller than a stripe on average (what ROMIO's aggregation is
 * for), or always with ISTHMUS_PIO_TWO_PHASE=on; never with =off. Cost: one allgather to
 * decide; then per cluster a split (once per file), an allreduce, two all-to-alls (piece
 * lists, then data: every byte copied once more, over the cluster's LAN) and the
 * aggregators' writes: min(cluster's clients, servers) aggregators per cluster, each
 * writing whole stripes where the data covers them. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pio_client.h"

struct piece {
    int64_t file, len, at; /* at: where its bytes are in the received (or returned) data */
};

/* One call's exchange inside a cluster: what this client sends each aggregator (pieces,
 * bytes, displacements of their (file, len) pairs and of their data; each piece's place
 * in this client's buffer), and on an aggregator what each client sent it. */
struct exchange {
    int n;                    /* the cluster's clients */
    int *np, *nb, *sd, *sd2;  /* to each: pieces, bytes, pair and data displacements */
    int *rp, *rb, *rd, *rd2;  /* from each, the same */
    int64_t *mem, *len, nsent; /* this client's pieces' buffer offsets and lengths, in
                                  sending order (their data goes in that order too) */
    int64_t rbytes;
    struct piece *got;        /* an aggregator's pieces in file order, `at` into the data */
    int64_t ngot;
};

/* This client's cluster, as a colour for MPI_Comm_split. */
static int cluster_colour(const struct pio_ctx *c)
{
    const char *blocks = getenv("ISTHMUS_CLUSTERS"), *name = getenv("ISTHMUS_CLUSTER");
    if (blocks && *blocks && strcmp(blocks, "auto") != 0) { /* "name:count,..." over the job's ranks */
        char names[64][64];
        int n = 0, first = 0;
        long upto = 0;
        for (const char *p = blocks; *p && n < 64;) {
            const char *colon = strchr(p, ':');
            if (!colon) break;
            size_t k = (size_t)(colon - p) < sizeof names[0] - 1 ? (size_t)(colon - p) : sizeof names[0] - 1;
            memcpy(names[n], p, k);
            names[n][k] = '\0';
            char *end;
            upto += strtol(colon + 1, &end, 10);
            if (c->rank < upto) {
                for (first = 0; strcmp(names[first], names[n]) != 0; first++) {}
                return first;
            }
            n++;
            p = *end ? end + 1 : end;
        }
    }
    unsigned h = 5381; /* a name (a real site's): every client of it gets the same colour */
    for (const char *p = name ? name : ""; *p; p++) h = h * 33 + (unsigned char)*p;
    return (int)(h & 0x3fffffff);
}

static int mode(void)
{
    const char *v = getenv("ISTHMUS_PIO_TWO_PHASE");
    return !v || !*v || !strcmp(v, "auto") ? 0 : !strcmp(v, "on") ? 1 : -1;
}

static int by_file(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    return (x->file > y->file) - (x->file < y->file);
}

/* This client's request as file runs in buffer order (views never go back in the file):
 * planned as on one server with a stripe that never cuts. */
static int runs_of(const struct pio_file *f, int64_t pos, int64_t len, struct pio_extents *runs)
{
    struct pio_layout whole = {INT64_MAX / 4, 1};
    int64_t end;
    if (f->filetype.n) return pio_plan_typemap(&whole, &f->filetype, f->disp, pos, len, runs, &end);
    return pio_plan(&whole, &f->view, pos, len, runs, &end);
}

/* Should the clients aggregate? One allgather of what each asks (and whether its request
 * was refused: *failed), from which every client decides the same. */
static int worth_it(const struct pio_file *f, int rc, const struct pio_extents *runs, int64_t len, int *failed)
{
    int n;
    MPI_Comm_size(f->comm, &n);
    int64_t lo = runs->n ? runs->e[0].file : INT64_MAX;
    int64_t hi = runs->n ? runs->e[runs->n - 1].file + runs->e[runs->n - 1].len : 0;
    int64_t mine[5] = {rc, lo, hi, runs->n, len}, *all = malloc(sizeof *all * 5 * (size_t)n);
    if (!all) MPI_Abort(f->comm, 1); /* a few bytes a client: nothing sensible is left */
    MPI_Allgather(mine, 5, MPI_INT64_T, all, 5, MPI_INT64_T, f->comm);
    int64_t first = INT64_MAX, last = 0, spans = 0, pieces = 0, bytes = 0, largest = 0;
    *failed = 0;
    for (int r = 0; r < n; r++) {
        const int64_t *a = all + 5 * r;
        *failed |= a[0] != 0;
        if (a[3] == 0) continue;
        first = a[1] < first ? a[1] : first, last = a[2] > last ? a[2] : last;
        spans += a[2] - a[1], pieces += a[3], bytes += a[4];
        largest = a[4] > largest ? a[4] : largest;
    }
    free(all);
    if (*failed || bytes == 0 || largest > INT_MAX / 2) return 0; /* refused, nothing, too large */
    if (mode() > 0) return 1;
    int interleaved = spans > last - first; /* the ranges add up to more than their union */
    return interleaved && bytes / pieces < f->layout.stripe;
}

static void exchange_free(struct exchange *x)
{
    free(x->np), free(x->nb), free(x->sd), free(x->sd2), free(x->rp), free(x->rb), free(x->rd), free(x->rd2);
    free(x->mem), free(x->len), free(x->got);
}

/* Phase one's lists: this client's runs cut into its cluster's aggregators' domains
 * (min(clients, servers) of them, aggregator a at cluster rank a * n / naggr), the
 * counts and the (file, len) pairs all to all; each aggregator's pieces sorted by file. */
static int exchange_lists(struct pio_file *f, const struct pio_extents *runs, struct exchange *x)
{
    const struct pio_ctx *c = f->ctx;
    if (f->cluster == MPI_COMM_NULL) MPI_Comm_split(f->comm, cluster_colour(c), f->rank, &f->cluster);
    int n;
    MPI_Comm_size(f->cluster, &n);
    x->n = n;
    int64_t lo = runs->n ? runs->e[0].file : INT64_MAX, hi = runs->n ? runs->e[runs->n - 1].file + runs->e[runs->n - 1].len : 0;
    int64_t mine[2] = {-lo, hi}, span[2];
    MPI_Allreduce(mine, span, 2, MPI_INT64_T, MPI_MAX, f->cluster);
    int64_t S = f->layout.stripe, first = (-span[0] / S) * S;
    int naggr = n < c->nservers ? n : c->nservers;
    int64_t stripes = (span[1] - first + S - 1) / S, per = ((stripes + naggr - 1) / naggr) * S;
    if (per <= 0) per = S;
    int **counts[] = {&x->np, &x->nb, &x->sd, &x->sd2, &x->rp, &x->rb, &x->rd, &x->rd2};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) *counts[i] = calloc((size_t)n, sizeof(int));
    int64_t total = 0;
    for (int pass = 0; pass < 2; pass++) { /* count, then place */
        int64_t *pairs = NULL;
        if (pass == 1) {
            for (int r = 1; r < n; r++) x->sd[r] = x->sd[r - 1] + 2 * x->np[r - 1], x->sd2[r] = x->sd2[r - 1] + x->nb[r - 1];
            pairs = malloc(sizeof *pairs * (size_t)(2 * total + 1));
            x->mem = malloc(sizeof *x->mem * (size_t)(total + 1));
            x->len = malloc(sizeof *x->len * (size_t)(total + 1));
            x->nsent = total;
            memset(x->np, 0, (size_t)n * sizeof *x->np);
            memset(x->nb, 0, (size_t)n * sizeof *x->nb);
        }
        for (int i = 0; i < runs->n; i++)
            for (int64_t off = runs->e[i].file, left = runs->e[i].len, mem = runs->e[i].mem; left > 0;) {
                int64_t d = (off - first) / per, end = first + (d + 1) * per;
                int64_t piece = end - off < left ? end - off : left;
                int a = (int)(d * n / naggr);
                if (pass == 1) {
                    int k = x->sd[a] / 2 + x->np[a];
                    pairs[2 * k] = off, pairs[2 * k + 1] = piece, x->mem[k] = mem, x->len[k] = piece;
                }
                total += pass == 0;
                x->np[a]++, x->nb[a] += (int)piece;
                off += piece, mem += piece, left -= piece;
            }
        if (pass == 0) continue;
        MPI_Alltoall(x->np, 1, MPI_INT, x->rp, 1, MPI_INT, f->cluster);
        MPI_Alltoall(x->nb, 1, MPI_INT, x->rb, 1, MPI_INT, f->cluster);
        int *sendc = malloc((size_t)n * sizeof *sendc), *recvc = malloc((size_t)n * sizeof *recvc);
        for (int r = 0; r < n; r++) {
            sendc[r] = 2 * x->np[r], recvc[r] = 2 * x->rp[r];
            x->rd[r] = (int)(2 * x->ngot), x->rd2[r] = (int)x->rbytes;
            x->ngot += x->rp[r], x->rbytes += x->rb[r];
        }
        int64_t *got = malloc(sizeof *got * (size_t)(2 * x->ngot + 1));
        MPI_Alltoallv(pairs, sendc, x->sd, MPI_INT64_T, got, recvc, x->rd, MPI_INT64_T, f->cluster);
        x->got = malloc(sizeof *x->got * (size_t)(x->ngot + 1));
        for (int r = 0, k = 0; r < n; r++)
            for (int64_t i = 0, at = x->rd2[r]; i < x->rp[r]; i++, k++) {
                x->got[k] = (struct piece){got[x->rd[r] + 2 * i], got[x->rd[r] + 2 * i + 1], at};
                at += x->got[k].len;
            }
        qsort(x->got, (size_t)x->ngot, sizeof *x->got, by_file);
        free(pairs), free(sendc), free(recvc), free(got);
    }
    return PIO_OK;
}

/* An aggregator's pieces as extents per server, at their places in a buffer in file order. */
static int aggregated_plan(const struct pio_file *f, const struct exchange *x, struct pio_extents *lists)
{
    int rc = PIO_OK;
    for (int64_t k = 0, mem = 0; k < x->ngot && !rc; mem += x->got[k++].len)
        rc = pio_plan_range(&f->layout, x->got[k].file, x->got[k].len, mem, lists);
    return rc;
}

/* The clients' pieces, the decision and the exchange, shared by both directions: 0 with
 * the exchange ready, PIO_DIRECT, or an error every client returns. */
static int prepare(struct pio_file *f, int rc, int64_t pos, int64_t len, struct pio_extents *runs,
                   struct exchange *x, int reading)
{
    if (mode() < 0) return PIO_DIRECT; /* the same setting on every client: no collective */
    if (!rc) rc = runs_of(f, pos, len, runs);
    int64_t hi = runs->n ? runs->e[runs->n - 1].file + runs->e[runs->n - 1].len : 0;
    if (!rc && reading && hi > f->known_size) { /* as pio_read_at: past the end is refused */
        int64_t size = 0;
        rc = pio_size(f, &size);
        if (!rc && hi > size)
            rc = pio_fail(PIO_ERANGE, "pio: reading %s up to byte %lld: past its end (%lld bytes)", f->name,
                          (long long)hi, (long long)size);
    }
    int failed;
    if (!worth_it(f, rc, runs, len, &failed)) return failed ? pio_agree(f->comm, rc) : PIO_DIRECT;
    return exchange_lists(f, runs, x);
}

int pio_two_phase_write(struct pio_file *f, int rc, int64_t pos, const void *buf, int64_t len)
{
    struct pio_extents runs = {0};
    struct exchange x = {0};
    rc = prepare(f, rc, pos, len, &runs, &x, 0);
    if (rc) {
        pio_extents_free(&runs), exchange_free(&x);
        return rc;
    }
    char *data = malloc((size_t)len + 1), *in = malloc((size_t)x.rbytes + 1), *sorted = malloc((size_t)x.rbytes + 1);
    struct pio_extents *lists = calloc((size_t)f->ctx->nservers, sizeof *lists);
    for (int64_t k = 0, at = 0; k < x.nsent; at += x.len[k++]) /* the pieces in sending order */
        memcpy(data + at, (const char *)buf + x.mem[k], (size_t)x.len[k]);
    MPI_Alltoallv(data, x.nb, x.sd2, MPI_BYTE, in, x.rb, x.rd2, MPI_BYTE, f->cluster);
    for (int64_t k = 0, at = 0; k < x.ngot; at += x.got[k++].len) /* an aggregator's, in file order */
        memcpy(sorted + at, in + x.got[k].at, (size_t)x.got[k].len);
    rc = aggregated_plan(f, &x, lists);
    if (!rc && x.ngot > 0) rc = pio_write_planned(f, lists, sorted);
    int64_t end = runs.n ? runs.e[runs.n - 1].file + runs.e[runs.n - 1].len : 0;
    if (!rc && end > f->known_size) f->known_size = end; /* at least: reads ask the servers past it */
    for (int s = 0; s < f->ctx->nservers; s++) pio_extents_free(&lists[s]);
    free(lists), free(data), free(in), free(sorted);
    pio_extents_free(&runs), exchange_free(&x);
    return pio_agree(f->comm, rc);
}

int pio_two_phase_read(struct pio_file *f, int rc, int64_t pos, void *buf, int64_t len)
{
    struct pio_extents runs = {0};
    struct exchange x = {0};
    rc = prepare(f, rc, pos, len, &runs, &x, 1);
    if (rc) {
        pio_extents_free(&runs), exchange_free(&x);
        return rc;
    }
    char *data = malloc((size_t)len + 1), *back = malloc((size_t)x.rbytes + 1), *sorted = malloc((size_t)x.rbytes + 1);
    struct pio_extents *lists = calloc((size_t)f->ctx->nservers, sizeof *lists);
    rc = aggregated_plan(f, &x, lists);
    if (!rc && x.ngot > 0) rc = pio_read_planned(f, lists, sorted);
    for (int64_t k = 0, at = 0; k < x.ngot; at += x.got[k++].len) /* back in the order asked */
        memcpy(back + x.got[k].at, sorted + at, (size_t)x.got[k].len);
    MPI_Alltoallv(back, x.rb, x.rd2, MPI_BYTE, data, x.nb, x.sd2, MPI_BYTE, f->cluster);
    rc = pio_agree(f->comm, rc);
    for (int64_t k = 0, at = 0; !rc && k < x.nsent; at += x.len[k++])
        memcpy((char *)buf + x.mem[k], data + at, (size_t)x.len[k]);
    for (int s = 0; s < f->ctx->nservers; s++) pio_extents_free(&lists[s]);
    free(lists), free(data), free(back), free(sorted);
    pio_extents_free(&runs), exchange_free(&x);
    return rc;
}
