/* Communicator churn for the soak (issue 43): communicators made, used once and freed,
 * over and over, the way libraries and solvers make them per phase.
 *
 *   comm_churn [ROUNDS [no-inter]]      (default 50 rounds, with intercommunicators)
 *
 * Each round: MPI_Comm_dup of the world, MPI_Comm_split by a key that changes each round
 * (so that clusters interleave), MPI_Comm_create from a group of every other rank, an
 * intercommunicator between the two halves of the split (not with no-inter: zipper
 * forwarding does not carry MPI_Intercomm_create yet); on each a collective whose result
 * is checked; then everything is freed. Each rank prints "comm_churn rank R: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void check_sum(MPI_Comm comm, const char *what)
{
    int n, me, sum;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (sum != n * (n - 1) / 2) {
        fprintf(stderr, "comm_churn rank %d: %s: sum of ranks %d, expected %d\n", rank, what,
                sum, n * (n - 1) / 2);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    int inter_too = !(argc > 2 && strcmp(argv[2], "no-inter") == 0);
    MPI_Group world, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    for (int r = 0; r < rounds; r++) {
        MPI_Comm dup, half, sub, inter;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        check_sum(dup, "dup");
        int color = rank % 2, key = (rank * 7 + r) % size;
        MPI_Comm_split(dup, color, key, &half);
        check_sum(half, "split");
        MPI_Comm_create(MPI_COMM_WORLD, evens, &sub);
        if (sub != MPI_COMM_NULL) {
            check_sum(sub, "create");
            MPI_Comm_free(&sub);
        }
        if (size >= 2 && inter_too) {
            /* The halves' leaders are world ranks 0 (evens) and 1 (odds). */
            MPI_Group hg;
            MPI_Comm_group(half, &hg);
            int leader_world = color, leader;
            MPI_Group_translate_ranks(world, 1, &leader_world, hg, &leader);
            MPI_Group_free(&hg);
            MPI_Intercomm_create(half, leader, MPI_COMM_WORLD, 1 - color, 77 + r % 8, &inter);
            /* Each half learns the largest world rank of the other. */
            int got = -1, largest_odd = size % 2 ? size - 2 : size - 1;
            MPI_Allreduce(&rank, &got, 1, MPI_INT, MPI_MAX, inter);
            int expect = color == 0 ? largest_odd : (size % 2 ? size - 1 : size - 2);
            if (got != expect) {
                fprintf(stderr, "comm_churn rank %d: intercommunicator allreduce %d, expected %d\n",
                        rank, got, expect);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Comm_free(&inter);
        }
        MPI_Comm_free(&half);
        MPI_Comm_free(&dup);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&world);
    printf("comm_churn rank %d: ok\n", rank);
    MPI_Finalize();
    return 0;
}
