/* Finding the clusters by measuring (ISTHMUS_CLUSTERS=auto): discover.c says how, and
 * the cheap exchanges both it and the P-LogP measurement (src/coll/plogp_measure.c) use. */
#ifndef ISTHMUS_DISCOVER_H
#define ISTHMUS_DISCOVER_H

#include <mpi.h>

/* What discovery found and what it cost, for the profile (rank 0's view; every rank
 * computes the same clusters). */
struct ist_discovery {
    int done;          /* 1: the clusters were measured (ISTHMUS_CLUSTERS=auto) */
    int hosts;         /* distinct host names */
    int pairs;         /* host pairs measured */
    int rounds;        /* measuring rounds: the sample, then each verifying round */
    double cut_us;     /* round trips below it are local (0: no gap, one cluster) */
    double gap;        /* the ratio of the round trips either side of the cut */
    double unsure;     /* round trips below it were measured again (careful) */
    int careful;       /* how many pairs were measured again one at a time */
    double lan_rtt_us; /* the least and the largest measured round trips */
    double wan_rtt_us;
    double seconds;    /* rank 0's time in discovery, from its start to the agreement */
    /* the measured pairs, as world ranks and microseconds (the first IST_DISCOVERY_KEPT) */
    int kept;
    int pair_rank[2 * 256];
    double pair_rtt_us[256];
};
#define IST_DISCOVERY_KEPT 256

#define IST_DISCOVER_NAME 64 /* IST_NAME_MAX */

/* Every rank's cluster number (0, 1, ... by lowest rank) into cluster_of[world_size], from
 * round trips measured on comm between hosts (names[r]: rank r's host name; host_of[r]:
 * the lowest rank on r's host). Collective over comm. */
void ist_discover(MPI_Comm comm, const char (*names)[IST_DISCOVER_NAME], const int *host_of,
                  int *cluster_of);
const struct ist_discovery *ist_discovery(void);


/* ---- between discover.c and discover_measure.c ---- */
#define IST_DISCOVER_SAMPLES 3         /* round trips per pair, all pairs at once */
#define IST_DISCOVER_CAREFUL_SAMPLES 12 /* per pair, one pair at a time */
/* dilated, where a careful pair's hosts each have their share of a core: the round trips
 * of one pair then agree within a few percent (das-4x2 at the 5x edge: 413-428 us) */
#define IST_DISCOVER_CAREFUL_SAMPLES_DILATED 4

struct ist_host_pair {
    int a, b; /* host numbers, a < b */
};

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
