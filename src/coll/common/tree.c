/* The two-layer broadcast tree and its segment pipeline (P-LogP paper, section 3.2).
 *
 * MPI only, no libisthmus state: the bcast benchmark (src/bench/bcast.c) runs the same
 * code under any mpirun and under SMPI. */
#include <stdlib.h>

#include "tree.h"
#include "world.h"

/* Rank of position i in the order that starts at the root's cluster: clusters keep their
 * order by lowest rank, rotated so that the root's comes first; the root stands for its
 * cluster, the lowest rank for every other. */
struct order {
    int n;        /* clusters */
    int *coord;   /* position -> coordinator rank */
    int *members; /* ranks of all clusters, cluster after cluster, coordinator first */
    int *start;   /* position -> offset into members */
    int *count;
};

static struct order order_of(const int *cluster_of, int size, int root)
{
    struct order o = {0};
    int maxc = 0;
    for (int r = 0; r < size; r++) maxc = cluster_of[r] + 1 > maxc ? cluster_of[r] + 1 : maxc;
    o.coord = malloc((size_t)maxc * sizeof(int));
    o.start = malloc((size_t)maxc * sizeof(int));
    o.count = calloc((size_t)maxc, sizeof(int));
    o.members = malloc((size_t)size * sizeof(int));
    int *by_low = malloc((size_t)maxc * sizeof(int)); /* clusters by their lowest rank */
    int *pos_of = malloc((size_t)maxc * sizeof(int)); /* cluster -> position */
    int *fill = calloc((size_t)maxc, sizeof(int));
    for (int c = 0; c < maxc; c++) pos_of[c] = -1;
    int rootpos = 0;
    for (int r = 0; r < size; r++)
        if (pos_of[cluster_of[r]] == -1) {
            pos_of[cluster_of[r]] = o.n;
            if (cluster_of[r] == cluster_of[root]) rootpos = o.n;
            by_low[o.n++] = cluster_of[r];
        }
    for (int i = 0; i < o.n; i++) pos_of[by_low[(rootpos + i) % o.n]] = i;
    for (int r = 0; r < size; r++) o.count[pos_of[cluster_of[r]]]++;
    for (int i = 0, off = 0; i < o.n; off += o.count[i], i++) o.start[i] = off;
    o.members[0] = root;
    fill[0] = 1;
    for (int r = 0; r < size; r++) {
        int i = pos_of[cluster_of[r]];
        if (r != root) o.members[o.start[i] + fill[i]++] = r;
    }
    for (int i = 0; i < o.n; i++) o.coord[i] = o.members[o.start[i]];
    free(fill);
    free(pos_of);
    free(by_low);
    return o;
}

int ist_two_layer_tree(const int *cluster_of, int size, int root, int rank, int dw, int dl,
                       int *parent, int *children)
{
    struct order o = order_of(cluster_of, size, root);
    int ci = -1, li = -1;
    for (int i = 0; i < o.n && ci < 0; i++)
        for (int j = 0; j < o.count[i]; j++)
            if (o.members[o.start[i] + j] == rank) {
                ci = i;
                li = j;
                break;
            }
    int n = 0;
    if (dw < 1) dw = 1;
    if (dl < 1) dl = 1;
    if (li == 0) {
        *parent = ci == 0 ? -1 : o.coord[(ci - 1) / dw];
        for (int j = 1; j <= dw; j++)
            if (ci * dw + j < o.n) children[n++] = o.coord[ci * dw + j];
    } else {
        *parent = o.members[o.start[ci] + (li - 1) / dl];
    }
    for (int j = 1; j <= dl; j++)
        if (li * dl + j < o.count[ci]) children[n++] = o.members[o.start[ci] + li * dl + j];
    free(o.coord);
    free(o.start);
    free(o.count);
    free(o.members);
    return n;
}

int ist_pipeline(char *buf, long bytes, long segment, int parent, const int *children,
                 int nchildren, MPI_Comm comm, int tag)
{
    if (segment <= 0 || segment > bytes) segment = bytes > 0 ? bytes : 1;
    long segments = bytes > 0 ? (bytes + segment - 1) / segment : 0;
    MPI_Request *req = parent >= 0 ? malloc((size_t)segments * sizeof *req) : NULL;
    int rc = MPI_SUCCESS;
    /* Receives are posted before the first segment arrives. */
    for (long s = 0; parent >= 0 && s < segments && rc == MPI_SUCCESS; s++) {
        long off = s * segment, len = bytes - off < segment ? bytes - off : segment;
        rc = ist_world_irecv(buf + off, (int)len, MPI_BYTE, parent, tag, comm, &req[s]);
    }
    /* Blocking sends, as the model's s(m) = max(g_l(m), os_w(m)) describes them. */
    for (long s = 0; s < segments && rc == MPI_SUCCESS; s++) {
        long off = s * segment, len = bytes - off < segment ? bytes - off : segment;
        if (parent >= 0) rc = ist_world_wait(&req[s], MPI_STATUS_IGNORE);
        for (int c = 0; c < nchildren && rc == MPI_SUCCESS; c++)
            rc = ist_world_send(buf + off, (int)len, MPI_BYTE, children[c], tag, comm);
    }
    free(req);
    return rc;
}
