/* What every part of the zipper's side shares, at its bottom: the world's shape, the
 * communicators that span sites, and how the run ends when something cannot go on. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "zip.h"
#include "zip_engine.h"

int ist_multi_site;
struct ist_zip_world ist_zip;

static struct ist_zcomm *comms[256];
static int ncomms;

struct ist_zcomm *ist_zip_comm(MPI_Comm handle)
{
    for (int i = 0; i < ncomms; i++)
        if (comms[i]->handle == handle) return comms[i];
    return NULL;
}

void ist_zip_comms_add(struct ist_zcomm *c)
{
    if (ncomms == (int)(sizeof comms / sizeof *comms))
        ist_zip_refuse("A new communicator", "beyond 256 that span sites");
    comms[ncomms++] = c;
}

void ist_zip_comms_remove(struct ist_zcomm *c)
{
    for (int i = 0; i < ncomms; i++)
        if (comms[i] == c) comms[i] = comms[--ncomms];
}

void ist_zip_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "isthmus: rank %d: %s\n", ist_zip.world_rank, msg);
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

void ist_zip_refuse(const char *call, const char *why)
{
    ist_zip_fatal("%s %s: not carried across the zipper yet (docs/zipper.md says what is)", call, why);
}

void ist_zip_native_only(MPI_Comm comm, const char *call)
{
    if (ist_zip_comm(comm)) ist_zip_refuse(call, "on a communicator that spans sites");
}
