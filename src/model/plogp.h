/* P-LogP parameters and the broadcast model's optimizer, in C for libisthmus.
 *
 * The same model and heuristic as python/isthmus/model/bcast.py (docs/model.md), written with
 * the same operations in the same order so that both choose the same shape with the same
 * predicted time; tests/python/test_model_c.py checks it on a grid. No MPI here. Times in
 * microseconds, sizes in bytes. */
#ifndef ISTHMUS_PLOGP_H
#define ISTHMUS_PLOGP_H

#include <stddef.h>

/* One link class: L and os(m), or(m), g(m) at n sizes (piecewise linear in between). */
struct ist_plogp_class {
    int present;
    double L;
    int n;
    long *sizes;
    double *os, *orecv, *g;
};

struct ist_plogp {
    char platform[128];
    struct ist_plogp_class lan, wan;
};

/* Read a parameter file (the format of docs/model.md). Returns 0, or -1 with a one-line
 * reason in err. */
int ist_plogp_read(const char *path, struct ist_plogp *p, char *err, size_t errlen);
void ist_plogp_free(struct ist_plogp *p);
/* Make c a present class of latency L with room for n points (sizes, os, or, g); the
 * caller fills them. Returns 0, or -1 when out of memory. */
int ist_plogp_class_init(struct ist_plogp_class *c, double L, int n);
/* to = a copy of from (0, or -1 when out of memory: to empty); free a class's points. */
int ist_plogp_class_copy(struct ist_plogp_class *to, const struct ist_plogp_class *from);
void ist_plogp_class_free(struct ist_plogp_class *c);

/* The piecewise-linear value of ys at size m (python: plogp.interpolate). */
double ist_plogp_at(const struct ist_plogp_class *c, const double *ys, double m);

/* A broadcast's shape and predicted completion time (python: model.Shape). */
struct ist_bcast_shape {
    double time;
    long segment, segments;
    int degree, height, lan_degree, lan_height;
    double gamma;
    int gap_bound; /* 1: gamma is the link's gap; 0: a node's work per segment */
};

/* The best segmented tree over p ranks of one layer (LAN class), and the best pipelined
 * two-layer broadcast over pw clusters of at most pl ranks, for big_m bytes, by the
 * paper's heuristic (python: model.optimize with best_single_for / best_pipelined_for). */
struct ist_bcast_shape ist_bcast_best_single(const struct ist_plogp *p, int procs, long big_m);
struct ist_bcast_shape ist_bcast_best_pipelined(const struct ist_plogp *p, int pw, int pl,
                                                long big_m);
/* The same with segments of at most max_segment bytes (when big_m is larger): the layer's
 * broadcast, whose segments must stay under the MPI's eager limit (a whole 64 KiB message
 * waits for Open MPI's rendezvous, one wide-area round trip that the paper's model does
 * not count). Not in the Python mirror: the paper's model has no such limit. */
struct ist_bcast_shape ist_bcast_best_pipelined_under(const struct ist_plogp *p, int pw, int pl,
                                                      long big_m, long max_segment);

#endif
