/* Live adaptation's record (hier_adapt.c), for the profile (src/layer/profile_write.c):
 * each switch a communicator's rank 0 made, and the settings. */
#ifndef ISTHMUS_HIER_ADAPT_H
#define ISTHMUS_HIER_ADAPT_H

/* A choice made again after a switch (hier_select.c). */
struct ist_choice_change {
    int id;     /* an enum ist_coll_id */
    long bytes; /* as the cache keys it (a v-form's policy: negative) */
    char before[40], after[40];
};

#define IST_ADAPT_EVENTS 64
#define IST_ADAPT_CHANGES 8
struct ist_adapt_event {
    int world_rank;            /* the communicator's rank 0 */
    int comm_size, nclusters;
    long call;                 /* calls the selector decided on it, this one included */
    double factor[2];          /* the agreed drift: [0] slower than usual, [1] faster (x) */
    int seen_by[2];            /* the rank of the communicator that saw it most (-1: none) */
    int ranks_seen[2];         /* how many of its ranks saw one */
    double old_L, old_g;       /* the wan class before: L, g at IST_EAGER_SEGMENT (us) */
    double new_L, new_g;       /* ... after */
    double measure_seconds;    /* measuring it again took */
    int nchanged, unchanged;   /* choices that changed (listed), and that stayed */
    struct ist_choice_change changed[IST_ADAPT_CHANGES];
};

/* Whether live adaptation is on (ISTHMUS_ADAPT), its check interval (ISTHMUS_ADAPT_EVERY),
 * and the switches this rank recorded (the first IST_ADAPT_EVENTS). */
int ist_adapt_on(void);
int ist_adapt_every(void);
const struct ist_adapt_event *ist_adapt_events(int *n);

#endif
