/* Which algorithm a collective call should run: every candidate costed, the MPI's own
 * included (docs/collectives.md, "Choosing"). No MPI here: libisthmus decides with it at
 * run time, and `isthmus coll explain` prints the same figures. */
#ifndef ISTHMUS_COLL_COST_H
#define ISTHMUS_COLL_COST_H

#include "schedule.h"

/* The collectives the layer intercepts (enum ist_coll_id, ist_coll_names,
 * ist_coll_by_name): generated from src/coll/registry.toml. */
#include "coll_registry.h"

/* The regular form whose algorithm (and tuning rules) a v-form uses. */
enum ist_coll_id ist_coll_regular(enum ist_coll_id id);

/* Whose selection rules the MPI's own collectives follow: the library, and whether its
 * blocking collectives run as their nonblocking forms (the layer's sleeping waits,
 * layer.wait: a different set of algorithms, Open MPI's libnbc). */
enum ist_mpi_flavour { IST_MPI_OPENMPI, IST_MPI_MPICH };
struct ist_mpi {
    enum ist_mpi_flavour flavour;
    int nonblocking;
};

/* The largest piece the layer sends across clusters: under both MPIs' eager limits (a
 * larger message waits for the receiver's reply, one wide-area round trip). */
#define IST_EAGER_SEGMENT (16L << 10)

/* The most that the linear algorithm in eager segments (gather/gather_linear.c, scatter/scatter_linear.c) lets onto one
 * wide-area link at once: the blocks of the ranks of one cluster, sent or received by the
 * root all at the same time. A pair whose block times its cluster's ranks is larger moves
 * it as one message, paced by the MPI's rendezvous, as the MPI's linear algorithm does:
 * all in eager segments, 6 remote ranks' blocks of 256 KiB-1 MiB overran das-4x2's 256 KiB
 * queues (8 ranks, 100 Mbit/s: up to 2x slower than the MPI's own; issue 26's notes), and
 * a TCP connection that starts sends 10 segments at once. Both ends of a pair know its
 * block and cluster, so they agree without a message. */
#define IST_LINEAR_FLOOD (256L << 10)
static inline int ist_linear_in_segments(long block, int cluster_ranks)
{
    return block * cluster_ranks <= IST_LINEAR_FLOOD;
}

/* Ours runs only where predicted at least this fraction faster than the MPI's own
 * (coll_choose.c says why this much). */
#define IST_NATIVE_MARGIN 0.15

/* The smallest message the MPI sends with its rendezvous (schedule.h), 0: not modelled,
 * and the round trips the rendezvous waits before the data leave. */
long ist_rendezvous_bytes(struct ist_mpi f);
int ist_rendezvous_trips(struct ist_mpi f);
/* How late a rank waiting sleeping (f.nonblocking: layer.wait) sees a message from
 * another host, on average: its test interval and the time to get a core back. */
double ist_wake_us(struct ist_mpi f);

/* The MPI's own algorithm for a collective on group g (root 0), as the library's
 * selection rules pick it at this size, appended to s from round `at`: returns its name;
 * *rounds gets the rounds used (native_rules.c). */
const char *ist_native_schedule(struct ist_mpi f, enum ist_coll_id id, struct ist_sched *s,
                                int at, struct ist_group g, long bytes, int *rounds);

/* Whether the wide-area links cost enough more than the local ones for our algorithms to
 * be chosen at all: a wide-area latency of 4 local ones, or a wide-area gap g(1 MiB) of
 * twice the local one. Ours add up to two local stages (a gather or reduce before, a
 * broadcast or scatter after) to save wide-area crossings, which otherwise buys nothing
 * (measured with a 0 ms, 1 Gbit/s WAN: forced, they were 4% slower than native at the
 * median over collectives and sizes, results/collectives/README.md). */
int ist_wan_pays(const struct ist_plogp *m);

/* Whether a regular collective has a root (Bcast, Reduce, Gather, Scatter). */
int ist_coll_rooted(enum ist_coll_id base);

#define IST_CANDIDATES 4
struct ist_candidate {
    char name[40];  /* "native" and the MPI's algorithm, or the WAN-aware algorithm */
    int native;
    double time_us; /* predicted */
};
struct ist_choice {
    int n, best;
    struct ist_candidate c[IST_CANDIDATES];
};

/* Every candidate for collective id with `bytes` per rank (the bench's sizes: a rank's
 * block for gather, scatter, allgather, alltoall and reduce_scatter_block, the vector for
 * the others; the v-forms as their regular ones) on layout l, root 0; best is the
 * cheapest (coll_choose.c). */
void ist_coll_choose(enum ist_coll_id id, long bytes, struct ist_mpi f,
                     const struct ist_plogp *p, const struct ist_layout *l, struct ist_choice *out);

#endif
