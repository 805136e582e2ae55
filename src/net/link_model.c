/* The link model (link_model.h). */
#include "link_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_random(uint64_t *s)
{
    /* xorshift64*: fast, and good enough for loss and jitter draws */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double uniform01(uint64_t *s)
{
    return (double)(next_random(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double normal01(uint64_t *s)
{
    double u1 = uniform01(s), u2 = uniform01(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* splitmix64: turns small seeds (1, 2, ...) into well-mixed xorshift states; xorshift's
 * first outputs from a small state are far from uniform. */
static uint64_t mix_seed(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

void link_init(struct link *l, const char *name, const struct link_params *p, uint64_t seed)
{
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->p = *p;
    l->rng = mix_seed(seed);
}

uint64_t link_backlog(const struct link *l, uint64_t t)
{
    if (l->p.rate_bytes_per_s <= 0 || l->busy_until_ns <= t) return 0;
    return (uint64_t)((double)(l->busy_until_ns - t) * l->p.rate_bytes_per_s * 1e-9);
}

/* Gilbert-Elliott with a lossless good state and an all-losing bad state: the bad state
 * lasts loss_burst packets on average, and the chain spends a fraction 'loss' of the
 * packets there, so the mean loss rate is 'loss'. loss_burst = 1 is Bernoulli. */
static int lose(struct link *l)
{
    double p = l->p.loss, b = l->p.loss_burst;
    if (p <= 0) return 0;
    if (b <= 1.0) return uniform01(&l->rng) < p;
    if (p >= 1) return 1;
    double leave_bad = 1.0 / b;
    double enter_bad = p * leave_bad / (1.0 - p);
    if (l->loss_bad_state) {
        if (uniform01(&l->rng) < leave_bad) l->loss_bad_state = 0;
    } else if (uniform01(&l->rng) < enter_bad) {
        l->loss_bad_state = 1;
    }
    return l->loss_bad_state;
}

static int64_t jitter(struct link *l)
{
    if (!l->p.jitter_ns) return 0;
    double j = (double)l->p.jitter_ns;
    double d = l->p.dist == JITTER_NORMAL ? normal01(&l->rng) * j : (2.0 * uniform01(&l->rng) - 1.0) * j;
    return (int64_t)d;
}

enum link_verdict link_offer(struct link *l, uint64_t t, uint32_t len, uint64_t *arrival)
{
    if (lose(l)) {
        l->c.losses++;
        return LINK_LOST;
    }
    uint64_t depart = t, handed_on = t;
    if (l->p.rate_bytes_per_s > 0) {
        uint64_t backlog = link_backlog(l, t);
        if (backlog + len > l->p.queue_bytes) {
            l->c.queue_drops++;
            return LINK_QUEUE_DROP;
        }
        if (backlog + len > l->c.max_backlog_bytes) l->c.max_backlog_bytes = backlog + len;
        uint64_t start = l->busy_until_ns > t ? l->busy_until_ns : t;
        depart = start + (uint64_t)((double)len * 1e9 / l->p.rate_bytes_per_s);
        l->busy_until_ns = depart;
        handed_on = l->p.cut_through ? start : depart;
    }
    int64_t delay = (int64_t)l->p.latency_ns + jitter(l);
    uint64_t at = handed_on + (uint64_t)(delay > 0 ? delay : 0);
    if (!l->p.reorder && at < l->last_arrival_ns) at = l->last_arrival_ns;
    l->last_arrival_ns = at;
    l->c.packets++;
    l->c.bytes += len;
    *arrival = at;
    return LINK_PASS;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0 || v >= 1.8e19) return -1;
    *out = (uint64_t)v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_flag(const char *s, int *out)
{
    double v;
    if (parse_double(s, 0, 1, &v) != 0) return -1;
    *out = v != 0;
    return 0;
}

int link_set(struct link_params *p, const char *key, const char *value)
{
    if (strcmp(key, "latency_ns") == 0) return parse_u64(value, &p->latency_ns);
    if (strcmp(key, "jitter_ns") == 0) return parse_u64(value, &p->jitter_ns);
    if (strcmp(key, "queue") == 0) return parse_u64(value, &p->queue_bytes);
    if (strcmp(key, "rate") == 0) return parse_double(value, 0, 1e15, &p->rate_bytes_per_s);
    if (strcmp(key, "loss") == 0) return parse_double(value, 0, 1, &p->loss);
    if (strcmp(key, "loss_burst") == 0) return parse_double(value, 1, 1e9, &p->loss_burst);
    if (strcmp(key, "reorder") == 0) return parse_flag(value, &p->reorder);
    if (strcmp(key, "cut_through") == 0) return parse_flag(value, &p->cut_through);
    if (strcmp(key, "dist") == 0) {
        if (strcmp(value, "uniform") == 0) p->dist = JITTER_UNIFORM;
        else if (strcmp(value, "normal") == 0) p->dist = JITTER_NORMAL;
        else return -1;
        return 0;
    }
    return -1;
}
