/* The layer's life cycle and the wrappers that drive it: MPI_Init, MPI_Init_thread,
 * MPI_Finalize and MPI_Pcontrol, for C and for every Fortran spelling.
 *
 * Settings come from the environment (written by `isthmus run`, or by hand):
 *   ISTHMUS_PROFILE=path   record, and write the merged profile to path at MPI_Finalize;
 *   ISTHMUS_CLUSTER*       the cluster of each rank (topology.h);
 *   ISTHMUS_WAIT=sleep     blocking calls test and sleep instead of spinning (src/world/wait.c).
 * MPI_Pcontrol(0) pauses recording and MPI_Pcontrol(1) resumes it, as in mpiP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer.h"
#include "env_check.h"
#include "hier.h"
#include "mpiio.h"
#include "profiler.h"
#include "topology.h"
#include "world.h"


static int initialized, finalized;
static int fortran_program; /* MPI_Init came from Fortran */
static char *profile_path;
static MPI_Comm layer_comm = MPI_COMM_NULL;
static struct ist_clock_ref run_start;
static uint64_t app_start_ticks;
/* When MPI_Init returned, in seconds since the epoch (CLOCK_REALTIME, the run's time): what
 * `isthmus run` sets against a Slurm job's submission (docs/slurm.md). */
static double app_start_unix;

double ist_clock_rate(struct ist_clock_ref start, uint64_t min_ns)
{
    struct ist_clock_ref now = ist_clock_now();
    while (now.ns - start.ns < min_ns) now = ist_clock_now();
    return (double)(now.ticks - start.ticks) * 1e9 / (double)(now.ns - start.ns);
}

/* A bad setting in the environment ends the run before anything starts: rank 0 says why
 * (the same line reaches the user once, not once per rank), every rank exits with 2. */
static void check_settings(void)
{
    char err[600] = "";
    if (ist_env_check(err, sizeof err) == 0 && ist_hier_settings(err, sizeof err) == 0) return;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) fprintf(stderr, "isthmus: %s\n", err);
    PMPI_Finalize();
    exit(2);
}

void ist_layer_init(int provided)
{
    if (initialized) return;
    initialized = 1;
    check_settings();
    ist_pio_start(fortran_program); /* hidden I/O servers serve here and never return */
    run_start = ist_clock_now();
    /* The world first (several sites under zipper forwarding), so that the topology and
     * the collectives see it; the profile is gathered over it (profile_write.c). */
    ist_world_init(&layer_comm);
    ist_hier_init(layer_comm);
    const char *path = getenv("ISTHMUS_PROFILE");
    if (path && *path) {
        if (ist_profiler_init(ist_world_size(), provided == MPI_THREAD_MULTIPLE) == 0) {
            profile_path = strdup(path);
            ist_profiling = 1;
        } else {
            fprintf(stderr, "isthmus: out of memory for the profiler: profiling is off\n");
        }
    }
    app_start_ticks = ist_ticks();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    app_start_unix = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Tell isthmus run that this rank reached MPI_Finalize: a rank that fails inside it (for
 * instance MPICH's UCX timing out on a peer that exited) is failing because of another
 * one, whose exit status is the job's. */
static void mark_finalizing(void)
{
    const char *dir = getenv("ISTHMUS_STATUS_DIR");
    if (!dir || !*dir) return;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s/finalizing-%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

void ist_layer_finalize(void)
{
    if (!initialized || finalized) return;
    finalized = 1;
    mark_finalizing();
    ist_mpich_finalize_begin();
    uint64_t app_ticks = ist_ticks() - app_start_ticks;
    ist_profiling = 0;
    if (profile_path) {
        /* Calibrate over the whole run; a run shorter than 20 ms waits for the rest. */
        double rate = ist_clock_rate(run_start, 20000000u);
        ist_profile_write(profile_path, layer_comm, rate, (double)app_ticks / rate, app_start_unix);
        ist_profiler_free();
        free(profile_path);
        profile_path = NULL;
    }
    ist_hier_finalize();
    ist_world_finalize(&layer_comm); /* the collectives' communicators are freed */
    ist_pio_stop();                  /* the last: the application's world is pio's */
}

void ist_layer_pcontrol(int level)
{
    if (profile_path && !finalized) ist_profiling = level != 0;
}

/* Time spent in MPI_Init* and MPI_Finalize is recorded under their own names; it does not
 * count as the application's time in MPI. */
static void record_lifecycle(enum ist_fn fn, uint64_t t0)
{
    if (ist_profiling) ist_rec_none(fn, ist_ticks() - t0);
}

/* ---- C ---------------------------------------------------------------------------- */

/* Under time dilation the ranks read virtual time (src/util/time_dilation.c). */
double MPI_Wtime(void)
{
    return ist_dilation() > 1.0 ? ist_now_us() * 1e-6 : PMPI_Wtime();
}

int MPI_Init(int *argc, char ***argv)
{
    if (ist_depth) return PMPI_Init(argc, argv);
    uint64_t t0 = ist_ticks();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) ist_layer_init(MPI_THREAD_SINGLE);
    record_lifecycle(IST_FN_MPI_Init, t0);
    return rc;
}

/* Zipper forwarding's engine is not thread-safe: at most MPI_THREAD_SERIALIZED. */
static int zip_thread_level(int required)
{
    const char *zip = getenv("ISTHMUS_ZIP_SITES");
    return zip && *zip && required > MPI_THREAD_SERIALIZED ? MPI_THREAD_SERIALIZED : required;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (ist_depth) return PMPI_Init_thread(argc, argv, required, provided);
    required = zip_thread_level(required);
    uint64_t t0 = ist_ticks();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) ist_layer_init(*provided);
    record_lifecycle(IST_FN_MPI_Init_thread, t0);
    return rc;
}

int MPI_Finalize(void)
{
    if (ist_depth) return PMPI_Finalize();
    if (ist_profiling) ist_rec_none(IST_FN_MPI_Finalize, 0);
    ist_layer_finalize();
    return PMPI_Finalize();
}

int MPI_Pcontrol(const int level, ...)
{
    ist_layer_pcontrol(level);
    return PMPI_Pcontrol(level);
}

/* ---- Fortran -------------------------------------------------------------------------
 * Open MPI's Fortran entries call PMPI_Init and friends directly, so the C wrappers above
 * never see a Fortran program's MPI_Init: these do the same work. MPICH's call the C
 * MPI_Init, which then forwards because ist_depth is raised. */

#define IST_FORTRAN_SPELLINGS(lower, upper, params)                                      \
    void lower params __attribute__((alias(#lower "_")));                                \
    void lower##__ params __attribute__((alias(#lower "_")));                            \
    void upper params __attribute__((alias(#lower "_")));

typedef void (*fortran_init_fn)(MPI_Fint *);
typedef void (*fortran_init_thread_fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*fortran_finalize_fn)(MPI_Fint *);
typedef void (*fortran_pcontrol_fn)(MPI_Fint *);
extern void pmpi_init_(MPI_Fint *);
extern void pmpi_init_thread_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern void pmpi_finalize_(MPI_Fint *);
extern void pmpi_pcontrol_(MPI_Fint *);

static void fortran_init(fortran_init_fn pmpi, MPI_Fint *ierr)
{
    uint64_t t0 = ist_ticks();
    ist_depth++;
    pmpi(ierr);
    ist_depth--;
    fortran_program = 1;
    if (*ierr == MPI_SUCCESS) ist_layer_init(MPI_THREAD_SINGLE);
    record_lifecycle(IST_FN_MPI_Init, t0);
}

static void fortran_init_thread(fortran_init_thread_fn pmpi, MPI_Fint *required,
                                MPI_Fint *provided, MPI_Fint *ierr)
{
    uint64_t t0 = ist_ticks();
    ist_depth++;
    pmpi(required, provided, ierr);
    ist_depth--;
    fortran_program = 1;
    if (*ierr == MPI_SUCCESS) ist_layer_init((int)*provided);
    record_lifecycle(IST_FN_MPI_Init_thread, t0);
}

static void fortran_finalize(fortran_finalize_fn pmpi, MPI_Fint *ierr)
{
    if (ist_profiling) ist_rec_none(IST_FN_MPI_Finalize, 0);
    ist_layer_finalize();
    ist_depth++;
    pmpi(ierr);
    ist_depth--;
}

static void fortran_pcontrol(fortran_pcontrol_fn pmpi, MPI_Fint *level)
{
    ist_layer_pcontrol((int)*level);
    ist_depth++;
    pmpi(level);
    ist_depth--;
}

void mpi_init_(MPI_Fint *ierr) { fortran_init(pmpi_init_, ierr); }
IST_FORTRAN_SPELLINGS(mpi_init, MPI_INIT, (MPI_Fint *ierr))
void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    fortran_init_thread(pmpi_init_thread_, required, provided, ierr);
}
IST_FORTRAN_SPELLINGS(mpi_init_thread, MPI_INIT_THREAD,
                      (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr))
void mpi_finalize_(MPI_Fint *ierr) { fortran_finalize(pmpi_finalize_, ierr); }
IST_FORTRAN_SPELLINGS(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr))
void mpi_pcontrol_(MPI_Fint *level) { fortran_pcontrol(pmpi_pcontrol_, level); }
IST_FORTRAN_SPELLINGS(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint *level))

/* The mpi_f08 modules' own entry points. Open MPI's reach PMPI_* directly and have
 * pmpi_x_f08_ profiling twins; MPICH's init and finalize also call PMPI_Init/PMPI_Finalize
 * directly, with pmpir_x_f08_ twins. ierror is OPTIONAL there: a missing one is NULL. */
#if defined(IST_FORTRAN_F08)
#define IST_F08_PMPI(name) pmpi_##name##_f08_
#elif defined(MPICH_VERSION)
#define IST_F08_PMPI(name) pmpir_##name##_f08_
#endif

#ifdef IST_F08_PMPI
extern void IST_F08_PMPI(init)(MPI_Fint *);
extern void IST_F08_PMPI(init_thread)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
extern void IST_F08_PMPI(finalize)(MPI_Fint *);
extern void IST_F08_PMPI(pcontrol)(MPI_Fint *);

void mpi_init_f08_(MPI_Fint *ierr)
{
    MPI_Fint local = MPI_SUCCESS;
    fortran_init(IST_F08_PMPI(init), ierr ? ierr : &local);
}
void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    MPI_Fint local = MPI_SUCCESS;
    fortran_init_thread(IST_F08_PMPI(init_thread), required, provided, ierr ? ierr : &local);
}
void mpi_finalize_f08_(MPI_Fint *ierr)
{
    MPI_Fint local = MPI_SUCCESS;
    fortran_finalize(IST_F08_PMPI(finalize), ierr ? ierr : &local);
}
void mpi_pcontrol_f08_(MPI_Fint *level) { fortran_pcontrol(IST_F08_PMPI(pcontrol), level); }
#endif
