/* Calls a profiler easily gets wrong, each with a known profile (checked by
 * tests/python/test_profile_edge_cases.py; run under ASan+UBSan by ctest). 4 ranks.
 *   paused:    MPI_Pcontrol(0) ... (1) around 7 sends: none of them counted
 *   derived:   rank 0 sends 1 vector(3 blocks of 2 ints) = 24 bytes to rank 1
 *   proc_null: every rank sends 8 bytes to MPI_PROC_NULL and receives from it
 *   in_place:  Allreduce of 2 ints and Gather of 1 int to 0, both MPI_IN_PLACE
 *   v forms:   Gatherv to 2 and Scatterv from 1 of i+1 ints per rank i; Alltoallv of
 *              ((i+j) % 3 + 1) ints from i to j; Allgatherv (in place) of i+1 ints
 *   reduce_scatter(_block), scan, exscan of ints
 *   intercomm: ranks {0,1} and {2,3}; local rank k sends 16 bytes to remote rank k
 *   probes:    0 -> 3 40 bytes via Probe+Recv; 1 -> 0 12 bytes via Mprobe+Mrecv
 *   nonblocking collectives: Ibcast of 16 bytes from 3, Iallreduce of 1 double */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void noncommutative_first(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] = ((int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 4) MPI_Abort(MPI_COMM_WORLD, 2);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    double d = 1.0;
    int ints[64] = {0}, ints2[64] = {0};
    MPI_Status st;

    MPI_Pcontrol(0);
    for (int i = 0; i < 7; i++)
        MPI_Sendrecv(&d, 1, MPI_DOUBLE, right, 1, ints, 2, MPI_INT, left, 1, MPI_COMM_WORLD, &st);
    MPI_Pcontrol(1);

    MPI_Datatype vec;
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (rank == 0) MPI_Send(ints, 1, vec, 1, 2, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(ints2, 1, vec, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Type_free(&vec);

    MPI_Send(&d, 1, MPI_DOUBLE, MPI_PROC_NULL, 3, MPI_COMM_WORLD);
    MPI_Recv(&d, 1, MPI_DOUBLE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);

    MPI_Allreduce(MPI_IN_PLACE, ints, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, ints, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else MPI_Gather(ints, 1, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);

    int counts[4], displs[4];
    for (int i = 0, off = 0; i < n; i++) {
        counts[i] = i + 1;
        displs[i] = off;
        off += i + 1;
    }
    MPI_Gatherv(ints, rank + 1, MPI_INT, ints2, counts, displs, MPI_INT, 2, MPI_COMM_WORLD);
    MPI_Scatterv(ints, counts, displs, MPI_INT, ints2, rank + 1, MPI_INT, 1, MPI_COMM_WORLD);
    int scounts[4], sdispls[4], rcounts[4], rdispls[4];
    for (int j = 0, so = 0, ro = 0; j < n; j++) {
        scounts[j] = (rank + j) % 3 + 1; /* what this rank sends to j */
        rcounts[j] = (j + rank) % 3 + 1; /* what j sends to this rank */
        sdispls[j] = so;
        rdispls[j] = ro;
        so += scounts[j];
        ro += rcounts[j];
    }
    MPI_Alltoallv(ints, scounts, sdispls, MPI_INT, ints2, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints2, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(ints, ints2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter(ints, ints2, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(ints, ints2, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(ints, ints2, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Op first;
    MPI_Op_create(noncommutative_first, 0, &first);
    MPI_Reduce(ints, ints2, 1, MPI_INT, first, 0, MPI_COMM_WORLD);
    MPI_Op_free(&first);

    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 5, &inter);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    if (rank < 2) MPI_Send(ints, 4, MPI_INT, lrank, 6, inter);
    else MPI_Recv(ints2, 4, MPI_INT, lrank, 6, inter, &st);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);

    if (rank == 0) MPI_Send(ints, 10, MPI_INT, 3, 9, MPI_COMM_WORLD);
    if (rank == 3) {
        MPI_Probe(0, 9, MPI_COMM_WORLD, &st);
        MPI_Recv(ints2, 10, MPI_INT, 0, 9, MPI_COMM_WORLD, &st);
    }
    if (rank == 1) MPI_Send(ints, 3, MPI_INT, 0, 10, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Message msg;
        MPI_Mprobe(1, 10, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(ints2, 3, MPI_INT, &msg, MPI_STATUS_IGNORE);
    }

    MPI_Request req;
    MPI_Ibcast(ints, 4, MPI_INT, 3, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Iallreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);

    if (rank == 0) printf("edge_cases: done\n");
    MPI_Finalize();
    return 0;
}
