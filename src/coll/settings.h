/* The WAN-aware collectives' settings from the environment (docs/collectives.md, "The
 * selector"), checked against the registry (src/coll/registry.toml, coll_registry.h):
 *
 *   ISTHMUS_COLL_DISABLE=bcast,alltoall          collectives left to the MPI's own;
 *   ISTHMUS_COLL_ALGORITHM=bcast:flat,allreduce:split   an algorithm forced;
 *   ISTHMUS_COLL_SEGMENT=16KiB | bcast:64KiB,alltoall:8KiB
 *                                                the wide-area segment, for every
 *                                                collective that has one or per collective.
 *
 * An unknown collective or algorithm, a size that does not parse, or a setting for a
 * collective it does not apply to is an error whose one line names the variable, the
 * value and what is accepted: the layer ends the run with it at MPI_Init. No MPI here. */
#ifndef ISTHMUS_COLL_SETTINGS_H
#define ISTHMUS_COLL_SETTINGS_H

#include <stddef.h>

#include "coll_registry.h"

struct ist_coll_settings {
    int disabled[IST_COLL_COUNT];
    int forced[IST_COLL_COUNT];  /* an enum ist_coll_algorithm; IST_ALG_NONE: the selector's */
    long segment[IST_COLL_COUNT]; /* bytes; 0: the default (IST_EAGER_SEGMENT, or bcast's optimizer) */
};

/* 0 when value (NULL or "": unset) is one of choices[0..n), else -1 with the error's line
 * naming var and the accepted values (ISTHMUS_COLL, ISTHMUS_COLL_SELECT). */
int ist_coll_choice(const char *var, const char *value, const char *const *choices, int n,
                    char *err, size_t errlen);

/* Fill s from the three variables' values (NULL or "": unset). 0, or -1 with the error's
 * line in err. */
int ist_coll_settings_parse(struct ist_coll_settings *s, const char *disable,
                            const char *algorithm, const char *segment, char *err, size_t errlen);

#endif
