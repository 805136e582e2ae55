/* The P-LogP broadcast model and the paper's optimizer (docs/model.md): the C twin of
 * python/isthmus/model/bcast.py. Keep both alike operation for operation: a test compares their
 * choices and predicted times exactly. */
#include <math.h>

#include "plogp.h"

/* The functions one layer's tree uses: in the WAN layer s(m) = max(g_l(m), os_w(m)). */
struct layer {
    const struct ist_plogp_class *net, *lan;
    int wan;
};

static double g_of(const struct layer *l, double m) { return ist_plogp_at(l->net, l->net->g, m); }
static double or_of(const struct layer *l, double m) { return ist_plogp_at(l->net, l->net->orecv, m); }
static double r_of(const struct layer *l, double m) { return l->net->L + g_of(l, m); }

static double s_of(const struct layer *l, double m)
{
    if (!l->wan) return g_of(l, m);
    double gl = ist_plogp_at(l->lan, l->lan->g, m), os = ist_plogp_at(l->net, l->net->os, m);
    return gl >= os ? gl : os;
}

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

static int tree_height(int p, int d)
{
    int h = 0;
    long long reach = 1, level = 1;
    while (reach < p) {
        level *= d;
        reach += level;
        h++;
    }
    return h;
}

/* Degrees from start (clamped to [1, p-1]) up to stop, only where the height drops:
 * next_degree returns the one after d, or 0 when there is none. */
static int first_of(int p, double start)
{
    if (p <= 1) return 0;
    if (start > p - 1) return p - 1;
    return start < 1 ? 1 : (int)start;
}

static int next_degree(int p, int d, double stop)
{
    if (p <= 1) return 0;
    int top = stop < p - 1 ? (int)stop : p - 1, h = tree_height(p, d);
    for (int e = d + 1; e <= top; e++)
        if (tree_height(p, e) < h) return e;
    return 0;
}

static double first_degree(const struct layer *l, double m)
{
    double s = s_of(l, m);
    return s > 0 ? ceil(g_of(l, m) / s) : 1;
}

static struct ist_bcast_shape single_for(const struct layer *l, int p, long m, long big_m)
{
    struct ist_bcast_shape best = {0};
    int have = 0;
    double dm = (double)m;
    for (int d = first_of(p, first_degree(l, dm)); p > 1 && d > 0; d = next_degree(p, d, p - 1)) {
        int h = tree_height(p, d);
        long k = ceil_div(big_m, m);
        double gap = g_of(l, dm), work = (h >= 2 ? or_of(l, dm) : 0.0) + d * s_of(l, dm);
        double gamma = gap >= work ? gap : work;
        double lam = h * ((d - 1) * s_of(l, dm) + r_of(l, dm));
        double t = (double)(k - 1) * gamma + lam;
        if (!have || t < best.time) {
            best = (struct ist_bcast_shape){t, m, k, d, h, 0, 0, gamma, gap >= work};
            have = 1;
        }
    }
    if (!have) best = (struct ist_bcast_shape){0, m, ceil_div(big_m, m), 0, 0, 0, 0, 0, 1};
    return best;
}

static struct ist_bcast_shape pipelined_for(const struct layer *w, const struct layer *ln, int pw,
                                            int pl, long m, long big_m)
{
    struct ist_bcast_shape best = {0};
    int have = 0;
    double dm = (double)m;
    for (int dw = first_of(pw, first_degree(w, dm)); dw > 0; dw = next_degree(pw, dw, pw - 1)) {
        double a = g_of(w, dm) - or_of(w, dm) - dw * s_of(w, dm), b = s_of(ln, dm);
        double spare = a >= b ? a : b, sl = s_of(ln, dm);
        double top = sl > 0 ? floor(spare / sl) : pl - 1;
        if (top < 1) top = 1;
        for (int dl = first_of(pl, 1); ; dl = next_degree(pl, dl, top)) {
            int hw = tree_height(pw, dw), hl = tree_height(pl, dl);
            long k = ceil_div(big_m, m);
            double gap = g_of(w, dm);
            double work = or_of(w, dm) + dw * s_of(w, dm) + (pl > 1 ? dl * s_of(ln, dm) : 0.0);
            double gamma = gap >= work ? gap : work;
            double lam_w = hw * ((dw - 1) * s_of(w, dm) + r_of(w, dm));
            double lam_l = pl > 1 ? hl * ((dl - 1) * s_of(ln, dm) + r_of(ln, dm)) : 0.0;
            double t = (double)(k - 1) * gamma + lam_w + lam_l;
            if (!have || t < best.time) {
                best = (struct ist_bcast_shape){t, m, k, dw, hw, dl, hl, gamma, gap >= work};
                have = 1;
            }
            if (pl <= 1 || next_degree(pl, dl, top) == 0) break;
        }
    }
    return best;
}

/* What optimize() minimizes: a shape for each segment size. */
struct cost {
    const struct layer *a, *b;
    int p, q;
    long big_m;
    long cap; /* the largest segment allowed (0: any) */
};

static struct ist_bcast_shape cost_of(const struct cost *c, long m)
{
    if (c->cap > 0 && m > c->cap) /* not a candidate: never the best */
        return (struct ist_bcast_shape){.time = HUGE_VAL, .segment = m, .segments = 1};
    return c->b ? pipelined_for(c->a, c->b, c->p, c->q, m, c->big_m) : single_for(c->a, c->p, m, c->big_m);
}

/* The paper's heuristic: m = ceil(M/2^i) for every i, then hill climbing on k. */
static struct ist_bcast_shape optimize(const struct cost *c)
{
    long big_m = c->big_m;
    if (big_m <= 1) return cost_of(c, 1);
    struct ist_bcast_shape best = cost_of(c, big_m), cand;
    for (int i = 1;; i++) {
        long m = ceil_div(big_m, 1L << i);
        cand = cost_of(c, m);
        if (cand.time < best.time) best = cand;
        if (m == 1) break;
    }
    static const int steps[] = {-5, -1, 1, 5};
    long k = ceil_div(big_m, best.segment);
    for (;;) {
        struct ist_bcast_shape step_best = best;
        long step_k = k;
        int improved = 0;
        for (int j = 0; j < 4; j++) {
            long k2 = k + steps[j];
            if (k2 < 1 || k2 > big_m) continue;
            cand = cost_of(c, ceil_div(big_m, k2));
            if (cand.time < step_best.time) {
                step_best = cand;
                step_k = k2;
                improved = 1;
            }
        }
        if (!improved) return best;
        best = step_best;
        k = step_k;
    }
}

struct ist_bcast_shape ist_bcast_best_single(const struct ist_plogp *p, int procs, long big_m)
{
    struct layer lan = {&p->lan, &p->lan, 0};
    struct cost c = {&lan, NULL, procs, 0, big_m, 0};
    return optimize(&c);
}

struct ist_bcast_shape ist_bcast_best_pipelined(const struct ist_plogp *p, int pw, int pl, long big_m)
{
    return ist_bcast_best_pipelined_under(p, pw, pl, big_m, 0);
}

struct ist_bcast_shape ist_bcast_best_pipelined_under(const struct ist_plogp *p, int pw, int pl,
                                                      long big_m, long max_segment)
{
    struct layer wan = {&p->wan, &p->lan, 1}, lan = {&p->lan, &p->lan, 0};
    struct cost c = {&wan, &lan, pw, pl, big_m, big_m > max_segment ? max_segment : 0};
    return optimize(&c);
}
