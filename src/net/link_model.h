/* One direction of an emulated link: loss, drop-tail queue, serialization at a rate shared
 * by every flow on the link, then propagation delay with optional jitter.
 *
 * A packet that reaches the link's input at time t (ns, CLOCK_MONOTONIC):
 *   1. is lost with the loss model's probability (Bernoulli, or Gilbert-Elliott bursts);
 *   2. is dropped if the bytes still waiting to be serialized plus its own exceed the
 *      queue (the backlog is (busy_until - t) x rate: no event per departure is needed);
 *   3. departs when the link is free and its bytes are serialized: start = max(t, busy),
 *      depart = start + len / rate;
 *   4. arrives at the link's far end at depart + latency + jitter. Jitter is uniform in
 *      [-j, +j] or normal with deviation j, never below zero delay. By default a link
 *      keeps packet order (an arrival never precedes the previous one, as on a wire);
 *      with reorder set, jitter may reorder packets as netem does.
 * Without a rate the link has no queue and step 3 is skipped. A cut-through link hands a
 * packet on when its serialization starts rather than when it ends (a host's NIC feeding
 * its wire: it limits the rate the host sends at without adding a packet's time to the
 * next link's own). */
#ifndef ISTHMUS_LINK_MODEL_H
#define ISTHMUS_LINK_MODEL_H

#include <stdint.h>

enum jitter_dist { JITTER_UNIFORM, JITTER_NORMAL };

struct link_params {
    uint64_t latency_ns;
    double rate_bytes_per_s; /* 0: no rate limit */
    uint64_t jitter_ns;
    enum jitter_dist dist;
    int reorder;
    int cut_through;
    uint64_t queue_bytes;
    double loss;       /* mean loss probability */
    double loss_burst; /* mean burst length; 1 = independent (Bernoulli) */
};

struct link_counters {
    uint64_t packets, bytes;      /* delivered past this link */
    uint64_t queue_drops, losses; /* dropped by the queue, lost by the loss model */
    uint64_t max_backlog_bytes;
};

struct link {
    char name[64];
    struct link_params p;
    struct link_counters c;
    uint64_t busy_until_ns;
    uint64_t last_arrival_ns;
    int loss_bad_state; /* Gilbert-Elliott state */
    uint64_t rng;       /* xorshift state, seeded per link for reproducible runs */
};

/* Outcome of offering a packet to a link. */
enum link_verdict { LINK_PASS, LINK_QUEUE_DROP, LINK_LOST };

/* Offer a packet of len bytes arriving at time t; on LINK_PASS *arrival is when it
 * reaches the far end. */
enum link_verdict link_offer(struct link *l, uint64_t t, uint32_t len, uint64_t *arrival);

/* Bytes waiting to be serialized at time t. */
uint64_t link_backlog(const struct link *l, uint64_t t);

void link_init(struct link *l, const char *name, const struct link_params *p, uint64_t seed);

/* Set one parameter by name ("latency_ns", "rate", "jitter_ns", "dist", "reorder",
 * "queue", "loss", "loss_burst"); returns 0, or -1 for an unknown key or bad value. */
int link_set(struct link_params *p, const char *key, const char *value);

#endif
