/* The rooms behind hier.c, for hier*.c only (the algorithms see hier.h). */
#ifndef ISTHMUS_HIER_PARTS_H
#define ISTHMUS_HIER_PARTS_H

#include "hier.h"
#include "hier_adapt.h"

/* Beyond this many ranks the selector does not cost each call (schedules grow as the
 * square of the ranks): the hierarchy runs when the model's WAN is slower than its LAN;
 * nor does a hierarchy find which ranks share a host. */
#define COSTED_RANKS 256

/* hier_model.c: the P-LogP parameters, loaded once at MPI_Init. */
void ist_hier_model_load(MPI_Comm world);
void ist_hier_model_free(void);

/* hier_cache.c: each communicator's hierarchy, built at its first use (collective). */
void ist_hier_cache_init(void);
void ist_hier_cache_free(void);
struct ist_hier *ist_hier_lookup(MPI_Comm comm);
/* Whether text is what h logged last for id (then it is not logged again); remembers it. */
int ist_hier_logged_before(const struct ist_hier *h, enum ist_coll_id id, const char *text);

/* hier_select.c: the way (enum ist_way) a call takes, and whether any call could take ours
 * (the model's WAN slower than its LAN, or a tuning file). */
void ist_hier_select_init(int log_choices);
void ist_hier_select_free(void);
int ist_hier_can_choose_ours(void);
int ist_hier_way(struct ist_hier *h, enum ist_coll_id id, long bytes);
/* Every cached choice of h made again from h->model (live adaptation changed it); the
 * ones whose way or algorithm changed into changed[0..max), returned; the others
 * counted in *unchanged. The drift statistics start again. */
int ist_hier_choose_again(struct ist_hier *h, struct ist_choice_change *changed, int max,
                          int *unchanged);

/* hier_adapt.c: live adaptation (layer.adapt). */
void ist_adapt_init(void);
/* A new hierarchy takes rank 0's latest measured wide area (collective over comm). */
void ist_adapt_built(struct ist_hier *h);
/* A hierarchy freed: its pending check completed, its own model freed. */
void ist_adapt_forget(struct ist_hier *h);
/* Before a call the selector decides on h: every IST_ADAPT_EVERY calls, the agreement
 * on drift and, when one was seen, the wide area measured again and the choices made
 * again (collective over h). After it: the call's timing starts. */
void ist_adapt_check(struct ist_hier *h);
void ist_adapt_begin(struct ist_hier *h, int root);

#endif
