/* Bcast, sequential: the pipelined broadcast's trees (bcast_pipelined.c), the message
 * sent whole, in one segment.
 *
 * Chosen: only when forced (collectives.algorithm.bcast = "sequential"); a baseline
 * for the pipeline's gain.
 * Cost: (h_w + h_l)(L + gamma(M)): every level waits for the whole message. */
#include "coll_algorithms.h"

struct ist_bcast_shape ist_bcast_sequential(struct ist_hier *h, long bytes)
{
    struct ist_bcast_shape s = ist_bcast_pipelined(h, bytes);
    s.segment = bytes;
    s.segments = 1;
    return s;
}
