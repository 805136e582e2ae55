/* WAN-aware hierarchical collectives (MagPIe: Kielmann et al.; docs/collectives.md).
 *
 * A communicator whose ranks sit in more than one cluster gets, at its first collective
 * call, a hierarchy cached on it: a private duplicate for our own messages, one
 * communicator per cluster, and the cluster of every rank. Each algorithm (one per file,
 * src/coll/<collective>/<collective>_<algorithm>.c, listed in src/coll/registry.toml) works inside clusters with the MPI's native collectives on the cluster
 * communicator and between clusters with point-to-point messages between one rank per
 * cluster, so that every item crosses each wide-area link at most once.
 *
 * The generated wrappers call ist_wan_<Name> (declared in wan_calls.h, generated from
 * src/layer/mpi_functions.txt); it declines (returns 0, world.h's convention) when the
 * native collective should run instead: the selector is off for it or predicts the MPI's own faster
 * (coll_cost.h), the communicator is an intercommunicator or lies in one cluster, or the
 * case is one the algorithm does not cover (for example a non-commutative operation over
 * ranks whose clusters interleave). */
#ifndef ISTHMUS_HIER_H
#define ISTHMUS_HIER_H

#include <mpi.h>
#include <stddef.h>

#include "coll_cost.h"
#include "datatype.h"
#include "coll_registry.h"
#include "tree.h"
#include "plogp.h"
#include "own_calls.h"
#include "world.h"

/* A communicator given this name (MPI_Comm_set_name) before its first collective keeps
 * the MPI library's own collectives. */
#define IST_NATIVE_COMM_NAME "isthmus:native"

/* Which way a call goes: the MPI's own; ours, the algorithm the collective's entry runs
 * (<collective>/<collective>.c: the forced one, else its default or its own choice, as
 * allreduce's between direct and split); or, for Gather, Gatherv, Scatter and Scatterv,
 * the linear one in eager segments (gather/gather_linear.c, scatter/scatter_linear.c). */
enum ist_way { IST_WAY_NATIVE, IST_WAY_OURS, IST_WAY_LINEAR };

/* The last choices on a communicator, by collective and size (bytes as coll_cost.h
 * counts them). */
#define IST_DECISION_CACHE 32
/* What live adaptation (hier_adapt.c) keeps per choice: the log of measured over
 * predicted time of IST_DRIFT_BASE calls after the first IST_DRIFT_SKIP (which open
 * connections and warm caches: measured, they set a usual ratio the next calls fell
 * below, a false "faster"), then of the last IST_DRIFT_RECENT. */
#define IST_DRIFT_SKIP 2
#define IST_DRIFT_BASE 6
#define IST_DRIFT_RECENT 4
/* ... apart by where the call's root is, as a rank sees it: no root or in its cluster, in
 * another cluster, itself (a Bcast whose root went round two clusters of 4 ran a rank's
 * calls 6-7x slower for 4 calls, then faster for 4: false drifts both ways) */
enum ist_root_side { IST_ROOT_NEAR, IST_ROOT_FAR, IST_ROOT_SELF, IST_ROOT_SIDES };
struct ist_drift {
    int n;                                          /* calls observed */
    float log_ratio[IST_DRIFT_BASE + IST_DRIFT_RECENT];
    float level, spread;                            /* of the first calls: median, MAD */
    float away;                                     /* the largest drift seen (log) */
};
struct ist_decision {
    int id;
    long bytes;
    int way;             /* an enum ist_way */
    double predicted_us; /* the model's time for that way (0: no prediction) */
    char name[40];       /* the algorithm predicted, or "native" */
    struct ist_drift drift[IST_ROOT_SIDES];
};

/* The last broadcast shapes chosen on a communicator, by message size. */
#define IST_SHAPE_CACHE 8
struct ist_shape_entry {
    long bytes;
    struct ist_bcast_shape shape;
};

struct ist_hier {
    int single;          /* all ranks in one cluster (or an intercommunicator): native */
    MPI_Comm comm;       /* private duplicate: our point-to-point messages */
    MPI_Comm cluster_comm; /* this rank's cluster, ranks in communicator order */
    int size, rank;
    int nclusters;       /* clusters present, numbered by their lowest rank */
    int my_cluster;
    int *cluster_of;     /* rank -> cluster */
    int *cluster_rank;   /* rank -> its rank in its cluster's communicator */
    int *first;          /* cluster -> its lowest rank (its coordinator) */
    int *count;          /* cluster -> number of ranks */
    int *member_start;   /* cluster -> offset into members */
    int *members;        /* ranks of cluster c: members[member_start[c] .. + count[c]) */
    int max_count;       /* the largest cluster */
    int contiguous;      /* every cluster's ranks are consecutive: rank order = cluster order */
    int spans_sites;     /* zipper sites: its messages between sites go through forwarders */
    struct ist_shape_entry shapes[IST_SHAPE_CACHE];
    int next_shape;
    int *host;           /* rank -> lowest rank on its host (the selector's layout) */
    struct ist_decision decisions[IST_DECISION_CACHE];
    int next_decision;
    int way; /* the way of the call under way (ist_hier_enter): IST_WAY_OURS or _LINEAR */
    int algorithm; /* the call's forced algorithm (an enum ist_coll_algorithm), or IST_ALG_NONE */
    long segment;  /* the call's wide-area segment in bytes (collectives.segment) */
    struct ist_decision *last; /* the decision the last call took (hier_select.c) */
    /* The P-LogP parameters its choices come from: the layer's (hier_model.c), or its own
     * once live adaptation measured the wide area again (hier_adapt.c). */
    const struct ist_plogp *model;
    struct ist_adapt *adapt; /* live adaptation's state (NULL: off, or not decided here) */
};

/* Settings (hier.c, hier_select.c, hier_model.c), from the environment at MPI_Init:
 *   ISTHMUS_COLL=isthmus|native          on or off (default native);
 *   ISTHMUS_COLL_DISABLE, _ALGORITHM, _SEGMENT: collectives left native, algorithms
 *                                        forced, segment sizes (settings.h);
 *   ISTHMUS_COLL_SELECT=model|always     ours only where the model predicts it faster
 *                                        than the MPI's own (coll_cost.h), or always;
 *   ISTHMUS_COLL_LOG=1                   rank 0 logs each choice once per communicator
 *                                        and size to stderr;
 *   ISTHMUS_PLOGP=FILE                   P-LogP parameters (isthmus run writes them from
 *                                        the platform; default: built-in values). */
extern int ist_hier_enabled;
extern _Thread_local int ist_in_hier __attribute__((tls_model("initial-exec")));

/* Read ISTHMUS_COLL, _SELECT, _DISABLE, _ALGORITHM and _SEGMENT (settings.h): 0, or -1
 * with the one-line error in err (the layer then ends the run). First at MPI_Init. */
int ist_hier_settings(char *err, size_t errlen);
/* At MPI_Init, after the topology, on the layer's duplicate of MPI_COMM_WORLD (collective
 * when ISTHMUS_PLOGP=measure: plogp_measure.c). */
void ist_hier_init(MPI_Comm world);
void ist_hier_finalize(void);

/* The hierarchy of comm for collective `id` with `bytes` per rank (coll_cost.h; the
 * same on every rank, or IST_BYTES_LOCAL when each rank knows only its own part: the
 * v-forms), or NULL when the native collective should run. Enters the hierarchical section
 * (ist_hier_leave must follow a non-NULL return). */
#define IST_BYTES_LOCAL(b) (-1 - (b))
/* A rooted collective gives its root (comm's rank): live adaptation times its calls apart
 * by where the root is (hier_adapt.c); the others give IST_NO_ROOT. */
#define IST_NO_ROOT (-1)
struct ist_hier *ist_hier_enter(enum ist_coll_id id, MPI_Comm comm, long bytes, int root);

/* count elements of type, in bytes; the mean of counts[] (one per rank of comm) of type,
 * or of types[] (0 on an intercommunicator, which the selector leaves to the MPI). */
long ist_counts_bytes(MPI_Comm comm, const int counts[], MPI_Datatype type);
long ist_countsw_bytes(MPI_Comm comm, const int counts[], const MPI_Datatype types[]);
/* Leave the hierarchical section: ist_hier_leave after serving the call (counted; returns
 * rc), ist_hier_served the same as an ist_wan_X's return (world.h's convention), and
 * ist_hier_decline when the native collective should run after all (returns 0). */
int ist_hier_leave(int rc);
static inline int ist_hier_served(int *answer, int rc) { return ist_answered(answer, ist_hier_leave(rc)); }
/* Live adaptation (hier_adapt.c): the decision whose call is under way and timed; the
 * generated wrappers pass each WAN-aware collective's return code through
 * ist_adapt_after, which sets the call's time against the model's prediction. */
extern _Thread_local struct ist_decision *ist_adapt_pending __attribute__((tls_model("initial-exec")));
void ist_adapt_observe(void);
static inline int ist_adapt_after(int rc)
{
    if (__builtin_expect(ist_adapt_pending != NULL, 0)) ist_adapt_observe();
    return rc;
}
static inline int ist_hier_decline(void)
{
    ist_in_hier = 0;
    ist_adapt_pending = NULL; /* the way predicted did not run */
    return 0;
}

/* The segment size forced for id (collectives.segment), or 0. */
long ist_hier_forced_segment(enum ist_coll_id id);
const struct ist_plogp *ist_hier_model(void);
/* "file", "measured", "built-in" or "none" (the collectives are off), and the seconds
 * measuring took at MPI_Init (rank 0's; 0 unless measured). */
const char *ist_hier_model_source(void);
double ist_hier_model_seconds(void);

/* Measure the lan and wan classes on world into *p (plogp_measure.c); returns the seconds
 * it took this rank. Collective. */
double ist_plogp_measure(MPI_Comm world, struct ist_plogp *p);
/* Measure the wan class alone between ranks a and b of comm (the same method; lan_or:
 * the receive overheads at 0 and IST_EAGER_SEGMENT bytes, or NULL), known on every rank
 * of comm after. Collective over comm. */
void ist_plogp_measure_wan(MPI_Comm comm, int a, int b, const double *lan_or,
                           struct ist_plogp_class *wan);
/* Rank 0 of comm logs a choice once per (communicator, id, detail). */
void ist_hier_log(const struct ist_hier *h, enum ist_coll_id id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Calls that ran hierarchically, and the bytes and messages this rank sent across
 * wide-area links in them, since the profiler last took them (ist_rec_wan, after each
 * collective call, charges them to that collective). */
extern _Thread_local long ist_wan_bytes, ist_wan_messages, ist_wan_calls;
void ist_hier_note_wan(const struct ist_hier *h, int dest, long bytes, long messages);


/* ---- buffers (common/buffers.c) ------------------------------------------------------ */

/* Temporary buffers, typed copies, packing: src/util/datatype.h. */

/* ---- point-to-point on the private communicator, counted when it crosses clusters -- */
int ist_h_isend(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                MPI_Request *req);
int ist_h_irecv(const struct ist_hier *h, void *buf, long bytes, int source, int tag,
                MPI_Request *req);
int ist_h_isend_typed(const struct ist_hier *h, const void *buf, int count, MPI_Datatype type,
                      int dest, int tag, MPI_Request *req);
int ist_h_irecv_typed(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                      int source, int tag, MPI_Request *req);
int ist_h_waitall(int n, MPI_Request *reqs);

/* Bulk wide-area messages (Allreduce's split exchange, Alltoall's) travel in segments of
 * ist_wan_segment(h) bytes (IST_EAGER_SEGMENT, coll_cost.h, or collectives.segment), under the MPI's eager limit: a
 * rendezvous handshake would wait behind the data that fill a wide-area queue (measured:
 * results/collectives/README.md). Receives are posted first and take segments in as they
 * come; both ends must know the message's size. Requests go into a growing list, waited
 * for (and freed) together. */
long ist_wan_segment(const struct ist_hier *h);
struct ist_reqs {
    MPI_Request *r;
    int n, cap;
    void **owned; /* memory the requests send from, freed after the wait */
    int nowned, owned_cap;
};
int ist_h_isend_segments(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                         struct ist_reqs *q);
int ist_h_irecv_segments(const struct ist_hier *h, void *buf, long bytes, int source, int tag,
                         struct ist_reqs *q);
/* The same for count elements of a type, cut at element boundaries: the wide-area step of
 * Reduce and Allreduce, whose partial results are typed (a whole 32 or 64 KiB message
 * needs the MPI's rendezvous, measured 1.3-1.8x slower than the MPI's own there). */
int ist_h_isend_typed_segments(const struct ist_hier *h, const void *buf, int count,
                               MPI_Datatype type, int dest, int tag, struct ist_reqs *q);
int ist_h_irecv_typed_segments(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                               int source, int tag, struct ist_reqs *q);
/* The next free request of q. */
MPI_Request *ist_reqs_next(struct ist_reqs *q);
/* Free mem (malloc'd) when q has been waited for. */
void ist_reqs_own(struct ist_reqs *q, void *mem);
/* Wait for every request in q and free the list (and the memory it owns). */
int ist_reqs_wait(struct ist_reqs *q);
/* A message whose size the receiver does not know (gather's and scatter's per-cluster
 * messages): its length first, then segments, all eager. The receive allocates *buf. */
int ist_h_isend_any_size(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                         struct ist_reqs *q);
int ist_h_recv_any_size(const struct ist_hier *h, int source, int tag, char **buf, long *bytes);

/* Where count elements of a type start in a buffer, and how they pack. */
struct ist_block {
    const void *buf;
    int count;
    MPI_Datatype type;
};
long ist_block_bytes(const struct ist_block *b);
/* to = from, for blocks of the same type signature (their datatypes may differ). */
int ist_copy_block(const struct ist_block *from, const struct ist_block *to);

/* p0 op p1 op ... op p(n-1) in this order (MPI's, for non-commutative operations);
 * overwrites parts[1..n) and returns the one that holds the result. */
void *ist_fold(void **parts, int n, int count, MPI_Datatype type, MPI_Op op);

/* A coordinator's wide-area step of reduce and allreduce: receive every other cluster's
 * partial result (count elements of type from its coordinator, tag) and fold them with
 * buf, this cluster's, in cluster order into buf. With send_own, also send buf to every
 * other coordinator (allreduce: all coordinators exchange directly). */
int ist_h_fold_clusters(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                        MPI_Op op, int tag, int send_own);

/* ---- the algorithms: src/coll/<collective>/<collective>_<algorithm>.c ---------------
 * Each collective with more than one algorithm calls them through its table,
 * ist_<collective>_algorithms[], generated from src/coll/registry.toml (coll_algorithms.h
 * declares each function with its type below). */

struct ist_block;
/* Bcast's shapes (bcast/): the optimizer's, its trees with the message whole, flat. */
typedef struct ist_bcast_shape ist_bcast_algorithm(struct ist_hier *h, long bytes);
/* Allreduce (allreduce/), on every rank of the communicator. */
typedef int ist_allreduce_algorithm(struct ist_hier *h, const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype type, MPI_Op op);
/* Alltoall's (alltoall/): send[j] this rank's block for rank j, recv[i] where rank i's
 * block goes. */
typedef int ist_alltoall_algorithm(struct ist_hier *h, const struct ist_block *send,
                                   const struct ist_block *recv);
/* Gather(v) and Scatter(v) (gather/, scatter/; linear: the way IST_WAY_LINEAR). mine:
 * this rank's block (NULL at a root in place); recv/send: each rank's block, at the root
 * only. */
typedef int ist_gather_algorithm(struct ist_hier *h, const struct ist_block *mine, int root,
                                 const struct ist_block *recv);
typedef int ist_scatter_algorithm(struct ist_hier *h, const struct ist_block *send, int root,
                                  const struct ist_block *mine);
/* Allgather(v) (allgather/): mine this rank's block (NULL: in place, it is all[rank]);
 * all: where each rank's goes. */
typedef int ist_allgather_algorithm(struct ist_hier *h, const struct ist_block *mine,
                                    const struct ist_block *all);
/* Their pairs (common/buffers.c): whether the pair (root, other) moves its block in eager
 * segments, or whole where the segments would flood the wide-area link; the offsets of
 * the packed blocks b[0..size) (the root's and the whole ones take no room). */
int ist_linear_in_segments_pair(const struct ist_hier *h, int root, int other, long bytes);
long *ist_linear_offsets(const struct ist_hier *h, const struct ist_block *b, int root);
/* Every rank's block of a rooted collective's buffer at the root: count elements of type
 * each, one after the other (counts NULL), or counts[r] at displs[r] (the v-forms). */
struct ist_block *ist_rank_blocks(const struct ist_hier *h, const void *buf, int count,
                                  const int *counts, const int *displs, MPI_Datatype type);
/* Blocks b[0..n) packed one after the other; (*off)[j] is where block j starts. */
char *ist_pack_blocks(int n, const struct ist_block *b, long **off, int *rc);

#endif
