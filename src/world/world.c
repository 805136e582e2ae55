/* The world's interface (world.h): each call asks once whether its communicator spans
 * sites, and goes to the zipper's engine (src/world/zip) or to the site's MPI. */
#include "own_calls.h"
#include "world.h"

#include "topology.h"
#include "world_calls.h"
#include "zip.h"

void ist_world_init(MPI_Comm *world_dup)
{
    ist_sleep_wait_init();
    ist_zip_init(); /* sets ist_multi_site */
    if (ist_multi_site) {
        /* Its engine moves only inside MPI calls: every blocking call waits by testing. */
        ist_sleep_wait = 1;
        int rc;
        ist_span_Comm_dup(MPI_COMM_WORLD, world_dup, &rc);
    } else {
        ist_own_Comm_dup(ist_app_world, world_dup);
    }
    ist_topology_init(*world_dup);
}

void ist_world_finalize(MPI_Comm *world_dup)
{
    ist_topology_finalize();
    ist_world_free(world_dup);
    ist_zip_finalize(); /* the last: every spanning communicator is freed by now */
}

int ist_world_spans(MPI_Comm comm)
{
    return ist_multi_site && ist_zip_comm(comm) != NULL;
}

int ist_world_comm_size(MPI_Comm comm)
{
    int size = 0;
    if (ist_world_spans(comm)) return ist_zip_comm(comm)->size;
    PMPI_Comm_size(comm, &size);
    return size;
}

void ist_world_native_only(MPI_Comm comm, const char *call)
{
    ist_zip_native_only(comm, call);
}

int ist_world_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    int rc;
    if (ist_world_spans(comm) && ist_span_Comm_dup(comm, newcomm, &rc)) return rc;
    return ist_own_Comm_dup(comm, newcomm);
}

int ist_world_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    int rc;
    if (ist_world_spans(comm) && ist_span_Comm_split(comm, color, key, newcomm, &rc)) return rc;
    return ist_own_Comm_split(comm, color, key, newcomm);
}

int ist_world_free(MPI_Comm *comm)
{
    int rc;
    if (ist_world_spans(*comm) && ist_span_Comm_free(comm, &rc)) return rc;
    return PMPI_Comm_free(comm);
}

int ist_world_isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    int rc;
    if (ist_multi_site && ist_span_Isend(buf, count, type, dest, tag, comm, request, &rc)) return rc;
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int ist_world_irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    int rc;
    if (ist_multi_site && ist_span_Irecv(buf, count, type, source, tag, comm, request, &rc))
        return rc;
    return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int ist_world_send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                   MPI_Comm comm)
{
    int rc;
    if (ist_multi_site && ist_span_Send(buf, count, type, dest, tag, comm, &rc)) return rc;
    return ist_own_Send(buf, count, type, dest, tag, comm);
}

int ist_world_recv(void *buf, int count, MPI_Datatype type, int source, int tag,
                   MPI_Comm comm, MPI_Status *status)
{
    int rc;
    if (ist_multi_site && ist_span_Recv(buf, count, type, source, tag, comm, status, &rc))
        return rc;
    return ist_own_Recv(buf, count, type, source, tag, comm, status);
}

int ist_world_wait(MPI_Request *request, MPI_Status *status)
{
    int rc;
    if (ist_multi_site && ist_span_Wait(request, status, &rc)) return rc;
    return ist_own_Wait(request, status);
}

int ist_world_waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    int rc;
    if (ist_multi_site && ist_span_Waitall(n, requests, statuses, &rc)) return rc;
    return ist_own_Waitall(n, requests, statuses);
}

int ist_world_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    int rc;
    if (ist_multi_site && ist_span_Waitany(n, requests, index, status, &rc)) return rc;
    return ist_own_Waitany(n, requests, index, status);
}
