/* A collective algorithm as a schedule of messages, and what it costs in P-LogP terms.
 *
 * The selector (coll_choose.c) compares the WAN-aware algorithms with the MPI's own by
 * writing each as a schedule: rounds of point-to-point messages (sender, receiver, bytes,
 * whether the receiver reduces what it gets). Ranks are numbered 0..size-1 in a layout
 * that says each rank's cluster and host.
 *
 * Rounds give order, not barriers (docs/model.md, "What a collective costs"): a rank's
 * message of round r leaves once everything sent to it in earlier rounds is in, and one
 * LAN gap g_l(m) after its previous send (its host's port, whichever cluster the message
 * goes to); it arrives L + g(m) after it leaves (r(m) of the paper, in its class) and is
 * reduced at the local copy rate. Its bytes queue, first come first served,
 * at the sending host's port and the receiving host's (LAN rate) and, between clusters,
 * on the wide-area link of that ordered pair of clusters (WAN rate; the emulator builds
 * one per pair and direction). Messages between ranks of one host cost a local copy (os
 * of the LAN class) and no port. So a pipeline pays a link's latency once, and flows that
 * share a link or a port share its rate. The MPI's own messages of `rendezvous` bytes or
 * more between hosts wait `rendezvous_trips` round trips of their class before their data
 * leave (the library's rendezvous handshake); the layer's own
 * wide-area messages travel in eager segments and never wait (IST_MSG_EAGER). The time
 * is the last arrival. No MPI here: the layer and the CLI (isthmus coll explain) run the
 * same code. */
#ifndef ISTHMUS_SCHEDULE_H
#define ISTHMUS_SCHEDULE_H

#include "plogp.h"

/* Where a communicator's ranks are. */
struct ist_layout {
    int size;
    int nclusters;
    const int *cluster; /* rank -> cluster, 0..nclusters-1 */
    const int *host;    /* rank -> host, 0..size-1 (equal for ranks of one host) */
    int every_root;     /* rooted collectives: 0 from root 0; 1 the mean over the roots
                         * (the selector: one choice serves every root, coll_choose.c) */
};

struct ist_msg {
    int round, src, dst;
    long bytes;
    int flags; /* IST_MSG_REDUCE, IST_MSG_EAGER */
};
#define IST_MSG_REDUCE 1 /* the receiver combines the data with its own (reductions) */
#define IST_MSG_EAGER 2  /* sent in segments under the eager limit: no rendezvous */

struct ist_sched {
    struct ist_msg *m;
    int n, cap;
    int rounds; /* rounds used so far: the next stage starts here */
    long rendezvous; /* the MPI's messages of at least this many bytes use its
                      * rendezvous (0: none modelled); ist_rendezvous_bytes() */
    int rendezvous_trips; /* round trips its rendezvous waits before the data leave */
    double wake_us;  /* a receiver that waits sleeping sees a message this much after it
                      * is in (0: it spins); ist_wake_us() */
};

/* A set of ranks of the layout that runs an algorithm (a communicator): ranks[i] is the
 * layout rank of its rank i. */
struct ist_group {
    const int *ranks;
    int n;
};

void ist_sched_init(struct ist_sched *s);
void ist_sched_free(struct ist_sched *s);
/* One message in round `round` (absolute); rounds grows to cover it. flags: IST_MSG_*
 * (1, IST_MSG_REDUCE, for a reduction's message). */
void ist_sched_msg(struct ist_sched *s, int round, int src, int dst, long bytes, int flags);
/* Predicted time of the whole schedule, microseconds. */
double ist_sched_time(const struct ist_sched *s, const struct ist_plogp *p,
                      const struct ist_layout *l);

/* ---- the textbook algorithms, on a group, from round `at`; each returns the rounds it
 * used (sched_algorithms.c). bytes: per-rank block as in MPI_Gather's count; for bcast,
 * reduce and allreduce the whole vector. ---- */
int ist_s_bcast_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long bytes);
/* Scatter of the vector, then an allgather (MPICH's long broadcasts): ring or recursive
 * doubling. */
int ist_s_bcast_scatter_allgather(struct ist_sched *s, int at, struct ist_group g, int root,
                                  long bytes, int ring);
/* A segmented chain (pipeline), or a binary tree, over `segment`-byte pieces. */
int ist_s_bcast_pipeline(struct ist_sched *s, int at, struct ist_group g, int root, long bytes,
                         long segment, int degree);
int ist_s_reduce_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long bytes);
/* A segmented chain towards the root. */
int ist_s_reduce_pipeline(struct ist_sched *s, int at, struct ist_group g, int root, long bytes,
                          long segment);
int ist_s_reduce_linear(struct ist_sched *s, int at, struct ist_group g, int root, long bytes);
/* Rabenseifner: reduce-scatter by recursive halving, then a gather (reduce) or an
 * allgather by recursive doubling (allreduce). */
int ist_s_rabenseifner(struct ist_sched *s, int at, struct ist_group g, int root, long bytes,
                       int all);
int ist_s_allreduce_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long bytes);
/* Ring reduce-scatter then ring allgather, P-1 steps each of bytes/P. */
int ist_s_allreduce_ring(struct ist_sched *s, int at, struct ist_group g, long bytes);
int ist_s_gather_linear(struct ist_sched *s, int at, struct ist_group g, int root, long block);
int ist_s_gather_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long block);
int ist_s_scatter_linear(struct ist_sched *s, int at, struct ist_group g, int root, long block);
int ist_s_scatter_binomial(struct ist_sched *s, int at, struct ist_group g, int root, long block);
int ist_s_allgather_ring(struct ist_sched *s, int at, struct ist_group g, long block);
int ist_s_allgather_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long block);
int ist_s_allgather_bruck(struct ist_sched *s, int at, struct ist_group g, long block);
/* Every block at once (non-blocking sends and receives to all). */
int ist_s_alltoall_linear(struct ist_sched *s, int at, struct ist_group g, long block);
/* P-1 exchanges; with xor (MPICH, powers of two) rank i's k-th partner is i XOR k, else
 * i + k (Open MPI, MPICH otherwise). */
int ist_s_alltoall_pairwise(struct ist_sched *s, int at, struct ist_group g, long block, int xor);
int ist_s_alltoall_bruck(struct ist_sched *s, int at, struct ist_group g, long block);
/* Dissemination barrier: ceil(log2 P) rounds of empty messages to i + 2^k; recursive
 * doubling: to i XOR 2^k (Bruck's dissemination when P is not a power of two). */
int ist_s_barrier_dissemination(struct ist_sched *s, int at, struct ist_group g);
int ist_s_barrier_recursive_doubling(struct ist_sched *s, int at, struct ist_group g);
/* Reduce_scatter_block: recursive halving, or pairwise exchange of blocks. */
int ist_s_reduce_scatter_halving(struct ist_sched *s, int at, struct ist_group g, long block);
int ist_s_reduce_scatter_pairwise(struct ist_sched *s, int at, struct ist_group g, long block);
/* Scan: recursive doubling, or a chain rank to rank. */
int ist_s_scan_recursive_doubling(struct ist_sched *s, int at, struct ist_group g, long bytes);
int ist_s_scan_linear(struct ist_sched *s, int at, struct ist_group g, long bytes);

#endif
