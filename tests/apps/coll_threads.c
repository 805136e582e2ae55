/* MPI_THREAD_MULTIPLE: THREADS threads run collectives at the same time, each on its own
 * duplicate of MPI_COMM_WORLD. With the argument "create", the threads' first collectives
 * build those communicators' hierarchies at once, and each thread also makes and
 * frees a communicator of its own now and then (reversed rank order), whose hierarchy
 * libisthmus builds while the other threads run collectives or build theirs. Every result
 * is compared with the same call on a twin communicator named "isthmus:native" (the MPI's
 * own collectives) or with the value computed here. Prints "coll_threads: ok" when all
 * agree. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3
#define ROUNDS 12
#define MAX_COUNT 3000

static int create;

struct job {
    int t;
    MPI_Comm comm, twin;
    int bad;
};

static void compare(struct job *j, const char *what, int round, const int *got, const int *want, int n)
{
    if (memcmp(got, want, (size_t)n * sizeof *got) == 0) return;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "coll_threads: rank %d thread %d round %d: %s differs\n", rank, j->t, round, what);
    j->bad++;
}

static void *run(void *arg)
{
    struct job *j = arg;
    int rank, size;
    MPI_Comm_rank(j->comm, &rank);
    MPI_Comm_size(j->comm, &size);
    int *in = malloc((size_t)MAX_COUNT * size * sizeof *in);
    int *got = malloc((size_t)MAX_COUNT * size * sizeof *got);
    int *want = malloc((size_t)MAX_COUNT * size * sizeof *want);
    for (int round = 0; round < ROUNDS; round++) {
        int n = 1 + (round * 977 + j->t * 331) % MAX_COUNT, k = n / size + 1;
        for (int i = 0; i < n * size; i++) in[i] = rank * 1000003 + i * 7 + j->t * 13 + round;
        MPI_Allreduce(in, got, n, MPI_INT, MPI_SUM, j->comm);
        MPI_Allreduce(in, want, n, MPI_INT, MPI_SUM, j->twin);
        compare(j, "Allreduce", round, got, want, n);
        int root = (round + j->t) % size;
        memcpy(got, in, (size_t)n * sizeof *in);
        memcpy(want, in, (size_t)n * sizeof *in);
        MPI_Bcast(got, n, MPI_INT, root, j->comm);
        MPI_Bcast(want, n, MPI_INT, root, j->twin);
        compare(j, "Bcast", round, got, want, n);
        MPI_Allgather(in, k, MPI_INT, got, k, MPI_INT, j->comm);
        MPI_Allgather(in, k, MPI_INT, want, k, MPI_INT, j->twin);
        compare(j, "Allgather", round, got, want, k * size);
        MPI_Alltoall(in, k, MPI_INT, got, k, MPI_INT, j->comm);
        MPI_Alltoall(in, k, MPI_INT, want, k, MPI_INT, j->twin);
        compare(j, "Alltoall", round, got, want, k * size);
        MPI_Barrier(j->comm);
        if (create && round % 4 == j->t % 4) {
            /* a new communicator, ranks reversed: its hierarchy is built while the other
             * threads run collectives on theirs */
            MPI_Comm reversed;
            MPI_Comm_split(j->comm, 0, size - rank, &reversed);
            int one = rank + 1, sum = 0;
            MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, reversed);
            int expect = size * (size + 1) / 2;
            compare(j, "Allreduce on a new communicator", round, &sum, &expect, 1);
            MPI_Comm_free(&reversed);
        }
    }
    free(in);
    free(got);
    free(want);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "coll_threads: the MPI gives thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    create = argc > 1 && strcmp(argv[1], "create") == 0;
    struct job jobs[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (struct job){.t = t};
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].twin);
        MPI_Comm_set_name(jobs[t].twin, "isthmus:native");
        /* without "create", hierarchies are built here, one at a time */
        if (!create) MPI_Barrier(jobs[t].comm);
    }
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, run, &jobs[t]);
    int bad = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        bad += jobs[t].bad;
        MPI_Comm_free(&jobs[t].comm);
        MPI_Comm_free(&jobs[t].twin);
    }
    int any = 0, rank;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && any) printf("coll_threads: %d results differ\n", any);
    if (rank == 0 && !any) printf("coll_threads: ok\n");
    MPI_Finalize();
    return any != 0;
}
