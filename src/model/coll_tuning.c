/* Reading a tuning file (coll_tuning.h). */
#include "coll_tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "isthmus-coll-tuning 1"

static int fail(char *err, size_t errlen, const char *path, int line, const char *what)
{
    if (line > 0) snprintf(err, errlen, "%s:%d: %s", path, line, what);
    else snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

int ist_tuning_read(const char *path, struct ist_tuning *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->ranks = t->clusters = -1;
    t->mpi.flavour = (enum ist_mpi_flavour)-1;
    t->mpi.nonblocking = -1;
    FILE *f = fopen(path, "r");
    if (!f) return fail(err, errlen, path, 0, "cannot read the tuning file");
    char line[512];
    int n = 0, rc = 0, magic = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char word[64] = "", name[64] = "", choice[16] = "";
        if (sscanf(line, "%63s", word) != 1) continue;
        if (!magic) { /* the first line that is not blank */
            if (strncmp(line, MAGIC, strlen(MAGIC)) != 0)
                rc = fail(err, errlen, path, n, "not a tuning file (expected '" MAGIC "')");
            magic = 1;
            continue;
        }
        if (strcmp(word, "platform") == 0) {
            if (sscanf(line, "%*s %127s", t->platform) != 1)
                rc = fail(err, errlen, path, n, "expected 'platform NAME'");
        } else if (strcmp(word, "mpi") == 0) {
            if (sscanf(line, "%*s %63s", name) == 1 && strcmp(name, "openmpi") == 0)
                t->mpi.flavour = IST_MPI_OPENMPI;
            else if (strcmp(name, "mpich") == 0) t->mpi.flavour = IST_MPI_MPICH;
            else rc = fail(err, errlen, path, n, "expected 'mpi openmpi' or 'mpi mpich'");
        } else if (strcmp(word, "wait") == 0) {
            if (sscanf(line, "%*s %63s", name) == 1 && strcmp(name, "sleep") == 0)
                t->mpi.nonblocking = 1;
            else if (strcmp(name, "spin") == 0) t->mpi.nonblocking = 0;
            else rc = fail(err, errlen, path, n, "expected 'wait sleep' or 'wait spin'");
        } else if (strcmp(word, "ranks") == 0) {
            if (sscanf(line, "%*s %d clusters %d", &t->ranks, &t->clusters) != 2 || t->ranks < 1 ||
                t->clusters < 1)
                rc = fail(err, errlen, path, n, "expected 'ranks N clusters C'");
        } else if (strcmp(word, "source") == 0) {
            /* free text */
        } else if (strcmp(word, "rule") == 0) {
            struct ist_tuning_rule r;
            int id = -1;
            if (sscanf(line, "%*s %63s %ld %ld %15s %lf %lf", name, &r.from, &r.to, choice,
                       &r.ours_us, &r.native_us) != 6 ||
                (id = ist_coll_by_name(name, strlen(name))) < 0 || r.from < 0 || r.to < r.from ||
                (strcmp(choice, "ours") != 0 && strcmp(choice, "native") != 0)) {
                rc = fail(err, errlen, path, n,
                          "expected 'rule COLLECTIVE FROM TO ours|native OURS_US NATIVE_US'");
                break;
            }
            r.coll = id;
            r.ours = strcmp(choice, "ours") == 0;
            struct ist_tuning_rule *more = realloc(t->rules, (size_t)(t->n + 1) * sizeof *more);
            if (!more) {
                rc = fail(err, errlen, path, n, "out of memory");
                break;
            }
            t->rules = more;
            t->rules[t->n++] = r;
        } else {
            rc = fail(err, errlen, path, n,
                      "expected 'platform', 'mpi', 'wait', 'ranks', 'source' or 'rule' lines");
        }
    }
    fclose(f);
    if (rc == 0 && !magic) rc = fail(err, errlen, path, 0, "empty (expected '" MAGIC "')");
    if (rc == 0 && ((int)t->mpi.flavour < 0 || t->mpi.nonblocking < 0 || t->ranks < 0))
        rc = fail(err, errlen, path, 0, "lacks its 'mpi', 'wait' or 'ranks N clusters C' line");
    if (rc != 0) ist_tuning_free(t);
    return rc;
}

void ist_tuning_free(struct ist_tuning *t)
{
    free(t->rules);
    t->rules = NULL;
    t->n = 0;
}

const struct ist_tuning_rule *ist_tuning_find(const struct ist_tuning *t, struct ist_mpi f,
                                              int ranks, int clusters, enum ist_coll_id id,
                                              long bytes)
{
    if (!t || t->n == 0 || t->mpi.flavour != f.flavour || t->mpi.nonblocking != f.nonblocking ||
        t->ranks != ranks || t->clusters != clusters)
        return NULL;
    /* The collective's own rules; a v-form without any falls back on its regular form's. */
    const struct ist_tuning_rule *nearest = NULL;
    for (int pass = 0; pass < 2 && !nearest; pass++) {
        int coll = pass == 0 ? (int)id : (int)ist_coll_regular(id);
        long distance = 0;
        for (int i = 0; i < t->n; i++) {
            const struct ist_tuning_rule *r = &t->rules[i];
            if (r->coll != coll) continue;
            if (bytes >= r->from && bytes <= r->to) return r;
            long d = bytes < r->from ? r->from - bytes : bytes - r->to;
            if (!nearest || d < distance) {
                nearest = r;
                distance = d;
            }
        }
    }
    return nearest;
}
