/* A workaround, in the MPICH build only, for a hang in Debian's MPICH 4.0.2 (ch4:ucx).
 *
 * In MPI_Finalize each rank closes its UCX endpoints, which needs every peer to progress,
 * and then waits in a PMI barrier, reading the PMI socket, where it no longer progresses.
 * A peer whose close started later then waits forever for the rank already in the
 * barrier. The window is about one network round trip, so across an emulated WAN most
 * 4-rank runs hang (measured: Init, Barrier, Finalize hangs in about one run of three at
 * 5 ms one-way). MPICH fixed it upstream by removing that barrier (pmodels/mpich#6596).
 *
 * The layer does what the fix achieves: from the start of MPI_Finalize, a read() on the
 * PMI socket ($PMI_FD) first waits in poll() and progresses the rank's UCX workers while
 * it waits, so peers can complete their close. The workers are learned by wrapping
 * ucp_worker_create. Outside MPI_Finalize, and on every other descriptor, read() is the
 * C library's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdlib.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "layer.h"

#define MAX_WORKERS 16

static ucp_worker_h workers[MAX_WORKERS];
static int nworkers;
static int pmi_fd = -1;
static volatile int finalizing;

typedef ucs_status_t (*worker_create_fn)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *);
typedef void (*worker_destroy_fn)(ucp_worker_h);
typedef ssize_t (*read_fn)(int, void *, size_t);

static void *next_symbol(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) abort(); /* the library that should define it is not loaded: nothing sane to do */
    return f;
}

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p)
{
    static worker_create_fn real;
    if (!real) real = (worker_create_fn)next_symbol("ucp_worker_create");
    ucs_status_t st = real(context, params, worker_p);
    if (st == UCS_OK && nworkers < MAX_WORKERS) workers[nworkers++] = *worker_p;
    return st;
}

void ucp_worker_destroy(ucp_worker_h worker)
{
    static worker_destroy_fn real;
    if (!real) real = (worker_destroy_fn)next_symbol("ucp_worker_destroy");
    for (int i = 0; i < nworkers; i++)
        if (workers[i] == worker) workers[i] = workers[--nworkers];
    real(worker);
}

ssize_t read(int fd, void *buf, size_t count)
{
    static read_fn real;
    if (!real) real = (read_fn)next_symbol("read");
    if (finalizing && fd == pmi_fd && nworkers) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (poll(&p, 1, 1) == 0)
            for (int i = 0; i < nworkers; i++) ucp_worker_progress(workers[i]);
    }
    return real(fd, buf, count);
}

void ist_mpich_finalize_begin(void)
{
    const char *fd = getenv("PMI_FD");
    if (fd && *fd) pmi_fd = atoi(fd);
    finalizing = 1;
}
