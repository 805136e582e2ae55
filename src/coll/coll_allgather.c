/* Allgather and Allgatherv: each cluster gathers its ranks' blocks (packed) at its
 * coordinator; coordinators send their cluster's blocks to every other coordinator at
 * once; each coordinator broadcasts all blocks in its cluster. One wide-area latency,
 * each block crosses each link once. Every rank knows every block's size (the counts are
 * arguments everywhere), so no sizes travel. */
#include <stdlib.h>

#include "hier.h"

#define TAG_ALLGATHER 7007

/* mine: this rank's block (NULL: in place, it is all[rank]); all: where each rank's goes. */
static int allgather_blocks(struct ist_hier *h, const struct ist_block *mine,
                            const struct ist_block *all)
{
    int c = h->my_cluster, rc = MPI_SUCCESS;
    long *bytes = malloc((size_t)h->size * sizeof(long));
    long *cl_off = malloc((size_t)(h->nclusters + 1) * sizeof(long)); /* packed, cluster order */
    long total = 0;
    for (int k = 0; k < h->nclusters; k++) {
        cl_off[k] = total;
        for (int j = 0; j < h->count[k]; j++) {
            int r = h->members[h->member_start[k] + j];
            bytes[r] = ist_block_bytes(&all[r]);
            total += bytes[r];
        }
    }
    cl_off[h->nclusters] = total;
    char *packed = malloc((size_t)total + 1);
    /* my block goes where the cluster gather puts it */
    int *sizes = malloc((size_t)h->count[c] * sizeof(int)), *displs = malloc((size_t)h->count[c] * sizeof(int));
    for (int j = 0, off = 0; j < h->count[c]; off += sizes[j], j++) {
        sizes[j] = (int)bytes[h->members[h->member_start[c] + j]];
        displs[j] = off;
    }
    long pos = cl_off[c] + displs[h->local_rank[h->rank]];
    const struct ist_block *src = mine ? mine : &all[h->rank];
    rc = ist_pack(src->buf, src->count, src->type, packed, total, &pos);
    char *mine_packed = packed + cl_off[c] + displs[h->local_rank[h->rank]];
    if (rc == MPI_SUCCESS)
        rc = MPI_Gatherv(h->local_rank[h->rank] == 0 ? MPI_IN_PLACE : mine_packed,
                         sizes[h->local_rank[h->rank]], MPI_PACKED, packed + cl_off[c], sizes, displs,
                         MPI_PACKED, 0, h->local);
    if (rc == MPI_SUCCESS && h->local_rank[h->rank] == 0) {
        MPI_Request *req = malloc(2 * (size_t)h->nclusters * sizeof *req);
        int n = 0;
        for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
            if (k == c) continue;
            rc = ist_h_irecv(h, packed + cl_off[k], cl_off[k + 1] - cl_off[k], h->first[k], TAG_ALLGATHER, &req[n++]);
            if (rc == MPI_SUCCESS)
                rc = ist_h_isend(h, packed + cl_off[c], cl_off[c + 1] - cl_off[c], h->first[k], TAG_ALLGATHER, &req[n++]);
        }
        if (rc == MPI_SUCCESS) rc = ist_h_waitall(n, req);
        free(req);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Bcast(packed, (int)total, MPI_PACKED, 0, h->local);
    for (int k = 0; k < h->nclusters && rc == MPI_SUCCESS; k++) {
        long p = cl_off[k];
        for (int j = 0; j < h->count[k] && rc == MPI_SUCCESS; j++) {
            int r = h->members[h->member_start[k] + j];
            if (r == h->rank && !mine) {
                p += bytes[r];
                continue;
            }
            rc = ist_unpack(packed, p + bytes[r], &p, (void *)all[r].buf, all[r].count, all[r].type);
        }
    }
    free(sizes);
    free(displs);
    free(packed);
    free(cl_off);
    free(bytes);
    return rc;
}

int ist_hier_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHER, comm);
    if (!h) return IST_HIER_DECLINED;
    ist_hier_log(h, IST_COLL_ALLGATHER, "cluster gather, coordinators exchange directly, cluster bcast");
    struct ist_block mine = {sendbuf, sendcount, sendtype};
    struct ist_block *all = malloc((size_t)h->size * sizeof *all);
    MPI_Aint ext = ist_extent(recvtype);
    for (int r = 0; r < h->size; r++)
        all[r] = (struct ist_block){(char *)recvbuf + (MPI_Aint)r * recvcount * ext, recvcount, recvtype};
    int rc = allgather_blocks(h, sendbuf == MPI_IN_PLACE ? NULL : &mine, all);
    free(all);
    return ist_hier_leave(rc);
}

int ist_hier_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_ALLGATHERV, comm);
    if (!h) return IST_HIER_DECLINED;
    ist_hier_log(h, IST_COLL_ALLGATHERV, "cluster gather, coordinators exchange directly, cluster bcast");
    struct ist_block mine = {sendbuf, sendcount, sendtype};
    struct ist_block *all = malloc((size_t)h->size * sizeof *all);
    MPI_Aint ext = ist_extent(recvtype);
    for (int r = 0; r < h->size; r++)
        all[r] = (struct ist_block){(char *)recvbuf + (MPI_Aint)displs[r] * ext, recvcounts[r], recvtype};
    int rc = allgather_blocks(h, sendbuf == MPI_IN_PLACE ? NULL : &mine, all);
    free(all);
    return ist_hier_leave(rc);
}
