/* Barrier: the clusters' own barriers around one exchange of empty messages between
 * coordinators, each sending to every other: one wide-area latency on the critical path,
 * where a dissemination barrier over the whole communicator needs log2(size) rounds, most
 * of them across the WAN.
 *
 * Chosen: the model predicts it faster than the MPI's own (a dissemination barrier needs
 * log2 P rounds, most across the WAN).
 * Cost: 2 barrier_l(n) + L_w + (C-1) g_w(0).
 */
#include <stdlib.h>

#include "hier.h"

#define TAG_BARRIER 7001

int ist_wan_Barrier(MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_BARRIER, comm, 0, IST_NO_ROOT);
    if (!h) return 0;
    ist_hier_log(h, IST_COLL_BARRIER, "coordinators exchange directly");
    int rc = ist_own_Barrier(h->cluster_comm); /* everyone in my cluster has arrived */
    if (rc == MPI_SUCCESS && h->rank == h->first[h->my_cluster]) {
        MPI_Request *req = malloc(2 * (size_t)h->nclusters * sizeof *req);
        int n = 0;
        for (int c = 0; c < h->nclusters; c++) {
            if (c == h->my_cluster) continue;
            ist_h_irecv(h, NULL, 0, h->first[c], TAG_BARRIER, &req[n++]);
            ist_h_isend(h, NULL, 0, h->first[c], TAG_BARRIER, &req[n++]);
        }
        rc = ist_h_waitall(n, req);
        free(req);
    }
    if (rc == MPI_SUCCESS) rc = ist_own_Barrier(h->cluster_comm); /* ... and so has everyone else */
    return ist_hier_served(answer, rc);
}
