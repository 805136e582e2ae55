/* A tuning file: the choice between the MPI's own collective and ours, measured on a
 * platform by `isthmus coll tune` (python/isthmus/coll/tune.py writes it; this is its one
 * reader). Where it has a rule for a call it wins over the model (coll_cost.h), as Open
 * MPI's dynamic rules file and MPICH's JSON tuning file win over their built-in rules.
 *
 *   isthmus-coll-tuning 1
 *   platform two-clusters
 *   mpi openmpi
 *   wait sleep
 *   ranks 4 clusters 2
 *   source bench coll, --set wan.latency=2ms
 *   rule alltoall 0 49151 native 812.5 530.1
 *   rule alltoall 49152 1048576 ours 6120.0 7733.4
 *
 * A rule: collective (a v-form without rules of its own uses its regular form's), the
 * byte range it covers (the bench's sizes: coll_cost.h), the choice, and the medians
 * measured for ours and for the MPI's own at the size inside it that argues least for the
 * choice. Rules
 * apply to communicators of the given number of ranks and clusters, under the given MPI
 * and waiting mode (sleeping, the MPI's collectives run as their nonblocking forms, other
 * algorithms); sizes beyond the measured range take the nearest rule. '#' starts a
 * comment. No MPI here. */
#ifndef ISTHMUS_COLL_TUNING_H
#define ISTHMUS_COLL_TUNING_H

#include <stddef.h>

#include "coll_cost.h"

struct ist_tuning_rule {
    int coll; /* enum ist_coll_id */
    long from, to;
    int ours;
    double ours_us, native_us;
};

struct ist_tuning {
    char platform[128];
    struct ist_mpi mpi;
    int ranks, clusters;
    int n;
    struct ist_tuning_rule *rules;
};

/* Read a tuning file. Returns 0, or -1 with a one-line reason in err. */
int ist_tuning_read(const char *path, struct ist_tuning *t, char *err, size_t errlen);
void ist_tuning_free(struct ist_tuning *t);

/* The rule for collective id at bytes on a communicator of `ranks` ranks in `clusters`
 * clusters under MPI f (and its waiting mode), or NULL when the file has none. */
const struct ist_tuning_rule *ist_tuning_find(const struct ist_tuning *t, struct ist_mpi f,
                                              int ranks, int clusters, enum ist_coll_id id,
                                              long bytes);

#endif
