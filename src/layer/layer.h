/* libisthmus's top: the MPI functions the application calls (the generated wrappers and
 * layer.c), the profiler's recorders. docs/architecture.md draws the C side:
 *
 *     src/layer -> src/coll -> src/world -> src/util      (src/model beside, no MPI)
 *
 * each folder including only the headers of the folders below it (the build checks it).
 *
 * The rule for MPI_X and PMPI_X inside libisthmus: our code never calls MPI_X, the
 * application's entry, whose wrapper would profile it and offer it to src/coll again.
 * PMPI_X is the site's MPI and nothing else. A call that must wait as the application's
 * calls do, or whose communicator may span sites, goes through src/world: ist_own_X (the
 * site's MPI, sleeping in sleep mode), ist_span_X (carried across sites), ist_world_X
 * (either, as the communicator needs; generated for the unprofiled calls of
 * mpi_functions.txt). Every MPI_X libisthmus defines is in that list.
 *
 * The wrappers' fast path is one load of ist_profiling and, when that is set, one of the
 * thread-local ist_depth: a wrapper entered from inside another (MPICH's Fortran entries
 * call the C MPI_X) forwards without recording, so that every application call is
 * counted exactly once. */
#ifndef ISTHMUS_LAYER_H
#define ISTHMUS_LAYER_H

#include <mpi.h>
#include <stdint.h>

#include "clock.h"
#include "functions.h"
#include "world.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are read as int arrays");

/* Large enough for the Fortran status of both MPIs (Open MPI 6, MPICH 5 integers). */
#define IST_F_STATUS_MAX 16

extern int ist_profiling; /* set while the profiler records (MPI_Pcontrol can clear it) */
extern _Thread_local int ist_depth __attribute__((tls_model("initial-exec")));

#define IST_PASS_THROUGH() (__builtin_expect(!ist_profiling || ist_depth, 0))

/* The application's MPI_COMM_WORLD as the layer means it (world.h's ist_app_world); the
 * layer's own calls (ist_depth set: pio's, inside MPI-IO on pio) keep the MPI's. */
#define IST_APP_COMM(c) (__builtin_expect((c) == MPI_COMM_WORLD, 0) && !ist_depth ? ist_app_world : (c))

/* Layer life cycle, called by the MPI_Init*, MPI_Finalize and MPI_Pcontrol wrappers in
 * every language. Both are idempotent: MPICH's Fortran init reaches the C one too. */
void ist_layer_init(int provided_thread_level);
void ist_layer_finalize(void);
void ist_layer_pcontrol(int level);

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

/* MPI-IO (profile_io.c): per file as well; old_fh is the handle MPI_File_close closed. */
void ist_rec_io_open(enum ist_fn fn, uint64_t ticks, const char *filename, MPI_File *fh);
void ist_rec_io_close(enum ist_fn fn, uint64_t ticks, MPI_File old_fh);
void ist_rec_io_meta(enum ist_fn fn, uint64_t ticks, MPI_File fh);
void ist_rec_io_read(enum ist_fn fn, uint64_t ticks, MPI_File fh, int count, MPI_Datatype type);
void ist_rec_io_write(enum ist_fn fn, uint64_t ticks, MPI_File fh, int count, MPI_Datatype type);

#endif
