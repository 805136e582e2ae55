/* The profiler's per-rank counters, shared by the recorders (profiler.c) and the code that
 * merges and writes them at MPI_Finalize (profile_write.c). */
#ifndef ISTHMUS_PROFILER_H
#define ISTHMUS_PROFILER_H

#include <mpi.h>
#include <stdint.h>

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

int ist_profiler_init(int world_size, int thread_multiple);
void ist_profiler_free(void);

/* Merge every rank's counters on rank 0 and write the JSON profile to 'path'. Collective
 * over 'comm' (a duplicate of MPI_COMM_WORLD). init_unix: when this rank's MPI_Init
 * returned (seconds since the epoch). Returns 0 on success. */
int ist_profile_write(const char *path, MPI_Comm comm, double ticks_per_second,
                      double app_seconds, double init_unix);

#endif
