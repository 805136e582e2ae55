/* series: every call's time in a fixed mix of collectives, call after call, for watching
 * the layer follow a network that changes while the program runs (adaptive/live,
 * docs/layer.md).
 *
 *   series [--collectives bcast,allreduce] [--sizes 8,65536,1048576] [--iterations N]
 *          [--on world|later|inter] [--check-native] [--pause-at I,J,... --go-file PREFIX]
 *
 * Each iteration calls each collective at each size once (Bcast from root iteration mod
 * ranks, Allreduce a sum of ints), and checks the result against what it must be; with
 * --check-native also against the same call on a duplicate that keeps the MPI's own
 * collectives. The calls go to MPI_COMM_WORLD (--on world), to a duplicate of it made
 * after each pause (--on later: a communicator created after a change of the network),
 * or to an intercommunicator between the even and the odd ranks (--on inter: its Bcast
 * from one rank of one group, in turn, to the other group; its Allreduce gives each group
 * the other's sum). Rank 0 prints "series: iteration I" to stderr as each
 * iteration starts (a driver changes the network at chosen iterations), and at the end
 * one JSON line per call to stdout: iteration, collective, bytes, the slowest rank's
 * time of the call, and when it started (rank 0's clock, from the first call). With
 * --pause-at, before iteration I rank 0 prints "series: paused at I" and every rank waits
 * until the file PREFIX.I exists (a driver changes the network, then creates it), so a
 * change lands at a known call. A wrong result ends the run with exit code 3. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_KINDS 16
enum op { BCAST, ALLREDUCE };

struct kind {
    enum op op;
    long bytes;
};

#define MAX_PAUSES 16
enum on { ON_WORLD, ON_LATER, ON_INTER };
struct options {
    int iterations, check_native, npauses, pauses[MAX_PAUSES];
    enum on on;
    const char *go_file;
};

static int parse(int argc, char **argv, struct kind *kinds, int *nkinds, struct options *o)
{
    const char *colls = "bcast,allreduce", *sizes = "8,65536,1048576", *pauses = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--collectives") == 0 && i + 1 < argc) colls = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) sizes = argv[++i];
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) o->iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--check-native") == 0) o->check_native = 1;
        else if (strcmp(argv[i], "--on") == 0 && i + 1 < argc) {
            const char *on = argv[++i];
            if (strcmp(on, "world") == 0) o->on = ON_WORLD;
            else if (strcmp(on, "later") == 0) o->on = ON_LATER;
            else if (strcmp(on, "inter") == 0) o->on = ON_INTER;
            else return -1;
        }
        else if (strcmp(argv[i], "--pause-at") == 0 && i + 1 < argc) pauses = argv[++i];
        else if (strcmp(argv[i], "--go-file") == 0 && i + 1 < argc) o->go_file = argv[++i];
        else return -1;
    }
    char ps[256], *at_p = NULL;
    snprintf(ps, sizeof ps, "%s", pauses);
    for (char *p = strtok_r(ps, ",", &at_p); p && o->npauses < MAX_PAUSES; p = strtok_r(NULL, ",", &at_p))
        o->pauses[o->npauses++] = atoi(p);
    if (o->npauses && !o->go_file) return -1;
    char cs[256], ss[256], *at_c = NULL, *at_s = NULL;
    snprintf(cs, sizeof cs, "%s", colls);
    *nkinds = 0;
    for (char *c = strtok_r(cs, ",", &at_c); c; c = strtok_r(NULL, ",", &at_c)) {
        enum op op;
        if (strcmp(c, "bcast") == 0) op = BCAST;
        else if (strcmp(c, "allreduce") == 0) op = ALLREDUCE;
        else return -1;
        snprintf(ss, sizeof ss, "%s", sizes);
        for (char *s = strtok_r(ss, ",", &at_s); s; s = strtok_r(NULL, ",", &at_s)) {
            long b = atol(s);
            if (b < 4 || *nkinds == MAX_KINDS) return -1;
            kinds[(*nkinds)++] = (struct kind){op, b / 4 * 4};
        }
    }
    return o->iterations > 0 && *nkinds > 0 ? 0 : -1;
}

/* One call of kind k at iteration it on the intracommunicator comm into buf (count ints);
 * 0 when the result is what it must be. */
static int call(const struct kind *k, int it, int *buf, int *in, int count, int rank, int size,
                MPI_Comm comm)
{
    if (k->op == BCAST) {
        int root = it % size;
        for (int i = 0; i < count; i++) buf[i] = rank == root ? it + i : -1;
        MPI_Bcast(buf, count, MPI_INT, root, comm);
        for (int i = 0; i < count; i++)
            if (buf[i] != it + i) return 1;
        return 0;
    }
    for (int i = 0; i < count; i++) in[i] = rank + i % 7 + it;
    MPI_Allreduce(in, buf, count, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < count; i++)
        if (buf[i] != size * (size - 1) / 2 + size * (i % 7 + it)) return 1;
    return 0;
}

/* The same on the intercommunicator between the even (group 0) and the odd world ranks
 * (world_rank, world_size): Bcast from group it mod 2's rank (it / 2) mod its size; the
 * Allreduce's result in a group is the other group's sum. */
static int call_inter(const struct kind *k, int it, int *buf, int *in, int count, int world_rank,
                      int world_size, MPI_Comm inter)
{
    int group = world_rank % 2, local = world_rank / 2, remote_size = 0, local_size = 0;
    MPI_Comm_size(inter, &local_size);
    MPI_Comm_remote_size(inter, &remote_size);
    if (k->op == BCAST) {
        int from = it % 2, sender_group_size = from == group ? local_size : remote_size;
        int root = (it / 2) % sender_group_size;
        int sends = from == group && local == root;
        for (int i = 0; i < count; i++) buf[i] = sends ? it + i : -1;
        MPI_Bcast(buf, count, MPI_INT, from != group ? root : sends ? MPI_ROOT : MPI_PROC_NULL,
                  inter);
        for (int i = 0; from != group && i < count; i++)
            if (buf[i] != it + i) return 1;
        return 0;
    }
    for (int i = 0; i < count; i++) in[i] = world_rank + i % 7 + it;
    MPI_Allreduce(in, buf, count, MPI_INT, MPI_SUM, inter);
    int others = 0; /* the sum of the other group's world ranks */
    for (int r = 1 - group; r < world_size; r += 2) others += r;
    for (int i = 0; i < count; i++)
        if (buf[i] != others + remote_size * (i % 7 + it)) return 1;
    return 0;
}

/* The communicator the calls go to (--on), and its twin keeping the MPI's own. */
static void make_comms(enum on on, int rank, MPI_Comm *comm, MPI_Comm *native)
{
    if (on == ON_INTER) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        /* the other group's leader: world rank 1 for the evens, 0 for the odds */
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 0x5e51, comm);
        MPI_Comm_free(&half);
    } else MPI_Comm_dup(MPI_COMM_WORLD, comm);
    MPI_Comm_dup(*comm, native);
    MPI_Comm_set_name(*native, "isthmus:native"); /* the layer leaves it to the MPI */
}

/* Before iteration it, when a pause is asked there: wait for PREFIX.it (rank 0 polls,
 * then releases the others on comm, which keeps the MPI's own collectives); 1 if it
 * paused. */
static int pause_if_asked(const struct options *o, int it, int rank, MPI_Comm comm)
{
    for (int i = 0; i < o->npauses; i++) {
        if (o->pauses[i] != it) continue;
        if (rank == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%d", o->go_file, it);
            fprintf(stderr, "series: paused at %d\n", it);
            fflush(stderr);
            while (access(path, F_OK) != 0) nanosleep(&(struct timespec){0, 10000000}, NULL);
        }
        MPI_Barrier(comm);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, nkinds = 0;
    struct options o = {.iterations = 100};
    struct kind kinds[MAX_KINDS];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, kinds, &nkinds, &o) != 0) {
        if (rank == 0)
            fprintf(stderr, "series: usage: series [--collectives bcast,allreduce] [--sizes "
                            "8,65536,...] [--iterations N] [--check-native] [--pause-at "
                            "I,J,... --go-file PREFIX] [--on world|later|inter]\n");
        MPI_Finalize();
        return 2;
    }
    if (o.on == ON_INTER && size < 2) {
        if (rank == 0) fprintf(stderr, "series: --on inter: expected 2 ranks or more\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm comm, native;
    make_comms(o.on, rank, &comm, &native);
    long most = 0;
    for (int k = 0; k < nkinds; k++) most = kinds[k].bytes > most ? kinds[k].bytes : most;
    int *buf = malloc((size_t)most), *in = malloc((size_t)most), *ref = malloc((size_t)most);
    long n = (long)o.iterations * nkinds;
    double *took = calloc((size_t)n, sizeof *took), *slowest = calloc((size_t)n, sizeof *slowest);
    double *when = calloc((size_t)n, sizeof *when);
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < o.iterations; it++) {
        if (pause_if_asked(&o, it, rank, native) && o.on == ON_LATER) {
            MPI_Comm_free(&comm); /* the calls from here on: a communicator made after it */
            MPI_Comm_free(&native);
            make_comms(o.on, rank, &comm, &native);
        }
        if (rank == 0) {
            fprintf(stderr, "series: iteration %d\n", it);
            fflush(stderr);
        }
        for (int k = 0; k < nkinds; k++) {
            int count = (int)(kinds[k].bytes / 4);
            double t0 = MPI_Wtime();
            bad |= o.on == ON_INTER ? call_inter(&kinds[k], it, buf, in, count, rank, size, comm)
                                    : call(&kinds[k], it, buf, in, count, rank, size, comm);
            took[(long)it * nkinds + k] = MPI_Wtime() - t0;
            when[(long)it * nkinds + k] = t0 - start;
            if (o.check_native) {
                bad |= o.on == ON_INTER ? call_inter(&kinds[k], it, ref, in, count, rank, size, native)
                                        : call(&kinds[k], it, ref, in, count, rank, size, native);
                bad |= memcmp(buf, ref, (size_t)count * sizeof *buf) != 0;
            }
        }
    }
    MPI_Reduce(took, slowest, (int)n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    for (long i = 0; rank == 0 && i < n; i++) {
        const struct kind *k = &kinds[i % nkinds];
        printf("{\"iteration\": %ld, \"collective\": \"%s\", \"bytes\": %ld, \"us\": %.3f, "
               "\"started_s\": %.6f}\n",
               i / nkinds, k->op == BCAST ? "bcast" : "allreduce", k->bytes, slowest[i] * 1e6,
               when[i]);
    }
    if (any_bad && rank == 0) fprintf(stderr, "series: a result differs from what it must be\n");
    free(buf);
    free(in);
    free(ref);
    free(took);
    free(slowest);
    free(when);
    MPI_Comm_free(&native);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return any_bad ? 3 : 0;
}
