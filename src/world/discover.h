/* Finding the clusters by measuring (ISTHMUS_CLUSTERS=auto): discover.c says how, and
 * the cheap exchanges both it and the P-LogP measurement (src/coll/plogp_measure.c) use. */
#ifndef ISTHMUS_DISCOVER_H
#define ISTHMUS_DISCOVER_H

#include <mpi.h>

#include "discover_method.h"

#define IST_DISCOVER_NAME 64 /* IST_NAME_MAX */

/* Every rank's cluster number (0, 1, ... by lowest rank) into cluster_of[world_size], from
 * round trips measured on comm between hosts (names[r]: rank r's host name; host_of[r]:
 * the lowest rank on r's host). Collective over comm. */
void ist_discover(MPI_Comm comm, const char (*names)[IST_DISCOVER_NAME], const int *host_of,
                  int *cluster_of);

/* ---- the exchanges (discover_measure.c), which plogp_measure.c uses too ---- */

/* The least of IST_DISCOVER_SAMPLES round trips (us) of every pair host `me` starts, into
 * rtt[] (others' slots untouched): all pairs at once. rep[h]: host h's rank. */
void ist_discover_ping(MPI_Comm comm, int me, const int *rep, const struct ist_host_pair *p,
                       int n, double *rtt);
/* The same, one pair at a time in list order (IST_DISCOVER_CAREFUL_SAMPLES each). */
void ist_discover_ping_carefully(MPI_Comm comm, const int *rep, const struct ist_host_pair *p,
                                 int n, double *rtt);
/* Allreduce (max) of n doubles, waited for in long sleeps. */
void ist_discover_agree_idly(const double *mine, double *out, int n, MPI_Comm comm);

#endif
