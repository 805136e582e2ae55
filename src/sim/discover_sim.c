/* isthmus-discover-sim: discovery's method (src/world/discover.c, the same code the layer
 * runs) on a modelled platform of up to thousands of hosts, for how its cost grows beyond
 * the ranks this machine can run (adaptive/discovery-growth; docs/layer.md "Discovery").
 *
 *   isthmus-discover-sim --hosts H --clusters C [--placement block|round-robin]
 *       [--lan-rtt US] [--wan-rtt US] [--noise US] [--careful-noise US]
 *       [--bandwidth MBIT] [--message-cpu US] [--setup-rtts N] [--seed N] [--runs R]
 *
 * The platform: H hosts, one rank each, in C clusters of H / C (block: consecutive hosts,
 * round-robin: host h in cluster h mod C), every local round trip --lan-rtt and every
 * wide-area one --wan-rtt (microseconds). A measured round trip is the true one plus noise
 * that only lengthens it: each sample adds an exponential delay of mean --noise (all pairs
 * at once: the ranks' turns on shared cores, a busy host) or --careful-noise (one pair at a
 * time), and the least of the method's samples is kept, as the layer keeps it.
 *
 * The time, modelled as the layer spends it (discover_measure.c):
 *   all at once:   every pair's 1 untimed and IST_DISCOVER_SAMPLES timed round trips run
 *                  side by side, so the slowest pair's, and --setup-rtts more for the
 *                  connections the untimed one opens (default 2: TCP's handshake, the
 *                  MPI's own), plus --message-cpu per message a
 *                  host handles (8 a pair), plus the Allreduce of a double per pair:
 *                  ceil(log2 H) steps of the slowest one-way latency and the vector at
 *                  --bandwidth;
 *   one at a time: each pair's 1 + IST_DISCOVER_CAREFUL_SAMPLES round trips, the turn
 *                  handed to the next pair's first host (a one-way latency), then the
 *                  Allreduce.
 * Output: one JSON line per run: the clusters found, whether they are the platform's, the
 * pairs, rounds and careful pairs the method took, and the modelled milliseconds. Bad
 * arguments: one line naming the one that is wrong, exit code 2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover_method.h"

struct platform {
    int hosts, clusters, round_robin;
    double lan_rtt, wan_rtt, noise, careful_noise, bandwidth_bytes_per_us, message_cpu, setup_rtts;
    unsigned long long rng;
    double ms; /* modelled time so far */
};

static int cluster_of(const struct platform *s, int h)
{
    int per = (s->hosts + s->clusters - 1) / s->clusters;
    return s->round_robin ? h % s->clusters : h / per;
}

static double true_rtt(const struct platform *s, int a, int b)
{
    return cluster_of(s, a) == cluster_of(s, b) ? s->lan_rtt : s->wan_rtt;
}

/* Exponential, mean `mean`, from a 64-bit linear congruential generator (Knuth's MMIX). */
static double delay(struct platform *s, double mean)
{
    s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = ((double)(s->rng >> 11) + 0.5) / 9007199254740992.0;
    return mean > 0 ? -mean * log(u) : 0;
}

static double measured(struct platform *s, int a, int b, int samples, double mean)
{
    double least = INFINITY;
    for (int i = 0; i < samples; i++) least = fmin(least, true_rtt(s, a, b) + delay(s, mean));
    return least;
}

static double allreduce_us(const struct platform *s, int n)
{
    int steps = (int)ceil(log2(s->hosts > 1 ? s->hosts : 2));
    return steps * (s->wan_rtt / 2 + 8.0 * n / s->bandwidth_bytes_per_us);
}

static void all_at_once(void *ctx, const struct ist_host_pair *p, int n, double *rtt)
{
    struct platform *s = ctx;
    int *per_host = calloc((size_t)s->hosts, sizeof *per_host), busiest = 0;
    double slowest = 0;
    for (int i = 0; i < n; i++) {
        rtt[i] = measured(s, p[i].a, p[i].b, IST_DISCOVER_SAMPLES, s->noise);
        slowest = fmax(slowest, true_rtt(s, p[i].a, p[i].b));
        if (++per_host[p[i].a] > busiest) busiest = per_host[p[i].a];
        if (++per_host[p[i].b] > busiest) busiest = per_host[p[i].b];
    }
    free(per_host);
    s->ms += ((1 + IST_DISCOVER_SAMPLES + s->setup_rtts) * slowest + 8.0 * busiest * s->message_cpu +
              allreduce_us(s, n)) / 1e3;
}

static void one_at_a_time(void *ctx, const struct ist_host_pair *q, int k, double *rtt)
{
    struct platform *s = ctx;
    double us = 0;
    for (int i = 0; i < k; i++) {
        rtt[i] = measured(s, q[i].a, q[i].b, IST_DISCOVER_CAREFUL_SAMPLES, s->careful_noise);
        us += (1 + IST_DISCOVER_CAREFUL_SAMPLES) * true_rtt(s, q[i].a, q[i].b);
        if (i + 1 < k) us += true_rtt(s, q[i].a, q[i + 1].a) / 2; /* the turn */
    }
    s->ms += (us + allreduce_us(s, k)) / 1e3;
}

static int bad(const char *option, const char *value, const char *expected)
{
    fprintf(stderr, "isthmus-discover-sim: %s%s%s: expected %s\n", option,
            value && *value ? " " : "", value ? value : "", expected);
    return 2;
}

/* A number in [lo, hi] from text, or NAN. */
static double number(const char *text, double lo, double hi)
{
    char *end = NULL;
    double v = text ? strtod(text, &end) : NAN;
    return text && end != text && *end == '\0' && v >= lo && v <= hi ? v : NAN;
}

int main(int argc, char **argv)
{
    struct platform s = {.lan_rtt = 50, .wan_rtt = 10000, .message_cpu = 2, .setup_rtts = 2};
    double hosts = 0, clusters = 0, mbit = 1000, seed = 1, runs = 1;
    const struct {
        const char *name;
        double lo, hi, *into;
    } options[] = {
        {"--hosts", 2, 65536, &hosts},         {"--clusters", 1, 65536, &clusters},
        {"--lan-rtt", 0.1, 1e7, &s.lan_rtt},   {"--wan-rtt", 0.1, 1e8, &s.wan_rtt},
        {"--noise", 0, 1e8, &s.noise},         {"--careful-noise", 0, 1e8, &s.careful_noise},
        {"--bandwidth", 1e-3, 1e7, &mbit},     {"--message-cpu", 0, 1e6, &s.message_cpu},
        {"--setup-rtts", 0, 100, &s.setup_rtts}, {"--seed", 0, 4e9, &seed},
        {"--runs", 1, 1e5, &runs},
    };
    const size_t noptions = sizeof options / sizeof *options;
    for (int i = 1; i < argc; i++) {
        const char *text = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--placement") == 0) {
            if (!text || (strcmp(text, "block") != 0 && strcmp(text, "round-robin") != 0))
                return bad("--placement", text, "block or round-robin");
            s.round_robin = strcmp(text, "round-robin") == 0;
            i++;
            continue;
        }
        size_t o = 0;
        while (o < noptions && strcmp(argv[i], options[o].name) != 0) o++;
        if (o == noptions) return bad("option", argv[i], "one of the usage's (src/sim/discover_sim.c)");
        double v = number(text, options[o].lo, options[o].hi);
        if (isnan(v)) {
            char range[96];
            snprintf(range, sizeof range, "a number from %g to %g", options[o].lo, options[o].hi);
            return bad(options[o].name, text, range);
        }
        *options[o].into = v;
        i++;
    }
    if (hosts < 2 || clusters < 1 || clusters > hosts)
        return bad("--hosts/--clusters", "", "--hosts H (2 or more) and --clusters C, 1 <= C <= H");
    s.hosts = (int)hosts;
    s.clusters = (int)clusters;
    s.bandwidth_bytes_per_us = mbit / 8;
    int *by_name = malloc((size_t)s.hosts * sizeof *by_name);
    int *found = malloc((size_t)s.hosts * sizeof *found);
    for (int h = 0; h < s.hosts; h++) by_name[h] = h; /* names in host order */
    for (long r = 0; r < (long)runs; r++) {
        s.rng = (unsigned long long)seed * 1000003ULL + (unsigned long long)r + 1;
        s.ms = 0;
        struct ist_discover_probe probe = {all_at_once, one_at_a_time, &s};
        ist_discover_hosts(s.hosts, by_name, &probe, found);
        /* exact: the platform's partition (found numbers clusters by lowest host) */
        int exact = 1, nfound = 0;
        for (int a = 0; a < s.hosts; a++) {
            if (found[a] + 1 > nfound) nfound = found[a] + 1;
            for (int b = a + 1; b < s.hosts && exact; b++)
                exact = (found[a] == found[b]) == (cluster_of(&s, a) == cluster_of(&s, b));
        }
        const struct ist_discovery *d = ist_discovery();
        printf("{\"hosts\": %d, \"clusters\": %d, \"found\": %d, \"exact\": %s, \"pairs\": %d, "
               "\"rounds\": %d, \"careful\": %d, \"modelled_ms\": %.3f}\n",
               s.hosts, s.clusters, nfound, exact ? "true" : "false", d->pairs, d->rounds,
               d->careful, s.ms);
    }
    free(by_name);
    free(found);
    return 0;
}
