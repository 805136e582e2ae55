/* Schedules of the collectives on spanning communicators (zip_schedule.c): rounds of
 * sends, receives and local steps on a communicator's collective twin, a round started
 * when the one before has completed. The shapes that build them: zip_collectives.c. */
#ifndef ISTHMUS_ZIP_SCHEDULE_H
#define ISTHMUS_ZIP_SCHEDULE_H

#include <mpi.h>

#include "zip.h"

enum act_kind { ACT_SEND, ACT_RECV, ACT_LOCAL, ACT_COPY };

struct zsched;
struct act {
    enum act_kind kind;
    void *buf;
    int count;
    MPI_Datatype type;
    int peer;
    void (*fn)(struct zsched *s);
    /* ACT_COPY: buf (count of type) into to (to_count of to_type), when its round starts */
    void *to;
    int to_count;
    MPI_Datatype to_type;
};

struct round {
    struct act *acts;
    int n, cap;
};

struct zsched {
    struct zsched *next;
    struct ist_zcomm *k;
    int tag;
    struct round *rounds;
    int nrounds, cap, cur;
    struct ist_zop **ops;
    int nops;
    void **owned; /* freed when done */
    int nowned, owned_cap;
    MPI_Datatype derived; /* freed when done, or MPI_DATATYPE_NULL */
    struct ist_zop *handle;
    /* for the local steps */
    const void *mine;
    void *recvbuf;
    int count, root, exclusive;
    MPI_Datatype type;
    MPI_Op op;
    void **parts; /* reduction: every rank's part, by rank */
    void *acc;
    int *counts, *displs;
};

/* A schedule on c's collective twin, with the next tag of its sequence. */
struct zsched *zs_new(struct ist_zcomm *c);
/* The actions of the current round, and the next round. */
void zs_send(struct zsched *s, const void *buf, int count, MPI_Datatype type, int peer);
void zs_recv(struct zsched *s, void *buf, int count, MPI_Datatype type, int peer);
void zs_local(struct zsched *s, void (*fn)(struct zsched *));
/* A rank's own block, copied when the round starts (an earlier round may produce it). */
void zs_copy(struct zsched *s, const void *from, int count, MPI_Datatype type, void *to,
             int to_count, MPI_Datatype to_type);
void zs_next_round(struct zsched *s);
/* Memory freed with the schedule: p (malloc'd), or a buffer for count elements of type. */
void *zs_own(struct zsched *s, void *p);
void *zs_tmp(struct zsched *s, int count, MPI_Datatype type);
/* Start s: with a request for the application (nonblocking), or waited for (blocking). */
int zs_launch(struct zsched *s, MPI_Request *request);
int zs_run(struct zsched *s);

#endif
