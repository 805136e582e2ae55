/* Bcast: the entry of the two-layer broadcast. The ranks form the P-LogP paper's two
 * layers of trees: segments go from the root down a d_w-ary tree of cluster
 * coordinators and, inside every cluster, down a d_l-ary tree (common/tree.c). What the
 * algorithms differ in is the shape: the segment size and the two degrees.
 *   pipelined (bcast_pipelined.c): the optimizer's shape, the default;
 *   sequential (bcast_sequential.c): the same trees, the message whole;
 *   flat (bcast_flat.c): the message whole, both trees flat.
 * A forced segment size (collectives.segment, ISTHMUS_COLL_SEGMENT) overrides the shape's.
 * Chosen by the selector (hier_select.c) where the model predicts the pipelined broadcast faster
 * than the MPI's own; its cost is the pipelined one (bcast_pipelined.c). */
#include <stdlib.h>

#include "coll_algorithms.h"

#define TAG_BCAST 7002

int ist_wan_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, int *answer)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_BCAST, comm, ist_type_bytes(count, datatype), root);
    if (!h) return 0;
    long bytes = ist_type_bytes(count, datatype); /* equal at every rank: signatures match */
    if (bytes == 0) return ist_hier_served(answer, MPI_SUCCESS);

    int algorithm = h->algorithm != IST_ALG_NONE ? h->algorithm : IST_BCAST_DEFAULT;
    struct ist_bcast_shape s = ist_bcast_algorithms[algorithm](h, bytes);
    long segment = s.segment;
    int dw = s.degree, dl = s.lan_degree;
    if (ist_hier_forced_segment(IST_COLL_BCAST) > 0) segment = ist_hier_forced_segment(IST_COLL_BCAST);
    if (segment <= 0 || segment > bytes) segment = bytes;
    ist_hier_log(h, IST_COLL_BCAST, "%ld bytes: segment %ld, wan degree %d, lan degree %d, predicted %.0f us",
                 bytes, segment, dw, dl, s.time);

    MPI_Aint offset;
    char *data, *packed = NULL;
    if (ist_type_contiguous(count, datatype, &offset)) {
        data = (char *)buffer + offset;
    } else {
        data = packed = malloc((size_t)bytes);
        long pos = 0;
        if (h->rank == root) ist_pack(buffer, count, datatype, packed, bytes, &pos);
    }
    int *children = malloc(((size_t)(dw > 1 ? dw : 1) + (size_t)(dl > 1 ? dl : 1)) * sizeof(int));
    int parent;
    int n = ist_two_layer_tree(h->cluster_of, h->size, root, h->rank, dw, dl, &parent, children);
    long segments = (bytes + segment - 1) / segment;
    for (int i = 0; i < n; i++) ist_hier_note_wan(h, children[i], bytes, segments);
    int rc = ist_pipeline(data, bytes, segment, parent, children, n, h->comm, TAG_BCAST);
    if (packed && h->rank != root && rc == MPI_SUCCESS) {
        long pos = 0;
        rc = ist_unpack(packed, bytes, &pos, buffer, count, datatype);
    }
    free(children);
    free(packed);
    return ist_hier_served(answer, rc);
}
