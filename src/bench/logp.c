/* logp: the parameterized LogP parameters os(m), or(m), g(m) and L of a link class, by the
 * method of Kielmann, Bal and Verstoep ("Fast measurement of LogP parameters for message
 * passing platforms", 2000), between rank 0 (the sender) and one peer per link class.
 *
 * Link classes: "lan" (the first other rank of rank 0's cluster) and "wan" (the first rank
 * of another cluster), from the placement isthmus run passes; --peer R measures rank 0
 * against R only (class "peer" when no placement is known). For every size m (0, then
 * powers of two from --min-size to --max-size):
 *   - RTT(m) and os(m): rank 0 times a blocking send of m bytes (os) and the round trip
 *     until the peer's 0-byte reply arrives (RTT);
 *   - or(m): the peer idles for Delta = RTT(m) before receiving, so the message has
 *     arrived (or, with a rendezvous protocol, is waiting to be pulled); the time in
 *     MPI_Recv is then the receive overhead alone;
 *   - g(m): rank 0 sends a train of n messages back to back and waits for a 0-byte reply:
 *     T(n) = RTT(m) + (n-1) g(m) once the link is saturated, so g(m) = (T(n)-RTT(m))/(n-1),
 *     with n chosen so that the train lasts several round trips.
 * Then L = RTT(0)/2 - g(0) (P-LogP: RTT(0) = 2 (L + g(0))).
 *
 * Stopping rule (the paper's): each measurement repeats until the half-width of the 95%
 * confidence interval of its mean is within --precision (default 1%) of the mean, after at
 * least MIN_REPS and at most MAX_REPS repetitions or --seconds-per-size seconds. The side
 * that times decides and tells the other in the tag of its next message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define MIN_REPS 5
#define MAX_REPS 1000
#define MAX_TRAIN 256
#define TAG_MORE 1
#define TAG_STOP 2

/* Mean and confidence interval of repeated timings. */
struct sample {
    int n;
    double sum, sumsq;
};

static void add(struct sample *s, double x)
{
    s->n++;
    s->sum += x;
    s->sumsq += x * x;
}

static double mean(const struct sample *s) { return s->n ? s->sum / s->n : 0; }

/* Student's t for a two-sided 95% interval with df degrees of freedom. */
static double t95(int df)
{
    static const double t[] = {12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
    if (df < 1) return INFINITY;
    return df <= 20 ? t[df - 1] : df <= 40 ? 2.03 : 1.96;
}

/* Half-width of the 95% interval relative to the mean. */
static double ci_rel(const struct sample *s)
{
    if (s->n < 2) return INFINITY;
    double m = mean(s), var = (s->sumsq - s->n * m * m) / (s->n - 1);
    double half = t95(s->n - 1) * sqrt(var > 0 ? var : 0) / sqrt(s->n);
    return m > 0 ? half / m : half > 0 ? INFINITY : 0;
}

static int converged(const struct sample *s, const struct bench_options *o, double started)
{
    if (s->n < (isinf(o->precision) ? 1 : MIN_REPS)) return 0; /* infinite: one is enough */
    return s->n >= MAX_REPS || ci_rel(s) <= o->precision ||
           MPI_Wtime() - started >= o->seconds_per_size;
}

static void send_tag(int peer, int tag) { MPI_Send(NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD); }

static int recv_tag(int peer)
{
    MPI_Status st;
    MPI_Recv(NULL, 0, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    return st.MPI_TAG;
}

/* RTT(m) and os(m), timed by rank 0. */
static void measure_rtt_os(int me, int peer, char *buf, long m, const struct bench_options *o,
                           struct sample *rtt, struct sample *os)
{
    if (me == 0) {
        double started = MPI_Wtime();
        for (;;) {
            double t0 = MPI_Wtime();
            MPI_Send(buf, (int)m, MPI_BYTE, peer, TAG_MORE, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            recv_tag(peer);
            double t2 = MPI_Wtime();
            add(os, t1 - t0);
            add(rtt, t2 - t0);
            if (converged(rtt, o, started) && converged(os, o, started)) break;
        }
        send_tag(peer, TAG_STOP);
    } else {
        for (;;) {
            MPI_Status st;
            MPI_Recv(buf, (int)m, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (st.MPI_TAG == TAG_STOP) break;
            send_tag(0, TAG_MORE);
        }
    }
}

/* or(m), timed by the peer after idling Delta; its reply's tag says whether to go on. */
static void measure_or(int me, int peer, char *buf, long m, double delta,
                       const struct bench_options *o, struct sample *orecv)
{
    if (me == 0) {
        do MPI_Send(buf, (int)m, MPI_BYTE, peer, TAG_MORE, MPI_COMM_WORLD);
        while (recv_tag(peer) == TAG_MORE);
    } else {
        double started = MPI_Wtime();
        for (;;) {
            /* Idle (not spin): on an oversubscribed machine the sender needs the core. */
            struct timespec ts = {(time_t)delta, (long)((delta - (double)(time_t)delta) * 1e9)};
            nanosleep(&ts, NULL);
            double t0 = MPI_Wtime();
            MPI_Recv(buf, (int)m, MPI_BYTE, 0, TAG_MORE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            add(orecv, MPI_Wtime() - t0);
            int done = converged(orecv, o, started);
            send_tag(0, done ? TAG_STOP : TAG_MORE);
            if (done) break;
        }
    }
}

/* T(n) for trains of n messages of m bytes, timed by rank 0, which says after each train
 * whether another follows. */
static void measure_train(int me, int peer, char *buf, long m, int n, const struct bench_options *o,
                          struct sample *train)
{
    if (me == 0) {
        double started = MPI_Wtime();
        int go;
        do {
            double t0 = MPI_Wtime();
            for (int i = 0; i < n; i++) MPI_Send(buf, (int)m, MPI_BYTE, peer, TAG_MORE, MPI_COMM_WORLD);
            recv_tag(peer);
            add(train, MPI_Wtime() - t0);
            go = !converged(train, o, started);
            send_tag(peer, go ? TAG_MORE : TAG_STOP);
        } while (go);
    } else {
        do {
            for (int i = 0; i < n; i++)
                MPI_Recv(buf, (int)m, MPI_BYTE, 0, TAG_MORE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send_tag(0, TAG_MORE);
        } while (recv_tag(0) == TAG_MORE);
    }
}

/* Rank 0 gives the peer a value it computed. */
static void share(int me, int peer, double *v)
{
    if (me == 0) MPI_Send(v, 1, MPI_DOUBLE, peer, TAG_MORE, MPI_COMM_WORLD);
    else MPI_Recv(v, 1, MPI_DOUBLE, 0, TAG_MORE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The train length: long enough that the gaps dominate the train's one round trip. */
static int train_length(double rtt, double g_guess)
{
    double n = g_guess > 0 ? 4 * rtt / g_guess : MAX_TRAIN;
    return n < 4 ? 4 : n > MAX_TRAIN ? MAX_TRAIN : (int)n;
}

static void measure_class(const char *cls, int peer, char *buf, const struct bench_options *o)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me != 0 && me != peer) return; /* the other ranks wait in main's barrier */
    char c0[64], c1[64];
    bench_cluster_of(0, c0, sizeof c0);
    bench_cluster_of(peer, c1, sizeof c1);
    double rtt0 = 0, g0 = 0;
    for (long m = o->min_size; m >= 0; m = m == 0 ? (o->min_size > 1 ? o->min_size : 1) : bench_next_size(o, m)) {
        struct sample rtt = {0}, os = {0}, orecv = {0}, train = {0}, guess = {0};
        measure_rtt_os(me, peer, buf, m, o, &rtt, &os);
        double mrtt = mean(&rtt);
        share(me, peer, &mrtt);
        measure_or(me, peer, buf, m, mrtt, o, &orecv);
        /* One short train first, to size the real one. */
        struct bench_options once = *o;
        once.precision = INFINITY;
        measure_train(me, peer, buf, m, 4, &once, &guess);
        double length = train_length(mrtt, (mean(&guess) - mrtt) / 3);
        share(me, peer, &length);
        int n = (int)length;
        measure_train(me, peer, buf, m, n, o, &train);
        double g = (mean(&train) - mrtt) / (n - 1);
        /* a train that ended within the round trip's noise (the short train overrated the
         * gap, so this one was short too): once more at full length */
        double again = g <= 0 && n < MAX_TRAIN;
        share(me, peer, &again);
        if (again) {
            n = MAX_TRAIN;
            train = (struct sample){0};
            measure_train(me, peer, buf, m, n, o, &train);
            g = (mean(&train) - mrtt) / (n - 1);
        }
        /* the gap is the least interval between consecutive sends (Kielmann et al.), so
         * never less than one send's overhead; a train whose end fell within the round
         * trip's noise (a loaded host) says no more than that */
        if (g < mean(&os)) g = mean(&os);
        /* or(m) was timed by the peer: bring it to rank 0. */
        double orv[2] = {mean(&orecv), ci_rel(&orecv)};
        int orn = orecv.n;
        if (me == peer) {
            MPI_Send(orv, 2, MPI_DOUBLE, 0, TAG_MORE, MPI_COMM_WORLD);
            MPI_Send(&orn, 1, MPI_INT, 0, TAG_MORE, MPI_COMM_WORLD);
        } else if (me == 0) {
            MPI_Recv(orv, 2, MPI_DOUBLE, peer, TAG_MORE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&orn, 1, MPI_INT, peer, TAG_MORE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (m == 0) {
            rtt0 = mrtt;
            g0 = g;
        }
        if (me == 0) {
            printf("{\"record\": \"logp\", \"class\": \"%s\", \"ranks\": [0, %d], \"clusters\": "
                   "[\"%s\", \"%s\"], \"bytes\": %ld, \"rtt_us\": %.3f, \"os_us\": %.3f, "
                   "\"or_us\": %.3f, \"g_us\": %.3f, \"train\": %d, \"repetitions\": {\"rtt\": %d, "
                   "\"or\": %d, \"g\": %d}, \"ci95_rel\": {\"rtt\": %.4f, \"os\": %.4f, \"or\": %.4f, "
                   "\"g\": %.4f}}\n",
                   cls, peer, c0, c1, m, mrtt * 1e6, mean(&os) * 1e6, orv[0] * 1e6, g * 1e6, n,
                   rtt.n, orn, train.n, fmin(ci_rel(&rtt), 99), fmin(ci_rel(&os), 99),
                   fmin(orv[1], 99), fmin(ci_rel(&train), 99));
            fflush(stdout);
        }
        if (me == 0) fprintf(stderr, "logp: %s: %ld bytes\n", cls, m);
        if (m == o->max_size) break;
    }
    if (me == 0 && o->min_size == 0) {
        printf("{\"record\": \"logp_latency\", \"class\": \"%s\", \"ranks\": [0, %d], \"L_us\": %.3f}\n",
               cls, peer, (rtt0 / 2 - g0) * 1e6);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct bench_options o = {.min_size = 0, .max_size = 1L << 20, .seconds_per_size = 0.5,
                              .iterations = 1, .peer = 0, .precision = 0.01};
    bench_parse(argc, argv, "logp", &o);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bench_header("logp", argc, argv, &o);
    char *buf = calloc((size_t)o.max_size + 1, 1);
    if (o.peer > 0) {
        char c0[64], c1[64];
        bench_cluster_of(0, c0, sizeof c0);
        bench_cluster_of(o.peer, c1, sizeof c1);
        measure_class(!*c0 ? "peer" : strcmp(c0, c1) == 0 ? "lan" : "wan", o.peer, buf, &o);
    } else {
        /* Rank 0 against the first rank of its own cluster, then of another cluster. */
        int lan = -1, wan = -1;
        char c0[64], c[64];
        bench_cluster_of(0, c0, sizeof c0);
        for (int r = 1; r < size; r++) {
            bench_cluster_of(r, c, sizeof c);
            if (strcmp(c, c0) == 0 && lan < 0) lan = r;
            if (strcmp(c, c0) != 0 && wan < 0) wan = r;
        }
        if (lan < 0 && wan < 0) bench_progress("logp", "only one rank: nothing to measure");
        if (lan > 0) measure_class(*c0 ? "lan" : "peer", lan, buf, &o);
        MPI_Barrier(MPI_COMM_WORLD);
        if (wan > 0) measure_class("wan", wan, buf, &o);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
