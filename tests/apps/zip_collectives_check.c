/* Every collective, blocking and nonblocking, in place and not, against the values it
 * must give (issue 45: one set of shapes, the same behaviour both ways). Run across a
 * zipper (tests/python/test_zipper.py): first on a duplicate of MPI_COMM_WORLD named
 * "isthmus:native", which src/coll leaves alone, so that src/world/zip/zip_collectives.c
 * serves every call; then on MPI_COMM_WORLD itself, where src/coll's cluster-aware
 * algorithms take the blocking calls they cover. Integers, MPI_SUM; counts 3 and 3000
 * (eager and rendezvous through the forwarder); v-forms with counts that differ by rank.
 * Prints "zip_collectives_check: N cases, M differ" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, np, cases, differ;

/* The blocking or the nonblocking form of one collective (MPI_Name or MPI_Iname). */
#define BOTH(nb, Name, name, ...)                                                       \
    do {                                                                                \
        if (nb) {                                                                       \
            MPI_Request req_;                                                           \
            MPI_I##name(__VA_ARGS__, &req_);                                            \
            MPI_Wait(&req_, MPI_STATUS_IGNORE);                                         \
        } else {                                                                        \
            MPI_##Name(__VA_ARGS__);                                                    \
        }                                                                               \
    } while (0)

static void check(const char *what, int nb, int inplace, int n, const int *got, const int *want,
                  int len)
{
    cases++;
    for (int i = 0; i < len; i++)
        if (got[i] != want[i]) {
            if (differ++ < 10)
                fprintf(stderr, "zip_collectives_check: rank %d: %s %s%s n=%d: [%d] = %d, not %d\n",
                        me, what, nb ? "nonblocking" : "blocking", inplace ? " in place" : "", n, i,
                        got[i], want[i]);
            return;
        }
}

static int *ints(int len) { return calloc((size_t)(len > 0 ? len : 1), sizeof(int)); }
static int vcount(int r, int n) { return n + r % 3; } /* the v-forms' count of rank r */

static void rooted(MPI_Comm c, int nb, int ip, int n)
{
    /* the last rank for the small count; 0 for the large one: MPICH 4.0.2's own MPI_Reduce
     * in place at a root other than 0 crashes at 3000 ints (checked natively, no isthmus) */
    int root = n < 100 ? np - 1 : 0, *buf = ints(n * np * 3), *want = ints(n * np * 3);
    /* Bcast */
    for (int i = 0; i < n; i++) buf[i] = me == root ? root * 1000 + i : -1, want[i] = root * 1000 + i;
    BOTH(nb, Bcast, bcast, buf, n, MPI_INT, root, c);
    check("Bcast", nb, 0, n, buf, want, n);
    /* Reduce: sum over ranks of (r + 1)(i + 1) */
    int *mine = ints(n * np * 3);
    for (int i = 0; i < n; i++) mine[i] = (me + 1) * (i + 1), want[i] = (i + 1) * np * (np + 1) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)n);
    const void *in = ip && me == root ? MPI_IN_PLACE : mine;
    BOTH(nb, Reduce, reduce, in, buf, n, MPI_INT, MPI_SUM, root, c);
    if (me == root) check("Reduce", nb, ip, n, buf, want, n);
    /* Gather(v) and Scatter(v): rank r's block is r * 100 + i, counts vcount(r, n) */
    int *counts = ints(np), *displs = ints(np), total = 0;
    for (int r = 0; r < np; r++) counts[r] = vcount(r, n), displs[r] = total, total += counts[r];
    for (int r = 0; r < np; r++)
        for (int i = 0; i < counts[r]; i++) want[displs[r] + i] = r * 100 + i;
    for (int i = 0; i < counts[me]; i++) mine[i] = me * 100 + i;
    memset(buf, 0, sizeof(int) * (size_t)total);
    if (me == root && ip) memcpy(buf + displs[me], mine, sizeof(int) * (size_t)counts[me]);
    in = ip && me == root ? MPI_IN_PLACE : mine;
    BOTH(nb, Gatherv, gatherv, in, counts[me], MPI_INT, buf, counts, displs, MPI_INT, root, c);
    if (me == root) check("Gatherv", nb, ip, n, buf, want, total);
    int *got = ints(total);
    void *out = ip && me == root ? MPI_IN_PLACE : (void *)got;
    BOTH(nb, Scatterv, scatterv, want, counts, displs, MPI_INT, out, counts[me], MPI_INT, root, c);
    check("Scatterv", nb, ip, n, me == root && ip ? want + displs[me] : got, want + displs[me],
          counts[me]);
    /* Gather and Scatter, n each */
    for (int r = 0; r < np; r++)
        for (int i = 0; i < n; i++) want[r * n + i] = r * 100 + i;
    for (int i = 0; i < n; i++) mine[i] = me * 100 + i;
    memset(buf, 0, sizeof(int) * (size_t)(n * np));
    if (me == root && ip) memcpy(buf + me * n, mine, sizeof(int) * (size_t)n);
    in = ip && me == root ? MPI_IN_PLACE : mine;
    BOTH(nb, Gather, gather, in, n, MPI_INT, buf, n, MPI_INT, root, c);
    if (me == root) check("Gather", nb, ip, n, buf, want, n * np);
    memset(got, 0, sizeof(int) * (size_t)n);
    out = ip && me == root ? MPI_IN_PLACE : (void *)got;
    BOTH(nb, Scatter, scatter, want, n, MPI_INT, out, n, MPI_INT, root, c);
    if (!(ip && me == root)) check("Scatter", nb, ip, n, got, want + me * n, n);
    free(buf), free(want), free(mine), free(counts), free(displs), free(got);
}

static void everyone(MPI_Comm c, int nb, int ip, int n)
{
    int *buf = ints(n * np * 3), *want = ints(n * np * 3), *mine = ints(n * np * 3);
    /* Allreduce */
    for (int i = 0; i < n; i++) mine[i] = (me + 1) * (i + 1), want[i] = (i + 1) * np * (np + 1) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)n);
    BOTH(nb, Allreduce, allreduce, ip ? MPI_IN_PLACE : mine, buf, n, MPI_INT, MPI_SUM, c);
    check("Allreduce", nb, ip, n, buf, want, n);
    /* Scan and Exscan: prefix sums of (r + 1)(i + 1) */
    for (int i = 0; i < n; i++) mine[i] = (me + 1) * (i + 1), want[i] = (i + 1) * (me + 1) * (me + 2) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)n);
    BOTH(nb, Scan, scan, ip ? MPI_IN_PLACE : mine, buf, n, MPI_INT, MPI_SUM, c);
    check("Scan", nb, ip, n, buf, want, n);
    for (int i = 0; i < n; i++) want[i] = (i + 1) * me * (me + 1) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)n);
    BOTH(nb, Exscan, exscan, ip ? MPI_IN_PLACE : mine, buf, n, MPI_INT, MPI_SUM, c);
    if (me > 0) check("Exscan", nb, ip, n, buf, want, n);
    /* Allgather(v): rank r's block r * 100 + i */
    int *counts = ints(np), *displs = ints(np), total = 0;
    for (int r = 0; r < np; r++) counts[r] = vcount(r, n), displs[r] = total, total += counts[r];
    for (int r = 0; r < np; r++)
        for (int i = 0; i < counts[r]; i++) want[displs[r] + i] = r * 100 + i;
    for (int i = 0; i < counts[me]; i++) mine[i] = me * 100 + i;
    memset(buf, 0, sizeof(int) * (size_t)total);
    if (ip) memcpy(buf + displs[me], mine, sizeof(int) * (size_t)counts[me]);
    BOTH(nb, Allgatherv, allgatherv, ip ? MPI_IN_PLACE : mine, counts[me], MPI_INT, buf, counts,
         displs, MPI_INT, c);
    check("Allgatherv", nb, ip, n, buf, want, total);
    for (int r = 0; r < np; r++)
        for (int i = 0; i < n; i++) want[r * n + i] = r * 100 + i;
    memset(buf, 0, sizeof(int) * (size_t)(n * np));
    if (ip) memcpy(buf + me * n, mine, sizeof(int) * (size_t)n);
    BOTH(nb, Allgather, allgather, ip ? MPI_IN_PLACE : mine, n, MPI_INT, buf, n, MPI_INT, c);
    check("Allgather", nb, ip, n, buf, want, n * np);
    /* Alltoall(v): my block for rank j is me * 10000 + j * 100 + i; counts vcount(me + j) */
    for (int j = 0; j < np; j++)
        for (int i = 0; i < n; i++) mine[j * n + i] = me * 10000 + j * 100 + i, want[j * n + i] = j * 10000 + me * 100 + i;
    memcpy(buf, mine, sizeof(int) * (size_t)(n * np));
    BOTH(nb, Alltoall, alltoall, ip ? MPI_IN_PLACE : mine, n, MPI_INT, buf, n, MPI_INT, c);
    check("Alltoall", nb, ip, n, buf, want, n * np);
    int *sc = ints(np), *sd = ints(np), *rc = ints(np), *rd = ints(np), st = 0, rt = 0;
    for (int j = 0; j < np; j++) {
        sc[j] = vcount(me + j, n), sd[j] = st, st += sc[j];
        rc[j] = vcount(j + me, n), rd[j] = rt, rt += rc[j];
    }
    for (int j = 0; j < np; j++)
        for (int i = 0; i < sc[j]; i++) mine[sd[j] + i] = me * 10000 + j * 100 + i;
    for (int j = 0; j < np; j++)
        for (int i = 0; i < rc[j]; i++) want[rd[j] + i] = j * 10000 + me * 100 + i;
    if (ip) { /* in place, one layout for both: the receive one, whose counts match */
        memcpy(sc, rc, sizeof(int) * (size_t)np), memcpy(sd, rd, sizeof(int) * (size_t)np);
        for (int j = 0; j < np; j++)
            for (int i = 0; i < rc[j]; i++) buf[rd[j] + i] = me * 10000 + j * 100 + i;
    }
    BOTH(nb, Alltoallv, alltoallv, ip ? MPI_IN_PLACE : mine, sc, sd, MPI_INT, buf, rc, rd, MPI_INT, c);
    check("Alltoallv", nb, ip, n, buf, want, rt);
    /* Reduce_scatter(_block): sum over ranks of (r + 1)(k + 1), block r to rank r */
    for (int k = 0; k < n * np; k++) mine[k] = (me + 1) * (k + 1);
    for (int i = 0; i < n; i++) want[i] = (me * n + i + 1) * np * (np + 1) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)(n * np));
    BOTH(nb, Reduce_scatter_block, reduce_scatter_block, ip ? MPI_IN_PLACE : mine, buf, n, MPI_INT,
         MPI_SUM, c);
    check("Reduce_scatter_block", nb, ip, n, buf, want, n);
    for (int r = 0; r < np; r++) counts[r] = vcount(r, n), displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
    for (int k = 0; k < total; k++) mine[k] = (me + 1) * (k + 1);
    for (int i = 0; i < counts[me]; i++) want[i] = (displs[me] + i + 1) * np * (np + 1) / 2;
    memcpy(buf, mine, sizeof(int) * (size_t)total);
    BOTH(nb, Reduce_scatter, reduce_scatter, ip ? MPI_IN_PLACE : mine, buf, counts, MPI_INT, MPI_SUM, c);
    check("Reduce_scatter", nb, ip, n, buf, want, counts[me]);
    /* Barrier */
    BOTH(nb, Barrier, barrier, c);
    free(buf), free(want), free(mine), free(counts), free(displs), free(sc), free(sd), free(rc), free(rd);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm native;
    MPI_Comm_dup(MPI_COMM_WORLD, &native);
    MPI_Comm_set_name(native, "isthmus:native");
    MPI_Comm comms[2] = {native, MPI_COMM_WORLD};
    for (int k = 0; k < 2; k++)
        for (int n = 3; n <= 3000; n *= 1000)
            for (int ip = 0; ip < 2; ip++)
                for (int nb = 0; nb < 2; nb++) {
                    rooted(comms[k], nb, ip, n);
                    everyone(comms[k], nb, ip, n);
                }
    int all = 0;
    MPI_Reduce(&differ, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) printf("zip_collectives_check: %d cases, %d differ\n", cases, all);
    MPI_Comm_free(&native);
    MPI_Finalize();
    return all != 0;
}
