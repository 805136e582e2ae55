/* The waiting mode for oversubscribed runs (ISTHMUS_WAIT=sleep).
 *
 * MPICH busy-polls in blocking calls. With more ranks than cores, a waiting rank then
 * takes the core from the rank it waits for: an 8-rank Allreduce on 2 cores took about
 * 19 ms. In this mode a blocking call starts its nonblocking form and waits by testing:
 * ist_wait_backoff's tests back to back (a message that is about to arrive costs no
 * sleep), then sleeps between tests, from 5 us doubling up to 160 us (src/util/backoff.h);
 * when dilated, pauses that follow the host's CPU share (src/util/wait_pause.c). The generated
 * wrappers use these forms when ist_sleep_wait is set (isthmus run sets it when the
 * ranks outnumber the cores, or as the platform's layer.wait says). Collectives on
 * intercommunicators keep the blocking call (tools/genwrap.py says why). Making a
 * communicator waits the same way, and so do the MPI's own yields (the last two
 * sections). */
#define _DEFAULT_SOURCE /* syscall: the real sched_yield */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "world.h"
#include "zip.h"


int ist_sleep_wait;

void ist_sleep_wait_init(void)
{
    const char *mode = getenv("ISTHMUS_WAIT");
    ist_sleep_wait = mode && strcmp(mode, "sleep") == 0;
    /* Sleeps of a few microseconds would otherwise last at least the default 50 us slack. */
    if (ist_sleep_wait) prctl(PR_SET_TIMERSLACK, 1000UL);
}

void ist_world_progress(void)
{
    if (ist_multi_site) ist_zip_progress();
}

/* The pause follows the host's CPU share when dilated (src/util/wait_pause.c) and ends
 * early when a socket has something to read (wait_sockets.c). */
void ist_world_idle(int tries)
{
    if (ist_multi_site) {
        ist_zip_idle(tries); /* the same pauses; its sockets end them early */
        return;
    }
    ist_wait_pause(ist_wait_pause_ns(tries), tries); /* the MPI's sockets end it early */
}

/* Test with `test` until it reports completion, sleeping between tests as described.
 * Under zipper forwarding each test first moves its engine, and the sleeps end early
 * when a forwarder sends something (ist_zip_idle). */
#define SLEEP_UNTIL(test_call, flag)                                                      \
    do {                                                                                  \
        for (int ist_i = 0;; ist_i++) {                                                   \
            ist_world_progress();                                                         \
            int ist_rc = (test_call);                                                     \
            if (ist_rc != MPI_SUCCESS || (flag)) return ist_rc;                           \
            ist_world_idle(ist_i);                                                        \
        }                                                                                 \
    } while (0)

int ist_sleep_until_done(MPI_Request *request, MPI_Status *status)
{
    int done = 0;
    SLEEP_UNTIL(PMPI_Test(request, &done, status), done);
}

int ist_sleepwait_Wait(MPI_Request *request, MPI_Status *status)
{
    return ist_sleep_until_done(request, status);
}

int ist_sleepwait_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    int done = 0;
    SLEEP_UNTIL(PMPI_Testall(count, requests, &done, statuses), done);
}

int ist_sleepwait_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    int done = 0;
    SLEEP_UNTIL(PMPI_Testany(count, requests, index, &done, status), done);
}

int ist_sleepwait_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                           MPI_Status statuses[])
{
    SLEEP_UNTIL(PMPI_Testsome(incount, requests, outcount, indices, statuses), *outcount != 0);
}

int ist_sleepwait_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    int found = 0;
    SLEEP_UNTIL(PMPI_Iprobe(source, tag, comm, &found, status), found);
}

int ist_sleepwait_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                           int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Request req[2];
    MPI_Status st[2];
    int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &req[0]);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &req[1]);
    if (rc != MPI_SUCCESS) return rc;
    rc = ist_sleepwait_Waitall(2, req, st);
    if (status != MPI_STATUS_IGNORE) *status = st[0];
    return rc;
}

/* ---- communicator set-up and the layer's own collective calls -----------------------
 * Making a communicator is collective: a rank that arrives first waits inside the MPI
 * for the others (Open MPI's context-id agreement spins with sched_yield, issue 43's
 * stalls had 7 of 8 ranks there). In sleep mode MPI_Comm_dup waits through
 * MPI_Comm_idup; the constructors with no nonblocking form (MPI_Comm_split, _create,
 * _split_type, MPI_Cart_create, MPI_Intercomm_create: tools/genwrap.py's BARRIER_FIRST)
 * after a sleeping barrier, so that every rank enters the blocking call together. The
 * calls the layer makes for itself (a hierarchy's duplicate and split, the v-forms' size
 * agreement, the topology's exchange at MPI_Init) wait the same way: ist_own_X, generated
 * (own_calls.c) from the same forms. */

int ist_sleeping_barrier(MPI_Comm comm)
{
    MPI_Request r;
    int rc = PMPI_Ibarrier(comm, &r);
    return rc != MPI_SUCCESS ? rc : ist_sleep_until_done(&r, MPI_STATUS_IGNORE);
}

int ist_sleepwait_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    MPI_Request r;
    int rc = PMPI_Comm_idup(comm, newcomm, &r);
    return rc != MPI_SUCCESS ? rc : ist_sleep_until_done(&r, MPI_STATUS_IGNORE);
}

void ist_wait_all(int n, MPI_Request *requests)
{
    for (int i = 0; i < n; i++) /* one by one: the order does not matter here */
        if (ist_sleep_wait) ist_sleep_until_done(&requests[i], MPI_STATUS_IGNORE);
        else PMPI_Wait(&requests[i], MPI_STATUS_IGNORE);
}

void ist_bcast_waiting(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    MPI_Request r;
    PMPI_Ibcast(buf, count, type, root, comm, &r);
    ist_wait_all(1, &r);
}

/* ---- the MPI's own yields ------------------------------------------------------------
 * Where the MPI waits inside itself (Open MPI's context-id agreement in
 * MPI_Comm_create_group, its blocking collectives on intercommunicators), it polls and
 * calls sched_yield between idle polls when oversubscribed. With 16 such ranks on 2 cores
 * the machine stood still for up to 100 s (issue 43: a plain sleeper woke 50 s late,
 * kernel workers starved). In sleep mode a wait yields for its first IST_YIELD_SPIN_US
 * (a message about to arrive costs no sleep), then sleeps between polls as
 * ist_wait_backoff does past its spins. A yield that comes more than
 * IST_YIELD_GAP_US after the previous one returned starts a new wait (an idle poll takes
 * a few microseconds; a poll that found work does not yield). Measured on the 16-rank
 * test that stalled: yielding for 10 ms it still stalled (21-112 s), for 1 ms it took
 * 4-8 s, never yielding 3-4 s; mpi4py's suite (4 ranks, many intercommunicator
 * collectives) took 53 s with the plain yields, 65 s with 1 ms, 85 s never yielding.
 * Otherwise (not sleep mode) it is the system call. */
#define IST_YIELD_SPIN_US 1000.0
#define IST_YIELD_GAP_US 50.0

int sched_yield(void)
{
    static _Thread_local double last_return, wait_start;
    static _Thread_local int sleeps;
    if (!ist_sleep_wait) return (int)syscall(SYS_sched_yield);
    /* real time: the window is about this machine's scheduler, also when dilated */
    double now = (double)ist_real_now_ns() / 1e3;
    if (now - last_return > IST_YIELD_GAP_US) {
        wait_start = now;
        sleeps = 0;
    }
    if (now - wait_start < IST_YIELD_SPIN_US) {
        syscall(SYS_sched_yield);
    } else {
        ist_real_nanosleep(ist_backoff_ns(&ist_wait_backoff, ist_wait_backoff.spins + sleeps++));
    }
    last_return = (double)ist_real_now_ns() / 1e3;
    return 0;
}
