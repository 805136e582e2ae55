/* Bcast, flat: the root sends the message whole to every other cluster's coordinator,
 * and every coordinator to each rank of its cluster: both trees flat, one segment.
 *
 * Chosen: only when forced (collectives.algorithm.bcast = "flat"): the MagPIe baseline.
 * Cost: L_w + (C-1) g_w(M) + L_l + (n-1) g_l(M). */
#include "coll_algorithms.h"

struct ist_bcast_shape ist_bcast_flat(struct ist_hier *h, long bytes)
{
    struct ist_bcast_shape s = ist_bcast_pipelined(h, bytes);
    s.segment = bytes;
    s.segments = 1;
    s.degree = h->nclusters - 1;
    s.lan_degree = h->max_count - 1;
    return s;
}
