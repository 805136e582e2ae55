/* The round trips discovery measures (discover.c says what for): many pairs at once,
 * or one pair at a time with both hosts polling, and the waiting that keeps idle ranks
 * off the cores; and ist_discover, which gives discover.c's method these as its probe
 * on the layer's communicator. Cost: see each function. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "discover.h"
#include "clock.h"
#include "own_calls.h"
#include "world.h"

/* between tests when ranks outnumber cores: doubling from the least to the most */
/* Pauses shorter than the sleeping waits' while pinging (longer ones would blur local
 * round trips); long ones, up to about 1 ms, while the others' pairs are measured. */
static const struct ist_backoff ping_pauses = {.spins = 0, .hold = 0, .min_ns = 2000, .max_ns = 32000};
static const struct ist_backoff idle_pauses = {.spins = 0, .hold = 0, .min_ns = 2000, .max_ns = 1024000};
#define TAG_PING 0x4953 /* on the layer's private communicator */
#define TAG_TURN 0x4956

/* The pause after a failed test while pinging. Dilated, each host is a CPU quota of
 * its share of a core: a rank that polls uses it up and is throttled until the next
 * period (up to a millisecond of virtual time: das-4x2's 5x-edge round trips measured
 * 460-490 us this way, 390 by the pingpong benchmark), and a pause in virtual time holds a
 * message that arrives meanwhile; so there the pause is the sleeping waits' (it follows
 * the host's share and ends when a socket has something to read). Undilated: `b`, when
 * the ranks outnumber the cores, else none (polling); b NULL: always polling. */
static void pause_after_test(const struct ist_backoff *b, int tries)
{
    if (ist_dilation() > 1.0) ist_world_idle(tries);
    else if (b && ist_sleep_wait) ist_backoff_sleep(b, tries);
}

/* One message of 8 bytes (or a double) to or from peer: waiting by polling without
 * sleeping when spin is set (dilated: with the pauses of pause_after_test), else as the
 * layer waits. */
static void exchange_spinning(int send, void *buf, int peer, int tag, MPI_Comm comm, int spin)
{
    MPI_Request r;
    if (send) PMPI_Isend(buf, 8, MPI_BYTE, peer, tag, comm, &r);
    else PMPI_Irecv(buf, 8, MPI_BYTE, peer, tag, comm, &r);
    if (!spin) {
        ist_wait_all(1, &r);
        return;
    }
    for (int done = 0, tries = 0;; tries++) {
        PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) break;
        pause_after_test(NULL, tries);
    }
}

/* The least of `samples` round trips (microseconds) of every pair this rank's host starts
 * (the lower host of the pair), into rtt[] (NULL: untimed); the others' slots stay 0.
 * Every pair runs its own ping-pongs, all at once: a host answers a ping as soon as it
 * arrives, so a local round trip never waits for a wide-area one of either host. */
static void ping_pairs(MPI_Comm comm, int me, const int *rep, const struct ist_host_pair *p,
                       int n, int samples, double *rtt)
{
    MPI_Request *recv = malloc((size_t)(n + 1) * sizeof *recv);
    MPI_Request *send = malloc((size_t)(n + 1) * sizeof *send);
    int *count = calloc((size_t)(n + 1), sizeof *count);
    double *sent = malloc((size_t)(n + 1) * sizeof *sent);
    char ping[8] = "isthmus", *pong = malloc((size_t)(8 * (n + 1)));
    int active = 0;
    for (int i = 0; i < n; i++) {
        recv[i] = send[i] = MPI_REQUEST_NULL;
        if (p[i].a != me && p[i].b != me) continue;
        int peer = rep[p[i].a == me ? p[i].b : p[i].a];
        PMPI_Irecv(pong + 8 * i, 8, MPI_BYTE, peer, TAG_PING, comm, &recv[i]);
        if (p[i].a == me) {
            sent[i] = ist_now_us();
            PMPI_Isend(ping, 8, MPI_BYTE, peer, TAG_PING, comm, &send[i]);
        }
        active++;
    }
    int tries = 0;
    while (active > 0) {
        int i = MPI_UNDEFINED, done = 0;
        PMPI_Testany(n, recv, &i, &done, MPI_STATUS_IGNORE);
        if (!done) {
            pause_after_test(&ping_pauses, tries);
            tries++;
            continue;
        }
        tries = 0;
        if (i == MPI_UNDEFINED) break;
        int starts = p[i].a == me, peer = rep[starts ? p[i].b : p[i].a];
        if (starts && rtt) {
            double t = ist_now_us() - sent[i];
            if (rtt[i] == 0 || t < rtt[i]) rtt[i] = t;
        }
        PMPI_Wait(&send[i], MPI_STATUS_IGNORE); /* done: its answer came, or it was one */
        int more = ++count[i] < samples;
        if (more) PMPI_Irecv(pong + 8 * i, 8, MPI_BYTE, peer, TAG_PING, comm, &recv[i]);
        else active--;
        if (more || !starts) { /* the starter's next ping, or the answer */
            if (starts) sent[i] = ist_now_us();
            PMPI_Isend(ping, 8, MPI_BYTE, peer, TAG_PING, comm, &send[i]);
        }
    }
    for (int i = 0; i < n; i++) PMPI_Wait(&send[i], MPI_STATUS_IGNORE);
    free(recv);
    free(send);
    free(count);
    free(sent);
    free(pong);
}

void ist_discover_ping(MPI_Comm comm, int me, const int *rep, const struct ist_host_pair *p, int n,
                       double *rtt)
{
    /* One exchange per pair first, untimed: an MPI's first message to a peer may wait for
     * the connection's setup (a wide-area round trip, in the send: MPICH's UCX), which
     * would lengthen the local round trips measured meanwhile. */
    ping_pairs(comm, me, rep, p, n, 1, NULL);
    ist_wait_sockets_rescan(); /* the connections that exchange opened */
    ping_pairs(comm, me, rep, p, n, IST_DISCOVER_SAMPLES, rtt);
}

/* Dilated: the order in which each host measures its careful pairs. Pairs are coloured
 * greedily in list order (a pair takes the first colour neither of its hosts has yet),
 * and go by colour, keeping list order within one: the pairs of one colour have disjoint
 * hosts and run at once. */
static void order_by_colour(const struct ist_host_pair *p, int n, int *order)
{
    int *colour = malloc((size_t)(n + 1) * sizeof *colour), colours = 0;
    for (int i = 0; i < n; i++) {
        int c = 0;
        for (int clash = 1; clash; c += clash) {
            clash = 0;
            for (int j = 0; j < i && !clash; j++)
                clash = colour[j] == c && (p[j].a == p[i].a || p[j].a == p[i].b || p[j].b == p[i].a ||
                                          p[j].b == p[i].b);
        }
        colour[i] = c;
        if (c + 1 > colours) colours = c + 1;
    }
    int k = 0;
    for (int c = 0; c < colours; c++)
        for (int i = 0; i < n; i++)
            if (colour[i] == c) order[k++] = i;
    free(colour);
}

/* The least of IST_DISCOVER_CAREFUL_SAMPLES round trips of each pair (dilated: _DILATED), one pair at a time in list
 * order, both of its hosts polling without sleeping while every other rank sleeps: when
 * the sample shows no clear gap, the wide-area round trips are short and the noise of
 * ranks taking turns on the cores is what blurs them. Each pair's starter hands the turn
 * to the next pair's (list the pairs of one group together: fewer wide-area hand-overs).
 * Dilated, every host has its own share of a core, so pairs of different hosts do not
 * blur each other: pairs of disjoint hosts run at once (order_by_colour), without turns,
 * each host going through its own pairs in that order (which cannot deadlock: the
 * earliest unfinished pair has both its hosts at it). das-4x2's 28 pairs at the 5x edge
 * took 145 ms one at a time, measured dilated. Into rtt[] on the starters (others: 0). */
void ist_discover_ping_carefully(MPI_Comm comm, const int *rep, const struct ist_host_pair *p, int n,
                              double *rtt)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    char byte[8] = "";
    int turns = ist_dilation() <= 1.0;
    int *order = malloc((size_t)(n + 1) * sizeof *order);
    for (int i = 0; i < n; i++) order[i] = i;
    if (!turns) order_by_colour(p, n, order);
    int samples = turns ? IST_DISCOVER_CAREFUL_SAMPLES : IST_DISCOVER_CAREFUL_SAMPLES_DILATED;
    for (int k = 0; k < n; k++) {
        int i = order[k], a = rep[p[i].a], b = rep[p[i].b];
        int before = k > 0 && turns ? rep[p[i - 1].a] : a, after = k + 1 < n && turns ? rep[p[i + 1].a] : a;
        if (rank == a) {
            if (before != a) exchange_spinning(0, byte, before, TAG_TURN, comm, 0);
            for (int s = 0; s <= samples; s++) { /* the first one wakes b */
                double t0 = ist_now_us();
                exchange_spinning(1, byte, b, TAG_PING, comm, 1);
                exchange_spinning(0, byte, b, TAG_PING, comm, 1);
                double t = ist_now_us() - t0;
                if (s > 0 && (rtt[i] == 0 || t < rtt[i])) rtt[i] = t;
            }
            if (after != a) exchange_spinning(1, byte, after, TAG_TURN, comm, 0);
        } else if (rank == b) {
            for (int s = 0; s <= samples; s++) {
                exchange_spinning(0, byte, a, TAG_PING, comm, s > 0);
                exchange_spinning(1, byte, a, TAG_PING, comm, 1);
            }
        }
    }
    free(order);
}

/* The Allreduce (max) after the careful round, waited for in long sleeps (idle_pauses)
 * whenever ranks outnumber cores: the ranks done with their pairs must not take the
 * cores from the pair being measured. */
void ist_discover_agree_idly(const double *mine, double *out, int n, MPI_Comm comm)
{
    MPI_Request r;
    PMPI_Iallreduce(mine, out, n, MPI_DOUBLE, MPI_MAX, comm, &r);
    for (int done = 0, tries = 0;; tries++) {
        PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done) break;
        pause_after_test(&idle_pauses, tries);
    }
}


/* The probe on the layer's communicator: this rank's host (-1: not its host's lowest
 * rank), and every host's lowest rank. */
struct mpi_probe {
    MPI_Comm comm;
    int me;
    const int *rep;
};

static void all_at_once(void *ctx, const struct ist_host_pair *p, int n, double *rtt)
{
    const struct mpi_probe *m = ctx;
    double *mine = calloc((size_t)(n + 1), sizeof *mine);
    if (m->me >= 0) ist_discover_ping(m->comm, m->me, m->rep, p, n, mine);
    ist_own_Allreduce(mine, rtt, n, MPI_DOUBLE, MPI_MAX, m->comm);
    free(mine);
}

static void one_at_a_time(void *ctx, const struct ist_host_pair *q, int k, double *out)
{
    const struct mpi_probe *m = ctx;
    double *mine = calloc((size_t)(k + 1), sizeof *mine);
    ist_discover_ping_carefully(m->comm, m->rep, q, k, mine);
    ist_discover_agree_idly(mine, out, k, m->comm);
    free(mine);
}

static const char (*names_for_sort)[IST_DISCOVER_NAME];
static const int *reps_for_sort;

static int name_order(const void *x, const void *y)
{
    return strcmp(names_for_sort[reps_for_sort[*(const int *)x]],
                  names_for_sort[reps_for_sort[*(const int *)y]]);
}

void ist_discover(MPI_Comm comm, const char (*names)[IST_DISCOVER_NAME], const int *host_of,
                  int *cluster_of)
{
    double start = ist_now_us();
    int size = 0, rank = 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    /* host numbers in rank order, and each host's lowest rank */
    int *host = malloc((size_t)size * sizeof *host), *rep = malloc((size_t)size * sizeof *rep);
    int hosts = 0;
    for (int r = 0; r < size; r++) {
        if (host_of[r] == r) rep[hosts++] = r;
        host[r] = -1;
    }
    for (int h = 0; h < hosts; h++) host[rep[h]] = h;
    for (int r = 0; r < size; r++) host[r] = host[host_of[r]];
    int *by_name = malloc((size_t)(hosts + 1) * sizeof *by_name);
    int *cluster = malloc((size_t)(hosts + 1) * sizeof *cluster);
    for (int h = 0; h < hosts; h++) by_name[h] = h;
    names_for_sort = names;
    reps_for_sort = rep;
    qsort(by_name, (size_t)hosts, sizeof *by_name, name_order);

    struct mpi_probe m = {comm, host_of[rank] == rank ? host[rank] : -1, rep};
    struct ist_discover_probe probe = {all_at_once, one_at_a_time, &m};
    ist_discover_hosts(hosts, by_name, &probe, cluster);
    for (int r = 0; r < size; r++) cluster_of[r] = cluster[host[r]]; /* by lowest host: rank */

    struct ist_discovery *found = ist_discovery_mutable();
    for (int i = 0; i < 2 * found->kept; i++) found->pair_rank[i] = rep[found->pair_rank[i]];
    found->seconds = (ist_now_us() - start) / 1e6;
    if (getenv("ISTHMUS_COLL_LOG") && rank == 0) {
        fprintf(stderr, "isthmus: discovery: %d hosts, %d pairs in %d rounds, cut %.0f us, "
                        "%.1f ms, careful %d, gap %.1f; round trips (us):", hosts, found->pairs,
                found->rounds, found->cut_us, found->seconds * 1e3, found->careful, found->gap);
        for (int i = 0; i < found->kept; i++)
            fprintf(stderr, " %d-%d:%.0f", found->pair_rank[2 * i], found->pair_rank[2 * i + 1],
                    found->pair_rtt_us[i]);
        fputc('\n', stderr);
    }
    free(by_name);
    free(cluster);
    free(host);
    free(rep);
}
