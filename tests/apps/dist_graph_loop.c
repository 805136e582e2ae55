/* Creates distributed-graph communicators over and over (MPI_Dist_graph_create_adjacent
 * and MPI_Dist_graph_create, reorder 0 and 1, which Open MPI hands to its treematch
 * component), runs a Barrier and a Bcast on each and frees it. With the layer's
 * collectives on, every new communicator gets a hierarchy (a duplicate and a split) at its
 * first collective: the communicator-creation agreement (Open MPI's next context id) must
 * not hang between them (issue 26). Prints "dist_graph_loop: ok".
 *
 *   dist_graph_loop [ROUNDS]      (default 20) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    /* A ring: each rank hears from its left neighbour and talks to its right one. */
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int r = 0; r < rounds; r++) {
        MPI_Comm graph;
        const int reorder = r % 2;
        if ((r / 2) % 2 == 0) {
            MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                           MPI_UNWEIGHTED, MPI_INFO_NULL, reorder, &graph);
        } else {
            int degree = 1;
            MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &degree, &right, MPI_UNWEIGHTED,
                                  MPI_INFO_NULL, reorder, &graph);
        }
        MPI_Barrier(graph);
        int value = r, grank;
        MPI_Comm_rank(graph, &grank);
        if (grank != 0) value = -1;
        MPI_Bcast(&value, 1, MPI_INT, 0, graph);
        if (value != r) {
            fprintf(stderr, "dist_graph_loop: rank %d round %d got %d\n", rank, r, value);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Comm_free(&graph);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dist_graph_loop: ok\n");
    MPI_Finalize();
    return 0;
}
