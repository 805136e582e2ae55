/* Packets in flight, ordered by the time they reach their next hop: a binary min-heap. */
#ifndef ISTHMUS_EVENT_HEAP_H
#define ISTHMUS_EVENT_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct packet {
    uint64_t due; /* when it reaches hop 'hop' (or its destination) */
    uint16_t src, dst;
    uint16_t hop;
    uint32_t len;
    uint64_t seq; /* arrival order: equal due times keep FIFO order */
    uint8_t data[];
};

struct event_heap {
    struct packet **items;
    size_t n, cap;
    uint64_t next_seq;
};

static inline void heap_init(struct event_heap *h)
{
    h->n = 0;
    h->cap = 1024;
    h->next_seq = 0;
    h->items = malloc(h->cap * sizeof *h->items);
}

static inline int heap_before(const struct packet *a, const struct packet *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static inline void heap_push(struct event_heap *h, struct packet *p)
{
    if (h->n == h->cap) {
        h->cap *= 2;
        h->items = realloc(h->items, h->cap * sizeof *h->items);
    }
    p->seq = h->next_seq++;
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_before(p, h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = p;
}

static inline struct packet *heap_pop(struct event_heap *h)
{
    struct packet *top = h->items[0], *last = h->items[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && heap_before(h->items[c + 1], h->items[c])) c++;
        if (!heap_before(h->items[c], last)) break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (h->n) h->items[i] = last;
    return top;
}

static inline void heap_free(struct event_heap *h)
{
    for (size_t i = 0; i < h->n; i++) free(h->items[i]);
    free(h->items);
    h->items = NULL;
    h->n = 0;
}

#endif
