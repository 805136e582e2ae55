/* The engine's lists of ops, shared by the engine (zip_engine.c) and the ops' ends
 * (zip_handles.c): receives not yet matched (in posting order), ops with a native request
 * under way, synchronous eager sends waiting for their ACK, rendezvous sends waiting for
 * their CTS, receives waiting for their bulk data, and cancelled receives to complete at
 * the next progress. */
#ifndef ISTHMUS_ZIP_OPLIST_H
#define ISTHMUS_ZIP_OPLIST_H

#include "zip.h"

struct ist_zip_oplist {
    struct ist_zop *head, *tail;
};
struct ist_zip_oplists {
    struct ist_zip_oplist posted, native_ops, sync_waits, rts_waits, rdata_waits, cancelled;
};
extern struct ist_zip_oplists ist_zip_lists;

void ist_zip_list_add(struct ist_zip_oplist *l, struct ist_zop *op);
void ist_zip_list_remove(struct ist_zip_oplist *l, struct ist_zop *op);

#endif
