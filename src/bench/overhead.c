/* overhead: the time libisthmus adds to an MPI call, measured in one run.
 *
 *   isthmus run -p PLATFORM --profile /dev/null -- overhead [--rounds R] [--iters N]
 *   (or LD_PRELOAD=libisthmus.so ISTHMUS_PROFILE=... mpirun -np 2 overhead)
 *
 * Three modes are interleaved round by round, in a rotating order, in the same process:
 *   native        PMPI_Send/PMPI_Recv/PMPI_Allreduce: the library without the layer;
 *   layer_off     MPI_* through the wrappers with profiling paused (MPI_Pcontrol(0));
 *   layer_on      MPI_* through the wrappers while the profiler records.
 * Each round times N iterations of an 8-byte ping-pong between ranks 0 and 1 and of an
 * 8-byte Allreduce over all ranks. The added time per call is the median over rounds of
 * the paired difference (mode - native in the same round, which cancels slow drift of the
 * machine), divided by the calls on the critical path: a ping-pong round trip passes
 * through four calls (send and receive on each side), an Allreduce through one.
 * A third measure times an 8-byte Allreduce on MPI_COMM_SELF: a real MPI call with no
 * peer to wait for, so the difference is the wrapper's own cost without the noise of two
 * ranks sharing the machine (on 2 ranks a rank's recording also delays its peer).
 * Rank 0 prints one JSON document on stdout. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mode { NATIVE, LAYER_OFF, LAYER_ON, NMODES };
static const char *mode_name[NMODES] = {"native", "layer_off", "layer_on"};

static void set_mode(enum mode m)
{
    MPI_Pcontrol(m == LAYER_ON ? 1 : 0);
}

static double pingpong(enum mode m, int rank, int iters, double *buf)
{
    MPI_Status st;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    if (rank == 0) {
        for (int i = 0; i < iters; i++) {
            if (m == NATIVE) {
                PMPI_Send(buf, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
                PMPI_Recv(buf, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &st);
            } else {
                MPI_Send(buf, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &st);
            }
        }
    } else if (rank == 1) {
        for (int i = 0; i < iters; i++) {
            if (m == NATIVE) {
                PMPI_Recv(buf, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &st);
                PMPI_Send(buf, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &st);
                MPI_Send(buf, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
            }
        }
    }
    return (PMPI_Wtime() - t0) / iters;
}

static double allreduce(enum mode m, int iters, double *in, double *out)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (m == NATIVE) PMPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    return (PMPI_Wtime() - t0) / iters;
}

static double allreduce_self(enum mode m, int iters, double *in, double *out)
{
    double t0 = PMPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (m == NATIVE) PMPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
        else MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    }
    return (PMPI_Wtime() - t0) / iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and the 10th/90th percentiles of v (sorted in place), in nanoseconds. */
static void print_stats(const char *name, double *v, int n, double scale, const char *sep)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    printf("      \"%s\": {\"median_ns\": %.2f, \"p10_ns\": %.2f, \"p90_ns\": %.2f}%s\n", name,
           v[n / 2] * 1e9 * scale, v[n / 10] * 1e9 * scale, v[(n * 9) / 10] * 1e9 * scale, sep);
}

/* One benchmark's JSON: absolute times per mode, and the per-call paired differences. */
static void print_bench(const char *name, double *t[NMODES], int rounds, int calls, const char *sep)
{
    double *diff[NMODES];
    for (int m = LAYER_OFF; m < NMODES; m++) {
        diff[m] = malloc((size_t)rounds * sizeof(double));
        for (int r = 0; r < rounds; r++) diff[m][r] = t[m][r] - t[NATIVE][r];
    }
    printf("  \"%s\": {\n    \"calls_on_critical_path\": %d,\n    \"per_mode\": {\n", name, calls);
    for (int m = 0; m < NMODES; m++) print_stats(mode_name[m], t[m], rounds, 1.0, m + 1 < NMODES ? "," : "");
    printf("    },\n    \"added_per_call\": {\n");
    for (int m = LAYER_OFF; m < NMODES; m++) {
        print_stats(mode_name[m], diff[m], rounds, 1.0 / calls, m + 1 < NMODES ? "," : "");
        free(diff[m]);
    }
    printf("    }\n  }%s\n", sep);
}

int main(int argc, char **argv)
{
    int rounds = 200, iters = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || rounds < 10 || iters < 1) {
        if (rank == 0) fprintf(stderr, "overhead: needs 2 ranks, --rounds >= 10, --iters >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double buf = 1.0, in = 1.0, out = 0.0;
    double *pp[NMODES], *ar[NMODES], *self[NMODES];
    for (int m = 0; m < NMODES; m++) {
        pp[m] = calloc((size_t)rounds, sizeof(double));
        ar[m] = calloc((size_t)rounds, sizeof(double));
        self[m] = calloc((size_t)rounds, sizeof(double));
    }
    /* Warm-up in every mode. */
    for (int m = 0; m < NMODES; m++) {
        set_mode((enum mode)m);
        pingpong((enum mode)m, rank, iters, &buf);
        allreduce((enum mode)m, iters, &in, &out);
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NMODES; k++) {
            enum mode m = (enum mode)((r + k) % NMODES);
            set_mode(m);
            pp[m][r] = pingpong(m, rank, iters, &buf);
            ar[m][r] = allreduce(m, iters, &in, &out);
            self[m][r] = allreduce_self(m, 10 * iters, &in, &out);
        }
    set_mode(LAYER_ON);

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = '\0';
        for (char *c = lib; *c; c++) /* keep the JSON string plain */
            if (*c < 0x20 || *c == '"' || *c == '\\') *c = ' ';
        printf("{\n  \"benchmark\": \"overhead\",\n  \"mpi_library\": \"%s\",\n", lib);
        printf("  \"ranks\": %d, \"rounds\": %d, \"iterations_per_round\": %d,\n", size, rounds,
               iters);
        print_bench("pingpong_8B_round_trip", pp, rounds, 4, ",");
        print_bench("allreduce_8B", ar, rounds, 1, ",");
        print_bench("allreduce_8B_comm_self", self, rounds, 1, "");
        printf("}\n");
    }
    for (int m = 0; m < NMODES; m++) {
        free(pp[m]);
        free(ar[m]);
        free(self[m]);
    }
    MPI_Finalize();
    return 0;
}
