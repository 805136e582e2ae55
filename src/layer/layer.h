/* libisthmus internals shared by the generated wrappers and the hand-written parts.
 *
 * The wrappers' fast path is one load of ist_profiling and, when that is set, one of the
 * thread-local ist_depth: a wrapper entered from inside another (MPICH's Fortran entries
 * call the C MPI_X; our own code calls only PMPI_X) forwards without recording, so that
 * every application call is counted exactly once. */
#ifndef ISTHMUS_LAYER_H
#define ISTHMUS_LAYER_H

#include <mpi.h>
#include <stdint.h>

#include "clock.h"
#include "functions.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are read as int arrays");

/* Large enough for the Fortran status of both MPIs (Open MPI 6, MPICH 5 integers). */
#define IST_F_STATUS_MAX 16

extern int ist_profiling; /* set while the profiler records (MPI_Pcontrol can clear it) */
extern _Thread_local int ist_depth __attribute__((tls_model("initial-exec")));

#define IST_PASS_THROUGH() (__builtin_expect(!ist_profiling || ist_depth, 0))

/* Layer life cycle, called by the MPI_Init*, MPI_Finalize and MPI_Pcontrol wrappers in
 * every language. Both are idempotent: MPICH's Fortran init reaches the C one too. */
void ist_layer_init(int provided_thread_level);
void ist_layer_finalize(void);
void ist_layer_pcontrol(int level);

/* The waiting mode for oversubscribed runs (sleep_wait.c). */
extern int ist_sleep_wait;
void ist_sleep_wait_init(void);
int ist_sleep_until_done(MPI_Request *request, MPI_Status *status);
int ist_sleepwait_Wait(MPI_Request *request, MPI_Status *status);
int ist_sleepwait_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
int ist_sleepwait_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int ist_sleepwait_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                           MPI_Status statuses[]);
int ist_sleepwait_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int ist_sleepwait_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                           int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int ist_sleepwait_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
/* A barrier that waits as the sleeping waits do (for the communicator constructors). */
int ist_sleeping_barrier(MPI_Comm comm);
/* The layer's own collective calls on native communicators, waiting as the application's
 * calls do (sleep_wait.c says how). */
int ist_own_comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int ist_own_comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int ist_own_allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                      MPI_Comm comm);
int ist_own_allgather(const void *in, int count, MPI_Datatype type, void *out, MPI_Comm comm);
void ist_wait_all(int n, MPI_Request *requests);
void ist_bcast_waiting(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
double ist_now_us(void); /* CLOCK_MONOTONIC, microseconds (virtual time when dilated) */

/* Time dilation (dilation.c): the factor K in force (1: none), and the machine's own time
 * for what is about this machine rather than the emulated platform. */
double ist_dilation(void);
uint64_t ist_real_now_ns(void);
void ist_real_nanosleep(long ns);

/* MPICH only (mpich_finalize.c): keep UCX progressing while MPI_Finalize waits on PMI. */
#ifdef MPICH_VERSION
void ist_mpich_finalize_begin(void);
#else
static inline void ist_mpich_finalize_begin(void) {}
#endif

/* Recorders: one per kind of call in mpi_functions.txt. 'ticks' is the time in the call. */
void ist_rec_none(enum ist_fn fn, uint64_t ticks);
/* After a blocking collective: its call site (the caller's return address pc), then the
 * wide-area traffic of libisthmus's algorithm (which clears what ist_rec_site reads). */
void ist_rec_site(enum ist_fn fn, const void *pc, uint64_t ticks);
void ist_rec_wan(enum ist_fn fn);
void ist_rec_size(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type);
void ist_rec_send(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int dest,
                  MPI_Comm comm);
void ist_rec_recv(enum ist_fn fn, uint64_t ticks, const MPI_Status *status);
void ist_rec_bcast(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int root,
                   MPI_Comm comm);
void ist_rec_reduce(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, int root,
                    MPI_Comm comm);
void ist_rec_allreduce(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type,
                       MPI_Comm comm);
void ist_rec_gather(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
void ist_rec_gatherv(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                     const int recvcounts[], MPI_Datatype recvtype, int root, MPI_Comm comm);
void ist_rec_scatter(enum ist_fn fn, uint64_t ticks, int sendcount, MPI_Datatype sendtype,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
void ist_rec_scatterv(enum ist_fn fn, uint64_t ticks, const int sendcounts[],
                      MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm);
void ist_rec_allgather(enum ist_fn fn, uint64_t ticks, int recvcount, MPI_Datatype recvtype,
                       MPI_Comm comm);
void ist_rec_allgatherv(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                        MPI_Datatype recvtype, MPI_Comm comm);
void ist_rec_alltoall(enum ist_fn fn, uint64_t ticks, int recvcount, MPI_Datatype recvtype,
                      MPI_Comm comm);
void ist_rec_alltoallv(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                       MPI_Datatype recvtype, MPI_Comm comm);
void ist_rec_alltoallw(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                       const MPI_Datatype recvtypes[], MPI_Comm comm);
void ist_rec_reduce_scatter(enum ist_fn fn, uint64_t ticks, const int recvcounts[],
                            MPI_Datatype type, MPI_Comm comm);
void ist_rec_reduce_scatter_block(enum ist_fn fn, uint64_t ticks, int recvcount,
                                  MPI_Datatype type, MPI_Comm comm);
void ist_rec_scan(enum ist_fn fn, uint64_t ticks, int count, MPI_Datatype type, MPI_Comm comm);

#endif
