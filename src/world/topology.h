/* Which cluster every rank is in, and how a communicator's ranks map to world ranks.
 *
 * Each rank decides its own cluster at MPI_Init, in this order:
 *   ISTHMUS_CLUSTER=name                      set per rank by a site's launcher or the user;
 *   ISTHMUS_CLUSTER_PATTERNS=a=n1*,n2*;b=g*   host-name globs of a real site (fnmatch);
 *   ISTHMUS_CLUSTERS=a:2,b:2                  block mapping of world ranks (emulation);
 *   otherwise every rank is in one cluster, "world".
 * The choices are then exchanged, so every rank knows every rank's cluster. */
#ifndef ISTHMUS_TOPOLOGY_H
#define ISTHMUS_TOPOLOGY_H

#include <mpi.h>

#define IST_NAME_MAX 64

struct ist_comm_info {
    int size;         /* size of the local group */
    int rank;         /* this process's rank in it */
    int inter;        /* an intercommunicator: point-to-point ranks name the remote group */
    int remote_size;
    int *world;       /* world rank of each local rank */
    int *remote_world; /* world rank of each remote rank (intercommunicators) */
};

/* Called once from ist_layer_init with a private duplicate of MPI_COMM_WORLD. */
int ist_topology_init(MPI_Comm world_dup);
void ist_topology_finalize(void);

int ist_world_size(void);
int ist_world_rank(void);
int ist_cluster_count(void);
const char *ist_cluster_name(int cluster);
int ist_rank_cluster(int world_rank);
const char *ist_rank_host(int world_rank);

/* The world mapping of 'comm', computed once per communicator and cached on it. */
const struct ist_comm_info *ist_comm_info(MPI_Comm comm);

#endif
