/* Measuring the P-LogP parameters at MPI_Init (ISTHMUS_PLOGP=measure, which
 * layer.clusters = "auto" sets): the lan and wan classes of the clusters the layer knows,
 * for the selector and the broadcast's optimizer (hier_model.c loads it).
 *
 * When: at MPI_Init, with the WAN-aware collectives on and ISTHMUS_PLOGP=measure; the wan
 * class alone again when live adaptation sees the wide area drift (hier_adapt.c).
 *
 * How: the bench's method (src/bench/logp.c; Kielmann, Bal and Verstoep 2000) at two sizes,
 * 0 and IST_EAGER_SEGMENT (the wide-area segment the collectives send; the model is linear
 * between and beyond them, docs/model.md), with small fixed repetition counts in place of
 * the bench's confidence rule, so that its time is bounded. Across the WAN the second size
 * is smaller on a slow link: a round trip of PROBE bytes first gives the link's rate, and
 * the size is the largest power of two up to IST_EAGER_SEGMENT whose train of TRAIN_MIN
 * lasts at most TRAIN_BUDGET_US (a train of 16 KiB segments over 1 MB/s took 131 ms of
 * the 55 ms the discovery target allows at das-4x2's 5x edge; the model carries the
 * smaller size's parameters linearly to a segment):
 *   RTT(m), os(m): ping-pongs of m bytes and a 0-byte reply, the least of REPS (across
 *          the WAN two at 0 bytes, one at m: reps_at); os(m) the least time the send took;
 *   or(m): the receiver idles RTT(m) before receiving, so the message is there, and times
 *          the receive (the least of REPS); across the WAN the lan class's (a receive's work
 *          is the host's), measured there only when there is no local pair;
 *   g(m):  a train of n messages of m bytes sent at once; the receiver times their
 *          arrivals and takes the least mean gap over half of the train (train_gap:
 *          the bench's T(n) = RTT(0) - g(0) + n g(m) from the sender would count the
 *          first round trips of TCP's slow start, which a train of a few round trips
 *          cannot amortize); n lasts about four round trips (from RTT(m) - RTT(0)),
 *          TRAIN_MIN <= n <= TRAIN_MAX; g(0) from the sender's T(n) of TRAIN0 empty
 *          messages (they arrive together: their spacing is the receiver's work);
 *   L = RTT(0)/2 - g(0).
 * The lan class is measured between the first two hosts of the first cluster with two
 * (two ranks of one host when no cluster has two hosts), the wan class between the first
 * ranks of clusters 0 and 1, as the parameters derived from a platform (docs/model.md).
 *
 * Cost: on the wide-area pair about 7 round trips and the train's four (TRAIN_MIN
 * messages at least, at most about TRAIN_BUDGET_US on a slow link), a few milliseconds on
 * the local pair, and three broadcasts of the results. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discover.h"
#include "hier.h"
#include "clock.h"
#include "topology.h"
#include "world.h"

#define REPS 3
#define PROBE 1024
#define TRAIN_BUDGET_US 8000.0
#define SMALLEST_SECOND 1024L
#define TRAIN0 16
#define TRAIN_MIN 8
#define TRAIN_MAX 64
#define TAG_LOGP 0x4954
#define TAG_LAST 0x4955

struct measured { /* one class, as sent from its measuring rank */
    double L, os[2], orecv[2], g[2], rtt[2];
};

static void exchange(int send, void *buf, int bytes, int peer, int tag, MPI_Comm comm)
{
    MPI_Request r;
    if (send) PMPI_Isend(buf, bytes, MPI_BYTE, peer, tag, comm, &r);
    else PMPI_Irecv(buf, bytes, MPI_BYTE, peer, tag, comm, &r);
    ist_wait_all(1, &r);
}

/* Across the WAN, the second size: from one round trip of PROBE bytes against rtt0. */
static long second_size(MPI_Comm comm, int peer, char *buf, double rtt0)
{
    double t0 = ist_now_us();
    exchange(1, buf, PROBE, peer, TAG_LOGP, comm);
    exchange(0, buf, 0, peer, TAG_LOGP, comm);
    double per_byte = (ist_now_us() - t0 - rtt0) / PROBE; /* us, 0 or less: fast */
    long m = IST_EAGER_SEGMENT;
    while (m > SMALLEST_SECOND && per_byte * (double)m * TRAIN_MIN > TRAIN_BUDGET_US) m /= 2;
    return m;
}

/* The sender's half: round trips, send overheads and trains. */
/* Round trips the sender times at size k: across the WAN two at 0 bytes and one at the
 * second size (after the probe), two there while the job runs, whose first may still be
 * in TCP's slow start after an idle spell (its least sets the train's floor: measured
 * once, it put g(16 KiB) at 1.4-2.9 ms on a 1 Gbit/s link, adaptive/live). */
static int reps_at(int wide, int k)
{
    return !wide ? REPS : k == 0 || wide == 2 ? 2 : 1;
}

static void sender(MPI_Comm comm, int peer, char *buf, long *size, int wide,
                   struct measured *out)
{
    for (int k = 0; k < 2; k++) {
        if (k == 1 && wide) size[1] = second_size(comm, peer, buf, out->rtt[0]);
        out->rtt[k] = out->os[k] = INFINITY;
        for (int i = 0; i < reps_at(wide, k); i++) {
            double t0 = ist_now_us();
            exchange(1, buf, (int)size[k], peer, TAG_LOGP, comm);
            double t1 = ist_now_us();
            exchange(0, buf, 0, peer, TAG_LOGP, comm);
            double t2 = ist_now_us();
            out->os[k] = fmin(out->os[k], t1 - t0);
            out->rtt[k] = fmin(out->rtt[k], t2 - t0);
        }
    }
    /* the receiver idles RTT(m) before timing each receive */
    exchange(1, out->rtt, (int)sizeof out->rtt, peer, TAG_LOGP, comm);
    for (int k = 0; k < 2 && !wide; k++)
        for (int i = 0; i < REPS; i++) {
            exchange(1, buf, (int)size[k], peer, TAG_LOGP, comm);
            exchange(0, buf, 0, peer, TAG_LOGP, comm);
        }
    double g_guess = fmax(out->rtt[1] - out->rtt[0], 1.0);
    for (int k = 0; k < 2; k++) {
        int n = k == 0 ? TRAIN0
                       : (int)fmin(TRAIN_MAX, fmax(TRAIN_MIN, ceil(4 * out->rtt[0] / g_guess)));
        MPI_Request req[TRAIN_MAX];
        double t0 = ist_now_us();
        for (int i = 0; i < n; i++)
            PMPI_Isend(buf, (int)size[k], MPI_BYTE, peer, i + 1 < n ? TAG_LOGP : TAG_LAST, comm,
                       &req[i]);
        ist_wait_all(n, req);
        exchange(0, &out->g[k], (int)sizeof(double), peer, TAG_LOGP, comm);
        /* 0 bytes: the sender's T(n) = RTT(0) + (n-1) g(0); tiny messages arrive together,
         * and their spacing at the receiver is its own work, not the link's gap */
        if (k == 0) out->g[0] = fmax((ist_now_us() - t0 - out->rtt[0]) / (n - 1), 0.01);
    }
    out->L = fmax(out->rtt[0] / 2 - out->g[0], 0);
}

/* The gap of a train from its arrival times: the least mean gap over a window of half
 * of it (at least 4 messages). A train sent at once leaves the sender faster than
 * the link takes it: the arrivals are spaced by the gap, once TCP's window has opened
 * (the first round trips of a new connection go slower: the least window skips them). */
static double train_gap(const double *arrived, int n)
{
    int w = n / 2 > 4 ? n / 2 : 4;
    if (w > n - 1) w = n - 1;
    double g = INFINITY;
    for (int i = 0; i + w < n; i++) g = fmin(g, (arrived[i + w] - arrived[i]) / w);
    return fmax(isinf(g) ? 0 : g, 0.01);
}

/* The receiver's half: answers, idles, times its receives, absorbs the trains. */
static void receiver(MPI_Comm comm, int peer, char *buf, const long *size, int wide,
                     double orecv[2])
{
    /* size[1] is the most the sender sends: across the WAN it may send less. Across, at 0
     * bytes the sender's round trips, then the probe's and the second size's. */
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < reps_at(wide, k) + (wide && k); i++) {
            exchange(0, buf, (int)size[k], peer, TAG_LOGP, comm);
            exchange(1, buf, 0, peer, TAG_LOGP, comm);
        }
    double rtt[2];
    exchange(0, rtt, (int)sizeof rtt, peer, TAG_LOGP, comm);
    for (int k = 0; k < 2 && !wide; k++) {
        orecv[k] = INFINITY;
        for (int i = 0; i < REPS; i++) {
            struct timespec idle = {(time_t)(rtt[k] / 1e6), (long)fmod(rtt[k] * 1e3, 1e9)};
            nanosleep(&idle, NULL);
            double t0 = ist_now_us();
            exchange(0, buf, (int)size[k], peer, TAG_LOGP, comm);
            orecv[k] = fmin(orecv[k], ist_now_us() - t0);
            exchange(1, buf, 0, peer, TAG_LOGP, comm);
        }
    }
    for (int k = 0; k < 2; k++) {
        double arrived[TRAIN_MAX];
        int n = 0;
        MPI_Status st;
        do {
            MPI_Request r;
            PMPI_Irecv(buf, (int)size[k], MPI_BYTE, peer, MPI_ANY_TAG, comm, &r);
            if (ist_sleep_wait) ist_sleep_until_done(&r, &st);
            else PMPI_Wait(&r, &st);
            arrived[n++] = ist_now_us();
        } while (st.MPI_TAG != TAG_LAST && n < TRAIN_MAX);
        double g = train_gap(arrived, n);
        exchange(1, &g, (int)sizeof g, peer, TAG_LOGP, comm);
    }
}

/* One class between ranks a (it measures) and b of comm, known on every rank after.
 * wide: 0 a local class, 1 a wide-area one, 2 a wide-area one measured while the job
 * runs (live adaptation), whose train's gap is held at least half of what the message
 * added to a round trip: a receiver that was not waiting takes the train in one burst
 * (measured: 0.4 us for 16 KiB at 1 Gbit/s, against a round trip 130 us longer). */
static void measure_class(MPI_Comm comm, int a, int b, int wide, const double *lan_or,
                          struct ist_plogp_class *c)
{
    long size[2] = {0, IST_EAGER_SEGMENT}; /* the sender may lower size[1] (second_size) */
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    struct measured m = {0};
    char *buf = calloc(1, (size_t)IST_EAGER_SEGMENT);
    if (rank == a) sender(comm, b, buf, size, wide, &m);
    if (rank == b) receiver(comm, a, buf, size, wide, m.orecv);
    if (!wide) { /* the receive overheads are the receiver's */
        if (rank == b) exchange(1, m.orecv, (int)sizeof m.orecv, a, TAG_LOGP, comm);
        if (rank == a) exchange(0, m.orecv, (int)sizeof m.orecv, b, TAG_LOGP, comm);
    }
    free(buf);
    ist_bcast_waiting(&m, (int)(sizeof m / sizeof(double)), MPI_DOUBLE, a, comm);
    ist_bcast_waiting(&size[1], 1, MPI_LONG, a, comm);
    if (wide == 2) m.g[1] = fmax(m.g[1], (m.rtt[1] - m.rtt[0]) / 2);
    if (wide) /* the lan class's, or the send's when there is none */
        for (int k = 0; k < 2; k++) m.orecv[k] = lan_or ? lan_or[k] : m.os[k];
    if (ist_plogp_class_init(c, m.L, 2) != 0) return;
    for (int k = 0; k < 2; k++) {
        c->sizes[k] = size[k];
        c->os[k] = m.os[k];
        c->orecv[k] = m.orecv[k];
        c->g[k] = m.g[k];
    }
}

/* The local pair: the first two hosts of one cluster, else two ranks of one host. */
static int local_pair(int *a, int *b)
{
    int n = ist_world_size();
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < n; r++)
            for (int q = r + 1; q < n; q++)
                if (ist_rank_cluster(q) == ist_rank_cluster(r) &&
                    (pass == 1 || strcmp(ist_rank_host(q), ist_rank_host(r)) != 0)) {
                    *a = r;
                    *b = q;
                    return 1;
                }
    return 0;
}

double ist_plogp_measure(MPI_Comm comm, struct ist_plogp *p)
{
    double start = ist_now_us();
    memset(p, 0, sizeof *p);
    int a = 0, b = 0, far = -1, n = ist_world_size();
    for (int r = 0; r < n && far < 0; r++)
        if (ist_rank_cluster(r) != ist_rank_cluster(0)) far = r;
    double lan_or[2];
    const double *lan_or_known = NULL;
    if (local_pair(&a, &b)) {
        measure_class(comm, a, b, 0, NULL, &p->lan);
        memcpy(lan_or, p->lan.orecv, sizeof lan_or);
        lan_or_known = lan_or;
    } else {
        p->lan.present = 1; /* no two ranks share a cluster: no such links to cost */
    }
    if (far >= 0) measure_class(comm, 0, far, 1, lan_or_known, &p->wan);
    else p->wan.present = 1;
    snprintf(p->platform, sizeof p->platform, "measured");
    return (ist_now_us() - start) / 1e6;
}

void ist_plogp_measure_wan(MPI_Comm comm, int a, int b, const double *lan_or,
                           struct ist_plogp_class *wan)
{
    memset(wan, 0, sizeof *wan);
    measure_class(comm, a, b, 2, lan_or, wan);
}
