/* Discovery's method without MPI (discover.c): what it found, and the probe through which
 * it measures; discover.h gives it MPI (discover_measure.c), discover_sim.c a model. */
#ifndef ISTHMUS_DISCOVER_METHOD_H
#define ISTHMUS_DISCOVER_METHOD_H

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
const struct ist_discovery *ist_discovery(void);
struct ist_discovery *ist_discovery_mutable(void);

#define IST_DISCOVER_SAMPLES 3         /* round trips per pair, all pairs at once */
#define IST_DISCOVER_CAREFUL_SAMPLES 12 /* per pair, one pair at a time */
/* dilated, where a careful pair's hosts each have their share of a core: the round trips
 * of one pair then agree within a few percent (das-4x2 at the 5x edge: 413-428 us) */
#define IST_DISCOVER_CAREFUL_SAMPLES_DILATED 4

struct ist_host_pair {
    int a, b; /* host numbers, a < b */
};

/* How discover.c's method measures round trips (8 bytes, microseconds): discover_measure.c
 * on MPI, or a model (discover_sim.c). Both give the same figures on every rank. */
struct ist_discover_probe {
    /* pairs p[0..n) all at once, the least of IST_DISCOVER_SAMPLES each, into rtt[] */
    void (*all_at_once)(void *ctx, const struct ist_host_pair *p, int n, double *rtt);
    /* pairs q[0..k) one at a time, the least of IST_DISCOVER_CAREFUL_SAMPLES each */
    void (*one_at_a_time)(void *ctx, const struct ist_host_pair *q, int k, double *rtt);
    void *ctx;
};

/* The method itself, no MPI in it: every host's cluster (0, 1, ... by lowest host) into
 * cluster[hosts], from round trips measured through probe; by_name: the hosts in the order
 * of their names (a permutation). What it found and cost: ist_discovery() (the pairs as
 * host numbers; seconds not set). */
void ist_discover_hosts(int hosts, const int *by_name, const struct ist_discover_probe *probe,
                        int *cluster);

#endif
