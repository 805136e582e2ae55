/* Collectives on communicators that span sites, blocking and nonblocking: one set of
 * correct, simple shapes.
 *
 * Chosen for every collective on a spanning communicator that src/coll's cluster-aware
 * algorithms decline (the generated wrapper offers them the call first). Each call becomes
 * a schedule: rounds of sends, receives and local steps (a reduction, a copy) on the
 * communicator's collective twin; a round starts when the one before has completed. A
 * nonblocking call gives the application a request and the engine moves the schedule in
 * every progress (it calls ist_zip_schedules_progress, registered by zip_world.c), so the
 * application may compute, send and receive meanwhile, as MPI allows; a blocking call
 * builds the same schedule and waits for it (MPICH's blocking-as-nonblocking pattern), so
 * both forms take the same arguments the same way, in place too. Calls are matched by a
 * sequence number per communicator in the tag (every rank starts its collectives in the
 * same order), so any number may be under way at once.
 *
 * Costs, P ranks, one forwarder hop between sites, plus one progress call per round:
 * Barrier 2(P-1) empty messages through rank 0; Bcast a binomial tree, ceil(log2 P)
 * rounds; Reduce P-1 messages into the root, which applies the operation in rank order
 * (right to left, so non-commutative operations are right); Allreduce a Reduce to 0 and a
 * Bcast; Gather(v), Scatter(v) P-1 messages at the root; Allgather(v) a Gatherv and a Bcast
 * of the whole buffer; Alltoall(v,w) P(P-1) messages, each rank starting at its right
 * neighbour; Scan and Exscan a chain of P-1 steps; Reduce_scatter a Reduce and a Scatterv. */
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "zip.h"
#include "world_calls.h"
#include "zip_engine.h"
#include "zip_schedule.h"

/* ---- the shapes ------------------------------------------------------------------------ */

static void barrier(struct zsched *s)
{
    int size = s->k->size, me = s->k->rank;
    if (me == 0) {
        for (int r = 1; r < size; r++) zs_recv(s, NULL, 0, MPI_BYTE, r);
        zs_next_round(s);
        for (int r = 1; r < size; r++) zs_send(s, NULL, 0, MPI_BYTE, r);
    } else {
        zs_send(s, NULL, 0, MPI_BYTE, 0);
        zs_recv(s, NULL, 0, MPI_BYTE, 0);
    }
}

static void bcast(struct zsched *s, void *buf, int count, MPI_Datatype type, int root)
{
    int size = s->k->size, me = (s->k->rank - root + size) % size, mask = 1;
    while (mask < size && !(me & mask)) mask <<= 1;
    if (me != 0) zs_recv(s, buf, count, type, ((me - mask) + root) % size);
    zs_next_round(s);
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (me + mask < size) zs_send(s, buf, count, type, (me + mask + root) % size);
}

/* acc = part(P-1); acc = part(i) op acc for i = P-2 .. 0; then into recvbuf. */
static void fold(struct zsched *s)
{
    int last = s->k->size - 1;
    ist_copy_typed(s->parts[last], s->acc, s->count, s->type);
    for (int r = last - 1; r >= 0; r--) PMPI_Reduce_local(s->parts[r], s->acc, s->count, s->type, s->op);
    ist_copy_typed(s->acc, s->recvbuf, s->count, s->type);
}

static void reduce(struct zsched *s, const void *mine, void *recvbuf, int count, MPI_Datatype type,
                   MPI_Op op, int root)
{
    if (s->k->rank != root) {
        zs_send(s, mine, count, type, root);
        return;
    }
    s->count = count, s->type = type, s->op = op, s->recvbuf = recvbuf;
    s->parts = malloc(sizeof *s->parts * (size_t)s->k->size);
    for (int r = 0; r < s->k->size; r++) {
        if (r == root) {
            /* in place, recvbuf is overwritten by the fold: keep a copy of this part */
            s->parts[r] = zs_tmp(s, count, type);
            ist_copy_typed(mine, s->parts[r], count, type);
        } else {
            s->parts[r] = zs_tmp(s, count, type);
            zs_recv(s, s->parts[r], count, type, r);
        }
    }
    s->acc = zs_tmp(s, count, type);
    zs_next_round(s);
    zs_local(s, fold);
}

static void gatherv(struct zsched *s, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    int root)
{
    if (s->k->rank != root) {
        zs_send(s, sendbuf, sendcount, sendtype, root);
        return;
    }
    MPI_Aint ext = ist_extent(recvtype);
    for (int r = 0; r < s->k->size; r++)
        if (r != root) zs_recv(s, (char *)recvbuf + displs[r] * ext, recvcounts[r], recvtype, r);
    if (sendbuf != MPI_IN_PLACE)
        zs_copy(s, sendbuf, sendcount, sendtype, (char *)recvbuf + displs[root] * ext, recvcounts[root],
             recvtype);
}

static void scatterv(struct zsched *s, const void *sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root)
{
    if (s->k->rank != root) {
        zs_recv(s, recvbuf, recvcount, recvtype, root);
        return;
    }
    MPI_Aint ext = ist_extent(sendtype);
    for (int r = 0; r < s->k->size; r++)
        if (r != root) zs_send(s, (const char *)sendbuf + displs[r] * ext, sendcounts[r], sendtype, r);
    if (recvbuf != MPI_IN_PLACE)
        zs_copy(s, (const char *)sendbuf + displs[root] * ext, sendcounts[root], sendtype, recvbuf,
             recvcount, recvtype);
}

static int *uniform(struct zsched *s, int count, int stride)
{
    int *a = zs_own(s, malloc(sizeof *a * (size_t)s->k->size));
    for (int i = 0; i < s->k->size; i++) a[i] = stride ? i * count : count;
    return a;
}

/* Allgatherv: gather at 0, then the whole buffer down the tree as one indexed type. */
static void allgatherv(struct zsched *s, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype)
{
    if (sendbuf == MPI_IN_PLACE && s->k->rank != 0) {
        sendbuf = (const char *)recvbuf + displs[s->k->rank] * ist_extent(recvtype);
        sendcount = recvcounts[s->k->rank];
        sendtype = recvtype;
    }
    gatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, 0);
    zs_next_round(s);
    PMPI_Type_indexed(s->k->size, recvcounts, displs, recvtype, &s->derived);
    PMPI_Type_commit(&s->derived);
    bcast(s, recvbuf, 1, s->derived, 0);
}

static void alltoallw(struct zsched *s, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[])
{
    int me = s->k->rank, n = s->k->size;
    for (int i = 1; i < n; i++) { /* from the left neighbour on, to the right one on */
        int from = (me - i + n) % n, to = (me + i) % n;
        zs_recv(s, (char *)recvbuf + rdispls[from], recvcounts[from], recvtypes[from], from);
        zs_send(s, (const char *)sendbuf + sdispls[to], sendcounts[to], sendtypes[to], to);
    }
    zs_copy(s, (const char *)sendbuf + sdispls[me], sendcounts[me], sendtypes[me],
         (char *)recvbuf + rdispls[me], recvcounts[me], recvtypes[me]);
}

/* Alltoall(v) as Alltoallw: byte displacements, one type. */
static void alltoallv(struct zsched *s, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                      MPI_Datatype recvtype)
{
    int n = s->k->size;
    if (sendbuf == MPI_IN_PLACE) { /* send from a copy of what recvbuf holds */
        MPI_Aint lb, ext, tlb, text, span = 0;
        PMPI_Type_get_extent(recvtype, &lb, &ext);
        PMPI_Type_get_true_extent(recvtype, &tlb, &text);
        for (int r = 0; r < n; r++)
            if (recvcounts[r] > 0 && (rdispls[r] + recvcounts[r] - 1) * ext + tlb + text > span)
                span = (rdispls[r] + recvcounts[r] - 1) * ext + tlb + text;
        char *copy = zs_own(s, malloc(span ? (size_t)span : 1));
        memcpy(copy, recvbuf, (size_t)span);
        sendbuf = copy, sendcounts = recvcounts, sdispls = rdispls, sendtype = recvtype;
    }
    int *sd = zs_own(s, malloc(sizeof *sd * (size_t)n)), *rd = zs_own(s, malloc(sizeof *rd * (size_t)n));
    MPI_Datatype *st = zs_own(s, malloc(sizeof *st * (size_t)n)), *rt = zs_own(s, malloc(sizeof *rt * (size_t)n));
    MPI_Aint se = ist_extent(sendtype), re = ist_extent(recvtype);
    for (int i = 0; i < n; i++) {
        sd[i] = (int)(sdispls[i] * se), rd[i] = (int)(rdispls[i] * re);
        st[i] = sendtype, rt[i] = recvtype;
    }
    alltoallw(s, sendbuf, sendcounts, sd, st, recvbuf, recvcounts, rd, rt);
}

/* Scan: the prefix from rank r-1, then mine on top, on to r+1. */
static void scan_combine(struct zsched *s)
{
    /* acc holds the prefix of the ranks before; parts[0] my part */
    if (s->exclusive) ist_copy_typed(s->acc, s->recvbuf, s->count, s->type);
    PMPI_Reduce_local(s->acc, s->parts[0], s->count, s->type, s->op); /* prefix op mine */
    if (!s->exclusive) ist_copy_typed(s->parts[0], s->recvbuf, s->count, s->type);
}

static void scan_first(struct zsched *s)
{
    if (!s->exclusive) ist_copy_typed(s->parts[0], s->recvbuf, s->count, s->type);
}

static void scan(struct zsched *s, const void *sendbuf, void *recvbuf, int count, MPI_Datatype type,
                 MPI_Op op, int exclusive)
{
    s->count = count, s->type = type, s->op = op, s->recvbuf = recvbuf, s->exclusive = exclusive;
    s->parts = malloc(sizeof *s->parts);
    s->parts[0] = zs_tmp(s, count, type); /* mine, then the prefix up to me */
    ist_copy_typed(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, s->parts[0], count, type);
    if (s->k->rank > 0) {
        s->acc = zs_tmp(s, count, type);
        zs_recv(s, s->acc, count, type, s->k->rank - 1);
        zs_next_round(s);
        zs_local(s, scan_combine);
    } else {
        zs_local(s, scan_first);
    }
    if (s->k->rank + 1 < s->k->size) {
        zs_next_round(s);
        zs_send(s, s->parts[0], count, type, s->k->rank + 1);
    }
}

/* Reduce_scatter: everything reduced at rank 0, then scattered. */
static void reduce_scatter(struct zsched *s, const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype type, MPI_Op op)
{
    int n = s->k->size, total = 0;
    int *displs = zs_own(s, malloc(sizeof *displs * (size_t)n));
    for (int r = 0; r < n; r++) displs[r] = total, total += recvcounts[r];
    void *all = zs_tmp(s, total, type);
    reduce(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, all, total, type, op, 0);
    zs_next_round(s);
    scatterv(s, all, recvcounts, displs, type, recvbuf, recvcounts[s->k->rank], type, 0);
}

/* ---- the calls --------------------------------------------------------------------------
 * Each collective's blocking and nonblocking entries build the same schedule (the builder,
 * after the parameters; Name and name: MPI_Name, MPI_Iname); the nonblocking one launches it with a request, the blocking one
 * runs it to its end. 1 when served (comm spans sites), 0 to leave the call to the MPI. */

#define SPANNING(comm)                        \
    struct ist_zcomm *c = ist_zip_comm(comm); \
    if (!c) return 0;                         \
    struct zsched *s = zs_new(c)
#define UNPAREN(...) __VA_ARGS__
#define ENTRIES(Name, name, params, ...)                                         \
    int ist_span_I##name(UNPAREN params, MPI_Request *request, int *rc)          \
    {                                                                            \
        SPANNING(comm);                                                          \
        __VA_ARGS__;                                                             \
        *rc = zs_launch(s, request);                                                \
        return 1;                                                                \
    }                                                                            \
    int ist_span_##Name(UNPAREN params, int *rc)                                 \
    {                                                                            \
        SPANNING(comm);                                                          \
        __VA_ARGS__;                                                             \
        *rc = zs_run(s);                                                            \
        return 1;                                                                \
    }

/* Allreduce: Reduce to 0, then Bcast; in place, a rank's part is copied first (the
 * broadcast overwrites recvbuf). */
static void allreduce(struct zsched *s, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype type, MPI_Op op)
{
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (s->k->rank != 0 && mine == recvbuf) {
        void *copy = zs_tmp(s, count, type);
        ist_copy_typed(recvbuf, copy, count, type);
        mine = copy;
    }
    reduce(s, mine, recvbuf, count, type, op, 0);
    zs_next_round(s);
    bcast(s, recvbuf, count, type, 0);
}

ENTRIES(Barrier, barrier, (MPI_Comm comm), barrier(s))
ENTRIES(Bcast, bcast, (void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm),
        bcast(s, buffer, count, type, root))
ENTRIES(Reduce, reduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                 int root, MPI_Comm comm),
        reduce(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, type, op, root))
ENTRIES(Allreduce, allreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm),
        allreduce(s, sendbuf, recvbuf, count, type, op))
ENTRIES(Gather, gather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
        gatherv(s, sendbuf, sendcount, sendtype, recvbuf, uniform(s, recvcount, 0),
                uniform(s, recvcount, 1), recvtype, root))
ENTRIES(Gatherv, gatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm),
        gatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root))
ENTRIES(Scatter, scatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
        scatterv(s, sendbuf, uniform(s, sendcount, 0), uniform(s, sendcount, 1), sendtype,
                 recvbuf, recvcount, recvtype, root))
ENTRIES(Scatterv, scatterv, (const void *sendbuf, const int sendcounts[], const int displs[],
                   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm),
        scatterv(s, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root))
ENTRIES(Allgather, allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
        allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, uniform(s, recvcount, 0),
                   uniform(s, recvcount, 1), recvtype))
ENTRIES(Allgatherv, allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     MPI_Comm comm),
        allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype))
ENTRIES(Alltoall, alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
        alltoallv(s, sendbuf, uniform(s, sendcount, 0), uniform(s, sendcount, 1), sendtype,
                  recvbuf, uniform(s, recvcount, 0), uniform(s, recvcount, 1), recvtype))
ENTRIES(Alltoallv, alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
        alltoallv(s, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                  recvtype))
ENTRIES(Alltoallw, alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm),
        if (sendbuf == MPI_IN_PLACE)
            ist_zip_refuse("MPI_Alltoallw", "with MPI_IN_PLACE on a communicator that spans sites");
        alltoallw(s, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                  recvtypes))
ENTRIES(Reduce_scatter, reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm),
        reduce_scatter(s, sendbuf, recvbuf, recvcounts, type, op))
ENTRIES(Reduce_scatter_block, reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,
                               MPI_Datatype type, MPI_Op op, MPI_Comm comm),
        reduce_scatter(s, sendbuf, recvbuf, uniform(s, recvcount, 0), type, op))
ENTRIES(Scan, scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm),
        scan(s, sendbuf, recvbuf, count, type, op, 0))
ENTRIES(Exscan, exscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm),
        scan(s, sendbuf, recvbuf, count, type, op, 1))

/* ---- for the zipper's own use (zip_world.c, zip_calls.c): blocking, on c itself -------- */

int ist_zip_bcast(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type, int root)
{
    struct zsched *s = zs_new(c);
    bcast(s, buf, count, type, root);
    return zs_run(s);
}

int ist_zip_gatherv(struct ist_zcomm *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, int root)
{
    struct zsched *s = zs_new(c);
    gatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
    return zs_run(s);
}
