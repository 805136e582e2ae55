/* The P-LogP parameters the selector and the algorithms read (ist_hier_model): measured
 * at MPI_Init (ISTHMUS_PLOGP=measure: plogp_measure.c), read from a file
 * (ISTHMUS_PLOGP=FILE), or built in (a Gigabit LAN, a 10 ms, 100 Mbit/s WAN). Loaded once
 * by ist_hier_init; costs one file read or one measurement at MPI_Init. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier_parts.h"
#include "topology.h"
#include "world.h"

static struct ist_plogp model;
static int model_loaded;

/* Built-in parameters when no file is given: a Gigabit LAN and a 10 ms, 100 Mbit/s WAN. */
static void default_class(struct ist_plogp_class *c, double L, double rate)
{
    static long sizes[2] = {0, 1 << 20};
    if (ist_plogp_class_init(c, L, 2) != 0) return;
    for (int i = 0; i < 2; i++) {
        c->sizes[i] = sizes[i];
        c->os[i] = c->orecv[i] = 2 + sizes[i] / 5e3;
        c->g[i] = c->os[i] + sizes[i] / rate;
    }
}

/* Where the model's parameters came from, and the time measuring them took (profile). */
static const char *model_source = "built-in";
static double model_seconds;

void ist_hier_model_load(MPI_Comm world)
{
    const char *path = getenv("ISTHMUS_PLOGP");
    char err[512] = "";
    if (path && strcmp(path, "measure") == 0) { /* plogp_measure.c, at this MPI_Init */
        model_seconds = ist_plogp_measure(world, &model);
        model_source = "measured";
        model_loaded = 1;
        return;
    }
    if (path && *path) {
        if (ist_plogp_read(path, &model, err, sizeof err) == 0 && model.lan.present &&
            model.wan.present) {
            model_loaded = 1;
            model_source = "file";
            return;
        }
        if (model_loaded == 0 && ist_world_rank() == 0)
            fprintf(stderr, "isthmus: ISTHMUS_PLOGP: %s; using built-in parameters\n",
                    *err ? err : "the file lacks a lan or wan class");
        if (!*err) ist_plogp_free(&model);
    }
    memset(&model, 0, sizeof model);
    default_class(&model.lan, 50, 125);
    default_class(&model.wan, 10000, 12.5);
    model_loaded = 1;
}

void ist_hier_model_free(void)
{
    if (model_loaded) ist_plogp_free(&model);
    model_loaded = 0;
}

const struct ist_plogp *ist_hier_model(void) { return &model; }
const char *ist_hier_model_source(void) { return model_loaded ? model_source : "none"; }
double ist_hier_model_seconds(void) { return model_seconds; }
