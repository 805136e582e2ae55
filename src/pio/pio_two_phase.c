/* Two-phase collective writes, with aggregators per cluster (issue 49 item 2; ROMIO's
 * collective buffering, Thakur et al., made WAN-aware).
 *
 * Phase one: every client cuts its request into the file domains of its cluster's
 * aggregators and sends each its pieces (an all-to-all inside the cluster); phase two:
 * each aggregator writes what it gathered, pieces sorted by file offset and merged into
 * runs, as one request scheduled like any other. The aggregators of a cluster are in that
 * cluster, so a byte leaves its cluster once, from the aggregator to the servers, never
 * to an aggregator elsewhere (ROMIO's default picks aggregators by host, wherever they
 * are). The clusters come from the platform (ISTHMUS_CLUSTERS, as `isthmus run` sets it)
 * or ISTHMUS_CLUSTER; without either, all clients are one cluster.
 *
 * When: pio_write_at_all, if the clients' requests interleave in the file and their
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
    int64_t file, len, at; /* at: where its bytes are in the received data */
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

int pio_two_phase_write(struct pio_file *f, int rc, int64_t pos, const void *buf, int64_t len)
{
    struct pio_ctx *c = f->ctx;
    if (mode() < 0) return PIO_DIRECT; /* the same setting on every client: no collective */
    struct pio_extents runs = {0};
    if (!rc) rc = runs_of(f, pos, len, &runs);
    int failed;
    if (!worth_it(f, rc, &runs, len, &failed)) {
        pio_extents_free(&runs);
        return failed ? pio_agree(f->comm, rc) : PIO_DIRECT;
    }
    if (f->cluster == MPI_COMM_NULL) MPI_Comm_split(f->comm, cluster_colour(c), f->rank, &f->cluster);
    int me, n;
    MPI_Comm_rank(f->cluster, &me);
    MPI_Comm_size(f->cluster, &n);

    /* The cluster's file domains: its span cut into naggr stripe-aligned parts. */
    int64_t lo = runs.n ? runs.e[0].file : INT64_MAX, hi = runs.n ? runs.e[runs.n - 1].file + runs.e[runs.n - 1].len : 0;
    int64_t mine[2] = {-lo, hi}, span[2];
    MPI_Allreduce(mine, span, 2, MPI_INT64_T, MPI_MAX, f->cluster);
    int64_t S = f->layout.stripe, first = (-span[0] / S) * S;
    int naggr = n < c->nservers ? n : c->nservers;
    int64_t stripes = (span[1] - first + S - 1) / S, per = ((stripes + naggr - 1) / naggr) * S;
    if (per <= 0) per = S;

    /* Phase one: this client's pieces for each aggregator (aggregator a: cluster rank
     * a * n / naggr), then the lists and the data, all to all. */
    int *np = calloc((size_t)n, sizeof *np), *nb = calloc((size_t)n, sizeof *nb);
    int *rp = calloc((size_t)n, sizeof *rp), *rb = calloc((size_t)n, sizeof *rb);
    int *sd = calloc((size_t)n, sizeof *sd), *rd = calloc((size_t)n, sizeof *rd);
    int *sd2 = calloc((size_t)n, sizeof *sd2), *rd2 = calloc((size_t)n, sizeof *rd2);
    int total_pieces = 0;
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        int64_t *meta = NULL;
        char *data = NULL;
        if (pass == 1) {
            for (int r = 1; r < n; r++) sd[r] = sd[r - 1] + 2 * np[r - 1], sd2[r] = sd2[r - 1] + nb[r - 1];
            meta = malloc(sizeof *meta * (size_t)(2 * total_pieces + 1));
            data = malloc((size_t)len + 1);
            memset(np, 0, (size_t)n * sizeof *np);
            memset(nb, 0, (size_t)n * sizeof *nb);
        }
        for (int i = 0; i < runs.n; i++) {
            int64_t off = runs.e[i].file, left = runs.e[i].len, mem = runs.e[i].mem;
            while (left > 0) {
                int64_t d = (off - first) / per, end = first + (d + 1) * per;
                int64_t piece = end - off < left ? end - off : left;
                int a = (int)(d * n / naggr);
                if (pass == 1) {
                    meta[sd[a] + 2 * np[a]] = off, meta[sd[a] + 2 * np[a] + 1] = piece;
                    memcpy(data + sd2[a] + nb[a], (const char *)buf + mem, (size_t)piece);
                } else {
                    total_pieces++;
                }
                np[a]++, nb[a] += (int)piece;
                off += piece, mem += piece, left -= piece;
            }
        }
        if (pass == 0) continue;
        int *sendc = malloc((size_t)n * sizeof *sendc), *recvc = malloc((size_t)n * sizeof *recvc);
        for (int r = 0; r < n; r++) sendc[r] = 2 * np[r];
        MPI_Alltoall(np, 1, MPI_INT, rp, 1, MPI_INT, f->cluster);
        MPI_Alltoall(nb, 1, MPI_INT, rb, 1, MPI_INT, f->cluster);
        int64_t rpieces = 0, rbytes = 0;
        for (int r = 0; r < n; r++) {
            recvc[r] = 2 * rp[r];
            rd[r] = (int)(2 * rpieces), rd2[r] = (int)rbytes;
            rpieces += rp[r], rbytes += rb[r];
        }
        int64_t *rmeta = malloc(sizeof *rmeta * (size_t)(2 * rpieces + 1));
        char *rdata = malloc((size_t)rbytes + 1), *sorted = malloc((size_t)rbytes + 1);
        MPI_Alltoallv(meta, sendc, sd, MPI_INT64_T, rmeta, recvc, rd, MPI_INT64_T, f->cluster);
        MPI_Alltoallv(data, nb, sd2, MPI_BYTE, rdata, rb, rd2, MPI_BYTE, f->cluster);
        free(meta), free(data), free(sendc), free(recvc);

        /* Phase two: an aggregator's pieces in file order, one request to the servers. */
        struct piece *p = malloc(sizeof *p * (size_t)(rpieces + 1));
        for (int r = 0, k = 0; r < n; r++)
            for (int64_t i = 0, at = rd2[r]; i < rp[r]; i++, k++) {
                p[k] = (struct piece){rmeta[rd[r] + 2 * i], rmeta[rd[r] + 2 * i + 1], at};
                at += p[k].len;
            }
        qsort(p, (size_t)rpieces, sizeof *p, by_file);
        struct pio_extents *lists = calloc((size_t)c->nservers, sizeof *lists);
        int64_t mem = 0, end = 0;
        for (int64_t k = 0; k < rpieces && !rc; k++) {
            memcpy(sorted + mem, rdata + p[k].at, (size_t)p[k].len);
            rc = pio_plan_range(&f->layout, p[k].file, p[k].len, mem, lists);
            mem += p[k].len;
            if (p[k].file + p[k].len > end) end = p[k].file + p[k].len;
        }
        if (!rc && rpieces > 0) rc = pio_write_planned(f, lists, sorted);
        for (int s = 0; s < c->nservers; s++) pio_extents_free(&lists[s]);
        free(lists), free(p), free(rmeta), free(rdata), free(sorted);
        if (end > f->known_size) f->known_size = end; /* at least: a read asks the servers past it */
        if (hi > f->known_size) f->known_size = hi;
    }
    free(np), free(nb), free(rp), free(rb), free(sd), free(rd), free(sd2), free(rd2);
    pio_extents_free(&runs);
    return pio_agree(f->comm, rc);
}
