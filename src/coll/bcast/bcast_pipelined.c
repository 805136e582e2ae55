/* Bcast, pipelined: the P-LogP paper's two-layer pipelined broadcast, its shape (segment
 * size, wide-area and local tree degrees) from the paper's optimizer (src/model,
 * docs/model.md) for the message size, the number of clusters and the largest cluster,
 * with the segment at most IST_EAGER_SEGMENT (a larger one waits for the MPI's
 * rendezvous, which the paper's model does not count). Cached per communicator and size
 * (the last IST_SHAPE_CACHE sizes).
 *
 * Chosen: the default shape wherever the selector takes the broadcast.
 * Cost: the paper's bound, (h_w + h_l)(L + gamma(s)) + (M/s - 1) gamma(s) with
 * gamma(s) = max(g(s), or(s) + d s(s)) per layer, h the trees' heights. */
#include "coll_algorithms.h"

struct ist_bcast_shape ist_bcast_pipelined(struct ist_hier *h, long bytes)
{
    for (int i = 0; i < IST_SHAPE_CACHE; i++)
        if (h->shapes[i].shape.segments > 0 && h->shapes[i].bytes == bytes) return h->shapes[i].shape;
    struct ist_bcast_shape s = ist_bcast_best_pipelined_under(h->model, h->nclusters, h->max_count,
                                                              bytes, IST_EAGER_SEGMENT);
    struct ist_shape_entry *e = &h->shapes[h->next_shape];
    h->next_shape = (h->next_shape + 1) % IST_SHAPE_CACHE;
    e->bytes = bytes;
    e->shape = s;
    return s;
}

