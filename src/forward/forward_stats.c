/* A forwarder's counters (forward_stats.h). One cell per ordered pair of world ranks,
 * nranks^2 cells of 48 bytes: 3 MiB at 256 ranks, touched only where traffic goes.
 *
 * "Wait" is what the forwarder itself adds to a frame: from the moment its last byte
 * arrived to the moment that byte left. A frame relayed cut-through into an idle
 * connection waits about one event-loop turn; one behind a busy destination waits for
 * that destination's queue. The time a frame spends arriving is the sender's link, not
 * the forwarder, and is left out. */
#define _GNU_SOURCE
#include "forward_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_BUCKETS 32 /* bucket 0: under 1 us; bucket b: [2^(b-1), 2^b) us */

struct pair_counts {
    long long frames, bytes, held;
    double wait_sum, wait_max;
};

static int nranks;
static struct pair_counts *pairs; /* [src * nranks + dst] */
static long long (*conn_bytes)[2]; /* per rank: read from it, written to it */
static char (*conn_peer)[16];      /* per rank: the IPv4 address it connected from */
static char *conn_same_host;       /* per rank: it connected from this host's own address */
static long long wait_buckets[WAIT_BUCKETS];
static long long dropped_bytes;

double fwd_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void fwd_stats_init(int n)
{
    nranks = n;
    pairs = calloc((size_t)n * (size_t)n, sizeof *pairs);
    conn_bytes = calloc((size_t)n, sizeof *conn_bytes);
    conn_peer = calloc((size_t)n, sizeof *conn_peer);
    conn_same_host = calloc((size_t)n, 1);
    if (!pairs || !conn_bytes || !conn_peer || !conn_same_host) {
        fputs("isthmus-forward: out of memory for its counters\n", stderr);
        exit(1);
    }
}

void fwd_stats_frame(int src, int dst, size_t payload, double arrived, double left)
{
    struct pair_counts *p = &pairs[(size_t)src * (size_t)nranks + (size_t)dst];
    double wait = left > arrived ? left - arrived : 0.0;
    p->frames++;
    p->bytes += (long long)payload;
    p->wait_sum += wait;
    if (wait > p->wait_max) p->wait_max = wait;
    int b = 0;
    for (double us = wait * 1e6; us >= 1.0 && b < WAIT_BUCKETS - 1; us /= 2) b++;
    wait_buckets[b]++;
}

void fwd_stats_held(int src, int dst) { pairs[(size_t)src * (size_t)nranks + (size_t)dst].held++; }

void fwd_stats_dropped(size_t bytes) { dropped_bytes += (long long)bytes; }

void fwd_stats_connection(int r, const char *peer, int same_host, long long bytes_in,
                          long long bytes_out)
{
    snprintf(conn_peer[r], sizeof conn_peer[r], "%s", peer);
    conn_same_host[r] = (char)same_host;
    conn_bytes[r][0] = bytes_in;
    conn_bytes[r][1] = bytes_out;
}

static void write_json(FILE *f, const char *name, double seconds)
{
    fprintf(f, "{\n  \"schema\": \"isthmus-forwarder-stats\",\n  \"version\": 1,\n");
    fprintf(f, "  \"name\": \"");
    for (const char *c = name; *c; c++) /* host names: no quoting needed, but be safe */
        if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
    fprintf(f, "\",\n  \"ranks\": %d,\n  \"seconds\": %.6f,\n", nranks, seconds);
    fprintf(f, "  \"dropped_bytes\": %lld,\n", dropped_bytes);
    fprintf(f, "  \"pairs\": [");
    const char *sep = "\n";
    for (int s = 0; s < nranks; s++)
        for (int d = 0; d < nranks; d++) {
            const struct pair_counts *p = &pairs[(size_t)s * (size_t)nranks + (size_t)d];
            if (!p->frames && !p->held) continue;
            fprintf(f,
                    "%s    {\"src\": %d, \"dst\": %d, \"frames\": %lld, \"bytes\": %lld, "
                    "\"wait_seconds\": %.9f, \"wait_max_seconds\": %.9f, \"held\": %lld}",
                    sep, s, d, p->frames, p->bytes, p->wait_sum, p->wait_max, p->held);
            sep = ",\n";
        }
    fprintf(f, "\n  ],\n  \"connections\": [");
    sep = "\n";
    for (int r = 0; r < nranks; r++) {
        fprintf(f,
                "%s    {\"rank\": %d, \"from\": \"%s\", \"same_host\": %s, \"bytes_in\": %lld, "
                "\"bytes_out\": %lld}",
                sep, r, conn_peer[r], conn_same_host[r] ? "true" : "false", conn_bytes[r][0],
                conn_bytes[r][1]);
        sep = ",\n";
    }
    int last = 0;
    for (int b = 0; b < WAIT_BUCKETS; b++)
        if (wait_buckets[b]) last = b;
    fprintf(f, "\n  ],\n  \"wait_histogram_us\": [");
    for (int b = 0; b <= last; b++) fprintf(f, "%s%lld", b ? ", " : "", wait_buckets[b]);
    fprintf(f, "]\n}\n");
}

int fwd_stats_write(const char *path, const char *name, double seconds)
{
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp) return -1;
    snprintf(tmp, n, "%s.part", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (f) {
        write_json(f, name, seconds);
        int bad = ferror(f);
        if (fclose(f) == 0 && !bad && rename(tmp, path) == 0) rc = 0;
        else remove(tmp);
    }
    free(tmp);
    return rc;
}
