/* The layer's own environment, checked at MPI_Init before anything is set up: the
 * variables `isthmus run` writes (and a user may set by hand) are parsed strictly, so
 * that a typo is one line naming the variable, its value and what is accepted, never a
 * silent misreading (atoi took "a:x" as 0 ranks). No MPI here. */
#ifndef ISTHMUS_ENV_CHECK_H
#define ISTHMUS_ENV_CHECK_H

#include <stddef.h>

/* 0 when ISTHMUS_CLUSTERS, ISTHMUS_WAIT and ISTHMUS_ZIP_SITE (those set) are well formed
 * and fit zipper forwarding (ist_env_check_zip), else -1 with the error's line in err. */
int ist_env_check(char *err, size_t errlen);

/* The same checks on given values (NULL: unset), for the tests. */
int ist_env_check_values(const char *clusters, const char *wait, const char *zip_site, char *err,
                         size_t errlen);

/* Under zipper forwarding (zip_sites set): neither discovery (clusters "auto") nor the
 * P-LogP measurement (plogp "measure"), which use the site's own MPI alone. */
int ist_env_check_zip(const char *zip_sites, const char *clusters, const char *plogp, char *err,
                      size_t errlen);

#endif
