/* isthmus-coll-model: the selector's costs without MPI, for `isthmus coll explain`.
 *
 *   isthmus-coll-model [--tuning FILE] PARAMS MPI CLUSTERS HOSTS COLLECTIVE BYTES...
 *
 * PARAMS a P-LogP parameter file (docs/model.md); MPI openmpi or mpich, with ":sleep"
 * when the layer's sleeping waits run its collectives as nonblocking forms; CLUSTERS and
 * HOSTS each rank's cluster and host numbers, comma-separated (hosts 0..size-1);
 * COLLECTIVE a name of coll_cost.h's list. Prints one JSON line per size: every
 * candidate's predicted time and the one chosen; with a tuning file (coll_tuning.h), also
 * its rule for the call, which then decides, as in the layer. The Python side checks the
 * arguments; here a bad one is a one-line error and exit status 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_cost.h"
#include "coll_tuning.h"

static int fail(const char *what, const char *value, const char *expected)
{
    fprintf(stderr, "isthmus-coll-model: %s '%s': expected %s\n", what, value, expected);
    return 2;
}

/* "a,b,c" into a new array; returns its length, or -1. */
static int parse_ints(const char *text, int **out)
{
    int n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    *out = malloc((size_t)n * sizeof(int));
    const char *p = text;
    for (int i = 0; i < n; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 20 || (*end != ',' && *end != '\0')) return -1;
        (*out)[i] = (int)v;
        p = end + (*end == ',');
    }
    return n;
}

int main(int argc, char **argv)
{
    struct ist_tuning tuning = {0};
    char err[512] = "";
    if (argc > 2 && strcmp(argv[1], "--tuning") == 0) {
        if (ist_tuning_read(argv[2], &tuning, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err); /* names the file and line */
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    if (argc < 7) {
        fprintf(stderr, "usage: isthmus-coll-model [--tuning FILE] PARAMS MPI CLUSTERS HOSTS "
                        "COLLECTIVE BYTES...\n");
        return 2;
    }
    struct ist_plogp p;
    if (ist_plogp_read(argv[1], &p, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err); /* names the file */
        return 2;
    }
    /* MPI, with ":sleep" when its collectives run as their nonblocking forms */
    struct ist_mpi f = {IST_MPI_OPENMPI, strstr(argv[2], ":sleep") != NULL};
    if (strncmp(argv[2], "mpich", 5) == 0) f.flavour = IST_MPI_MPICH;
    else if (strncmp(argv[2], "openmpi", 7) != 0)
        return fail("MPI", argv[2], "openmpi or mpich, with :sleep or :spin");
    int *cluster, *host;
    int n = parse_ints(argv[3], &cluster), nh = parse_ints(argv[4], &host);
    if (n < 1) return fail("clusters", argv[3], "comma-separated cluster numbers");
    if (nh != n) return fail("hosts", argv[4], "one host number per rank");
    int nclusters = 0;
    for (int i = 0; i < n; i++) {
        if (cluster[i] + 1 > nclusters) nclusters = cluster[i] + 1;
        if (host[i] >= n) return fail("hosts", argv[4], "host numbers below the number of ranks");
    }
    int id = ist_coll_by_name(argv[5], strlen(argv[5]));
    if (id < 0) return fail("collective", argv[5], "a collective of MPI, e.g. alltoall");
    struct ist_layout l = {n, nclusters, cluster, host, 0}; /* rooted: from root 0 */
    for (int a = 6; a < argc; a++) {
        char *end;
        long bytes = strtol(argv[a], &end, 10);
        if (end == argv[a] || *end || bytes < 0) return fail("size", argv[a], "bytes, 0 or more");
        struct ist_choice c;
        ist_coll_choose((enum ist_coll_id)id, bytes, f, &p, &l, &c);
        const struct ist_tuning_rule *r =
            ist_tuning_find(&tuning, f, n, nclusters, (enum ist_coll_id)id, bytes);
        /* a rule decides between the MPI's own (candidate 0) and ours (the cheapest other) */
        int best = c.best;
        if (r && c.n > 1) {
            best = 0;
            for (int i = 1; r->ours && i < c.n; i++)
                if (!best || c.c[i].time_us < c.c[best].time_us) best = i;
        }
        printf("{\"collective\": \"%s\", \"bytes\": %ld, \"chosen\": \"%s\", \"margin\": %.2f, "
               "\"tuned\": ",
               argv[5], bytes, c.n ? c.c[best].name : "", IST_NATIVE_MARGIN);
        if (r)
            printf("{\"from\": %ld, \"to\": %ld, \"ours\": %s, \"ours_us\": %.3f, "
                   "\"native_us\": %.3f}",
                   r->from, r->to, r->ours ? "true" : "false", r->ours_us, r->native_us);
        else
            printf("null");
        printf(", \"candidates\": [");
        for (int i = 0; i < c.n; i++)
            printf("%s{\"name\": \"%s\", \"native\": %s, \"predicted_us\": %.3f}", i ? ", " : "",
                   c.c[i].name, c.c[i].native ? "true" : "false", c.c[i].time_us);
        printf("]}\n");
    }
    free(cluster);
    free(host);
    ist_plogp_free(&p);
    ist_tuning_free(&tuning);
    return 0;
}
