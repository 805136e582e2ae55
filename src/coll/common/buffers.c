/* Buffers, packing and point-to-point helpers shared by the hierarchical collectives.
 *
 * Data that moves between clusters travels either typed (count elements of the user's
 * datatype, when sender and receiver both have it) or packed (MPI_Pack, MPI_PACKED on the
 * wire), so that derived datatypes need no special case. */
#include <stdlib.h>
#include <string.h>

#include "hier.h"

int ist_h_isend_typed(const struct ist_hier *h, const void *buf, int count, MPI_Datatype type,
                      int dest, int tag, MPI_Request *req)
{
    ist_hier_note_wan(h, dest, ist_type_bytes(count, type), 1);
    return ist_world_isend(buf, count, type, dest, tag, h->comm, req);
}

int ist_h_irecv_typed(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                      int source, int tag, MPI_Request *req)
{
    return ist_world_irecv(buf, count, type, source, tag, h->comm, req);
}

int ist_h_isend(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                MPI_Request *req)
{
    return ist_h_isend_typed(h, buf, (int)bytes, MPI_PACKED, dest, tag, req);
}

int ist_h_irecv(const struct ist_hier *h, void *buf, long bytes, int source, int tag,
                MPI_Request *req)
{
    return ist_h_irecv_typed(h, buf, (int)bytes, MPI_PACKED, source, tag, req);
}

/* A packed message whose size only the sender knows: its length (one MPI_LONG), then the
 * bytes as segments, all eager: the receiver learns the size from the first message
 * while the segments are already on their way (no rendezvous, no extra round trip). */
int ist_h_isend_any_size(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                         struct ist_reqs *q)
{
    long *len = malloc(sizeof *len); /* freed by the caller's ist_reqs_wait: see q->owned */
    *len = bytes;
    ist_reqs_own(q, len);
    ist_hier_note_wan(h, dest, (long)sizeof *len, 1);
    int rc = ist_world_isend(len, 1, MPI_LONG, dest, tag, h->comm, ist_reqs_next(q));
    if (rc == MPI_SUCCESS && bytes > 0) rc = ist_h_isend_segments(h, buf, bytes, dest, tag, q);
    return rc;
}

int ist_h_recv_any_size(const struct ist_hier *h, int source, int tag, char **buf, long *bytes)
{
    long n = 0;
    int rc = ist_world_recv(&n, 1, MPI_LONG, source, tag, h->comm, MPI_STATUS_IGNORE);
    *buf = malloc(rc == MPI_SUCCESS && n > 0 ? (size_t)n : 1);
    *bytes = rc == MPI_SUCCESS ? n : 0;
    if (rc != MPI_SUCCESS || n == 0) return rc;
    struct ist_reqs q = {0};
    rc = ist_h_irecv_segments(h, *buf, n, source, tag, &q);
    int waited = ist_reqs_wait(&q);
    return rc == MPI_SUCCESS ? waited : rc;
}

/* Through the wrapper, so that an oversubscribed run waits sleeping (src/world/wait.c). */
int ist_h_waitall(int n, MPI_Request *reqs)
{
    if (n == 0) return MPI_SUCCESS;
    /* Statuses rather than MPI_STATUSES_IGNORE, which GCC takes for a 0-byte array. */
    MPI_Status *st = malloc((size_t)n * sizeof *st);
    int rc = ist_world_waitall(n, reqs, st);
    free(st);
    return rc;
}

long ist_wan_segment(const struct ist_hier *h) { return h->segment > 0 ? h->segment : IST_EAGER_SEGMENT; }

MPI_Request *ist_reqs_next(struct ist_reqs *q)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 16;
        q->r = realloc(q->r, (size_t)q->cap * sizeof *q->r);
    }
    return &q->r[q->n++];
}

/* One message of `bytes` at buf as segments: isend or irecv on each. */
static int segments_do(const struct ist_hier *h, char *buf, long bytes, int peer, int tag,
                       struct ist_reqs *q, int send)
{
    long seg = ist_wan_segment(h), off = 0;
    int rc = MPI_SUCCESS;
    do {
        long len = bytes - off < seg ? bytes - off : seg;
        rc = send ? ist_h_isend(h, buf + off, len, peer, tag, ist_reqs_next(q))
                  : ist_h_irecv(h, buf + off, len, peer, tag, ist_reqs_next(q));
        off += len;
    } while (rc == MPI_SUCCESS && off < bytes);
    return rc;
}

int ist_h_isend_segments(const struct ist_hier *h, const void *buf, long bytes, int dest, int tag,
                         struct ist_reqs *q)
{
    return segments_do(h, (char *)buf, bytes, dest, tag, q, 1);
}

int ist_h_irecv_segments(const struct ist_hier *h, void *buf, long bytes, int source, int tag,
                         struct ist_reqs *q)
{
    return segments_do(h, buf, bytes, source, tag, q, 0);
}

/* count elements of type at buf as messages of at most ist_wan_segment(h) bytes, each
 * whole elements (at least one): isend or irecv on each. */
static int typed_segments_do(const struct ist_hier *h, char *buf, int count, MPI_Datatype type,
                             int peer, int tag, struct ist_reqs *q, int send)
{
    const long size = ist_type_bytes(1, type);
    const MPI_Aint extent = ist_extent(type);
    long per = size > 0 ? ist_wan_segment(h) / size : count;
    if (per < 1) per = 1;
    int off = 0, rc = MPI_SUCCESS;
    do {
        int n = count - off < per ? count - off : (int)per;
        char *at = buf + (MPI_Aint)off * extent;
        rc = send ? ist_h_isend_typed(h, at, n, type, peer, tag, ist_reqs_next(q))
                  : ist_h_irecv_typed(h, at, n, type, peer, tag, ist_reqs_next(q));
        off += n;
    } while (rc == MPI_SUCCESS && off < count);
    return rc;
}

int ist_h_isend_typed_segments(const struct ist_hier *h, const void *buf, int count,
                               MPI_Datatype type, int dest, int tag, struct ist_reqs *q)
{
    return typed_segments_do(h, (char *)buf, count, type, dest, tag, q, 1);
}

int ist_h_irecv_typed_segments(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                               int source, int tag, struct ist_reqs *q)
{
    return typed_segments_do(h, buf, count, type, source, tag, q, 0);
}

void ist_reqs_own(struct ist_reqs *q, void *mem)
{
    if (q->nowned == q->owned_cap) {
        q->owned_cap = q->owned_cap ? 2 * q->owned_cap : 4;
        q->owned = realloc(q->owned, (size_t)q->owned_cap * sizeof *q->owned);
    }
    q->owned[q->nowned++] = mem;
}

int ist_reqs_wait(struct ist_reqs *q)
{
    int rc = ist_h_waitall(q->n, q->r);
    for (int i = 0; i < q->nowned; i++) free(q->owned[i]);
    free(q->owned);
    free(q->r);
    *q = (struct ist_reqs){0};
    return rc;
}

/* p0 op p1 op ... op p(n-1), left to right (MPI's order for non-commutative operations):
 * MPI_Reduce_local(in, inout) computes inout = in op inout, so each step folds the result
 * so far into the next part. Overwrites parts[1..n); returns the part that holds it. */
void *ist_fold(void **parts, int n, int count, MPI_Datatype type, MPI_Op op)
{
    for (int i = 1; i < n; i++) PMPI_Reduce_local(parts[i - 1], parts[i], count, type, op);
    return parts[n - 1];
}

int ist_h_fold_clusters(const struct ist_hier *h, void *buf, int count, MPI_Datatype type,
                        MPI_Op op, int tag, int send_own)
{
    void **parts = malloc((size_t)h->nclusters * sizeof *parts);
    struct ist_tmp *tmp = calloc((size_t)h->nclusters, sizeof *tmp);
    struct ist_reqs q = {0};
    int rc = MPI_SUCCESS;
    for (int c = 0; c < h->nclusters && rc == MPI_SUCCESS; c++) {
        if (c == h->my_cluster) {
            parts[c] = buf;
            continue;
        }
        rc = ist_tmp_alloc(&tmp[c], count, type);
        parts[c] = tmp[c].base;
        if (rc == MPI_SUCCESS)
            rc = ist_h_irecv_typed_segments(h, parts[c], count, type, h->first[c], tag, &q);
        if (rc == MPI_SUCCESS && send_own)
            rc = ist_h_isend_typed_segments(h, buf, count, type, h->first[c], tag, &q);
    }
    int waited = ist_reqs_wait(&q);
    if (rc == MPI_SUCCESS) rc = waited;
    if (rc == MPI_SUCCESS)
        rc = ist_copy_typed(ist_fold(parts, h->nclusters, count, type, op), buf, count, type);
    for (int c = 0; c < h->nclusters; c++) ist_tmp_free(&tmp[c]);
    free(tmp);
    free(parts);
    return rc;
}

long ist_block_bytes(const struct ist_block *b)
{
    return ist_type_bytes(b->count, b->type);
}

int ist_copy_block(const struct ist_block *from, const struct ist_block *to)
{
    long bytes = ist_block_bytes(from), pos = 0;
    char *packed = malloc(bytes > 0 ? (size_t)bytes : 1);
    int rc = ist_pack(from->buf, from->count, from->type, packed, bytes, &pos);
    pos = 0;
    if (rc == MPI_SUCCESS) rc = ist_unpack(packed, bytes, &pos, (void *)to->buf, to->count, to->type);
    free(packed);
    return rc;
}

/* Blocks b[0..n) packed one after the other; (*off)[j] is where block j starts, (*off)[n]
 * the end. Packing comes first because in place the receive buffer is the send buffer. */
char *ist_pack_blocks(int n, const struct ist_block *b, long **off, int *rc)
{
    long *o = *off = malloc((size_t)(n + 1) * sizeof(long));
    o[0] = 0;
    for (int j = 0; j < n; j++) o[j + 1] = o[j] + ist_block_bytes(&b[j]);
    char *out = malloc((size_t)o[n] + 1);
    for (int j = 0; j < n && *rc == MPI_SUCCESS; j++) {
        long p = o[j];
        *rc = ist_pack(b[j].buf, b[j].count, b[j].type, out, o[n], &p);
    }
    return out;
}


/* ---- the linear algorithms in eager segments (gather_linear.c, scatter_linear.c) ---- */

/* Whether the pair (root, other) moves its block in eager segments (packed), or whole,
 * straight from and into the callers' buffers, paced by the MPI's rendezvous: where the
 * segments would flood the wide-area link (above). */
int ist_linear_in_segments_pair(const struct ist_hier *h, int root, int other, long bytes)
{
    const int c = h->cluster_of[other];
    return c == h->cluster_of[root] || ist_linear_in_segments(bytes, h->count[c]);
}

/* Offsets of the packed blocks b[0..n) one after the other: off[r] .. off[r + 1]. The
 * root's own block and the blocks that move whole take no room. */
long *ist_linear_offsets(const struct ist_hier *h, const struct ist_block *b, int root)
{
    long *off = malloc((size_t)(h->size + 1) * sizeof *off);
    off[0] = 0;
    for (int r = 0; r < h->size; r++) {
        long bytes = r == root ? 0 : ist_block_bytes(&b[r]);
        off[r + 1] = off[r] + (ist_linear_in_segments_pair(h, root, r, bytes) ? bytes : 0);
    }
    return off;
}

/* ---- the rooted collectives' blocks (gather/, scatter/) --------------------------------- */

struct ist_block *ist_rank_blocks(const struct ist_hier *h, const void *buf, int count,
                                  const int *counts, const int *displs, MPI_Datatype type)
{
    struct ist_block *b = malloc((size_t)h->size * sizeof *b);
    MPI_Aint ext = ist_extent(type);
    for (int r = 0; r < h->size; r++) {
        MPI_Aint at = counts ? (MPI_Aint)displs[r] : (MPI_Aint)r * count;
        b[r] = (struct ist_block){(const char *)buf + at * ext, counts ? counts[r] : count, type};
    }
    return b;
}
