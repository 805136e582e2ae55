/* Blocking collectives on communicators that span sites: correct first, simple shapes.
 *
 * Chosen for every blocking collective the layer carries across forwarders (zip_calls.c).
 * They run on the communicator's collective twin (its own context and native duplicate),
 * so they never match the application's messages. Costs, P ranks, one forwarder hop
 * between sites: Barrier 2(P-1) empty messages through rank 0; Bcast a binomial tree,
 * ceil(log2 P) rounds; Reduce P-1 messages into the root, which applies the operation in
 * rank order (right to left, so non-commutative operations are right); Gather(v),
 * Scatter(v) P-1 messages at the root; Alltoall(v) P(P-1) messages. The cluster-aware
 * algorithms of src/coll (one wide-area message per cluster) are not used here yet. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"
#include "zip.h"
#include "zip_engine.h"

#define COLL_TAG 1

int ist_zip_barrier(struct ist_zcomm *c)
{
    struct ist_zcomm *k = c->coll;
    struct ist_zop **ops = malloc(sizeof *ops * (size_t)k->size);
    int n = 0, rc;
    if (k->rank == 0) {
        for (int r = 1; r < k->size; r++) ops[n++] = ist_zip_irecv(k, NULL, 0, MPI_BYTE, r, COLL_TAG);
        rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
        n = 0;
        for (int r = 1; r < k->size; r++) ops[n++] = ist_zip_isend(k, NULL, 0, MPI_BYTE, r, COLL_TAG, 0);
    } else {
        ops[n++] = ist_zip_isend(k, NULL, 0, MPI_BYTE, 0, COLL_TAG, 0);
        ops[n++] = ist_zip_irecv(k, NULL, 0, MPI_BYTE, 0, COLL_TAG);
    }
    rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    free(ops);
    return rc;
}

int ist_zip_bcast(struct ist_zcomm *c, void *buf, int count, MPI_Datatype type, int root)
{
    struct ist_zcomm *k = c->coll;
    int size = k->size, me = (k->rank - root + size) % size, rc = MPI_SUCCESS;
    int mask = 1;
    while (mask < size && !(me & mask)) mask <<= 1;
    if (me != 0) { /* receive from the parent: me without its lowest set bit */
        struct ist_zop *op = ist_zip_irecv(k, buf, count, type, ((me - mask) + root) % size, COLL_TAG);
        if ((rc = ist_zip_wait_ops(1, &op, MPI_STATUSES_IGNORE)) != MPI_SUCCESS) return rc;
    }
    struct ist_zop *ops[32];
    int n = 0;
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (me + mask < size)
            ops[n++] = ist_zip_isend(k, buf, count, type, (me + mask + root) % size, COLL_TAG, 0);
    return ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
}

int ist_zip_reduce(struct ist_zcomm *c, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype type, MPI_Op op, int root)
{
    struct ist_zcomm *k = c->coll;
    if (k->rank != root) {
        struct ist_zop *o = ist_zip_isend(k, sendbuf, count, type, root, COLL_TAG, 0);
        return ist_zip_wait_ops(1, &o, MPI_STATUSES_IGNORE);
    }
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    struct ist_tmp *parts = calloc((size_t)k->size, sizeof *parts);
    struct ist_zop **ops = malloc(sizeof *ops * (size_t)k->size);
    int n = 0, rc;
    for (int r = 0; r < k->size; r++) {
        if (r == root) continue;
        if ((rc = ist_tmp_alloc(&parts[r], count, type)) != MPI_SUCCESS) return rc;
        ops[n++] = ist_zip_irecv(k, parts[r].base, count, type, r, COLL_TAG);
    }
    rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    /* acc = x(P-1); then acc = x(i) op acc for i = P-2 .. 0: the rank-order result */
    struct ist_tmp acc;
    if (rc == MPI_SUCCESS) rc = ist_tmp_alloc(&acc, count, type);
    if (rc == MPI_SUCCESS) {
        int last = k->size - 1;
        ist_copy_typed(last == root ? mine : parts[last].base, acc.base, count, type);
        for (int r = last - 1; r >= 0; r--)
            PMPI_Reduce_local(r == root ? mine : parts[r].base, acc.base, count, type, op);
        ist_copy_typed(acc.base, recvbuf, count, type);
        ist_tmp_free(&acc);
    }
    for (int r = 0; r < k->size; r++)
        if (r != root) ist_tmp_free(&parts[r]);
    free(parts);
    free(ops);
    return rc;
}

int ist_zip_gatherv(struct ist_zcomm *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    void *recvbuf, const int recvcounts[], const int displs[],
                    MPI_Datatype recvtype, int root)
{
    struct ist_zcomm *k = c->coll;
    if (k->rank != root) {
        struct ist_zop *o = ist_zip_isend(k, sendbuf, sendcount, sendtype, root, COLL_TAG, 0);
        return ist_zip_wait_ops(1, &o, MPI_STATUSES_IGNORE);
    }
    MPI_Aint ext = ist_zip_extent(recvtype);
    struct ist_zop **ops = malloc(sizeof *ops * (size_t)k->size);
    int n = 0;
    for (int r = 0; r < k->size; r++)
        if (r != root)
            ops[n++] = ist_zip_irecv(k, (char *)recvbuf + displs[r] * ext, recvcounts[r], recvtype,
                                     r, COLL_TAG);
    if (sendbuf != MPI_IN_PLACE)
        PMPI_Sendrecv(sendbuf, sendcount, sendtype, 0, 0, (char *)recvbuf + displs[root] * ext,
                      recvcounts[root], recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    int rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    free(ops);
    return rc;
}

int ist_zip_scatterv(struct ist_zcomm *c, const void *sendbuf, const int sendcounts[],
                     const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root)
{
    struct ist_zcomm *k = c->coll;
    if (k->rank != root) {
        struct ist_zop *o = ist_zip_irecv(k, recvbuf, recvcount, recvtype, root, COLL_TAG);
        return ist_zip_wait_ops(1, &o, MPI_STATUSES_IGNORE);
    }
    MPI_Aint ext = ist_zip_extent(sendtype);
    struct ist_zop **ops = malloc(sizeof *ops * (size_t)k->size);
    int n = 0;
    for (int r = 0; r < k->size; r++)
        if (r != root)
            ops[n++] = ist_zip_isend(k, (const char *)sendbuf + displs[r] * ext, sendcounts[r],
                                     sendtype, r, COLL_TAG, 0);
    if (recvbuf != MPI_IN_PLACE)
        PMPI_Sendrecv((const char *)sendbuf + displs[root] * ext, sendcounts[root], sendtype, 0, 0,
                      recvbuf, recvcount, recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    int rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    free(ops);
    return rc;
}

int ist_zip_alltoallv(struct ist_zcomm *c, const void *sendbuf, const int sendcounts[],
                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int rdispls[], MPI_Datatype recvtype)
{
    struct ist_zcomm *k = c->coll;
    MPI_Aint rext = ist_zip_extent(recvtype);
    char *copy = NULL;
    if (sendbuf == MPI_IN_PLACE) { /* send from a copy of what recvbuf holds */
        MPI_Aint lb, tlb, text, span = 0;
        PMPI_Type_get_extent(recvtype, &lb, &rext);
        PMPI_Type_get_true_extent(recvtype, &tlb, &text);
        for (int r = 0; r < k->size; r++)
            if (recvcounts[r] > 0 && (rdispls[r] + recvcounts[r] - 1) * rext + tlb + text > span)
                span = (rdispls[r] + recvcounts[r] - 1) * rext + tlb + text;
        copy = malloc(span ? (size_t)span : 1);
        memcpy(copy, recvbuf, (size_t)span);
        sendbuf = copy;
        sendcounts = recvcounts;
        sdispls = rdispls;
        sendtype = recvtype;
    }
    MPI_Aint sext = ist_zip_extent(sendtype);
    struct ist_zop **ops = malloc(sizeof *ops * 2 * (size_t)k->size);
    int n = 0;
    for (int i = 1; i < k->size; i++) {
        int from = (k->rank - i + k->size) % k->size;
        ops[n++] = ist_zip_irecv(k, (char *)recvbuf + rdispls[from] * rext, recvcounts[from],
                                 recvtype, from, COLL_TAG);
    }
    for (int i = 1; i < k->size; i++) {
        int to = (k->rank + i) % k->size;
        ops[n++] = ist_zip_isend(k, (const char *)sendbuf + sdispls[to] * sext, sendcounts[to],
                                 sendtype, to, COLL_TAG, 0);
    }
    PMPI_Sendrecv((const char *)sendbuf + sdispls[k->rank] * sext, sendcounts[k->rank], sendtype, 0,
                  0, (char *)recvbuf + rdispls[k->rank] * rext, recvcounts[k->rank], recvtype, 0, 0,
                  MPI_COMM_SELF, MPI_STATUS_IGNORE);
    int rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    free(ops);
    free(copy);
    return rc;
}

/* Scan and Exscan: a chain in rank order, P-1 steps (each rank waits for the one before). */
int ist_zip_scan(struct ist_zcomm *c, const void *sendbuf, void *recvbuf, int count,
                 MPI_Datatype type, MPI_Op op, int exclusive)
{
    struct ist_zcomm *k = c->coll;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    struct ist_tmp before, total;
    int rc = ist_tmp_alloc(&total, count, type);
    if (rc != MPI_SUCCESS) return rc;
    ist_copy_typed(mine, total.base, count, type);
    if (k->rank > 0) {
        if ((rc = ist_tmp_alloc(&before, count, type)) != MPI_SUCCESS) return rc;
        struct ist_zop *o = ist_zip_irecv(k, before.base, count, type, k->rank - 1, COLL_TAG);
        rc = ist_zip_wait_ops(1, &o, MPI_STATUSES_IGNORE);
        PMPI_Reduce_local(before.base, total.base, count, type, op); /* before op mine */
        if (exclusive) ist_copy_typed(before.base, recvbuf, count, type);
        ist_tmp_free(&before);
    }
    if (!exclusive) ist_copy_typed(total.base, recvbuf, count, type);
    if (rc == MPI_SUCCESS && k->rank + 1 < k->size) {
        struct ist_zop *o = ist_zip_isend(k, total.base, count, type, k->rank + 1, COLL_TAG, 0);
        rc = ist_zip_wait_ops(1, &o, MPI_STATUSES_IGNORE);
    }
    ist_tmp_free(&total);
    return rc;
}

/* Reduce_scatter(_block): Reduce of everything to rank 0, then Scatterv of the parts. */
int ist_zip_reduce_scatter(struct ist_zcomm *c, const void *sendbuf, void *recvbuf,
                           const int recvcounts[], MPI_Datatype type, MPI_Op op)
{
    int total = 0, *displs = malloc(sizeof *displs * (size_t)c->size);
    for (int r = 0; r < c->size; r++) displs[r] = total, total += recvcounts[r];
    struct ist_tmp all;
    int rc = ist_tmp_alloc(&all, total, type);
    if (rc == MPI_SUCCESS) {
        const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        if (c->rank == 0 && sendbuf == MPI_IN_PLACE) mine = MPI_IN_PLACE;
        if (mine == MPI_IN_PLACE) ist_copy_typed(recvbuf, all.base, total, type);
        rc = ist_zip_reduce(c, mine == MPI_IN_PLACE ? MPI_IN_PLACE : mine, all.base, total, type, op, 0);
        if (rc == MPI_SUCCESS)
            rc = ist_zip_scatterv(c, all.base, recvcounts, displs, type, recvbuf, recvcounts[c->rank],
                                  type, 0);
        ist_tmp_free(&all);
    }
    free(displs);
    return rc;
}

/* Alltoallw: as Alltoallv, with a type per peer and displacements in bytes. */
int ist_zip_alltoallw(struct ist_zcomm *c, const void *sendbuf, const int sendcounts[],
                      const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                      const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[])
{
    struct ist_zcomm *k = c->coll;
    if (sendbuf == MPI_IN_PLACE)
        ist_zip_refuse("MPI_Alltoallw", "with MPI_IN_PLACE on a communicator that spans sites");
    struct ist_zop **ops = malloc(sizeof *ops * 2 * (size_t)k->size);
    int n = 0;
    for (int i = 1; i < k->size; i++) {
        int from = (k->rank - i + k->size) % k->size;
        ops[n++] = ist_zip_irecv(k, (char *)recvbuf + rdispls[from], recvcounts[from], recvtypes[from],
                                 from, COLL_TAG);
    }
    for (int i = 1; i < k->size; i++) {
        int to = (k->rank + i) % k->size;
        ops[n++] = ist_zip_isend(k, (const char *)sendbuf + sdispls[to], sendcounts[to], sendtypes[to],
                                 to, COLL_TAG, 0);
    }
    int me = k->rank;
    PMPI_Sendrecv((const char *)sendbuf + sdispls[me], sendcounts[me], sendtypes[me], 0, 0,
                  (char *)recvbuf + rdispls[me], recvcounts[me], recvtypes[me], 0, 0, MPI_COMM_SELF,
                  MPI_STATUS_IGNORE);
    int rc = ist_zip_wait_ops(n, ops, MPI_STATUSES_IGNORE);
    free(ops);
    return rc;
}
