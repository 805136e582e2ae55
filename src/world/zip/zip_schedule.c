/* The schedules' engine (zip_schedule.h): building rounds, starting them, moving every
 * schedule under way in each progress of the zipper's engine (ist_zip_schedules_progress,
 * registered by zip_world.c), and ending them. A schedule's sequence number per
 * communicator is in its tag, so any number may be under way at once. */
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "zip_engine.h"
#include "zip_schedule.h"

#define ICOLL_TAG_BASE 1024

static struct zsched *active;

struct zsched *zs_new(struct ist_zcomm *c)
{
    struct zsched *s = calloc(1, sizeof *s);
    if (!s) ist_zip_fatal("out of memory");
    s->k = c->coll;
    /* below MPICH's MPI_TAG_UB (2^19 - 1 with UCX): the twin's native part carries them */
    s->tag = ICOLL_TAG_BASE + (int)(c->coll->icoll_seq++ % (1u << 18));
    s->derived = MPI_DATATYPE_NULL;
    return s;
}

void *zs_own(struct zsched *s, void *p)
{
    if (s->nowned == s->owned_cap) {
        s->owned_cap = s->owned_cap ? 2 * s->owned_cap : 8;
        s->owned = realloc(s->owned, sizeof *s->owned * (size_t)s->owned_cap);
    }
    s->owned[s->nowned++] = p;
    return p;
}

void zs_next_round(struct zsched *s)
{
    if (s->nrounds == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->rounds = realloc(s->rounds, sizeof *s->rounds * (size_t)s->cap);
    }
    s->rounds[s->nrounds++] = (struct round){0};
}

static void add(struct zsched *s, struct act a)
{
    if (!s->nrounds) zs_next_round(s);
    struct round *r = &s->rounds[s->nrounds - 1];
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->acts = realloc(r->acts, sizeof *r->acts * (size_t)r->cap);
    }
    r->acts[r->n++] = a;
}

void zs_send(struct zsched *s, const void *buf, int count, MPI_Datatype type, int peer)
{
    add(s, (struct act){ACT_SEND, (void *)buf, count, type, peer, NULL, NULL, 0, MPI_DATATYPE_NULL});
}

void zs_recv(struct zsched *s, void *buf, int count, MPI_Datatype type, int peer)
{
    add(s, (struct act){ACT_RECV, buf, count, type, peer, NULL, NULL, 0, MPI_DATATYPE_NULL});
}

void zs_local(struct zsched *s, void (*fn)(struct zsched *))
{
    add(s, (struct act){ACT_LOCAL, NULL, 0, MPI_DATATYPE_NULL, 0, fn, NULL, 0, MPI_DATATYPE_NULL});
}

/* A rank's own block, copied when the round starts (an earlier round may produce it). */
void zs_copy(struct zsched *s, const void *from, int count, MPI_Datatype type, void *to,
                 int to_count, MPI_Datatype to_type)
{
    add(s, (struct act){ACT_COPY, (void *)from, count, type, 0, NULL, to, to_count, to_type});
}

/* A buffer for count elements of type (ist_tmp), owned by the schedule. */
void *zs_tmp(struct zsched *s, int count, MPI_Datatype type)
{
    struct ist_tmp t;
    if (ist_tmp_alloc(&t, count, type) != MPI_SUCCESS) ist_zip_fatal("out of memory");
    zs_own(s, t.mem);
    return t.base;
}

static void finish(struct zsched *s)
{
    for (int i = 0; i < s->nowned; i++) free(s->owned[i]);
    free(s->owned);
    for (int r = 0; r < s->nrounds; r++) free(s->rounds[r].acts);
    free(s->rounds);
    free(s->ops);
    free(s->parts);
    free(s->counts);
    free(s->displs);
    if (s->derived != MPI_DATATYPE_NULL) PMPI_Type_free(&s->derived);
    ist_zip_complete_op(s->handle);
    free(s);
}

/* Start round s->cur: its local steps, then its messages. */
static void start_round(struct zsched *s)
{
    struct round *r = &s->rounds[s->cur];
    free(s->ops);
    s->ops = malloc(sizeof *s->ops * (size_t)(r->n ? r->n : 1));
    s->nops = 0;
    for (int i = 0; i < r->n; i++) {
        struct act *a = &r->acts[i];
        if (a->kind == ACT_LOCAL) a->fn(s);
        if (a->kind == ACT_COPY)
            PMPI_Sendrecv(a->buf, a->count, a->type, 0, 0, a->to, a->to_count, a->to_type, 0, 0,
                          MPI_COMM_SELF, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < r->n; i++) {
        struct act *a = &r->acts[i];
        if (a->kind == ACT_SEND)
            s->ops[s->nops++] = ist_zip_isend(s->k, a->buf, a->count, a->type, a->peer, s->tag, 0);
        else if (a->kind == ACT_RECV)
            s->ops[s->nops++] = ist_zip_irecv(s->k, a->buf, a->count, a->type, a->peer, s->tag);
    }
}

/* Move s on as far as it goes; 1 when it has finished. */
static int advance(struct zsched *s)
{
    for (;;) {
        for (int i = 0; i < s->nops; i++)
            if (!s->ops[i]->done) return 0;
        for (int i = 0; i < s->nops; i++) ist_zip_free_op(s->ops[i]);
        s->nops = 0;
        if (++s->cur >= s->nrounds) return 1;
        start_round(s);
    }
}

void ist_zip_schedules_progress(void)
{
    for (struct zsched **p = &active; *p;) {
        struct zsched *s = *p;
        if (advance(s)) {
            *p = s->next;
            finish(s);
        } else {
            p = &s->next;
        }
    }
}

/* Start s and give the application its request. */
int zs_launch(struct zsched *s, MPI_Request *request)
{
    s->handle = ist_zip_coll_op(s->k);
    int rc = ist_zip_give_handle(s->handle, request);
    if (s->nrounds == 0) zs_next_round(s);
    s->cur = 0;
    start_round(s); /* before it joins the list: its sends move the engine, and the
                     * engine would take a half-started round for a finished one */
    s->next = active;
    active = s;
    ist_zip_progress();
    return rc;
}

/* Start s and wait for it: the blocking form. */
int zs_run(struct zsched *s)
{
    struct ist_zop *op = ist_zip_coll_op(s->k);
    s->handle = op;
    if (s->nrounds == 0) zs_next_round(s);
    s->cur = 0;
    start_round(s);
    s->next = active;
    active = s;
    return ist_zip_wait_ops(1, &op, MPI_STATUSES_IGNORE); /* moves it; frees op when done */
}

