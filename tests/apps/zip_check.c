/* Checks MPI semantics across zipper forwarding (tests/python/test_zipper.py): run it on
 * 4 or more ranks whose sites differ; every check compares with what MPI 3.1 promises and
 * the program exits 1 naming the first check that fails. Each rank prints one line
 * "zip_check rank R of N: ok". With the argument "refused" it first calls something
 * the layer does not carry across yet. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "zip_check rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

/* Every rank sends to every other rank, blocking and in both orders of sizes. */
static void all_pairs(void)
{
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank) continue;
        int out[3] = {rank, peer, 7}, in[3] = {-1, -1, -1};
        MPI_Status st;
        MPI_Sendrecv(out, 3, MPI_INT, peer, 11, in, 3, MPI_INT, peer, 11, MPI_COMM_WORLD, &st);
        CHECK(in[0] == peer && in[1] == rank && in[2] == 7, "sendrecv with %d: %d %d %d", peer, in[0], in[1], in[2]);
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 11, "sendrecv status %d %d", st.MPI_SOURCE, st.MPI_TAG);
        int n;
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == 3, "sendrecv count %d", n);
    }
}

/* Rank 0 receives from everyone with MPI_ANY_SOURCE; order per sender must hold. */
static void wildcard_order(void)
{
    enum { PER = 20 };
    if (rank == 0) {
        int *next = calloc((size_t)size, sizeof *next);
        for (int i = 0; i < PER * (size - 1); i++) {
            int v;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size, "source %d", st.MPI_SOURCE);
            CHECK(v == next[st.MPI_SOURCE], "from %d got %d, expected %d (order)", st.MPI_SOURCE, v, next[st.MPI_SOURCE]);
            CHECK(st.MPI_TAG == 100 + v % 3, "tag %d for %d", st.MPI_TAG, v);
            next[st.MPI_SOURCE]++;
        }
        free(next);
    } else {
        for (int v = 0; v < PER; v++) MPI_Send(&v, 1, MPI_INT, 0, 100 + v % 3, MPI_COMM_WORLD);
    }
}

/* Nonblocking, mixed requests, Waitany/Testsome, probe, large and zero-size messages. */
static void nonblocking(void)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    const int big = 3 << 20; /* 12 MiB of ints */
    int *send = malloc(sizeof(int) * (size_t)big), *recv = malloc(sizeof(int) * (size_t)big);
    for (int i = 0; i < big; i++) send[i] = rank * 1000003 + i;
    MPI_Request req[4];
    MPI_Irecv(recv, big, MPI_INT, left, 5, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(NULL, 0, MPI_INT, left, 6, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(send, big, MPI_INT, right, 5, MPI_COMM_WORLD, &req[2]);
    MPI_Issend(NULL, 0, MPI_INT, right, 6, MPI_COMM_WORLD, &req[3]);
    MPI_Status st[4];
    int done = 0, idx[4], out;
    while (done < 4) {
        MPI_Testsome(4, req, &out, idx, st);
        if (out != MPI_UNDEFINED) done += out;
    }
    for (int i = 0; i < big; i += 4099) CHECK(recv[i] == left * 1000003 + i, "big message at %d", i);
    CHECK(recv[big - 1] == left * 1000003 + big - 1, "big message end");

    /* Probe then receive with the size it gives. */
    if (rank % 2 == 0) {
        double d[5] = {1, 2, 3, 4, 5};
        MPI_Send(d, 5, MPI_DOUBLE, right, 9, MPI_COMM_WORLD);
    }
    if (left % 2 == 0) {
        MPI_Status ps;
        MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &ps);
        int n;
        MPI_Get_count(&ps, MPI_DOUBLE, &n);
        CHECK(ps.MPI_SOURCE == left && n == 5, "probe source %d count %d", ps.MPI_SOURCE, n);
        double d[5];
        MPI_Recv(d, n, MPI_DOUBLE, ps.MPI_SOURCE, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(d[4] == 5, "probed message");
    }
    /* A receive cancelled before anything matches it. */
    MPI_Request c;
    int x;
    MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &c);
    MPI_Cancel(&c);
    MPI_Status cs;
    MPI_Wait(&c, &cs);
    int cancelled;
    MPI_Test_cancelled(&cs, &cancelled);
    CHECK(cancelled, "the receive was not cancelled");
    free(send);
    free(recv);
}

/* A vector type with holes: sent from one layout, received into another. */
static void datatypes(void)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    MPI_Datatype vec;
    MPI_Type_vector(4, 2, 5, MPI_INT, &vec); /* 8 ints out of 17 */
    MPI_Type_commit(&vec);
    int src[17], dst[8];
    for (int i = 0; i < 17; i++) src[i] = rank * 100 + i;
    MPI_Status st;
    MPI_Sendrecv(src, 1, vec, right, 3, dst, 8, MPI_INT, left, 3, MPI_COMM_WORLD, &st);
    int expect[8] = {0, 1, 5, 6, 10, 11, 15, 16};
    for (int i = 0; i < 8; i++) CHECK(dst[i] == left * 100 + expect[i], "vector element %d: %d", i, dst[i]);
    int n;
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == 8, "vector count %d", n);
    MPI_Type_free(&vec);
}

static void collectives(void)
{
    int v = rank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size + 1) / 2, "allreduce %d", sum);
    int b = rank == size - 1 ? 42 : 0;
    MPI_Bcast(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD);
    CHECK(b == 42, "bcast %d", b);
    int *all = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "allgather %d: %d", i, all[i]);
    int *to = malloc(sizeof(int) * (size_t)size), *from = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) to[i] = rank * size + i;
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(from[i] == i * size + rank, "alltoall %d: %d", i, from[i]);
    /* A non-commutative reduction is applied in rank order. */
    double m[4] = {1, (double)rank, 0, 2}, r[4], e[4] = {1, 0, 0, 1};
    MPI_Op op;
    extern void matmul(void *, void *, int *, MPI_Datatype *);
    MPI_Op_create(matmul, 0, &op);
    MPI_Reduce(m, r, 4, MPI_DOUBLE, op, 0, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) { /* e = e * M(i), rank order */
        double mi[4] = {1, (double)i, 0, 2}, t[4];
        memcpy(t, mi, sizeof t);
        int four = 4;
        MPI_Datatype d = MPI_DOUBLE;
        matmul(e, t, &four, &d);
        memcpy(e, t, sizeof t);
    }
    if (rank == 0) CHECK(r[1] == e[1] && r[3] == e[3], "non-commutative reduce %g %g, expected %g %g", r[1], r[3], e[1], e[3]);
    MPI_Op_free(&op);
    MPI_Barrier(MPI_COMM_WORLD);
    free(all);
    free(to);
    free(from);
}

/* 2x2 matrices [a b; c d]: inout = in * inout (not commutative). */
void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    double *a = in, *b = inout;
    for (int i = 0; i < *len / 4; i++, a += 4, b += 4) {
        double r0 = a[0] * b[0] + a[1] * b[2], r1 = a[0] * b[1] + a[1] * b[3];
        double r2 = a[2] * b[0] + a[3] * b[2], r3 = a[2] * b[1] + a[3] * b[3];
        b[0] = r0, b[1] = r1, b[2] = r2, b[3] = r3;
    }
}

/* Split into even and odd ranks (each spans the sites with block placement), and into
 * halves (each within a site): sums, messages and ranks on each; a duplicate of world. */
static void communicators(void)
{
    MPI_Comm parity, half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &parity); /* keys reverse the order */
    int prank, psize;
    MPI_Comm_rank(parity, &prank);
    MPI_Comm_size(parity, &psize);
    int members = (size - rank % 2 + 1) / 2;
    CHECK(psize == members && prank == members - 1 - rank / 2, "split rank %d of %d", prank, psize);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, parity);
    int expect = 0;
    for (int r = rank % 2; r < size; r += 2) expect += r;
    CHECK(sum == expect, "split allreduce %d, expected %d", sum, expect);
    if (prank == 0) {
        for (int i = 1; i < psize; i++) {
            int v;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 4, parity, &st);
            CHECK(v == st.MPI_SOURCE, "split message %d from %d", v, st.MPI_SOURCE);
        }
    } else {
        MPI_Send(&prank, 1, MPI_INT, 0, 4, parity);
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
    int hsize;
    MPI_Comm_size(half, &hsize);
    CHECK(hsize == (rank < size / 2 ? size / 2 : size - size / 2), "half size %d", hsize);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int drank;
    MPI_Comm_rank(dup, &drank);
    CHECK(drank == rank, "dup rank %d", drank);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&parity);
    CHECK(parity == MPI_COMM_NULL, "freed communicator not null");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks or more");
    if (argc > 1 && strcmp(argv[1], "refused") == 0) { /* a call not carried yet */
        MPI_Group g;
        MPI_Comm_group(MPI_COMM_WORLD, &g);
    }
    all_pairs();
    wildcard_order();
    nonblocking();
    datatypes();
    collectives();
    communicators();
    printf("zip_check rank %d of %d: ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
