/* The two-layer broadcast tree and its segment pipeline (common/tree.c): MPI only, shared
 * by libisthmus's broadcast and the bcast benchmark. */
#ifndef ISTHMUS_COLL_TREE_H
#define ISTHMUS_COLL_TREE_H

#include <mpi.h>

/* parent (-1 at the root) and children of `rank` in the two-layer broadcast: the root's
 * cluster first, clusters in a dw-ary tree of coordinators (the root, and the lowest rank
 * of every other cluster), each cluster's ranks in a dl-ary tree under its coordinator.
 * children must hold dw + dl entries; returns their number. */
int ist_two_layer_tree(const int *cluster_of, int size, int root, int rank, int dw, int dl,
                       int *parent, int *children);
/* Receive `bytes` in segments from parent (unless -1) and pass each on to children. */
int ist_pipeline(char *buf, long bytes, long segment, int parent, const int *children,
                 int nchildren, MPI_Comm comm, int tag);

#endif
