/* The round trips discovery measures (discover.c says what for): many pairs at once,
 * or one pair at a time with both hosts polling, and the waiting that keeps idle ranks
 * off the cores. Cost: see each function. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "backoff.h"
#include "discover.h"
#include "clock.h"
#include "world.h"

/* between tests when ranks outnumber cores: doubling from the least to the most */
/* Pauses shorter than the sleeping waits' while pinging (longer ones would blur local
 * round trips); long ones, up to about 1 ms, while the others' pairs are measured. */
static const struct ist_backoff ping_pauses = {.spins = 0, .hold = 0, .min_ns = 2000, .max_ns = 32000};
static const struct ist_backoff idle_pauses = {.spins = 0, .hold = 0, .min_ns = 2000, .max_ns = 1024000};
#define TAG_PING 0x4953 /* on the layer's private communicator */
#define TAG_TURN 0x4956

/* One message of 8 bytes (or a double) to or from peer: waiting by polling without
 * sleeping when spin is set, else as the layer waits. */
static void exchange_spinning(int send, void *buf, int peer, int tag, MPI_Comm comm, int spin)
{
    MPI_Request r;
    if (send) PMPI_Isend(buf, 8, MPI_BYTE, peer, tag, comm, &r);
    else PMPI_Irecv(buf, 8, MPI_BYTE, peer, tag, comm, &r);
    if (!spin) {
        ist_wait_all(1, &r);
        return;
    }
    for (int done = 0; !done;) PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
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
            if (ist_sleep_wait) ist_backoff_sleep(&ping_pauses, tries);
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
    ping_pairs(comm, me, rep, p, n, IST_DISCOVER_SAMPLES, rtt);
}

/* The least of IST_DISCOVER_CAREFUL_SAMPLES round trips of each pair, one pair at a time in list
 * order, both of its hosts polling without sleeping while every other rank sleeps: when
 * the sample shows no clear gap, the wide-area round trips are short and the noise of
 * ranks taking turns on the cores is what blurs them. Each pair's starter hands the turn
 * to the next pair's (list the pairs of one group together: fewer wide-area hand-overs).
 * Into rtt[] on the starters (others: 0). */
void ist_discover_ping_carefully(MPI_Comm comm, const int *rep, const struct ist_host_pair *p, int n,
                              double *rtt)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    char byte[8] = "";
    for (int i = 0; i < n; i++) {
        int a = rep[p[i].a], b = rep[p[i].b];
        int before = i > 0 ? rep[p[i - 1].a] : a, after = i + 1 < n ? rep[p[i + 1].a] : a;
        if (rank == a) {
            if (before != a) exchange_spinning(0, byte, before, TAG_TURN, comm, 0);
            for (int s = 0; s <= IST_DISCOVER_CAREFUL_SAMPLES; s++) { /* the first one wakes b */
                double t0 = ist_now_us();
                exchange_spinning(1, byte, b, TAG_PING, comm, 1);
                exchange_spinning(0, byte, b, TAG_PING, comm, 1);
                double t = ist_now_us() - t0;
                if (s > 0 && (rtt[i] == 0 || t < rtt[i])) rtt[i] = t;
            }
            if (after != a) exchange_spinning(1, byte, after, TAG_TURN, comm, 0);
        } else if (rank == b) {
            for (int s = 0; s <= IST_DISCOVER_CAREFUL_SAMPLES; s++) {
                exchange_spinning(0, byte, a, TAG_PING, comm, s > 0);
                exchange_spinning(1, byte, a, TAG_PING, comm, 1);
            }
        }
    }
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
        if (ist_sleep_wait) ist_backoff_sleep(&idle_pauses, tries);
    }
}

