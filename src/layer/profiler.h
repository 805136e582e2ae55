/* The profiler's per-rank counters, shared by the recorders (profiler.c) and the code that
 * merges and writes them at MPI_Finalize (profile_write.c). */
#ifndef ISTHMUS_PROFILER_H
#define ISTHMUS_PROFILER_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "functions.h"

/* Size buckets: 0 holds zero-byte calls, k >= 1 holds sizes in [2^(k-1), 2^k). */
#define IST_NBUCKETS 48

struct ist_bucket {
    uint64_t calls;
    uint64_t bytes;
    uint64_t ticks;
};

/* Matrix vectors, each world_size long, indexed by the peer's world rank. Point-to-point
 * traffic is recorded by the sender; a collective's logical traffic by whichever side's
 * arguments are significant (alltoallv: the receiver), so a cell is counted once. */
enum ist_vec {
    IST_OUT_P2P_MSGS,
    IST_OUT_P2P_BYTES,
    IST_OUT_COLL_MSGS,
    IST_OUT_COLL_BYTES,
    IST_IN_COLL_MSGS,
    IST_IN_COLL_BYTES,
    IST_NVEC
};

extern struct ist_bucket ist_stats[IST_FN_COUNT][IST_NBUCKETS];

/* Per function: calls that ran libisthmus's WAN-aware algorithm, and the messages and
 * bytes this rank sent across wide-area links in them (src/coll counts them). */
enum ist_wan_field { IST_WAN_CALLS, IST_WAN_MESSAGES, IST_WAN_BYTES, IST_NWAN };
extern uint64_t ist_wan_stats[IST_FN_COUNT][IST_NWAN];
extern uint64_t *ist_matrix_vec; /* IST_NVEC * world_size */

/* Call sites of the collectives, as mpiP keeps them: per function and return address into
 * the caller, the calls, their time, and how many ran libisthmus's WAN-aware algorithm
 * (the others ran the MPI's own, as the selector chose for that call). A fixed table,
 * open addressing; calls at sites beyond it are only counted (ist_sites_dropped). */
#define IST_MAX_SITES 512

struct ist_site {
    const void *pc; /* the return address: the instruction after the call */
    int32_t fn;
    uint64_t calls, wan_calls, ticks;
};

extern struct ist_site ist_sites[IST_MAX_SITES];
extern uint64_t ist_sites_dropped;

static inline int ist_bucket_of(uint64_t bytes)
{
    int b = bytes ? 64 - __builtin_clzll(bytes) : 0;
    return b < IST_NBUCKETS ? b : IST_NBUCKETS - 1;
}

/* Lower bound in bytes of bucket b. */
static inline uint64_t ist_bucket_low(int b) { return b ? (uint64_t)1 << (b - 1) : 0; }

/* Under MPI_THREAD_MULTIPLE several threads record at once: a spinlock then guards the
 * counters. Other thread levels take no lock. */
extern int ist_stats_locking;
extern atomic_flag ist_stats_lock;

static inline void ist_lock_stats(void)
{
    if (ist_stats_locking)
        while (atomic_flag_test_and_set_explicit(&ist_stats_lock, memory_order_acquire)) {
        }
}

static inline void ist_unlock_stats(void)
{
    if (ist_stats_locking) atomic_flag_clear_explicit(&ist_stats_lock, memory_order_release);
}

static inline uint64_t ist_bytes_of(int count, MPI_Datatype type)
{
    if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
    int size = 0;
    PMPI_Type_size(type, &size);
    return (uint64_t)count * (uint64_t)size;
}

/* One call of fn, `bytes` large, in its bucket (the caller holds the lock). */
static inline void ist_add_call(enum ist_fn fn, uint64_t ticks, uint64_t bytes)
{
    struct ist_bucket *b = &ist_stats[fn][ist_bucket_of(bytes)];
    b->calls++;
    b->bytes += bytes;
    b->ticks += ticks;
}

int ist_profiler_init(int world_size, int thread_multiple);
void ist_profiler_free(void);

/* Merge every rank's counters on rank 0 and write the JSON profile to 'path'. Collective
 * over 'comm' (a duplicate of MPI_COMM_WORLD). init_unix: when this rank's MPI_Init
 * returned (seconds since the epoch). Returns 0 on success. */
int ist_profile_write(const char *path, MPI_Comm comm, double ticks_per_second,
                      double app_seconds, double init_unix);

/* profile_gather.c, collective over comm: every rank's n rows of `size` bytes on rank 0,
 * rank after rank, with how many each sent in *counts (NULL elsewhere); a gather and a
 * sum on rank 0; and a JSON string. */
void *ist_gather_rows(const void *mine, int n, size_t size, int **counts, MPI_Comm comm);
void ist_gather_to_0(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                     MPI_Comm comm);
void ist_sum_to_0(const uint64_t *mine, uint64_t *sum, MPI_Comm comm);
void ist_json_string(FILE *f, const char *s);

/* The MPI-IO profile (profile_io.c): gathered on rank 0 (collective), written there as
 * the profile's "io" table, freed on every rank. */
struct ist_io_gathered {
    struct io_call_row *calls;
    struct io_size_row *sizes;
    int *call_counts, *size_counts;
    uint64_t dropped;
};
void ist_io_gather(struct ist_io_gathered *g, MPI_Comm comm, double ticks_per_second);
void ist_io_write(FILE *f, const struct ist_io_gathered *g, int nranks);
void ist_io_free(struct ist_io_gathered *g);

#endif
