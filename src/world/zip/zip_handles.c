/* The ends of the engine's ops: statuses, waiting for ops, and the application's handles
 * for them (generalized requests the engine completes). */
#include <stdlib.h>

#include "zip.h"
#include "zip_engine.h"
#include "zip_oplist.h"

void ist_zip_status_of(const struct ist_zop *op, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE) return;
    status->MPI_SOURCE = op->st_source;
    status->MPI_TAG = op->st_tag;
    status->MPI_ERROR = op->st_error;
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)op->st_bytes);
    PMPI_Status_set_cancelled(status, op->cancelled);
}

void ist_zip_free_op(struct ist_zop *op) { free(op); }

int ist_zip_wait_ops(int n, struct ist_zop **ops, MPI_Status *statuses)
{
    for (int tries = 0;; tries++) {
        ist_zip_progress();
        int all = 1;
        for (int i = 0; i < n; i++) all &= ops[i]->done;
        if (all) break;
        ist_zip_idle(tries);
    }
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n; i++) {
        if (ops[i]->st_error != MPI_SUCCESS) rc = n == 1 ? ops[i]->st_error : MPI_ERR_IN_STATUS;
        if (statuses != MPI_STATUSES_IGNORE) ist_zip_status_of(ops[i], &statuses[i]);
        free(ops[i]);
    }
    return rc;
}

/* ---- the application's handles: generalized requests ------------------------------ */

static int greq_query(void *extra, MPI_Status *status)
{
    ist_zip_status_of(extra, status);
    return ((struct ist_zop *)extra)->st_error;
}

static int greq_free(void *extra)
{
    struct ist_zop *op = extra;
    op->greq_freed = 1;
    if (op->done) free(op);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete_already)
{
    struct ist_zop *op = extra;
    if (complete_already || op->list != &ist_zip_lists.posted)
        return MPI_SUCCESS; /* sends and matched receives are not cancelled */
    ist_zip_list_remove(&ist_zip_lists.posted, op);
    op->cancelled = 1;
    op->st_source = MPI_ANY_SOURCE;
    op->st_tag = MPI_ANY_TAG;
    ist_zip_list_add(&ist_zip_lists.cancelled, op);
    return MPI_SUCCESS;
}

int ist_zip_give_handle(struct ist_zop *op, MPI_Request *request)
{
    if (op->kind == IST_ZOP_SEND && op->native != MPI_REQUEST_NULL && !op->done) {
        /* a send inside the site: the native request itself */
        ist_zip_list_remove(&ist_zip_lists.native_ops, op);
        *request = op->native;
        free(op);
        return MPI_SUCCESS;
    }
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, op, &op->greq);
    if (rc != MPI_SUCCESS) return rc;
    op->has_greq = 1;
    *request = op->greq;
    if (op->done) PMPI_Grequest_complete(op->greq);
    return MPI_SUCCESS;
}

/* The live ops with an application handle are found by walking the engine's lists: a
 * Request_free before completion must leave the op to the engine. */
int ist_zip_request_free(MPI_Request *request)
{
    struct ist_zip_oplists *a = &ist_zip_lists;
    struct ist_zip_oplist *lists[] = {&a->posted,    &a->native_ops,  &a->sync_waits,
                                      &a->rts_waits, &a->rdata_waits, &a->cancelled};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++)
        for (struct ist_zop *op = lists[l]->head; op; op = op->next)
            if (op->has_greq && op->greq == *request && !op->done) {
                op->user_freed = 1;
                *request = MPI_REQUEST_NULL;
                return 1;
            }
    return 0;
}

