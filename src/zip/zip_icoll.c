/* Nonblocking collectives on communicators that span sites: correct, simple shapes.
 *
 * Chosen for every nonblocking collective on a spanning communicator. Each call becomes a
 * schedule: rounds of sends, receives and local steps (a reduction, a copy) on the
 * communicator's collective twin; the engine starts a round when the one before has
 * completed (ist_zip_progress moves every schedule under way), so the application may
 * compute, send and receive meanwhile, as MPI allows. Calls are matched by a sequence
 * number per communicator in the tag (every rank starts them in the same order), so any
 * number may be under way at once. The shapes are those of zip_coll.c: the root sends to
 * or receives from every rank, broadcasts go down a binomial tree, reductions are applied
 * at the root in rank order; costs as there, plus one progress call per round. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"
#include "zip.h"
#include "zip_calls.h"
#include "zip_engine.h"

#define ICOLL_TAG_BASE 1024

enum act_kind { ACT_SEND, ACT_RECV, ACT_LOCAL };

struct zsched;
struct act {
    enum act_kind kind;
    void *buf;
    int count;
    MPI_Datatype type;
    int peer;
    void (*fn)(struct zsched *s);
};

struct round {
    struct act *acts;
    int n, cap;
};

struct zsched {
    struct zsched *next;
    struct ist_zcomm *k;
    int tag;
    struct round *rounds;
    int nrounds, cap, cur;
    struct ist_zop **ops;
    int nops;
    void **owned; /* freed when done */
    int nowned, owned_cap;
    MPI_Datatype derived; /* freed when done, or MPI_DATATYPE_NULL */
    struct ist_zop *handle;
    /* for the local steps */
    const void *mine;
    void *recvbuf;
    int count, root, exclusive;
    MPI_Datatype type;
    MPI_Op op;
    void **parts; /* reduction: every rank's part, by rank */
    void *acc;
    int *counts, *displs;
};

static struct zsched *active;

static struct zsched *new_sched(struct ist_zcomm *c)
{
    struct zsched *s = calloc(1, sizeof *s);
    if (!s) ist_zip_fatal("out of memory");
    s->k = c->coll;
    /* below MPICH's MPI_TAG_UB (2^19 - 1 with UCX): the twin's native part carries them */
    s->tag = ICOLL_TAG_BASE + (int)(c->coll->icoll_seq++ % (1u << 18));
    s->derived = MPI_DATATYPE_NULL;
    return s;
}

static void *own(struct zsched *s, void *p)
{
    if (s->nowned == s->owned_cap) {
        s->owned_cap = s->owned_cap ? 2 * s->owned_cap : 8;
        s->owned = realloc(s->owned, sizeof *s->owned * (size_t)s->owned_cap);
    }
    s->owned[s->nowned++] = p;
    return p;
}

static void next_round(struct zsched *s)
{
    if (s->nrounds == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->rounds = realloc(s->rounds, sizeof *s->rounds * (size_t)s->cap);
    }
    s->rounds[s->nrounds++] = (struct round){0};
}

static void add(struct zsched *s, struct act a)
{
    if (!s->nrounds) next_round(s);
    struct round *r = &s->rounds[s->nrounds - 1];
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->acts = realloc(r->acts, sizeof *r->acts * (size_t)r->cap);
    }
    r->acts[r->n++] = a;
}

static void send(struct zsched *s, const void *buf, int count, MPI_Datatype type, int peer)
{
    add(s, (struct act){ACT_SEND, (void *)buf, count, type, peer, NULL});
}

static void recv(struct zsched *s, void *buf, int count, MPI_Datatype type, int peer)
{
    add(s, (struct act){ACT_RECV, buf, count, type, peer, NULL});
}

static void local(struct zsched *s, void (*fn)(struct zsched *))
{
    add(s, (struct act){ACT_LOCAL, NULL, 0, MPI_DATATYPE_NULL, 0, fn});
}

/* A buffer for count elements of type (ist_tmp), owned by the schedule. */
static void *tmp(struct zsched *s, int count, MPI_Datatype type)
{
    struct ist_tmp t;
    if (ist_tmp_alloc(&t, count, type) != MPI_SUCCESS) ist_zip_fatal("out of memory");
    own(s, t.mem);
    return t.base;
}

static void finish(struct zsched *s)
{
    for (int i = 0; i < s->nowned; i++) free(s->owned[i]);
    free(s->owned);
    for (int r = 0; r < s->nrounds; r++) free(s->rounds[r].acts);
    free(s->rounds);
    free(s->ops);
    free(s->parts);
    free(s->counts);
    free(s->displs);
    if (s->derived != MPI_DATATYPE_NULL) PMPI_Type_free(&s->derived);
    ist_zip_complete_op(s->handle);
    free(s);
}

/* Start round s->cur: its local steps, then its messages. */
static void start_round(struct zsched *s)
{
    struct round *r = &s->rounds[s->cur];
    free(s->ops);
    s->ops = malloc(sizeof *s->ops * (size_t)(r->n ? r->n : 1));
    s->nops = 0;
    for (int i = 0; i < r->n; i++)
        if (r->acts[i].kind == ACT_LOCAL) r->acts[i].fn(s);
    for (int i = 0; i < r->n; i++) {
        struct act *a = &r->acts[i];
        if (a->kind == ACT_SEND)
            s->ops[s->nops++] = ist_zip_isend(s->k, a->buf, a->count, a->type, a->peer, s->tag, 0);
        else if (a->kind == ACT_RECV)
            s->ops[s->nops++] = ist_zip_irecv(s->k, a->buf, a->count, a->type, a->peer, s->tag);
    }
}

/* Move s on as far as it goes; 1 when it has finished. */
static int advance(struct zsched *s)
{
    for (;;) {
        for (int i = 0; i < s->nops; i++)
            if (!s->ops[i]->done) return 0;
        for (int i = 0; i < s->nops; i++) ist_zip_free_op(s->ops[i]);
        s->nops = 0;
        if (++s->cur >= s->nrounds) return 1;
        start_round(s);
    }
}

void ist_zip_icoll_progress(void)
{
    for (struct zsched **p = &active; *p;) {
        struct zsched *s = *p;
        if (advance(s)) {
            *p = s->next;
            finish(s);
        } else {
            p = &s->next;
        }
    }
}

/* Start s and give the application its request. */
static int launch(struct zsched *s, MPI_Request *request)
{
    s->handle = ist_zip_coll_op(s->k);
    int rc = ist_zip_give_handle(s->handle, request);
    if (s->nrounds == 0) next_round(s);
    s->cur = 0;
    start_round(s); /* before it joins the list: its sends move the engine, and the
                     * engine would take a half-started round for a finished one */
    s->next = active;
    active = s;
    ist_zip_progress();
    return rc;
}

/* ---- the shapes ------------------------------------------------------------------------ */

static void barrier(struct zsched *s)
{
    int size = s->k->size, me = s->k->rank;
    if (me == 0) {
        for (int r = 1; r < size; r++) recv(s, NULL, 0, MPI_BYTE, r);
        next_round(s);
        for (int r = 1; r < size; r++) send(s, NULL, 0, MPI_BYTE, r);
    } else {
        send(s, NULL, 0, MPI_BYTE, 0);
        recv(s, NULL, 0, MPI_BYTE, 0);
    }
}

static void bcast(struct zsched *s, void *buf, int count, MPI_Datatype type, int root)
{
    int size = s->k->size, me = (s->k->rank - root + size) % size, mask = 1;
    while (mask < size && !(me & mask)) mask <<= 1;
    if (me != 0) recv(s, buf, count, type, ((me - mask) + root) % size);
    next_round(s);
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (me + mask < size) send(s, buf, count, type, (me + mask + root) % size);
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
        send(s, mine, count, type, root);
        return;
    }
    s->count = count, s->type = type, s->op = op, s->recvbuf = recvbuf;
    s->parts = malloc(sizeof *s->parts * (size_t)s->k->size);
    for (int r = 0; r < s->k->size; r++) {
        if (r == root) {
            /* in place, recvbuf is overwritten by the fold: keep a copy of this part */
            s->parts[r] = tmp(s, count, type);
            ist_copy_typed(mine, s->parts[r], count, type);
        } else {
            s->parts[r] = tmp(s, count, type);
            recv(s, s->parts[r], count, type, r);
        }
    }
    s->acc = tmp(s, count, type);
    next_round(s);
    local(s, fold);
}

static void gatherv(struct zsched *s, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    int root)
{
    if (s->k->rank != root) {
        send(s, sendbuf, sendcount, sendtype, root);
        return;
    }
    MPI_Aint ext = ist_zip_extent(recvtype);
    for (int r = 0; r < s->k->size; r++)
        if (r != root) recv(s, (char *)recvbuf + displs[r] * ext, recvcounts[r], recvtype, r);
    if (sendbuf != MPI_IN_PLACE)
        PMPI_Sendrecv(sendbuf, sendcount, sendtype, 0, 0, (char *)recvbuf + displs[root] * ext,
                      recvcounts[root], recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

static void scatterv(struct zsched *s, const void *sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root)
{
    if (s->k->rank != root) {
        recv(s, recvbuf, recvcount, recvtype, root);
        return;
    }
    MPI_Aint ext = ist_zip_extent(sendtype);
    for (int r = 0; r < s->k->size; r++)
        if (r != root) send(s, (const char *)sendbuf + displs[r] * ext, sendcounts[r], sendtype, r);
    if (recvbuf != MPI_IN_PLACE)
        PMPI_Sendrecv((const char *)sendbuf + displs[root] * ext, sendcounts[root], sendtype, 0, 0,
                      recvbuf, recvcount, recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

static int *uniform(struct zsched *s, int count, int stride)
{
    int *a = own(s, malloc(sizeof *a * (size_t)s->k->size));
    for (int i = 0; i < s->k->size; i++) a[i] = stride ? i * count : count;
    return a;
}

/* Allgatherv: gather at 0, then the whole buffer down the tree as one indexed type. */
static void allgatherv(struct zsched *s, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype)
{
    if (sendbuf == MPI_IN_PLACE && s->k->rank != 0) {
        sendbuf = (const char *)recvbuf + displs[s->k->rank] * ist_zip_extent(recvtype);
        sendcount = recvcounts[s->k->rank];
        sendtype = recvtype;
    }
    gatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, 0);
    next_round(s);
    PMPI_Type_indexed(s->k->size, recvcounts, displs, recvtype, &s->derived);
    PMPI_Type_commit(&s->derived);
    bcast(s, recvbuf, 1, s->derived, 0);
}

static void alltoallw(struct zsched *s, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[])
{
    int me = s->k->rank;
    for (int r = 0; r < s->k->size; r++) {
        if (r == me) continue;
        recv(s, (char *)recvbuf + rdispls[r], recvcounts[r], recvtypes[r], r);
        send(s, (const char *)sendbuf + sdispls[r], sendcounts[r], sendtypes[r], r);
    }
    PMPI_Sendrecv((const char *)sendbuf + sdispls[me], sendcounts[me], sendtypes[me], 0, 0,
                  (char *)recvbuf + rdispls[me], recvcounts[me], recvtypes[me], 0, 0, MPI_COMM_SELF,
                  MPI_STATUS_IGNORE);
}

/* Alltoall(v) as Alltoallw: byte displacements, one type. */
static void alltoallv(struct zsched *s, const void *sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                      MPI_Datatype recvtype)
{
    int n = s->k->size;
    if (sendbuf == MPI_IN_PLACE)
        ist_zip_refuse("A nonblocking all-to-all", "with MPI_IN_PLACE on a communicator that spans sites");
    int *sd = own(s, malloc(sizeof *sd * (size_t)n)), *rd = own(s, malloc(sizeof *rd * (size_t)n));
    MPI_Datatype *st = own(s, malloc(sizeof *st * (size_t)n)), *rt = own(s, malloc(sizeof *rt * (size_t)n));
    MPI_Aint se = ist_zip_extent(sendtype), re = ist_zip_extent(recvtype);
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
    s->parts[0] = tmp(s, count, type); /* mine, then the prefix up to me */
    ist_copy_typed(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, s->parts[0], count, type);
    if (s->k->rank > 0) {
        s->acc = tmp(s, count, type);
        recv(s, s->acc, count, type, s->k->rank - 1);
        next_round(s);
        local(s, scan_combine);
    } else {
        local(s, scan_first);
    }
    if (s->k->rank + 1 < s->k->size) {
        next_round(s);
        send(s, s->parts[0], count, type, s->k->rank + 1);
    }
}

/* ---- the calls -------------------------------------------------------------------------- */

#define SPANNING(comm)                        \
    struct ist_zcomm *c = ist_zip_comm(comm); \
    if (!c) return 0;                         \
    struct zsched *s = new_sched(c)

int ist_zip_Ibarrier(MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    barrier(s);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ibcast(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
                   MPI_Request *request, int *rc)
{
    SPANNING(comm);
    bcast(s, buffer, count, type, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    reduce(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, type, op, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (s->k->rank != 0 && mine == recvbuf) { /* recvbuf is overwritten by the broadcast */
        void *copy = tmp(s, count, type);
        ist_copy_typed(recvbuf, copy, count, type);
        mine = copy;
    }
    reduce(s, mine, recvbuf, count, type, op, 0);
    next_round(s);
    bcast(s, recvbuf, count, type, 0);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                    int *rc)
{
    SPANNING(comm);
    gatherv(s, sendbuf, sendcount, sendtype, recvbuf, uniform(s, recvcount, 0), uniform(s, recvcount, 1),
            recvtype, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    gatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                     int *rc)
{
    SPANNING(comm);
    scatterv(s, sendbuf, uniform(s, sendcount, 0), uniform(s, sendcount, 1), sendtype, recvbuf,
             recvcount, recvtype, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    scatterv(s, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                       int *rc)
{
    SPANNING(comm);
    allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, uniform(s, recvcount, 0),
               uniform(s, recvcount, 1), recvtype);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                      int *rc)
{
    SPANNING(comm);
    alltoallv(s, sendbuf, uniform(s, sendcount, 0), uniform(s, sendcount, 1), sendtype, recvbuf,
              uniform(s, recvcount, 0), uniform(s, recvcount, 1), recvtype);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Request *request, int *rc)
{
    SPANNING(comm);
    alltoallv(s, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                       MPI_Request *request, int *rc)
{
    SPANNING(comm);
    if (sendbuf == MPI_IN_PLACE)
        ist_zip_refuse("MPI_Ialltoallw", "with MPI_IN_PLACE on a communicator that spans sites");
    alltoallw(s, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
    *rc = launch(s, request);
    return 1;
}

/* Reduce_scatter: everything reduced at rank 0, then scattered. */
static void reduce_scatter(struct zsched *s, const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype type, MPI_Op op)
{
    int n = s->k->size, total = 0;
    int *displs = own(s, malloc(sizeof *displs * (size_t)n));
    for (int r = 0; r < n; r++) displs[r] = total, total += recvcounts[r];
    void *all = tmp(s, total, type);
    reduce(s, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, all, total, type, op, 0);
    next_round(s);
    scatterv(s, all, recvcounts, displs, type, recvbuf, recvcounts[s->k->rank], type, 0);
}

int ist_zip_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    reduce_scatter(s, sendbuf, recvbuf, recvcounts, type, op);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type,
                                  MPI_Op op, MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    reduce_scatter(s, sendbuf, recvbuf, uniform(s, recvcount, 0), type, op);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    scan(s, sendbuf, recvbuf, count, type, op, 0);
    *rc = launch(s, request);
    return 1;
}

int ist_zip_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm, MPI_Request *request, int *rc)
{
    SPANNING(comm);
    scan(s, sendbuf, recvbuf, count, type, op, 1);
    *rc = launch(s, request);
    return 1;
}
