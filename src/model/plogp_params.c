/* Reading a P-LogP parameter file (docs/model.md) and evaluating its functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plogp.h"

double ist_plogp_at(const struct ist_plogp_class *c, const double *ys, double x)
{
    int n = c->n;
    if (n == 0) return 0.0; /* a class not measured: it costs nothing (no such links) */
    if (n == 1) return ys[0];
    int i = 1;
    while (i < n - 1 && (double)c->sizes[i] < x) i++;
    double x0 = (double)c->sizes[i - 1], x1 = (double)c->sizes[i], y0 = ys[i - 1], y1 = ys[i];
    double y = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    if (x > x1) {
        /* Beyond the largest measured size, never a slope below the mean cost per byte
         * so far: one noisy last point (a TCP loss) must not make larger messages cheaper. */
        double slope = (y1 - y0) / (x1 - x0);
        if (x1 > 0 && y1 / x1 > slope) slope = y1 / x1;
        y = y1 + slope * (x - x1);
    }
    return y > 0 ? y : 0.0;
}

int ist_plogp_class_init(struct ist_plogp_class *c, double L, int n)
{
    c->present = 1;
    c->L = L;
    c->n = n;
    c->sizes = malloc((size_t)n * sizeof(long));
    c->os = malloc((size_t)n * sizeof(double));
    c->orecv = malloc((size_t)n * sizeof(double));
    c->g = malloc((size_t)n * sizeof(double));
    return c->sizes && c->os && c->orecv && c->g ? 0 : -1;
}

static struct ist_plogp_class *class_named(struct ist_plogp *p, const char *name)
{
    if (strcmp(name, "lan") == 0) return &p->lan;
    if (strcmp(name, "wan") == 0) return &p->wan;
    return NULL; /* other classes are for other tools: skipped */
}

static int add_point(struct ist_plogp_class *c, long m, double os, double orecv, double g)
{
    int n = c->n + 1;
    long *sizes = realloc(c->sizes, (size_t)n * sizeof *sizes);
    if (sizes) c->sizes = sizes;
    double *a = realloc(c->os, (size_t)n * sizeof *a);
    if (a) c->os = a;
    double *b = realloc(c->orecv, (size_t)n * sizeof *b);
    if (b) c->orecv = b;
    double *d = realloc(c->g, (size_t)n * sizeof *d);
    if (d) c->g = d;
    if (!sizes || !a || !b || !d) return -1;
    /* Keep the points sorted by size (files list them sorted; insertion keeps it so). */
    int i = c->n;
    while (i > 0 && c->sizes[i - 1] > m) {
        c->sizes[i] = c->sizes[i - 1];
        c->os[i] = c->os[i - 1];
        c->orecv[i] = c->orecv[i - 1];
        c->g[i] = c->g[i - 1];
        i--;
    }
    if (i > 0 && c->sizes[i - 1] == m) return -2;
    c->sizes[i] = m;
    c->os[i] = os;
    c->orecv[i] = orecv;
    c->g[i] = g;
    c->n = n;
    return 0;
}

int ist_plogp_read(const char *path, struct ist_plogp *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open the P-LogP parameter file", path);
        return -1;
    }
    char line[512];
    int lineno = 0, rc = 0, magic = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "#\n")] = '\0';
        char word[32] = "", name[32] = "";
        if (sscanf(line, "%31s", word) != 1) continue;
        long m;
        double a, b, c;
        struct ist_plogp_class *cls;
        if (!magic) {
            magic = strcmp(word, "isthmus-plogp") == 0 && sscanf(line, "%*s %ld", &m) == 1 && m == 1;
            if (!magic) {
                snprintf(err, errlen, "%s: not a P-LogP parameter file (no 'isthmus-plogp 1' line)", path);
                rc = -1;
            }
        } else if (strcmp(word, "platform") == 0) {
            sscanf(line, "%*s %127s", p->platform);
        } else if (strcmp(word, "source") == 0) {
            continue;
        } else if (strcmp(word, "class") == 0 && sscanf(line, "%*s %31s L %lf", name, &a) == 2) {
            if ((cls = class_named(p, name))) {
                cls->present = 1;
                cls->L = a;
            }
        } else if (strcmp(word, "point") == 0 &&
                   sscanf(line, "%*s %31s %ld os %lf or %lf g %lf", name, &m, &a, &b, &c) == 5) {
            if ((cls = class_named(p, name)) && add_point(cls, m, a, b, c) != 0) {
                snprintf(err, errlen, "%s:%d: a second point at %ld bytes (or out of memory)", path,
                         lineno, m);
                rc = -1;
            }
        } else {
            snprintf(err, errlen, "%s:%d: expected 'platform', 'source', 'class' or 'point'", path,
                     lineno);
            rc = -1;
        }
    }
    fclose(f);
    if (rc == 0 && !magic) {
        snprintf(err, errlen, "%s: empty P-LogP parameter file", path);
        rc = -1;
    }
    struct ist_plogp_class *both[2] = {&p->lan, &p->wan};
    for (int i = 0; rc == 0 && i < 2; i++) {
        if (both[i]->n > 0 && !both[i]->present) {
            snprintf(err, errlen, "%s: points of class %s but no 'class %s L US' line", path,
                     i ? "wan" : "lan", i ? "wan" : "lan");
            rc = -1;
        }
        if (both[i]->present && both[i]->n == 0) both[i]->present = 0;
    }
    if (rc != 0) ist_plogp_free(p);
    return rc;
}

void ist_plogp_class_free(struct ist_plogp_class *c)
{
    free(c->sizes);
    free(c->os);
    free(c->orecv);
    free(c->g);
    memset(c, 0, sizeof *c);
}

int ist_plogp_class_copy(struct ist_plogp_class *to, const struct ist_plogp_class *from)
{
    memset(to, 0, sizeof *to);
    if (ist_plogp_class_init(to, from->L, from->n) != 0) {
        ist_plogp_class_free(to);
        return -1;
    }
    memcpy(to->sizes, from->sizes, (size_t)from->n * sizeof *to->sizes);
    memcpy(to->os, from->os, (size_t)from->n * sizeof *to->os);
    memcpy(to->orecv, from->orecv, (size_t)from->n * sizeof *to->orecv);
    memcpy(to->g, from->g, (size_t)from->n * sizeof *to->g);
    to->present = from->present;
    return 0;
}

void ist_plogp_free(struct ist_plogp *p)
{
    ist_plogp_class_free(&p->lan);
    ist_plogp_class_free(&p->wan);
}
