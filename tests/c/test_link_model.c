/* The router's link model (src/net/link_model.c) and event heap (src/net/event_heap.h) on
 * a virtual clock: every emulated figure rests on them, so they are checked here to the
 * nanosecond, with fixed seeds, instead of through timing runs on a loaded machine.
 *
 * What is checked: serialization time at a set rate and propagation delay, exactly;
 * back-to-back packets queue behind each other; drop-tail at the queue limit in bytes;
 * jitter within its bounds with its distribution (uniform: flat histogram; normal: its
 * deviation), never a negative delay, and reordering only when the link allows it; loss
 * (Bernoulli and bursty) within binomial bounds for a fixed seed; two directions
 * independent; the event heap pops in due order, equal due times first in first out;
 * link_set accepts what the router's config sends and refuses the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_heap.h"
#include "link_model.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static struct link make(double rate, uint64_t latency, uint64_t queue, uint64_t seed)
{
    struct link_params p = {0};
    p.rate_bytes_per_s = rate;
    p.latency_ns = latency;
    p.queue_bytes = queue;
    p.loss_burst = 1;
    struct link l;
    link_init(&l, "test", &p, seed);
    return l;
}

/* 1500 B at 1 MB/s is 1.5 ms on the wire: one byte more or less per packet is 1000 ns. */
static void serialization_and_delay(void)
{
    struct link l = make(1e6, 250000, 1 << 20, 1);
    uint64_t at = 0;
    CHECK(link_offer(&l, 1000, 1500, &at) == LINK_PASS, "an idle link passes a packet");
    CHECK(at == 1000 + 1500000 + 250000, "arrival at t + len/rate + latency: got %llu",
          (unsigned long long)at);
    /* ten more at the same instant queue behind it: the k-th leaves k packet times later */
    for (int k = 1; k <= 10; k++) {
        uint64_t t = 1000;
        CHECK(link_offer(&l, t, 1500, &at) == LINK_PASS, "packet %d passes", k);
        uint64_t want = 1000 + (uint64_t)(k + 1) * 1500000 + 250000;
        CHECK(at == want, "packet %d arrives at %llu, want %llu", k, (unsigned long long)at,
              (unsigned long long)want);
    }
    CHECK(link_backlog(&l, 1000) == 11 * 1500, "backlog at the start: %llu bytes",
          (unsigned long long)link_backlog(&l, 1000));
    /* after the queue has drained, a packet again takes only its own time */
    CHECK(link_offer(&l, 100000000, 100, &at) == LINK_PASS && at == 100000000 + 100000 + 250000,
          "a packet on a drained link: %llu", (unsigned long long)at);
    CHECK(l.c.packets == 12 && l.c.bytes == 11 * 1500 + 100, "counters: %llu packets, %llu bytes",
          (unsigned long long)l.c.packets, (unsigned long long)l.c.bytes);

    /* without a rate: latency only, no queue */
    struct link free_link = make(0, 5000, 0, 1);
    CHECK(link_offer(&free_link, 7, 65000, &at) == LINK_PASS && at == 5007, "no rate: t + latency");

    /* cut-through hands a packet on when its serialization starts */
    struct link nic = make(1e6, 0, 1 << 20, 1);
    nic.p.cut_through = 1;
    link_offer(&nic, 0, 1000, &at);
    CHECK(at == 0, "cut-through: the first packet goes on at once");
    link_offer(&nic, 0, 1000, &at);
    CHECK(at == 1000000, "cut-through: the second when the first has left (%llu)",
          (unsigned long long)at);
}

static void drop_tail(void)
{
    /* a queue of 10 000 bytes takes six 1500-byte packets (9000), not a seventh */
    struct link l = make(1e6, 0, 10000, 1);
    uint64_t at;
    int passed = 0;
    for (int k = 0; k < 7; k++) passed += link_offer(&l, 0, 1500, &at) == LINK_PASS;
    CHECK(passed == 6 && l.c.queue_drops == 1, "6 of 7 packets fit a 10000-byte queue (%d)", passed);
    CHECK(l.c.max_backlog_bytes == 9000, "most bytes waiting: %llu",
          (unsigned long long)l.c.max_backlog_bytes);
    /* exactly at the limit: a packet that fills it is taken */
    struct link exact = make(1e6, 0, 3000, 1);
    CHECK(link_offer(&exact, 0, 1500, &at) == LINK_PASS && link_offer(&exact, 0, 1500, &at) == LINK_PASS,
          "two packets fill a 3000-byte queue exactly");
    CHECK(link_offer(&exact, 0, 1, &at) == LINK_QUEUE_DROP, "one byte more is dropped");
    /* one packet time later there is room for one packet again */
    CHECK(link_offer(&exact, 1500000, 1500, &at) == LINK_PASS, "room again after a departure");
}

static void jitter_distribution(void)
{
    enum { N = 200000, BINS = 10 };
    const uint64_t latency = 1000000, j = 200000;
    struct link l = make(0, latency, 0, 42);
    l.p.jitter_ns = j;
    l.p.dist = JITTER_UNIFORM;
    l.p.reorder = 1;
    int bins[BINS] = {0}, reordered = 0, below = 0;
    uint64_t last = 0;
    for (int i = 0; i < N; i++) {
        uint64_t t = (uint64_t)i * 1000, at;
        link_offer(&l, t, 100, &at);
        int64_t d = (int64_t)(at - t) - (int64_t)latency;
        if (d < -(int64_t)j || d > (int64_t)j) below++;
        int b = (int)((double)(d + (int64_t)j) / (2.0 * (double)j) * BINS);
        bins[b < 0 ? 0 : b >= BINS ? BINS - 1 : b]++;
        if (at < last) reordered++;
        last = at;
    }
    CHECK(below == 0, "uniform jitter stays within +-j (%d outside)", below);
    for (int b = 0; b < BINS; b++) /* each bin N/10 = 20000, sd ~134: 6 sigma */
        CHECK(abs(bins[b] - N / BINS) < 800, "uniform jitter: bin %d has %d of %d", b, bins[b], N);
    CHECK(reordered > 0, "with reorder and jitter wider than the spacing, packets reorder");

    /* the same draws without reorder: arrivals never go back */
    struct link inorder = make(0, latency, 0, 42);
    inorder.p.jitter_ns = j;
    last = 0;
    reordered = 0;
    for (int i = 0; i < N; i++) {
        uint64_t at;
        link_offer(&inorder, (uint64_t)i * 1000, 100, &at);
        if (at < last) reordered++;
        last = at;
    }
    CHECK(reordered == 0, "without reorder no packet overtakes another (%d did)", reordered);

    /* normal: deviation j, and a delay never below zero even with j above the latency */
    struct link normal = make(0, latency, 0, 7);
    normal.p.jitter_ns = j;
    normal.p.dist = JITTER_NORMAL;
    normal.p.reorder = 1;
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        uint64_t t = (uint64_t)i * 1000, at;
        link_offer(&normal, t, 100, &at);
        double d = (double)(int64_t)(at - t) - (double)latency;
        sum += d;
        sq += d * d;
    }
    double mean = sum / N, sd = sqrt(sq / N - mean * mean);
    CHECK(fabs(mean) < 0.02 * (double)j, "normal jitter: mean %.0f ns", mean);
    CHECK(fabs(sd - (double)j) < 0.02 * (double)j, "normal jitter: deviation %.0f ns, want %llu", sd,
          (unsigned long long)j);
    struct link wide = make(0, 1000, 0, 9);
    wide.p.jitter_ns = 1000000;
    wide.p.reorder = 1;
    int negative = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t t = 5000000 + (uint64_t)i, at;
        link_offer(&wide, t, 100, &at);
        negative += at < t;
    }
    CHECK(negative == 0, "jitter never makes a delay negative (%d did)", negative);
}

static void loss(void)
{
    enum { N = 100000 };
    const double p = 0.1, sd = sqrt(N * p * (1 - p)); /* binomial: ~95 */
    struct link l = make(0, 0, 0, 3);
    l.p.loss = p;
    int lost = 0;
    for (int i = 0; i < N; i++) {
        uint64_t at;
        lost += link_offer(&l, (uint64_t)i, 100, &at) == LINK_LOST;
    }
    CHECK(fabs(lost - N * p) < 5 * sd, "Bernoulli loss: %d of %d, want %.0f +- %.0f", lost, N,
          N * p, 5 * sd);
    CHECK(l.c.losses == (uint64_t)lost && l.c.packets == (uint64_t)(N - lost), "loss counters");

    /* the same seed, the same losses: reproducible runs */
    struct link again = make(0, 0, 0, 3);
    again.p.loss = p;
    int same = 0;
    for (int i = 0; i < N; i++) {
        uint64_t at;
        same += link_offer(&again, (uint64_t)i, 100, &at) == LINK_LOST;
    }
    CHECK(same == lost, "a fixed seed gives the same losses (%d, %d)", same, lost);

    /* bursts: mean loss p, mean burst length b */
    struct link bursty = make(0, 0, 0, 5);
    bursty.p.loss = 0.05;
    bursty.p.loss_burst = 4;
    int blost = 0, bursts = 0, prev = 0;
    for (int i = 0; i < 10 * N; i++) {
        uint64_t at;
        int x = link_offer(&bursty, (uint64_t)i, 100, &at) == LINK_LOST;
        blost += x;
        bursts += x && !prev;
        prev = x;
    }
    double rate = (double)blost / (10.0 * N), burst = (double)blost / bursts;
    CHECK(fabs(rate - 0.05) < 0.005, "bursty loss: rate %.4f, want 0.05", rate);
    CHECK(fabs(burst - 4) < 0.3, "bursty loss: mean burst %.2f packets, want 4", burst);

    struct link none = make(0, 0, 0, 5), all = make(0, 0, 0, 5);
    all.p.loss = 1;
    uint64_t at;
    int through = 0, dropped = 0;
    for (int i = 0; i < 1000; i++) {
        through += link_offer(&none, (uint64_t)i, 1, &at) == LINK_PASS;
        dropped += link_offer(&all, (uint64_t)i, 1, &at) == LINK_LOST;
    }
    CHECK(through == 1000 && dropped == 1000, "loss 0 loses nothing, loss 1 everything");
}

static void directions_independent(void)
{
    struct link ab = make(1e6, 1000, 1 << 20, 1), ba = make(1e6, 1000, 1 << 20, 2);
    uint64_t at;
    for (int i = 0; i < 100; i++) link_offer(&ab, 0, 1500, &at); /* a full queue one way */
    CHECK(link_offer(&ba, 0, 1500, &at) == LINK_PASS && at == 1500000 + 1000,
          "the other direction is idle: %llu", (unsigned long long)at);
}

static void event_heap(void)
{
    struct event_heap h;
    heap_init(&h);
    uint64_t state = 12345;
    enum { N = 5000 };
    for (int i = 0; i < N; i++) {
        struct packet *p = calloc(1, sizeof *p);
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        p->due = (state >> 33) % 1000; /* many equal due times */
        p->len = (uint32_t)i;          /* push order */
        heap_push(&h, p);
    }
    uint64_t last_due = 0;
    uint32_t last_len = 0;
    int out_of_order = 0, fifo_broken = 0, popped = 0;
    while (h.n) {
        struct packet *p = heap_pop(&h);
        if (popped && p->due < last_due) out_of_order++;
        if (popped && p->due == last_due && p->len < last_len) fifo_broken++;
        last_due = p->due;
        last_len = p->len;
        popped++;
        free(p);
    }
    CHECK(popped == N && out_of_order == 0, "the heap pops in due order (%d out of order)", out_of_order);
    CHECK(fifo_broken == 0, "equal due times leave first in, first out (%d did not)", fifo_broken);
    heap_free(&h);
}

static void settings(void)
{
    struct link_params p = {0};
    CHECK(link_set(&p, "latency_ns", "2500000") == 0 && p.latency_ns == 2500000, "latency_ns");
    CHECK(link_set(&p, "rate", "12500000") == 0 && p.rate_bytes_per_s == 12500000, "rate");
    CHECK(link_set(&p, "queue", "262144") == 0 && p.queue_bytes == 262144, "queue");
    CHECK(link_set(&p, "dist", "normal") == 0 && p.dist == JITTER_NORMAL, "dist");
    CHECK(link_set(&p, "loss", "0.01") == 0 && p.loss == 0.01, "loss");
    CHECK(link_set(&p, "loss", "1.5") != 0, "a loss above 1 is refused");
    CHECK(link_set(&p, "loss_burst", "0.5") != 0, "a burst below 1 is refused");
    CHECK(link_set(&p, "latency_ns", "-1") != 0, "a negative latency is refused");
    CHECK(link_set(&p, "rate", "fast") != 0, "a rate that is no number is refused");
    CHECK(link_set(&p, "latency_ns", "nan") != 0 && link_set(&p, "queue", "inf") != 0 &&
              link_set(&p, "loss", "nan") != 0,
          "NaN and infinity are refused");
    CHECK(link_set(&p, "dist", "pareto") != 0, "an unknown distribution is refused");
    CHECK(link_set(&p, "colour", "1") != 0, "an unknown key is refused");
}

int main(void)
{
    serialization_and_delay();
    drop_tail();
    jitter_distribution();
    loss();
    directions_independent();
    event_heap();
    settings();
    if (failures) {
        printf("%d checks failed\n", failures);
        return 1;
    }
    printf("link model and event heap: all checks passed\n");
    return 0;
}
