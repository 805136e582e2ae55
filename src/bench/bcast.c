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
#include "tree.h"
#include "plogp.h"
#include "world.h"

/* tree.c sends through libisthmus's world (src/world/world.h); in this program, which runs
 * with or without the layer, that is the MPI itself. */
int ist_world_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return MPI_Irecv(buf, count, type, source, tag, comm, request);
}

int ist_world_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm)
{
    return MPI_Send(buf, count, type, dest, tag, comm);
}

int ist_world_wait(MPI_Request *request, MPI_Status *status)
{
    return MPI_Wait(request, status);
}

#define TAG 77

struct bcast_plan {
    char *buf;
    long bytes, segment, segments;
    int parent;    /* -1 at the root */
    int nchildren;
    int *children; /* WAN children first, then LAN children */
};

/* Clusters from the placement (numbered by their lowest rank), their sizes, and the
 * cluster of every rank. */
struct layout {
    int nclusters, *count, *cluster_of;
};

static struct layout layout_of(int size)
{
    struct layout l = {0};
    l.count = calloc((size_t)size, sizeof(int));
    l.cluster_of = calloc((size_t)size, sizeof(int));
    char (*names)[64] = calloc((size_t)size, sizeof *names);
    for (int r = 0; r < size; r++) {
        char c[64];
        bench_cluster_of(r, c, sizeof c);
        int k = 0;
        while (k < l.nclusters && strcmp(names[k], c) != 0) k++;
        if (k == l.nclusters) snprintf(names[l.nclusters++], sizeof names[0], "%s", c);
        l.count[k]++;
        l.cluster_of[r] = k;
    }
    free(names);
    return l;
}

/* The tree and pipeline of libisthmus's broadcast (src/coll/common/tree.c), rooted at 0. */
static void pipelined(void *ctx)
{
    struct bcast_plan *p = ctx;
    ist_pipeline(p->buf, p->bytes, p->segment, p->parent, p->children, p->nchildren, MPI_COMM_WORLD, TAG);
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
    struct layout l = layout_of(size);
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
                int dw = s.degree > 0 ? s.degree : 1, dl = s.lan_degree > 0 ? s.lan_degree : 1;
                p.children = malloc((size_t)(dw + dl) * sizeof(int));
                p.nchildren = ist_two_layer_tree(l.cluster_of, size, 0, rank, dw, dl, &p.parent, p.children);
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
        }
        bench_progress("bcast", "%ld bytes", b);
    }
    if (wanted(o.collectives, "pipelined")) ist_plogp_free(&model);
    free(buf);
    free(l.count);
    free(l.cluster_of);
    MPI_Finalize();
    return 0;
}
