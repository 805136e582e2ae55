/* Client-side write scheduling: the request's extents per server are cut into chunks of at
 * most b bytes (the schedule block), and the chunks ordered by the strategy:
 *   first-IOS   in file-offset order (every client starts on the same server);
 *   random-IOS  a random server with chunks left, then its next chunk (seeded: reproducible);
 *   hash-IOS    at step j, client i sends to server (i + j) mod N if it has a chunk left
 *               (the paper's Latin-square rotation: no two clients on one server at a step);
 *   window-IOS  hash-IOS's order; the client keeps a window of chunks in flight, spread
 *               over the servers (pio_client.c).
 * Servers order the chunks of reads among clients the same way (pio_server.c). */
#include <stdlib.h>
#include <string.h>

#include "pio_layout.h"

unsigned pio_random(unsigned *state)
{
    unsigned x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

int pio_window_pieces(int64_t window, int64_t block)
{
    int64_t n = block > 0 ? (window + block - 1) / block : 2;
    return n < 2 ? 2 : n > PIO_MAX_WINDOW ? PIO_MAX_WINDOW : (int)n;
}

void pio_schedule_free(struct pio_schedule *s)
{
    free(s->chunk);
    free(s->e);
    *s = (struct pio_schedule){0};
}

static int by_file_offset(const void *a, const void *b)
{
    const struct pio_chunk *x = a, *y = b;
    return (x->file > y->file) - (x->file < y->file);
}

/* Cuts server s's extents into chunks, appending them to `chunks` and their extents to e. */
static void cut(const struct pio_extents *x, int s, int64_t block, struct pio_chunk *chunks, int *nc,
                struct pio_extent *e, int *ne)
{
    struct pio_chunk *c = NULL;
    for (int i = 0; i < x->n; i++) {
        struct pio_extent rest = x->e[i];
        while (rest.len > 0) {
            if (!c || c->bytes == block) {
                c = &chunks[(*nc)++];
                *c = (struct pio_chunk){.server = s, .first = *ne, .file = rest.file};
            }
            int64_t take = block - c->bytes < rest.len ? block - c->bytes : rest.len;
            e[(*ne)++] = (struct pio_extent){rest.file, rest.local, take, rest.mem};
            c->n++;
            c->bytes += take;
            rest.file += take;
            rest.local += take;
            rest.mem += take;
            rest.len -= take;
        }
    }
}

int pio_schedule_build(const struct pio_extents *lists, int nservers, int64_t block, int strategy,
                       int client, unsigned seed, struct pio_schedule *out)
{
    *out = (struct pio_schedule){0};
    /* Upper bounds: a chunk per block of each server's bytes, and an extent per extent
     * plus one per cut. */
    int64_t maxc = 0, maxe = 0;
    for (int s = 0; s < nservers; s++) {
        maxc += (lists[s].bytes + block - 1) / block;
        maxe += lists[s].n + (lists[s].bytes + block - 1) / block;
    }
    if (maxc == 0) return PIO_OK;
    struct pio_chunk *cut_chunks = malloc((size_t)maxc * sizeof *cut_chunks);
    out->chunk = malloc((size_t)maxc * sizeof *out->chunk);
    out->e = malloc((size_t)maxe * sizeof *out->e);
    int *first = calloc((size_t)nservers + 1, sizeof *first); /* server s: cut_chunks[first[s]..first[s+1]) */
    if (!cut_chunks || !out->chunk || !out->e || !first) {
        free(cut_chunks);
        free(first);
        pio_schedule_free(out);
        return pio_fail(PIO_EINVAL, "pio: out of memory scheduling a request");
    }
    int nc = 0;
    for (int s = 0; s < nservers; s++) {
        first[s] = nc;
        cut(&lists[s], s, block, cut_chunks, &nc, out->e, &out->ne);
    }
    first[nservers] = nc;
    out->nchunks = nc;

    if (strategy == PIO_FIRST_IOS) {
        memcpy(out->chunk, cut_chunks, (size_t)nc * sizeof *cut_chunks);
        qsort(out->chunk, (size_t)nc, sizeof *out->chunk, by_file_offset);
    } else {
        int *next = malloc((size_t)nservers * sizeof *next), left = nc;
        if (!next) {
            free(cut_chunks);
            free(first);
            pio_schedule_free(out);
            return pio_fail(PIO_EINVAL, "pio: out of memory scheduling a request");
        }
        memcpy(next, first, (size_t)nservers * sizeof *next);
        unsigned state = seed * 2654435761u + (unsigned)client + 1;
        for (int j = 0, k = 0; left > 0; j++) {
            int s;
            if (strategy == PIO_RANDOM_IOS) {
                /* a uniform choice among the servers with chunks left */
                int with = 0;
                for (int t = 0; t < nservers; t++) with += next[t] < first[t + 1];
                int pick = (int)(pio_random(&state) % (unsigned)with);
                for (s = 0; next[s] == first[s + 1] || pick-- > 0; s++)
                    ;
            } else {
                s = (client + j) % nservers;
                if (next[s] == first[s + 1]) continue; /* nothing for this server at this step */
            }
            out->chunk[k++] = cut_chunks[next[s]++];
            left--;
        }
        free(next);
    }
    free(cut_chunks);
    free(first);
    return PIO_OK;
}
