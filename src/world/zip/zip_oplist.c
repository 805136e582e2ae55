/* The engine's lists of ops (zip_oplist.h). */
#include "zip_oplist.h"

struct ist_zip_oplists ist_zip_lists;

void ist_zip_list_add(struct ist_zip_oplist *l, struct ist_zop *op)
{
    op->next = NULL;
    op->prev = l->tail;
    if (l->tail) l->tail->next = op;
    else l->head = op;
    l->tail = op;
    op->list = l;
}

void ist_zip_list_remove(struct ist_zip_oplist *l, struct ist_zop *op)
{
    if (op->prev) op->prev->next = op->next;
    else l->head = op->next;
    if (op->next) op->next->prev = op->prev;
    else l->tail = op->prev;
    op->next = op->prev = NULL;
    op->list = NULL;
}
