/* Options, header record and progress shared by the benchmark programs. */
#include "bench_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(const char *name, const char *bad)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr,
                "%s: bad option '%s'; expected --min-size B, --max-size B, --seconds-per-size S, "
                "--iterations N, --warmup N, --peer RANK, --pairs N, --perturbation B, "
                "--collectives LIST, "
                "--precision FRACTION, --params FILE, --entries mpi,native\n",
                name, bad);
    MPI_Finalize();
    exit(2);
}

void bench_parse(int argc, char **argv, const char *name, struct bench_options *o)
{
    if (!o->entries) o->entries = "mpi";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) usage(name, a);
        if (strcmp(a, "--min-size") == 0) o->min_size = strtol(v, &end, 10);
        else if (strcmp(a, "--max-size") == 0) o->max_size = strtol(v, &end, 10);
        else if (strcmp(a, "--seconds-per-size") == 0) o->seconds_per_size = strtod(v, &end);
        else if (strcmp(a, "--iterations") == 0) o->iterations = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--warmup") == 0) o->warmup = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--peer") == 0) o->peer = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--pairs") == 0) o->pairs = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--perturbation") == 0) o->perturbation = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--precision") == 0) o->precision = strtod(v, &end);
        else if (strcmp(a, "--collectives") == 0 || strcmp(a, "--params") == 0 ||
                 strcmp(a, "--entries") == 0) {
            if (a[2] == 'c') o->collectives = v;
            else if (a[2] == 'p') o->params = v;
            else o->entries = v;
            end = (char *)v + strlen(v); /* text: nothing to parse */
        } else usage(name, a);
        if (!end || *end) usage(name, v);
        i++;
    }
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (o->min_size < 0 || o->max_size < o->min_size || o->seconds_per_size <= 0 ||
        o->iterations < 1 || o->warmup < 0 || o->perturbation < 0 || o->precision < 0 ||
        o->peer < (strcmp(name, "logp") == 0 ? 0 : 1) || o->peer >= size || o->pairs < 0 ||
        o->pairs > size / 2)
        usage(name, "(a value out of range; --peer must name another rank, --pairs at most "
                    "half the ranks)");
    if (strcmp(o->entries, "mpi") != 0 && strcmp(o->entries, "native") != 0 &&
        strcmp(o->entries, "mpi,native") != 0 && strcmp(o->entries, "native,mpi") != 0)
        usage(name, o->entries);
}

void bench_progress(const char *name, const char *fmt, ...)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

long bench_next_size(const struct bench_options *o, long size)
{
    long next = size <= 0 ? 1 : size * 2;
    return next > o->max_size ? -1 : next;
}

/* Cluster of world rank r from the block mapping isthmus run passes ("a:2,b:2"). */
void bench_cluster_of(int r, char *out, size_t n)
{
    const char *spec = getenv("ISTHMUS_CLUSTERS");
    snprintf(out, n, "%s", "");
    if (!spec) return;
    int first = 0;
    const char *p = spec;
    while (*p) {
        const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
        if (!colon) return;
        int count = atoi(colon + 1);
        if (r >= first && r < first + count) {
            snprintf(out, n, "%.*s", (int)(colon - p), p);
            return;
        }
        first += count;
        if (!comma) return;
        p = comma + 1;
    }
}

static void json_text(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar((unsigned char)*s < 0x20 ? ' ' : *s);
    }
    putchar('"');
}

void bench_header(const char *name, int argc, char **argv, const struct bench_options *o)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    char *hosts = rank == 0 ? malloc((size_t)size * 64) : NULL;
    MPI_Gather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank != 0) return;

    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *platform = getenv("ISTHMUS_PLATFORM_NAME"), *rev = getenv("ISTHMUS_GIT_REVISION");

    printf("{\"record\": \"header\", \"benchmark\": \"%s\", \"mpi_library\": ", name);
    json_text(lib);
    printf(", \"ranks\": %d, \"date\": \"%s\", \"platform\": ", size, date);
    json_text(platform ? platform : "");
    printf(", \"git_revision\": ");
    json_text(rev ? rev : "");
    /* the scale model's K: every time in these records is virtual (docs/dilation.md) */
    const char *dilation = getenv("ISTHMUS_DILATION");
    printf(", \"dilation\": %g", dilation && *dilation ? strtod(dilation, NULL) : 1.0);
    printf(", \"command\": [");
    for (int i = 0; i < argc; i++) {
        if (i) printf(", ");
        json_text(argv[i]);
    }
    printf("], \"options\": {\"min_size\": %ld, \"max_size\": %ld, \"seconds_per_size\": %g, "
           "\"iterations\": %d, \"warmup\": %d, \"peer\": %d, \"pairs\": %d, "
           "\"perturbation\": %d, \"precision\": %g}, \"placement\": [",
           o->min_size, o->max_size, o->seconds_per_size, o->iterations, o->warmup, o->peer,
           o->pairs ? o->pairs : 1, o->perturbation, o->precision);
    for (int r = 0; r < size; r++) {
        char cluster[64];
        bench_cluster_of(r, cluster, sizeof cluster);
        printf("%s{\"rank\": %d, \"host\": ", r ? ", " : "", r);
        json_text(hosts + (size_t)r * 64);
        printf(", \"cluster\": ");
        json_text(cluster);
        printf("}");
    }
    printf("]}\n");
    fflush(stdout);
    free(hosts);
}
