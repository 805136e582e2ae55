/* What every benchmark program shares: its options, the JSON header record, the size
 * series, and progress on stderr. Output is JSON lines on stdout (rank 0 only): one
 * {"record": "header", ...} then one record per measurement. */
#ifndef ISTHMUS_BENCH_COMMON_H
#define ISTHMUS_BENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>

struct bench_options {
    long min_size, max_size; /* bytes */
    double seconds_per_size; /* time budget of one size (ping-pong) */
    int iterations, warmup;  /* fixed counts (window benchmarks, collectives) */
    int peer;                /* the rank that rank 0 measures against */
    int pairs;               /* bw, bibw: this many pairs at once, rank i with i + size/2
                                (1: rank 0 with peer) */
    int perturbation;        /* NetPIPE's +-bytes around each size; 0 for none */
    const char *collectives; /* comma-separated list, or "all" */
    double precision;        /* logp: stop when the 95% interval is within this fraction */
    const char *params;      /* bcast: a P-LogP parameter file (docs/model.md) */
    const char *entries;     /* coll: "mpi" (on MPI_COMM_WORLD: libisthmus's algorithm
                                when it is on), "native" (on a duplicate named
                                "isthmus:native", which libisthmus leaves to the MPI
                                library), or both */
};

/* Parse the options every benchmark takes; prints usage and exits 2 on bad input (rank 0
 * speaks, every rank exits). */
void bench_parse(int argc, char **argv, const char *name, struct bench_options *o);

/* The header record: benchmark, MPI library, ranks and their placement (host, cluster),
 * date, command line, and the platform and git revision isthmus run passes in
 * ISTHMUS_PLATFORM_NAME and ISTHMUS_GIT_REVISION. Collective over MPI_COMM_WORLD. */
void bench_header(const char *name, int argc, char **argv, const struct bench_options *o);

/* Progress on stderr from rank 0: "name: message". */
void bench_progress(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The cluster of world rank r from $ISTHMUS_CLUSTERS ("" when not run by isthmus). */
void bench_cluster_of(int r, char *out, size_t n);

/* The next size of a power-of-two series from min_size, or -1 after max_size. */
long bench_next_size(const struct bench_options *o, long size);

#endif
