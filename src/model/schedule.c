/* A schedule's predicted time (schedule.h). */
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ist_sched_init(struct ist_sched *s) { memset(s, 0, sizeof *s); }

void ist_sched_free(struct ist_sched *s)
{
    free(s->m);
    ist_sched_init(s);
}

void ist_sched_msg(struct ist_sched *s, int round, int src, int dst, long bytes, int flags)
{
    if (src == dst) return;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        struct ist_msg *m = realloc(s->m, (size_t)cap * sizeof *m);
        if (!m) return; /* out of memory: the estimate is low, never a crash */
        s->m = m;
        s->cap = cap;
    }
    s->m[s->n++] = (struct ist_msg){round, src, dst, bytes, flags};
    if (round + 1 > s->rounds) s->rounds = round + 1;
}

/* Per-byte time of a class at large sizes: the slope of g(m) past 512 KiB. */
static double per_byte(const struct ist_plogp_class *c, const double *ys)
{
    const double a = 512.0 * 1024, b = 1024.0 * 1024;
    return (ist_plogp_at(c, ys, b) - ist_plogp_at(c, ys, a)) / (b - a);
}

struct costs {
    const struct ist_plogp *p;
    const struct ist_layout *l;
    double wan_byte, lan_byte, copy_byte;
    long rendezvous;
    int rendezvous_trips;
    double wake;
    double *have;      /* rank -> when everything sent to it in earlier rounds is in */
    double *next_have; /* the same, with this round's messages */
    double *send_free; /* rank -> when it may start its next send (one gap after the last) */
    double *port_out, *port_in; /* host -> when its port is free */
    double *link;      /* cluster pair -> when the wide-area link is free */
};

static double max2(double a, double b) { return a > b ? a : b; }

/* One message: when it is in at its receiver (and reduced, for reductions). */
static double deliver(struct costs *c, const struct ist_msg *x)
{
    const struct ist_layout *l = c->l;
    double b = (double)x->bytes;
    int a = l->cluster[x->src], z = l->cluster[x->dst], hs = l->host[x->src], hd = l->host[x->dst];
    double start = max2(c->have[x->src], c->send_free[x->src]), in;
    if (hs == hd) {
        double copy = ist_plogp_at(&c->p->lan, c->p->lan.os, b);
        c->send_free[x->src] = start + copy;
        in = start + copy;
    } else {
        const struct ist_plogp_class *k = a == z ? &c->p->lan : &c->p->wan;
        double gap = ist_plogp_at(k, k->g, b), wire = b * c->lan_byte;
        /* the MPI's rendezvous: the data leave once the receiver has answered, while the
         * sender goes on with its next message (its sends are nonblocking) */
        int rndv = c->rendezvous > 0 && x->bytes >= c->rendezvous && !(x->flags & IST_MSG_EAGER);
        double leave = rndv ? start + 2.0 * c->rendezvous_trips * k->L : start;
        /* the bytes leave through the host's port: the sender may start its next message
         * one LAN gap later, also to another cluster (its links are not its own port) */
        leave = max2(leave, c->port_out[hs]);
        c->port_out[hs] = leave + wire;
        c->send_free[x->src] = (rndv ? start : leave) + ist_plogp_at(&c->p->lan, c->p->lan.g, b);
        if (a != z) { /* then queue for the wide-area link of this pair of clusters */
            double *link = &c->link[a * l->nclusters + z];
            leave = max2(leave, *link);
            *link = leave + b * c->wan_byte;
        }
        in = leave + k->L + gap;
        /* and come in through the receiving host's port */
        in = max2(in, c->port_in[hd] + wire);
        c->port_in[hd] = in;
        in += c->wake; /* a sleeping receiver notices it at its next test */
    }
    return in + (x->flags & IST_MSG_REDUCE ? b * c->copy_byte : 0);
}

double ist_sched_time(const struct ist_sched *s, const struct ist_plogp *p,
                      const struct ist_layout *l)
{
    if (s->n == 0) return 0.0;
    struct costs c = {p, l, per_byte(&p->wan, p->wan.g), per_byte(&p->lan, p->lan.g),
                      per_byte(&p->lan, p->lan.os), s->rendezvous, s->rendezvous_trips, s->wake_us, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t size = (size_t)l->size, nc = (size_t)l->nclusters;
    c.have = calloc(size, sizeof(double));
    c.next_have = calloc(size, sizeof(double));
    c.send_free = calloc(size, sizeof(double));
    c.port_out = calloc(size, sizeof(double));
    c.port_in = calloc(size, sizeof(double));
    c.link = calloc(nc * nc, sizeof(double));
    struct ist_msg *sorted = malloc((size_t)s->n * sizeof *sorted);
    int *start = calloc((size_t)s->rounds + 1, sizeof(int));
    /* Out of memory: an unknown cost, so that the selector never picks it. */
    double end = HUGE_VAL;
    if (c.have && c.next_have && c.send_free && c.port_out && c.port_in && c.link && sorted &&
        start) {
        /* Rounds in order, a round's messages in the order they were added (each sender's
         * order): a counting sort by round keeps it. */
        for (int i = 0; i < s->n; i++) start[s->m[i].round + 1]++;
        for (int r = 0; r < s->rounds; r++) start[r + 1] += start[r];
        for (int i = 0; i < s->n; i++) sorted[start[s->m[i].round]++] = s->m[i];
        end = 0;
        for (int i = 0; i < s->n;) {
            int j = i;
            for (; j < s->n && sorted[j].round == sorted[i].round; j++) {
                double in = deliver(&c, &sorted[j]);
                c.next_have[sorted[j].dst] = max2(c.next_have[sorted[j].dst], in);
                end = max2(end, in);
            }
            memcpy(c.have, c.next_have, size * sizeof(double));
            i = j;
        }
    }
    free(start);
    free(sorted);
    free(c.have);
    free(c.next_have);
    free(c.send_free);
    free(c.port_out);
    free(c.port_in);
    free(c.link);
    return end;
}
