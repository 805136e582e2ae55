/* The profile's gathers to rank 0 and its JSON strings, for profile_write.c and
 * profile_io.c: carried across sites when the communicator spans them (zipper forwarding:
 * src/world/zip), else the site's MPI's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "profiler.h"
#include "world.h"
#include "world_calls.h"

void ist_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void ist_gather_to_0(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                     MPI_Comm comm)
{
    int answer;
    if (!ist_world_spans(comm) || !ist_span_Gather(s, sn, st, r, rn, rt, 0, comm, &answer))
        PMPI_Gather(s, sn, st, r, rn, rt, 0, comm);
}

static void gatherv_to_0(const void *s, int sn, void *r, const int *rn, const int *displs, MPI_Comm comm)
{
    int answer;
    if (!ist_world_spans(comm) ||
        !ist_span_Gatherv(s, sn, MPI_BYTE, r, rn, displs, MPI_BYTE, 0, comm, &answer))
        PMPI_Gatherv(s, sn, MPI_BYTE, r, rn, displs, MPI_BYTE, 0, comm);
}

void ist_sum_to_0(const uint64_t *mine, uint64_t *sum, MPI_Comm comm)
{
    int answer;
    if (!ist_world_spans(comm) ||
        !ist_span_Reduce(mine, sum, 1, MPI_UINT64_T, MPI_SUM, 0, comm, &answer))
        PMPI_Reduce(mine, sum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
}

/* Every rank's n rows of `size` bytes, gathered on rank 0: the rows rank after rank, and in
 * *counts how many each rank sent (both NULL on other ranks). Collective over comm. */
void *ist_gather_rows(const void *mine, int n, size_t size, int **counts, MPI_Comm comm)
{
    int me, ranks;
    ist_world_Comm_rank(comm, &me);
    ist_world_Comm_size(comm, &ranks);
    int *each = NULL, *bytes = NULL, *displs = NULL;
    char *all = NULL;
    if (me == 0) {
        each = calloc((size_t)ranks, sizeof *each);
        bytes = calloc((size_t)ranks, sizeof *bytes);
        displs = calloc((size_t)ranks, sizeof *displs);
    }
    ist_gather_to_0(&n, 1, MPI_INT, each, 1, MPI_INT, comm);
    if (me == 0) {
        int total = 0;
        for (int r = 0; r < ranks; r++) {
            displs[r] = total * (int)size;
            bytes[r] = each[r] * (int)size;
            total += each[r];
        }
        all = calloc((size_t)total + 1, size);
    }
    gatherv_to_0(mine, n * (int)size, all, bytes, displs, comm);
    free(bytes);
    free(displs);
    *counts = each;
    return all;
}
