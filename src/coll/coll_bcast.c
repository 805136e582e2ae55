/* Broadcast: the P-LogP paper's two-layer pipelined broadcast. Segments go from the root
 * down a d_w-ary tree of cluster coordinators and, inside every cluster, down a d_l-ary
 * tree; the optimizer of src/model (the paper's heuristic) picks the segment size (at most
 * IST_EAGER_SEGMENT: a larger one waits for the MPI's rendezvous, which the paper's model
 * does not count) and both degrees for the message size, the number of clusters and the
 * largest cluster, from the model parameters (ISTHMUS_PLOGP). The choice is cached per
 * communicator and size. ISTHMUS_COLL_SEGMENT forces the segment size; the algorithm "sequential" sends
 * the message whole (one segment), "flat" also makes both trees flat. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

#define TAG_BCAST 7002

static struct ist_bcast_shape shape_for(struct ist_hier *h, long bytes)
{
    for (int i = 0; i < IST_SHAPE_CACHE; i++)
        if (h->shapes[i].shape.segments > 0 && h->shapes[i].bytes == bytes) return h->shapes[i].shape;
    struct ist_bcast_shape s = ist_bcast_best_pipelined_under(ist_hier_model(), h->nclusters, h->max_count,
                                                              bytes, IST_EAGER_SEGMENT);
    struct ist_shape_entry *e = &h->shapes[h->next_shape];
    h->next_shape = (h->next_shape + 1) % IST_SHAPE_CACHE;
    e->bytes = bytes;
    e->shape = s;
    return s;
}

/* Whether count elements of type lie in memory as type_size * count contiguous bytes. */
static int contiguous(int count, MPI_Datatype type, MPI_Aint *offset)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    int size;
    PMPI_Type_size(type, &size);
    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    *offset = true_lb;
    return count <= 1 ? true_extent == size : (extent == size && true_extent == size);
}

int ist_hier_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    struct ist_hier *h = ist_hier_enter(IST_COLL_BCAST, comm, ist_type_bytes(count, datatype));
    if (!h) return IST_HIER_DECLINED;
    int tsize;
    PMPI_Type_size(datatype, &tsize);
    long bytes = (long)count * tsize; /* the same at every rank: the type signatures match */
    if (bytes == 0) return ist_hier_leave(MPI_SUCCESS);

    struct ist_bcast_shape s = shape_for(h, bytes);
    const char *forced = ist_hier_algorithm(IST_COLL_BCAST);
    long segment = s.segment;
    int dw = s.degree, dl = s.lan_degree;
    if (strcmp(forced, "sequential") == 0 || strcmp(forced, "flat") == 0) segment = bytes;
    if (strcmp(forced, "flat") == 0) {
        dw = h->nclusters - 1;
        dl = h->max_count - 1;
    }
    if (ist_hier_forced_segment() > 0) segment = ist_hier_forced_segment();
    if (segment <= 0 || segment > bytes) segment = bytes;
    ist_hier_log(h, IST_COLL_BCAST, "%ld bytes: segment %ld, wan degree %d, lan degree %d, predicted %.0f us",
                 bytes, segment, dw, dl, s.time);

    MPI_Aint offset;
    char *data, *packed = NULL;
    if (contiguous(count, datatype, &offset)) {
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
    return ist_hier_leave(rc);
}
