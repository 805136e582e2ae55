/* Every collective with counts of zero (issue 43): a collective that moves no data must
 * still return, whatever way the layer waits for it.
 *
 *   zero_counts all    every count zero, blocking and nonblocking, plain, v and w forms
 *   zero_counts some   the v and w forms with zero counts from and to odd ranks only,
 *                      the others one int each (checked)
 *   zero_counts all some   both, one after the other
 *
 * Each rank prints "zero_counts RANK: ok, N calls" at the end; a wrong value exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, calls;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "zero_counts rank %d: ", rank);                  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

/* Run a collective blocking, then its nonblocking twin and wait. */
#define BOTH(blocking, nonblocking)                                          \
    do {                                                                     \
        MPI_Request req_;                                                    \
        blocking;                                                            \
        nonblocking;                                                         \
        MPI_Wait(&req_, MPI_STATUS_IGNORE);                                  \
        calls += 2;                                                          \
    } while (0)
#define REQ (&req_)

static void all_zero(void)
{
    int s[1] = {7}, r[1] = {7};
    int *zeros = calloc((size_t)size, sizeof(int)), *displs = calloc((size_t)size, sizeof(int));
    MPI_Datatype *types = malloc(sizeof *types * (size_t)size);
    for (int i = 0; i < size; i++) types[i] = MPI_INT;
    MPI_Comm w = MPI_COMM_WORLD;
    BOTH(MPI_Barrier(w), MPI_Ibarrier(w, REQ));
    BOTH(MPI_Bcast(s, 0, MPI_INT, 0, w), MPI_Ibcast(s, 0, MPI_INT, 0, w, REQ));
    BOTH(MPI_Reduce(s, r, 0, MPI_INT, MPI_SUM, 0, w), MPI_Ireduce(s, r, 0, MPI_INT, MPI_SUM, 0, w, REQ));
    BOTH(MPI_Allreduce(s, r, 0, MPI_INT, MPI_SUM, w), MPI_Iallreduce(s, r, 0, MPI_INT, MPI_SUM, w, REQ));
    BOTH(MPI_Gather(s, 0, MPI_INT, r, 0, MPI_INT, 0, w), MPI_Igather(s, 0, MPI_INT, r, 0, MPI_INT, 0, w, REQ));
    BOTH(MPI_Gatherv(s, 0, MPI_INT, r, zeros, displs, MPI_INT, 0, w),
         MPI_Igatherv(s, 0, MPI_INT, r, zeros, displs, MPI_INT, 0, w, REQ));
    BOTH(MPI_Scatter(s, 0, MPI_INT, r, 0, MPI_INT, 0, w), MPI_Iscatter(s, 0, MPI_INT, r, 0, MPI_INT, 0, w, REQ));
    BOTH(MPI_Scatterv(s, zeros, displs, MPI_INT, r, 0, MPI_INT, 0, w),
         MPI_Iscatterv(s, zeros, displs, MPI_INT, r, 0, MPI_INT, 0, w, REQ));
    BOTH(MPI_Allgather(s, 0, MPI_INT, r, 0, MPI_INT, w), MPI_Iallgather(s, 0, MPI_INT, r, 0, MPI_INT, w, REQ));
    BOTH(MPI_Allgatherv(s, 0, MPI_INT, r, zeros, displs, MPI_INT, w),
         MPI_Iallgatherv(s, 0, MPI_INT, r, zeros, displs, MPI_INT, w, REQ));
    BOTH(MPI_Alltoall(s, 0, MPI_INT, r, 0, MPI_INT, w), MPI_Ialltoall(s, 0, MPI_INT, r, 0, MPI_INT, w, REQ));
    BOTH(MPI_Alltoallv(s, zeros, displs, MPI_INT, r, zeros, displs, MPI_INT, w),
         MPI_Ialltoallv(s, zeros, displs, MPI_INT, r, zeros, displs, MPI_INT, w, REQ));
    BOTH(MPI_Alltoallw(s, zeros, displs, types, r, zeros, displs, types, w),
         MPI_Ialltoallw(s, zeros, displs, types, r, zeros, displs, types, w, REQ));
    BOTH(MPI_Reduce_scatter(s, r, zeros, MPI_INT, MPI_SUM, w),
         MPI_Ireduce_scatter(s, r, zeros, MPI_INT, MPI_SUM, w, REQ));
    BOTH(MPI_Reduce_scatter_block(s, r, 0, MPI_INT, MPI_SUM, w),
         MPI_Ireduce_scatter_block(s, r, 0, MPI_INT, MPI_SUM, w, REQ));
    BOTH(MPI_Scan(s, r, 0, MPI_INT, MPI_SUM, w), MPI_Iscan(s, r, 0, MPI_INT, MPI_SUM, w, REQ));
    BOTH(MPI_Exscan(s, r, 0, MPI_INT, MPI_SUM, w), MPI_Iexscan(s, r, 0, MPI_INT, MPI_SUM, w, REQ));
    CHECK(s[0] == 7 && r[0] == 7, "a collective of zero counts wrote %d %d", s[0], r[0]);
    free(zeros);
    free(displs);
    free(types);
}

/* The v and w forms: even ranks send and receive one int to and from even ranks, odd
 * ranks none at all. */
static void some_zero(void)
{
    int *sc = calloc((size_t)size, sizeof(int)), *rc = calloc((size_t)size, sizeof(int));
    int *sd = calloc((size_t)size, sizeof(int)), *rd = calloc((size_t)size, sizeof(int));
    int *sw = calloc((size_t)size, sizeof(int)), *rw = calloc((size_t)size, sizeof(int));
    int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype *types = malloc(sizeof *types * (size_t)size);
    int even = rank % 2 == 0;
    for (int i = 0; i < size; i++) {
        types[i] = MPI_INT;
        sc[i] = rc[i] = even && i % 2 == 0;
        sd[i] = rd[i] = i;
        sw[i] = rw[i] = i * (int)sizeof(int);
        out[i] = 1000 * rank + i;
    }
    MPI_Comm w = MPI_COMM_WORLD;
    for (int form = 0; form < 4; form++) {
        for (int i = 0; i < size; i++) in[i] = -1;
        MPI_Request req;
        if (form == 0) MPI_Alltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, w);
        if (form == 1) MPI_Ialltoallv(out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, w, &req);
        if (form == 2) MPI_Alltoallw(out, sc, sw, types, in, rc, rw, types, w);
        if (form == 3) MPI_Ialltoallw(out, sc, sw, types, in, rc, rw, types, w, &req);
        if (form % 2) MPI_Wait(&req, MPI_STATUS_IGNORE);
        calls++;
        for (int i = 0; i < size; i++)
            CHECK(in[i] == (rc[i] ? 1000 * i + rank : -1), "alltoall form %d: from %d got %d", form, i, in[i]);
    }
    /* Gatherv and Scatterv at root 0: odd ranks contribute nothing. */
    int mine = even ? 100 + rank : -5;
    for (int i = 0; i < size; i++) in[i] = -1;
    MPI_Gatherv(&mine, even, MPI_INT, in, rc, rd, MPI_INT, 0, w);
    if (rank == 0)
        for (int i = 0; i < size; i++) CHECK(in[i] == (i % 2 == 0 ? 100 + i : -1), "gatherv: %d from %d", in[i], i);
    int got = -1;
    MPI_Scatterv(out, sc, sd, MPI_INT, &got, even, MPI_INT, 0, w);
    CHECK(got == (even ? rank : -1), "scatterv: %d", got);
    for (int i = 0; i < size; i++) sc[i] = i % 2 == 0; /* what each rank contributes */
    MPI_Allgatherv(&mine, even, MPI_INT, in, sc, rd, MPI_INT, w);
    for (int i = 0; i < size; i++) CHECK(in[i] == (i % 2 == 0 ? 100 + i : -1), "allgatherv: %d from %d", in[i], i);
    calls += 3;
    free(sc), free(rc), free(sd), free(rd), free(sw), free(rw), free(out), free(in), free(types);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc || argc < 2; i++) {
        if (argc < 2 || (strcmp(argv[i], "all") && strcmp(argv[i], "some"))) {
            if (rank == 0) fprintf(stderr, "usage: zero_counts all|some...\n");
            MPI_Finalize();
            return 2;
        }
        if (strcmp(argv[i], "all") == 0) all_zero();
        else some_zero();
    }
    printf("zero_counts %d: ok, %d calls\n", rank, calls);
    MPI_Finalize();
    return 0;
}
