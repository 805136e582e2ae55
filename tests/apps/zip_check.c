/* Checks MPI semantics across zipper forwarding (tests/python/test_zipper.py): run it on
 * 4 or more ranks whose sites differ; every check compares with what MPI 3.1 promises and
 * the program exits 1 naming the first check that fails. Each rank prints one line
 * "zip_check rank R of N: ok". With the argument "refused" it first calls something
 * the layer does not carry across yet. */
#include <mpi.h>
#include <stddef.h>
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
    MPI_Barrier(MPI_COMM_WORLD); /* no later message may meet those wildcard receives */
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
    /* Matched probes: Mprobe + Mrecv, and Improbe + Imrecv, from both sides. */
    int token[2] = {rank, 21};
    MPI_Request sr[2];
    MPI_Isend(token, 2, MPI_INT, right, 21, MPI_COMM_WORLD, &sr[0]);
    MPI_Issend(token, 2, MPI_INT, left, 22, MPI_COMM_WORLD, &sr[1]);
    MPI_Message msg;
    MPI_Status ms;
    MPI_Mprobe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &msg, &ms);
    CHECK(ms.MPI_SOURCE == left && ms.MPI_TAG == 21, "mprobe source %d tag %d", ms.MPI_SOURCE, ms.MPI_TAG);
    int got[2] = {-1, -1};
    MPI_Mrecv(got, 2, MPI_INT, &msg, &ms);
    CHECK(got[0] == left && ms.MPI_SOURCE == left && msg == MPI_MESSAGE_NULL, "mrecv %d from %d", got[0], ms.MPI_SOURCE);
    int found = 0;
    while (!found) MPI_Improbe(right, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &msg, &ms);
    MPI_Request ir;
    MPI_Imrecv(got, 2, MPI_INT, &msg, &ir);
    MPI_Wait(&ir, &ms);
    CHECK(got[0] == right && ms.MPI_SOURCE == right && ms.MPI_TAG == 22, "imrecv %d from %d tag %d", got[0], ms.MPI_SOURCE, ms.MPI_TAG);
    MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);

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

/* Rendezvous (more than 64 KiB) with derived types on either side: the bulk data are
 * packed at the sender and unpacked at the receiver once the last slice has come. */
static void rendezvous(void)
{
    enum { N = 40000 }; /* 160 KB of ints, every other one of 2N */
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *spread = malloc(2 * N * sizeof *spread), *packed = malloc(N * sizeof *packed);
    for (int i = 0; i < 2 * N; i++) spread[i] = rank * 1000000 + i;
    MPI_Status st;
    MPI_Sendrecv(spread, 1, every_other, right, 21, packed, N, MPI_INT, left, 21, MPI_COMM_WORLD, &st);
    for (int i = 0; i < N; i += 997) CHECK(packed[i] == left * 1000000 + 2 * i, "packed %d: %d", i, packed[i]);
    int n;
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(n == N, "rendezvous count %d", n);
    for (int i = 0; i < N; i++) packed[i] = rank * 1000000 + i;
    for (int i = 0; i < 2 * N; i++) spread[i] = -1;
    MPI_Sendrecv(packed, N, MPI_INT, right, 22, spread, 1, every_other, left, 22, MPI_COMM_WORLD, &st);
    for (int i = 0; i < N; i += 991) {
        CHECK(spread[2 * i] == left * 1000000 + i, "spread %d: %d", i, spread[2 * i]);
        CHECK(spread[2 * i + 1] == -1, "gap %d written: %d", i, spread[2 * i + 1]);
    }
    MPI_Type_free(&every_other);
    free(spread);
    free(packed);
}

/* Broadcasts cut into segments of unequal size (2048 bytes: 683, 683, 682), back to back:
 * a local rank's receives must take the segments in order (native messages go to the
 * oldest receive that could match them). */
static void segmented_bcast(void)
{
    char buf[2048];
    for (int it = 0; it < 20; it++) {
        if (rank == 0) memset(buf, 'a' + it, sizeof buf);
        MPI_Bcast(buf, (int)sizeof buf, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (size_t i = 0; i < sizeof buf; i += 97) CHECK(buf[i] == 'a' + it, "bcast %d byte %zu", it, i);
    }
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
    int keyval, attribute = 42, *copied = NULL, found = 0;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &attribute);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int drank;
    MPI_Comm_rank(dup, &drank);
    CHECK(drank == rank, "dup rank %d", drank);
    MPI_Comm_get_attr(dup, keyval, &copied, &found);
    CHECK(found && copied == &attribute, "dup did not copy the attribute");
    MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    MPI_Comm_free_keyval(&keyval);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&parity);
    CHECK(parity == MPI_COMM_NULL, "freed communicator not null");
}

/* Bsend, Rsend, Sendrecv_replace, Waitany, Testall, Request_free, a struct type with gaps. */
static void more_p2p(void)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int pack;
    MPI_Pack_size(4, MPI_INT, MPI_COMM_WORLD, &pack);
    char *attached = malloc((size_t)pack + MPI_BSEND_OVERHEAD);
    MPI_Buffer_attach(attached, pack + MPI_BSEND_OVERHEAD);
    int four[4] = {rank, rank, rank, rank}, in[4];
    MPI_Request r;
    MPI_Irecv(in, 4, MPI_INT, left, 31, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: Rsend is allowed */
    MPI_Bsend(four, 2, MPI_INT, right, 30, MPI_COMM_WORLD);
    MPI_Rsend(four, 4, MPI_INT, right, 31, MPI_COMM_WORLD);
    int idx = -1;
    MPI_Status st;
    MPI_Waitany(1, &r, &idx, &st);
    CHECK(idx == 0 && in[3] == left && st.MPI_SOURCE == left, "rsend/waitany %d %d", idx, in[3]);
    MPI_Recv(in, 2, MPI_INT, left, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in[1] == left, "bsend %d", in[1]);
    int size_out;
    void *detached;
    MPI_Buffer_detach(&detached, &size_out);
    free(attached);

    int v = rank;
    MPI_Sendrecv_replace(&v, 1, MPI_INT, right, 32, left, 32, MPI_COMM_WORLD, &st);
    CHECK(v == left && st.MPI_SOURCE == left, "sendrecv_replace %d", v);

    struct item { char c; double d; int i; } items[3], got[3];
    MPI_Datatype item;
    int lens[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct item, c), offsetof(struct item, d), offsetof(struct item, i)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, lens, disp, types, &item);
    MPI_Type_commit(&item);
    for (int i = 0; i < 3; i++) items[i] = (struct item){(char)('a' + rank), rank + i / 10.0, rank * 10 + i};
    MPI_Request two[2];
    MPI_Irecv(got, 3, item, left, 33, MPI_COMM_WORLD, &two[0]);
    MPI_Isend(items, 3, item, right, 33, MPI_COMM_WORLD, &two[1]);
    int flag = 0;
    while (!flag) MPI_Testall(2, two, &flag, MPI_STATUSES_IGNORE);
    CHECK(got[2].c == 'a' + left && got[2].i == left * 10 + 2 && got[1].d == left + 0.1, "struct type");
    int elements;
    MPI_Status est;
    MPI_Sendrecv(items, 1, item, right, 34, got, 3, item, left, 34, MPI_COMM_WORLD, &est);
    MPI_Get_elements(&est, MPI_DOUBLE, &elements);
    MPI_Get_count(&est, item, &flag);
    CHECK(flag == 1, "struct count %d", flag);
    MPI_Type_free(&item);

    /* A receive freed while under way still receives. */
    MPI_Request lost;
    int late = -1;
    MPI_Irecv(&late, 1, MPI_INT, left, 35, MPI_COMM_WORLD, &lost);
    MPI_Request_free(&lost);
    CHECK(lost == MPI_REQUEST_NULL, "request_free");
    MPI_Send(&rank, 1, MPI_INT, right, 35, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Persistent requests, started several times, with Startall and Waitall. */
static void persistent(void)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int out = 0, in = -1;
    MPI_Request req[2];
    MPI_Recv_init(&in, 1, MPI_INT, left, 40, MPI_COMM_WORLD, &req[0]);
    MPI_Send_init(&out, 1, MPI_INT, right, 40, MPI_COMM_WORLD, &req[1]);
    for (int round = 0; round < 3; round++) {
        out = rank * 10 + round;
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        CHECK(in == left * 10 + round, "persistent round %d: %d", round, in);
        CHECK(req[0] != MPI_REQUEST_NULL, "a persistent request became null");
    }
    MPI_Status st;
    MPI_Wait(&req[0], &st); /* inactive: returns at once */
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
}

/* Groups of world, Comm_create, Comm_create_group, Comm_split_type, Comm_compare. */
static void groups(void)
{
    MPI_Group world, evens, back;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int gsize, grank;
    MPI_Group_size(world, &gsize);
    MPI_Group_rank(world, &grank);
    CHECK(gsize == size && grank == rank, "world group %d %d", gsize, grank);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    int esize;
    MPI_Group_size(evens, &esize);
    CHECK(esize == (size + 1) / 2, "evens %d", esize);
    int from[2] = {0, 1}, to[2];
    MPI_Group_translate_ranks(evens, 2, from, world, to);
    CHECK(to[0] == 0 && to[1] == 2, "translate %d %d", to[0], to[1]);
    MPI_Group_union(evens, world, &back);
    int cmp;
    MPI_Group_compare(back, world, &cmp);
    CHECK(cmp == MPI_SIMILAR, "union similar %d", cmp);
    MPI_Group_free(&back);

    MPI_Comm ecomm;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ecomm);
    if (rank % 2 == 0) {
        int er, sum;
        MPI_Comm_rank(ecomm, &er);
        CHECK(er == rank / 2, "comm_create rank %d", er);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ecomm);
        int expect = 0;
        for (int r = 0; r < size; r += 2) expect += r;
        CHECK(sum == expect, "comm_create allreduce %d", sum);
        MPI_Comm gcomm;
        MPI_Comm_create_group(MPI_COMM_WORLD, evens, 7, &gcomm);
        MPI_Comm_compare(gcomm, ecomm, &cmp);
        CHECK(cmp == MPI_CONGRUENT, "create_group congruent %d", cmp);
        MPI_Barrier(gcomm);
        MPI_Comm_free(&gcomm);
        MPI_Comm_free(&ecomm);
    } else {
        CHECK(ecomm == MPI_COMM_NULL, "not a member but got a communicator");
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world);

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nsize;
    MPI_Comm_size(node, &nsize);
    CHECK(nsize >= 1 && nsize < size, "split_type %d", nsize); /* its site's part at most */
    MPI_Comm_free(&node);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_IDENT, "compare world %d", cmp);
    int *tag_ub, found;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    CHECK(found && *tag_ub >= 32767, "MPI_TAG_UB");
}

/* A periodic ring of all ranks and a 2 x (size/2) grid; its rows. */
static void topologies(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int coords[2], grank, src, dst, status;
    MPI_Comm_rank(grid, &grank);
    MPI_Cart_coords(grid, grank, 2, coords);
    CHECK(grank == rank && coords[0] == rank / dims[1] && coords[1] == rank % dims[1], "cart coords");
    MPI_Topo_test(grid, &status);
    CHECK(status == MPI_CART, "topo_test %d", status);
    MPI_Cart_shift(grid, 0, 1, &src, &dst);
    int up = ((coords[0] + 1) % dims[0]) * dims[1] + coords[1];
    CHECK(dst == up, "cart_shift dst %d, expected %d", dst, up);
    int v = -1;
    MPI_Sendrecv(&grank, 1, MPI_INT, dst, 50, &v, 1, MPI_INT, src, 50, grid, MPI_STATUS_IGNORE);
    CHECK(v == src, "shifted %d from %d", v, src);
    MPI_Cart_shift(grid, 1, 1, &src, &dst);
    CHECK(coords[1] + 1 < dims[1] ? dst == grank + 1 : dst == MPI_PROC_NULL, "non-periodic shift %d", dst);
    int keep[2] = {1, 0}, crank, csize; /* the columns: they span the sites */
    MPI_Comm col;
    MPI_Cart_sub(grid, keep, &col);
    MPI_Comm_rank(col, &crank);
    MPI_Comm_size(col, &csize);
    CHECK(csize == dims[0] && crank == coords[0], "cart_sub %d of %d", crank, csize);
    int sum;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, col);
    int expect = 0;
    for (int r = 0; r < dims[0]; r++) expect += r * dims[1] + coords[1];
    CHECK(sum == expect, "column sum %d", sum);
    MPI_Comm_free(&col);
    MPI_Comm_free(&grid);
}

/* Scan, Exscan, Reduce_scatter_block, Alltoallw. */
static void more_collectives(void)
{
    int v = rank + 1, scan, exscan = -7;
    MPI_Scan(&v, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(scan == (rank + 1) * (rank + 2) / 2, "scan %d", scan);
    MPI_Exscan(&v, &exscan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0) CHECK(exscan == rank * (rank + 1) / 2, "exscan %d", exscan);
    int *parts = malloc(sizeof(int) * 2 * (size_t)size), mine[2];
    for (int i = 0; i < 2 * size; i++) parts[i] = i;
    MPI_Reduce_scatter_block(parts, mine, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(mine[0] == 2 * rank * size && mine[1] == (2 * rank + 1) * size, "reduce_scatter_block %d %d", mine[0], mine[1]);
    free(parts);
    int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
    int *sendw = malloc(sizeof(int) * (size_t)size), *recvw = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int i = 0; i < size; i++) sc[i] = 1, sd[i] = i * (int)sizeof(int), ty[i] = MPI_INT, sendw[i] = rank * 100 + i;
    MPI_Alltoallw(sendw, sc, sd, ty, recvw, sc, sd, ty, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) CHECK(recvw[i] == i * 100 + rank, "alltoallw %d: %d", i, recvw[i]);
    free(sc), free(sd), free(sendw), free(recvw), free(ty);
}

/* Nonblocking collectives: several under way at once, and a barrier that completes only
 * while the ranks keep receiving (the NBX pattern: it must not block in MPI_Ibarrier). */
static void nonblocking_collectives(void)
{
    int sum = 0, b = rank == 1 ? 9 : 0, *all = malloc(sizeof(int) * (size_t)size);
    int *to = malloc(sizeof(int) * (size_t)size), *from = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) to[i] = rank * size + i;
    int scan = 0, red = 0, v = rank + 1;
    MPI_Request r[7];
    MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    MPI_Ibcast(&b, 1, MPI_INT, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r[2]);
    MPI_Ialltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD, &r[3]);
    MPI_Iscan(&v, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[4]);
    MPI_Ireduce(&v, &red, 1, MPI_INT, MPI_PROD, size - 1, MPI_COMM_WORLD, &r[5]);
    MPI_Ibarrier(MPI_COMM_WORLD, &r[6]);
    MPI_Waitall(7, r, MPI_STATUSES_IGNORE);
    CHECK(sum == size * (size - 1) / 2, "iallreduce %d", sum);
    CHECK(b == 9, "ibcast %d", b);
    for (int i = 0; i < size; i++) CHECK(all[i] == i && from[i] == i * size + rank, "iallgather/ialltoall %d", i);
    CHECK(scan == (rank + 1) * (rank + 2) / 2, "iscan %d", scan);
    int fact = 1;
    for (int i = 2; i <= size; i++) fact *= i;
    if (rank == size - 1) CHECK(red == fact, "ireduce %d", red);

    /* NBX: synchronous sends to the next two ranks; receive what comes while not all own
     * sends are done; then a barrier, still receiving, until it completes. */
    int targets[2] = {(rank + 1) % size, (rank + 2) % size}, got = 0, token = rank;
    MPI_Request sends[2], barrier = MPI_REQUEST_NULL;
    for (int i = 0; i < 2; i++) MPI_Issend(&token, 1, MPI_INT, targets[i], 60, MPI_COMM_WORLD, &sends[i]);
    for (int done = 0; !done;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got++;
        }
        if (barrier == MPI_REQUEST_NULL) {
            int sent = 0;
            MPI_Testall(2, sends, &sent, MPI_STATUSES_IGNORE);
            if (sent) MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
        } else {
            MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        }
    }
    CHECK(got == 2, "nbx received %d", got);
    free(all), free(to), free(from);
}

/* One message of mib MiB from rank 0 to the last rank (in another site), and back. */
static void large(long mib)
{
    size_t n = (size_t)mib << 17; /* doubles */
    double *buf = malloc(n * sizeof *buf);
    CHECK(buf != NULL, "no memory for %ld MiB", mib);
    int last = size - 1;
    if (rank == 0) {
        for (size_t i = 0; i < n; i++) buf[i] = (double)i;
        MPI_Send(buf, (int)n, MPI_DOUBLE, last, 70, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)n, MPI_DOUBLE, last, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < n; i += 4099) CHECK(buf[i] == 2.0 * (double)i, "large reply at %zu", i);
    } else if (rank == last) {
        MPI_Status st;
        MPI_Recv(buf, (int)n, MPI_DOUBLE, 0, 70, MPI_COMM_WORLD, &st);
        int count;
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK((size_t)count == n, "large count %d", count);
        for (size_t i = 0; i < n; i++) buf[i] *= 2.0;
        MPI_Send(buf, (int)n, MPI_DOUBLE, 0, 71, MPI_COMM_WORLD);
    }
    free(buf);
    if (rank == 0) printf("zip_check large %ld MiB: ok\n", mib);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks or more");
    if (argc > 2 && strcmp(argv[1], "large") == 0) { /* one message of argv[2] MiB across */
        large(atol(argv[2]));
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "refused") == 0) { /* a call not carried yet */
        MPI_Comm dup;
        MPI_Request r;
        MPI_Comm_idup(MPI_COMM_WORLD, &dup, &r);
    }
    all_pairs();
    wildcard_order();
    nonblocking();
    datatypes();
    rendezvous();
    segmented_bcast();
    collectives();
    communicators();
    more_p2p();
    persistent();
    groups();
    topologies();
    more_collectives();
    nonblocking_collectives();
    printf("zip_check rank %d of %d: ok\n", rank, size);
    MPI_Finalize();
    return 0;
}
