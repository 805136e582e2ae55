/* Recorders: what each kind of MPI call adds to the profile.
 *
 * The size a call is filed under (its bucket) is the message size: the payload of a
 * point-to-point call, the buffer of bcast/reduce/allreduce/scan, the per-peer block of
 * gather/scatter/allgather/alltoall (the mean block for the v and w forms). Collective
 * traffic in the matrix is logical: what the semantics move from rank to rank according
 * to the call's arguments, not what the MPI library's algorithm put on the wire. Only
 * arguments that are significant at the calling rank are read, so MPI_IN_PLACE and
 * ignored root-only arguments are never touched. */
#include <mpi.h>
#include <stdlib.h>

#include "hier.h"
#include "layer.h"
#include "profiler.h"
#include "topology.h"

struct ist_bucket ist_stats[IST_FN_COUNT][IST_NBUCKETS];
uint64_t ist_wan_stats[IST_FN_COUNT][IST_NWAN];
uint64_t *ist_matrix_vec;
struct ist_site ist_sites[IST_MAX_SITES];
uint64_t ist_sites_dropped;
static int world_n;

int ist_stats_locking;
atomic_flag ist_stats_lock = ATOMIC_FLAG_INIT;

int ist_profiler_init(int world_size, int thread_multiple)
{
    world_n = world_size;
    ist_stats_locking = thread_multiple;
    ist_matrix_vec = calloc((size_t)IST_NVEC * (size_t)world_size, sizeof(uint64_t));
    return ist_matrix_vec ? 0 : -1;
}

void ist_profiler_free(void)
{
    free(ist_matrix_vec);
    ist_matrix_vec = NULL;
}


static inline void add_traffic(enum ist_vec msgs, int world_peer, uint64_t bytes)
{
    ist_matrix_vec[(size_t)msgs * (size_t)world_n + (size_t)world_peer] += 1;
    ist_matrix_vec[(size_t)(msgs + 1) * (size_t)world_n + (size_t)world_peer] += bytes;
}

/* Logical collective traffic from this rank to every other rank of the communicator. */
static void out_to_all(const struct ist_comm_info *ci, uint64_t bytes)
{
    for (int i = 0; i < ci->size; i++)
        if (i != ci->rank) add_traffic(IST_OUT_COLL_MSGS, ci->world[i], bytes);
}

/* A call counted as call_bytes whose rank sends `block` bytes to every other. */
static void record_to_all(enum ist_fn fn, uint64_t ticks, const struct ist_comm_info *ci,
                          uint64_t call_bytes, uint64_t block)
{
    ist_lock_stats();
    ist_add_call(fn, ticks, call_bytes);
    out_to_all(ci, block);
    ist_unlock_stats();
}

/* A call counted as `block` bytes whose rank, unless it is the root, sends them to it. */
static void record_to_root(enum ist_fn fn, uint64_t ticks, const struct ist_comm_info *ci,
                           int root, uint64_t block)
{
    ist_lock_stats();
    ist_add_call(fn, ticks, block);
    if (ci->rank != root) add_traffic(IST_OUT_COLL_MSGS, ci->world[root], block);
    ist_unlock_stats();
}

/* A call that moves counts[i] elements (of types[i], or of type) between this rank and
 * each rank i, in the direction `msgs`; it counts as the total divided by `per`. */
static void record_per_peer(enum ist_fn fn, uint64_t ticks, const struct ist_comm_info *ci,
                            const int counts[], const MPI_Datatype types[], MPI_Datatype type,
                            enum ist_vec msgs, uint64_t per)
{
    uint64_t total = 0;
    ist_lock_stats();
    for (int i = 0; i < ci->size; i++) {
        uint64_t b = ist_bytes_of(counts[i], types ? types[i] : type);
        total += b;
        if (i != ci->rank) add_traffic(msgs, ci->world[i], b);
    }
    ist_add_call(fn, ticks, total / per);
    ist_unlock_stats();
}

void ist_rec_site(enum ist_fn fn, const void *pc, uint64_t ticks)
{
    const uint64_t hash = ((uint64_t)(uintptr_t)pc * 0x9E3779B97F4A7C15ull) >> 32;
    ist_lock_stats();
    for (int i = 0; i < IST_MAX_SITES; i++) {
        struct ist_site *s = &ist_sites[(hash + (uint64_t)i) % IST_MAX_SITES];
        if (s->calls && (s->pc != pc || s->fn != (int32_t)fn)) continue;
        s->pc = pc;
        s->fn = (int32_t)fn;
        s->calls++;
        s->wan_calls += ist_wan_calls != 0; /* read before ist_rec_wan clears it */
        s->ticks += ticks;
        ist_unlock_stats();
        return;
    }
    ist_sites_dropped++;
    ist_unlock_stats();
}

void ist_rec_wan(enum ist_fn fn)
{
    if (!ist_wan_calls) return;
    ist_lock_stats();
    ist_wan_stats[fn][IST_WAN_CALLS] += (uint64_t)ist_wan_calls;
    ist_wan_stats[fn][IST_WAN_MESSAGES] += (uint64_t)ist_wan_messages;
    ist_wan_stats[fn][IST_WAN_BYTES] += (uint64_t)ist_wan_bytes;
    ist_unlock_stats();
    ist_wan_calls = ist_wan_messages = ist_wan_bytes = 0;
}

void ist_rec_none(enum ist_fn fn, uint64_t ticks)
{
    ist_lock_stats();
    ist_add_call(fn, ticks, 0);
    ist_unlock_stats();
}

void ist_rec_size(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type)
{
    uint64_t bytes = ist_bytes_of(count, type);
    ist_lock_stats();
    ist_add_call(fn, ticks, bytes);
    ist_unlock_stats();
}

void ist_rec_send(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int dest,
                  MPI_Comm comm)
{
    uint64_t bytes = ist_bytes_of(count, type);
    int peer = -1;
    if (dest >= 0) { /* not MPI_PROC_NULL */
        const struct ist_comm_info *ci = ist_comm_info(comm);
        if (ci->inter && dest < ci->remote_size) peer = ci->remote_world[dest];
        else if (!ci->inter && dest < ci->size) peer = ci->world[dest];
    }
    ist_lock_stats();
    ist_add_call(fn, ticks, bytes);
    if (peer >= 0) add_traffic(IST_OUT_P2P_MSGS, peer, bytes);
    ist_unlock_stats();
}

void ist_rec_recv(enum ist_fn fn, uint64_t ticks, const MPI_Status *status)
{
    int count = 0;
    if (status->MPI_SOURCE != MPI_PROC_NULL) {
        PMPI_Get_count(status, MPI_BYTE, &count);
        if (count == MPI_UNDEFINED) count = 0;
    }
    ist_lock_stats();
    ist_add_call(fn, ticks, (uint64_t)count);
    ist_unlock_stats();
}

/* Collectives on intercommunicators: calls and time only (root semantics differ). */
static inline const struct ist_comm_info *intra_info(enum ist_fn fn, uint64_t ticks,
                                                     MPI_Comm comm)
{
    const struct ist_comm_info *ci = ist_comm_info(comm);
    if (!ci->inter) return ci;
    ist_lock_stats();
    ist_add_call(fn, ticks, 0);
    ist_unlock_stats();
    return NULL;
}

void ist_rec_bcast(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int root,
                   MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    uint64_t bytes = ist_bytes_of(count, type);
    ist_lock_stats();
    ist_add_call(fn, ticks, bytes);
    if (ci->rank == root) out_to_all(ci, bytes);
    ist_unlock_stats();
}

void ist_rec_reduce(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int root,
                    MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci) record_to_root(fn, ticks, ci, root, ist_bytes_of(count, type));
}

void ist_rec_allreduce(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type,
                       MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci) record_to_all(fn, ticks, ci, ist_bytes_of(count, type), ist_bytes_of(count, type));
}

void ist_rec_gather(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    int is_root = ci->rank == root;
    record_to_root(fn, ticks, ci, root,
                   is_root ? ist_bytes_of(recvcount, recvtype) : ist_bytes_of(sendcount, sendtype));
}

void ist_rec_gatherv(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                     const int recvcounts[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    int is_root = ci->rank == root;
    uint64_t block;
    if (is_root) {
        uint64_t total = 0;
        for (int i = 0; i < ci->size; i++) total += ist_bytes_of(recvcounts[i], recvtype);
        block = total / (uint64_t)ci->size;
    } else {
        block = ist_bytes_of(sendcount, sendtype);
    }
    record_to_root(fn, ticks, ci, root, block);
}

void ist_rec_scatter(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    int is_root = ci->rank == root;
    uint64_t block = is_root ? ist_bytes_of(sendcount, sendtype) : ist_bytes_of(recvcount, recvtype);
    ist_lock_stats();
    ist_add_call(fn, ticks, block);
    if (is_root) out_to_all(ci, block);
    ist_unlock_stats();
}

void ist_rec_scatterv(enum ist_fn fn, uint64_t ticks, const int sendcounts[],
                      MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    if (ci->rank != root)
        ist_rec_size(fn, ticks, recvcount, recvtype);
    else
        record_per_peer(fn, ticks, ci, sendcounts, NULL, sendtype, IST_OUT_COLL_MSGS,
                        (uint64_t)ci->size);
}

void ist_rec_allgather(enum ist_fn fn, uint64_t ticks, int recvcount, MPI_Datatype recvtype,
                       MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci) record_to_all(fn, ticks, ci, ist_bytes_of(recvcount, recvtype), ist_bytes_of(recvcount, recvtype));
}

void ist_rec_allgatherv(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    uint64_t block = ist_bytes_of(recvcounts[ci->rank], recvtype);
    record_to_all(fn, ticks, ci, block, block);
}

void ist_rec_alltoall(enum ist_fn fn, uint64_t ticks, int recvcount, MPI_Datatype recvtype,
                      MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    uint64_t block = ist_bytes_of(recvcount, recvtype);
    ist_lock_stats();
    ist_add_call(fn, ticks, block);
    for (int i = 0; i < ci->size; i++)
        if (i != ci->rank) add_traffic(IST_IN_COLL_MSGS, ci->world[i], block);
    ist_unlock_stats();
}

/* The v and w forms are recorded by the receiver: its receive counts are significant even
 * when the send side is MPI_IN_PLACE. */
void ist_rec_alltoallv(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                       MPI_Datatype recvtype, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci) record_per_peer(fn, ticks, ci, recvcounts, NULL, recvtype, IST_IN_COLL_MSGS, (uint64_t)ci->size);
}

void ist_rec_alltoallw(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                       const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci)
        record_per_peer(fn, ticks, ci, recvcounts, recvtypes, MPI_DATATYPE_NULL, IST_IN_COLL_MSGS,
                        (uint64_t)ci->size);
}

void ist_rec_reduce_scatter(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                            MPI_Datatype type, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (ci) record_per_peer(fn, ticks, ci, recvcounts, NULL, type, IST_OUT_COLL_MSGS, 1);
}

void ist_rec_reduce_scatter_block(enum ist_fn fn, uint64_t ticks, int recvcount,
                                  MPI_Datatype type, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    uint64_t block = ist_bytes_of(recvcount, type);
    record_to_all(fn, ticks, ci, block * (uint64_t)ci->size, block);
}

void ist_rec_scan(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, MPI_Comm comm)
{
    const struct ist_comm_info *ci = intra_info(fn, ticks, comm);
    if (!ci) return;
    uint64_t bytes = ist_bytes_of(count, type);
    ist_lock_stats();
    ist_add_call(fn, ticks, bytes);
    for (int i = ci->rank + 1; i < ci->size; i++)
        add_traffic(IST_OUT_COLL_MSGS, ci->world[i], bytes);
    ist_unlock_stats();
}
