/* Drives the C optimizer for tests/python/test_model_c.py: reads a P-LogP parameter file
 * (argv[1]), then lines "single P M" or "pipelined PW PL M" on stdin, and prints for each
 * the chosen shape and its predicted time exactly (%.17g), or the reader's error (exit 2). */
#include <stdio.h>
#include <string.h>

#include "plogp.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: model_check PARAMS < queries\n");
        return 2;
    }
    struct ist_plogp p;
    char err[512];
    if (ist_plogp_read(argv[1], &p, err, sizeof err) != 0) {
        fprintf(stderr, "model_check: %s\n", err);
        return 2;
    }
    printf("platform %s lan %d wan %d\n", p.platform, p.lan.n, p.wan.n);
    char kind[16];
    int a, b;
    long m;
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        struct ist_bcast_shape s;
        if (sscanf(line, "%15s", kind) != 1) continue;
        if (strcmp(kind, "single") == 0 && sscanf(line, "%*s %d %ld", &a, &m) == 2)
            s = ist_bcast_best_single(&p, a, m);
        else if (strcmp(kind, "pipelined") == 0 && sscanf(line, "%*s %d %d %ld", &a, &b, &m) == 3)
            s = ist_bcast_best_pipelined(&p, a, b, m);
        else {
            fprintf(stderr, "model_check: bad query: %s", line);
            ist_plogp_free(&p);
            return 2;
        }
        printf("%.17g %ld %ld %d %d %d %d %.17g %d\n", s.time, s.segment, s.segments, s.degree,
               s.height, s.lan_degree, s.lan_height, s.gamma, s.gap_bound);
    }
    ist_plogp_free(&p);
    return 0;
}
