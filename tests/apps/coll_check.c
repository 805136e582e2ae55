/* coll_check: every blocking collective through the layer (MPI_X: the WAN-aware form when
 * isthmus enables it) against the MPI's own (PMPI_X), in one run, on a seeded random
 * sweep of cases; the result buffers must be identical byte for byte.
 *
 * A case draws a communicator (world, a duplicate, a split into two with shuffled rank
 * order, so that clusters interleave, a reversed order, a subgroup), a collective, a
 * count (0 included), a datatype (predefined, strided vector, mixed send/receive types of
 * the same signature), an operation (predefined, user-defined commutative, and a
 * non-commutative 2x2 matrix product), a root and whether MPI_IN_PLACE is used. Every
 * rank draws the same case from the seed. Data are small integers (also as doubles), so
 * sums are exact whatever the order of operations.
 *
 * Usage: coll_check [SEED [CASES]]; exits 1 after reporting the first mismatches. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTS 5

static uint64_t rng_state;
static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int pick(int n) { return (int)(next_random() % (uint64_t)n); }

/* ---- datatypes and operations -------------------------------------------------------- */

enum { T_INT, T_DOUBLE, T_VECTOR, T_MATRIX, T_CHAR, NTYPES };
static MPI_Datatype types[NTYPES];
static const char *type_names[NTYPES] = {"int", "double", "vector", "matrix", "char"};
static MPI_Op op_matmul, op_xor;

/* 2x2 matrices of unsigned ints, multiplied modulo 2^32: associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        unsigned r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                         a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static void xor_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] ^= a[i];
}

static void make_types(void)
{
    types[T_INT] = MPI_INT;
    types[T_DOUBLE] = MPI_DOUBLE;
    types[T_CHAR] = MPI_CHAR;
    MPI_Type_vector(2, 1, 2, MPI_INT, &types[T_VECTOR]); /* ints 0 and 2 of every 3 */
    MPI_Type_commit(&types[T_VECTOR]);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &types[T_MATRIX]);
    MPI_Type_commit(&types[T_MATRIX]);
    MPI_Op_create(matmul, 0, &op_matmul);
    MPI_Op_create(xor_op, 1, &op_xor);
}

static MPI_Aint extent_of(int t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(types[t], &lb, &extent);
    return extent;
}

/* Buffer for count elements of type t, filled from (tag, rank): small integer values. */
static char *filled(int t, int count, int tag, int rank)
{
    size_t bytes = (size_t)(count > 0 ? count : 1) * (size_t)extent_of(t) + 16;
    char *b = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) b[i] = (char)(0x5A ^ i);
    if (t == T_DOUBLE) {
        double *d = (double *)b;
        for (int i = 0; i < count; i++) d[i] = (double)((tag * 7 + rank * 13 + i) % 101);
    } else if (t == T_INT || t == T_VECTOR || t == T_MATRIX) {
        int per = t == T_INT ? 1 : t == T_VECTOR ? 3 : 4;
        int *v = (int *)b;
        for (int i = 0; i < count * per; i++) v[i] = (tag * 5 + rank * 11 + i * 3) % 97;
    } else {
        for (int i = 0; i < count; i++) b[i] = (char)('a' + (tag + rank + i) % 26);
    }
    return b;
}

static size_t buffer_bytes(int t, int count)
{
    return (size_t)(count > 0 ? count : 1) * (size_t)extent_of(t) + 16;
}

/* ---- one case -------------------------------------------------------------------------- */

struct result {
    char *data;
    size_t bytes;
};

struct spec {
    int coll, type, count, root, in_place, op, mixed;
};

static const char *coll_names[] = {"Barrier", "Bcast", "Reduce", "Allreduce", "Gather",
                                   "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv",
                                   "Alltoall", "Alltoallv", "Alltoallw", "Reduce_scatter",
                                   "Reduce_scatter_block", "Scan", "Exscan"};
#define NCOLLS ((int)(sizeof coll_names / sizeof coll_names[0]))

/* The layer's entry or the MPI's own. */
#define CALL(native, name, ...) ((native) ? PMPI_##name(__VA_ARGS__) : MPI_##name(__VA_ARGS__))

static MPI_Op op_of(const struct spec *s)
{
    switch (s->op) {
    case 0: return s->type == T_DOUBLE ? MPI_MAX : MPI_SUM;
    case 1: return s->type == T_MATRIX ? op_matmul : op_xor;
    default: return s->type == T_DOUBLE ? MPI_SUM : MPI_BXOR;
    }
}

/* Per-rank counts and displacements (with gaps) for the v forms, the same everywhere. */
static void v_layout(int n, int base, int *counts, int *displs, int seed)
{
    int off = 0;
    for (int i = 0; i < n; i++) {
        counts[i] = base == 0 ? 0 : (seed + i * 7) % (base + 2);
        displs[i] = off + (i % 2);
        off = displs[i] + counts[i];
    }
}

static int v_total(int n, const int *counts, const int *displs)
{
    int end = 0;
    for (int i = 0; i < n; i++)
        if (displs[i] + counts[i] > end) end = displs[i] + counts[i];
    return end;
}

static struct result run(const struct spec *s, MPI_Comm comm, int native, int tag)
{
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    MPI_Datatype ty = types[s->type];
    /* A mixed case sends vectors and receives their signature as ints. */
    int rt = s->mixed ? T_INT : s->type, rmul = s->mixed ? 2 : 1;
    MPI_Datatype rty = types[rt];
    int c = s->count;
    struct result r = {0};
    char *sb = NULL, *rb = NULL;
    int *counts = malloc((size_t)n * sizeof(int)), *displs = malloc((size_t)n * sizeof(int));
    int *rcounts = malloc((size_t)n * sizeof(int)), *rdispls = malloc((size_t)n * sizeof(int));
    MPI_Datatype *stypes = malloc((size_t)n * sizeof(MPI_Datatype));
    MPI_Datatype *rtypes = malloc((size_t)n * sizeof(MPI_Datatype));
    int rcount = 0;
    MPI_Op op = op_of(s);
    switch (s->coll) {
    case 0:
        CALL(native, Barrier, comm);
        break;
    case 1:
        rb = filled(s->type, c, tag, rank == s->root ? 0 : 1000 + rank);
        rcount = c;
        rt = s->type;
        CALL(native, Bcast, rb, c, ty, s->root, comm);
        break;
    case 2:
    case 3:
    case 15:
    case 16:
        sb = filled(s->type, c, tag, rank);
        rb = filled(s->type, c, tag + 1, rank);
        rcount = c;
        rt = s->type;
        {
            const void *send = s->in_place && (s->coll != 2 || rank == s->root) ? MPI_IN_PLACE : sb;
            if (send == MPI_IN_PLACE) memcpy(rb, sb, buffer_bytes(s->type, c));
            if (s->coll == 2) CALL(native, Reduce, send, rb, c, ty, op, s->root, comm);
            if (s->coll == 3) CALL(native, Allreduce, send, rb, c, ty, op, comm);
            if (s->coll == 15) CALL(native, Scan, send, rb, c, ty, op, comm);
            if (s->coll == 16) CALL(native, Exscan, send, rb, c, ty, op, comm);
        }
        break;
    case 4:
    case 8:
        sb = filled(s->type, c, tag, rank);
        rcount = c * rmul * n;
        rb = filled(rt, rcount, tag + 1, rank);
        {
            const void *send = s->in_place && (s->coll == 8 || rank == s->root) ? MPI_IN_PLACE : sb;
            if (send == MPI_IN_PLACE) { /* my block is already in place: use the same type */
                rt = s->type;
                rty = ty;
                rmul = 1;
                free(rb);
                rcount = c * n;
                rb = filled(rt, rcount, tag + 1, rank);
                MPI_Sendrecv(sb, c, ty, 0, 0, rb + (size_t)rank * c * extent_of(rt), c, ty, 0, 0,
                             MPI_COMM_SELF, MPI_STATUS_IGNORE);
            }
            if (s->coll == 4)
                CALL(native, Gather, send, c, ty, rb, c * rmul, rty, s->root, comm);
            else
                CALL(native, Allgather, send, c, ty, rb, c * rmul, rty, comm);
        }
        break;
    case 5:
    case 9:
        v_layout(n, c, counts, displs, tag);
        sb = filled(s->type, counts[rank], tag, rank);
        rcount = v_total(n, counts, displs);
        rb = filled(s->type, rcount, tag + 1, rank);
        rt = s->type;
        {
            const void *send = s->in_place && (s->coll == 9 || rank == s->root) ? MPI_IN_PLACE : sb;
            if (send == MPI_IN_PLACE)
                MPI_Sendrecv(sb, counts[rank], ty, 0, 0, rb + (size_t)displs[rank] * extent_of(rt),
                             counts[rank], ty, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
            if (s->coll == 5)
                CALL(native, Gatherv, send, counts[rank], ty, rb, counts, displs, ty, s->root, comm);
            else
                CALL(native, Allgatherv, send, counts[rank], ty, rb, counts, displs, ty, comm);
        }
        break;
    case 6:
        sb = filled(s->type, c * n, tag, rank);
        rcount = c * rmul;
        rb = filled(rt, rcount, tag + 1, rank);
        if (s->in_place && rank == s->root) {
            CALL(native, Scatter, sb, c, ty, MPI_IN_PLACE, c * rmul, rty, s->root, comm);
            rcount = c * n; /* compare the root's send buffer, which must be untouched */
            free(rb);
            rb = sb;
            sb = NULL;
            rt = s->type;
        } else {
            CALL(native, Scatter, sb, c, ty, rb, c * rmul, rty, s->root, comm);
        }
        break;
    case 7:
        v_layout(n, c, counts, displs, tag);
        sb = filled(s->type, v_total(n, counts, displs), tag, rank);
        rcount = counts[rank];
        rb = filled(s->type, rcount, tag + 1, rank);
        rt = s->type;
        CALL(native, Scatterv, sb, counts, displs, ty, s->in_place && rank == s->root ? MPI_IN_PLACE : rb,
             counts[rank], ty, s->root, comm);
        break;
    case 10:
        sb = filled(s->type, c * n, tag, rank);
        rcount = c * rmul * n;
        rb = filled(rt, rcount, tag + 1, rank);
        CALL(native, Alltoall, sb, c, ty, rb, c * rmul, rty, comm);
        break;
    case 11:
    case 12:
        /* counts[i]: what this rank sends to i; it receives what i sends to it. */
        for (int i = 0; i < n; i++) {
            counts[i] = c == 0 ? 0 : (tag + rank * 3 + i * 5) % (c + 2);
            rcounts[i] = c == 0 ? 0 : (tag + i * 3 + rank * 5) % (c + 2);
        }
        for (int i = 0, so = 0, ro = 0; i < n; i++) {
            displs[i] = so + i % 2;
            so = displs[i] + counts[i];
            rdispls[i] = ro + (i + 1) % 2;
            ro = rdispls[i] + rcounts[i];
        }
        sb = filled(s->type, v_total(n, counts, displs), tag, rank);
        rcount = v_total(n, rcounts, rdispls);
        rb = filled(s->type, rcount, tag + 1, rank);
        rt = s->type;
        if (s->coll == 11) {
            CALL(native, Alltoallv, sb, counts, displs, ty, rb, rcounts, rdispls, ty, comm);
        } else { /* byte displacements, one type per peer */
            for (int i = 0; i < n; i++) {
                displs[i] *= (int)extent_of(s->type);
                rdispls[i] *= (int)extent_of(s->type);
                stypes[i] = rtypes[i] = ty;
            }
            CALL(native, Alltoallw, sb, counts, displs, stypes, rb, rcounts, rdispls, rtypes, comm);
        }
        break;
    case 13:
    case 14:
        for (int i = 0; i < n; i++) counts[i] = s->coll == 14 ? c : (c == 0 ? 0 : (tag + i) % (c + 2));
        {
            int total = 0;
            for (int i = 0; i < n; i++) total += counts[i];
            sb = filled(s->type, total, tag, rank);
            rb = filled(s->type, s->in_place ? total : counts[rank], tag + 1, rank);
            rcount = s->in_place ? total : counts[rank];
            rt = s->type;
            const void *send = sb;
            if (s->in_place) {
                memcpy(rb, sb, buffer_bytes(s->type, total));
                send = MPI_IN_PLACE;
            }
            if (s->coll == 13) CALL(native, Reduce_scatter, send, rb, counts, ty, op, comm);
            else CALL(native, Reduce_scatter_block, send, rb, c, ty, op, comm);
        }
        break;
    }
    if (rb) {
        r.bytes = buffer_bytes(rt, rcount);
        /* In place, only my block is defined; Exscan leaves rank 0's result undefined. */
        if ((s->coll == 13 || s->coll == 14) && s->in_place)
            r.bytes = (size_t)counts[rank] * (size_t)extent_of(rt);
        if (s->coll == 16 && rank == 0) r.bytes = 0;
        r.data = rb;
    }
    free(sb);
    free(counts);
    free(displs);
    free(rcounts);
    free(rdispls);
    free(stypes);
    free(rtypes);
    return r;
}

/* ---- communicators ------------------------------------------------------------------- */

static const char *comm_names[] = {"world", "dup", "split-shuffled", "reversed", "subgroup"};

static MPI_Comm make_comm(int kind, int wrank, int wsize)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int *keys = malloc((size_t)wsize * sizeof(int));
    for (int i = 0; i < wsize; i++) keys[i] = pick(1000);
    int color = pick(2), sub = 2 + pick(wsize - 1);
    switch (kind) {
    case 0: comm = MPI_COMM_WORLD; break;
    case 1: MPI_Comm_dup(MPI_COMM_WORLD, &comm); break;
    case 2: MPI_Comm_split(MPI_COMM_WORLD, wsize > 3 ? (wrank + color) % 2 : 0, keys[wrank], &comm); break;
    case 3: MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comm); break;
    case 4: {
        MPI_Group world, g;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        int *ranks = malloc((size_t)sub * sizeof(int));
        for (int i = 0; i < sub; i++) ranks[i] = (wsize - 1 - i + color * (wsize - sub)) % wsize;
        MPI_Group_incl(world, sub, ranks, &g);
        MPI_Comm_create(MPI_COMM_WORLD, g, &comm);
        MPI_Group_free(&g);
        MPI_Group_free(&world);
        free(ranks);
        break;
    }
    }
    free(keys);
    return comm;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    int cases = argc > 2 ? atoi(argv[2]) : 200;
    make_types();
    int verbose = getenv("COLL_CHECK_VERBOSE") != NULL;
    static const int counts[] = {0, 1, 2, 5, 17, 100, 1000, 20000};
    int bad = 0, compared = 0, reports = 0;
    for (int k = 0; k < cases; k++) {
        rng_state = seed * 1000003u + (uint64_t)k;
        int kind = pick(5);
        MPI_Comm comm = make_comm(kind, wrank, wsize);
        struct spec s = {.coll = pick(NCOLLS), .type = pick(NTYPES), .count = counts[pick(8)],
                         .in_place = pick(3) == 0, .op = pick(3), .mixed = 0};
        int reduction = s.coll == 2 || s.coll == 3 || s.coll >= 13;
        if (reduction) {
            /* int: sum, xor, bxor; double: max, sum; matrix: the product */
            static const int rtypes[] = {T_INT, T_DOUBLE, T_MATRIX};
            s.type = rtypes[pick(3)];
            if (s.type == T_MATRIX) s.op = 1;
            if (s.type == T_DOUBLE && s.op == 1) s.op = 2;
        }
        if ((s.coll == 4 || s.coll == 6 || s.coll == 8 || s.coll == 10) && s.type == T_VECTOR)
            s.mixed = pick(2);
        if (s.count >= 1000 && (s.coll == 10 || s.coll >= 11)) s.count /= 10; /* n^2 blocks */
        s.root = pick(1 << 16);
        if (comm != MPI_COMM_NULL) {
            int n, rank;
            MPI_Comm_size(comm, &n);
            MPI_Comm_rank(comm, &rank);
            s.root %= n;
            if (verbose && rank == 0)
                fprintf(stderr, "coll_check: case %d: %s on %s (%d ranks), type %s, count %d, root %d, "
                        "in-place %d, op %d\n", k, coll_names[s.coll], comm_names[kind], n,
                        type_names[s.type], s.count, s.root, s.in_place, s.op);
            struct result mine = run(&s, comm, 0, k);
            struct result theirs = run(&s, comm, 1, k);
            compared++;
            int differ = mine.bytes != theirs.bytes ||
                         (mine.bytes && memcmp(mine.data, theirs.data, mine.bytes) != 0);
            int any = 0;
            MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_MAX, comm);
            if (differ && reports < MAX_REPORTS) {
                size_t at = 0;
                while (at < mine.bytes && at < theirs.bytes && mine.data[at] == theirs.data[at]) at++;
                fprintf(stderr,
                        "coll_check: MISMATCH case %d: %s on %s (%d ranks), rank %d, type %s%s, count %d, "
                        "root %d, in-place %d, op %d: first differing byte %zu of %zu\n",
                        k, coll_names[s.coll], comm_names[kind], n, rank, type_names[s.type],
                        s.mixed ? " (received as int)" : "", s.count, s.root, s.in_place, s.op, at,
                        mine.bytes);
                reports++;
            }
            bad += differ;
            free(mine.data);
            free(theirs.data);
            if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
        }
    }
    int total_bad = 0, total_compared = 0;
    MPI_Reduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&compared, &total_compared, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("coll_check: seed %llu, %d cases, %d rank results compared, %d differ\n",
               (unsigned long long)seed, cases, total_compared, total_bad);
    MPI_Op_free(&op_matmul);
    MPI_Op_free(&op_xor);
    MPI_Type_free(&types[T_VECTOR]);
    MPI_Type_free(&types[T_MATRIX]);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
