/* bcast: the P-LogP model's broadcasts, written on point-to-point, against the model's
 * prediction and the MPI library's own MPI_Bcast, over sizes from --min-size to
 * --max-size, timed by the window method of coll (bench_window.c).
 *
 * Algorithms (--collectives, default "pipelined,native"):
 *   pipelined  the two-layer pipelined broadcast: segments of m bytes go from the root down
 *              a d_w-ary tree of cluster coordinators (the first rank of each cluster), and
 *              every coordinator forwards each segment at once to its WAN children, then
 *              into its cluster down a d_l-ary tree; m, d_w and d_l are the optimizer's
 *              choice for the parameters of --params (src/model, as inside libisthmus);
 *   native     MPI_Bcast.
 * Clusters come from the placement isthmus run passes; the root is rank 0. Sends are
 * blocking, as in the logp benchmark that measured os(m): the model's s_w(m) =
 * max(g_l(m), os_w(m)) then describes them. Receives are posted before the first segment
 * arrives. Reported per algorithm and size: the shape, the predicted time, and the
 * measured minimum, median and maximum. */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "bench_common.h"
#include "bench_window.h"
#include "plogp.h"

#define TAG 77

struct bcast_plan {
    char *buf;
    long bytes, segment, segments;
    int parent;            /* -1 at the root */
    int nchildren;
    int *children;         /* WAN children first, then LAN children */
    MPI_Request *requests; /* one per segment */
};

/* Ranks of cluster c (first and count) from the placement. */
struct layout {
    int nclusters, *first, *count, my_cluster, my_index;
};

static struct layout layout_of(int rank, int size)
{
    struct layout l = {0};
    l.first = calloc((size_t)size, sizeof(int));
    l.count = calloc((size_t)size, sizeof(int));
    char prev[64] = "", c[64];
    for (int r = 0; r < size; r++) {
        bench_cluster_of(r, c, sizeof c);
        if (r == 0 || strcmp(c, prev) != 0) l.first[l.nclusters++] = r;
        l.count[l.nclusters - 1]++;
        if (r == rank) {
            l.my_cluster = l.nclusters - 1;
            l.my_index = r - l.first[l.nclusters - 1];
        }
        snprintf(prev, sizeof prev, "%s", c);
    }
    return l;
}

/* This rank's parent and children in the two-layer tree of degrees dw and dl. */
static void plan_tree(struct bcast_plan *p, const struct layout *l, int dw, int dl)
{
    int ci = l->my_cluster, li = l->my_index, base = l->first[ci];
    p->children = malloc((size_t)(dw + dl + 2) * sizeof(int));
    p->nchildren = 0;
    if (li == 0) {
        p->parent = ci == 0 ? -1 : l->first[(ci - 1) / dw];
        for (int j = 1; j <= dw; j++)
            if (ci * dw + j < l->nclusters) p->children[p->nchildren++] = l->first[ci * dw + j];
    } else {
        p->parent = base + (li - 1) / dl;
    }
    for (int j = 1; j <= dl; j++)
        if (li * dl + j < l->count[ci]) p->children[p->nchildren++] = base + li * dl + j;
}

static void pipelined(void *ctx)
{
    struct bcast_plan *p = ctx;
    if (p->parent >= 0)
        for (long s = 0; s < p->segments; s++) {
            long off = s * p->segment, len = p->bytes - off < p->segment ? p->bytes - off : p->segment;
            MPI_Irecv(p->buf + off, (int)len, MPI_BYTE, p->parent, TAG, MPI_COMM_WORLD, &p->requests[s]);
        }
    for (long s = 0; s < p->segments; s++) {
        long off = s * p->segment, len = p->bytes - off < p->segment ? p->bytes - off : p->segment;
        if (p->parent >= 0) MPI_Wait(&p->requests[s], MPI_STATUS_IGNORE);
        for (int c = 0; c < p->nchildren; c++)
            MPI_Send(p->buf + off, (int)len, MPI_BYTE, p->children[c], TAG, MPI_COMM_WORLD);
    }
}

static void native(void *ctx)
{
    struct bcast_plan *p = ctx;
    MPI_Bcast(p->buf, (int)p->bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static int wanted(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *q = strstr(list, name); q; q = strstr(q + 1, name))
        if ((q == list || q[-1] == ',') && (q[n] == '\0' || q[n] == ',')) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct bench_options o = {.min_size = 1024, .max_size = 4L << 20, .seconds_per_size = 1,
                              .iterations = 10, .warmup = 1, .peer = 1,
                              .collectives = "pipelined,native"};
    bench_parse(argc, argv, "bcast", &o);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct ist_plogp model;
    char err[512] = "";
    int bad = wanted(o.collectives, "pipelined") &&
              (!o.params || ist_plogp_read(o.params, &model, err, sizeof err) != 0);
    if (bad || (!wanted(o.collectives, "pipelined") && !wanted(o.collectives, "native"))) {
        if (rank == 0)
            fprintf(stderr, "bcast: %s\n",
                    bad ? (*err ? err : "the pipelined broadcast needs --params FILE (isthmus model fit)")
                        : "--collectives: expected pipelined, native or both");
        MPI_Finalize();
        return 2;
    }
    struct layout l = layout_of(rank, size);
    int pl = 0;
    for (int c = 0; c < l.nclusters; c++) pl = l.count[c] > pl ? l.count[c] : pl;
    if (wanted(o.collectives, "pipelined") &&
        ((l.nclusters > 1 && !model.wan.present) || (pl > 1 && !model.lan.present))) {
        if (rank == 0)
            fprintf(stderr, "bcast: %s has no '%s' link class, which this placement needs\n",
                    o.params, l.nclusters > 1 && !model.wan.present ? "wan" : "lan");
        MPI_Finalize();
        return 2;
    }
    bench_header("bcast", argc, argv, &o);
    prctl(PR_SET_TIMERSLACK, 1000UL);
    bench_sync_clocks();
    char *buf = calloc((size_t)o.max_size, 1);
    for (long b = o.min_size; b > 0 && b <= o.max_size; b = bench_next_size(&o, b)) {
        for (int a = 0; a < 2; a++) {
            const char *name = a == 0 ? "pipelined" : "native";
            if (!wanted(o.collectives, name)) continue;
            struct bcast_plan p = {.buf = buf, .bytes = b, .segment = b, .segments = 1, .parent = -1};
            struct ist_bcast_shape s = {0};
            if (a == 0) {
                if (l.nclusters > 1) {
                    s = ist_bcast_best_pipelined(&model, l.nclusters, pl, b);
                } else { /* one cluster: the single-layer tree is the LAN tree */
                    s = ist_bcast_best_single(&model, size, b);
                    s.lan_degree = s.degree;
                    s.degree = 0;
                }
                p.segment = s.segment;
                p.segments = s.segments;
                plan_tree(&p, &l, s.degree > 0 ? s.degree : 1, s.lan_degree > 0 ? s.lan_degree : 1);
                p.requests = malloc((size_t)p.segments * sizeof(MPI_Request));
            }
            struct window_result w = bench_window_time(a == 0 ? pipelined : native, &p, o.iterations, o.warmup);
            if (rank == 0) {
                printf("{\"record\": \"bcast\", \"algorithm\": \"%s\", \"bytes\": %ld, \"clusters\": %d, "
                       "\"segment\": %ld, \"segments\": %ld, \"wan_degree\": %d, \"lan_degree\": %d, "
                       "\"predicted_us\": %.3f, \"iterations\": %d, \"counted\": %d, \"latency_min_us\": %.3f, "
                       "\"latency_median_us\": %.3f, \"latency_max_us\": %.3f}\n",
                       name, b, l.nclusters, p.segment, p.segments, s.degree, s.lan_degree,
                       a == 0 ? s.time : -1.0, w.iterations, w.counted, w.min * 1e6, w.median * 1e6,
                       w.max * 1e6);
                fflush(stdout);
            }
            free(p.children);
            free(p.requests);
        }
        bench_progress("bcast", "%ld bytes", b);
    }
    if (wanted(o.collectives, "pipelined")) ist_plogp_free(&model);
    free(buf);
    free(l.first);
    free(l.count);
    MPI_Finalize();
    return 0;
}
