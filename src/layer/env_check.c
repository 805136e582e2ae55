/* Checking the layer's environment (env_check.h). */
#include "env_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number from lo to hi spelled by text[0..len), or -1. */
static long whole(const char *text, size_t len, long lo, long hi)
{
    char digits[32];
    if (len == 0 || len >= sizeof digits) return -1;
    memcpy(digits, text, len);
    digits[len] = 0;
    for (size_t i = 0; i < len; i++)
        if (digits[i] < '0' || digits[i] > '9') return -1;
    errno = 0;
    long v = strtol(digits, NULL, 10);
    return errno || v < lo || v > hi ? -1 : v;
}

/* "east:2,west:2": cluster names, each with its number of ranks, in world-rank order. */
static int check_clusters(const char *spec, char *err, size_t errlen)
{
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (!colon || colon == p || whole(colon + 1, len - (size_t)(colon + 1 - p), 1, 1 << 24) < 0) {
            snprintf(err, errlen, "ISTHMUS_CLUSTERS=%s: '%.*s' is not NAME:RANKS (expected "
                     "clusters and their ranks, such as east:2,west:2, or auto)", spec, (int)len, p);
            return -1;
        }
        p = end ? end + 1 : p + len;
    }
    return 0;
}

int ist_env_check_values(const char *clusters, const char *wait, const char *zip_site, char *err,
                         size_t errlen)
{
    if (clusters && *clusters && strcmp(clusters, "auto") != 0 && check_clusters(clusters, err, errlen) != 0) return -1;
    if (wait && *wait && strcmp(wait, "spin") != 0 && strcmp(wait, "sleep") != 0) {
        snprintf(err, errlen, "ISTHMUS_WAIT=%s: unknown waiting mode (expected spin or sleep)",
                 wait);
        return -1;
    }
    if (zip_site && *zip_site && whole(zip_site, strlen(zip_site), 0, 1 << 20) < 0) {
        snprintf(err, errlen, "ISTHMUS_ZIP_SITE=%s: expected a site number (0, 1, ...)", zip_site);
        return -1;
    }
    return 0;
}

int ist_env_check_zip(const char *zip_sites, const char *clusters, const char *plogp, char *err,
                      size_t errlen)
{
    if (!zip_sites || !*zip_sites) return 0;
    /* Discovery and the P-LogP measurement send to world ranks with the site's own MPI,
     * which reaches only this site's ranks. */
    if (clusters && strcmp(clusters, "auto") == 0) {
        snprintf(err, errlen, "ISTHMUS_CLUSTERS=auto: clusters cannot be discovered across "
                 "zipper hosts (expected the platform's clusters)");
        return -1;
    }
    if (plogp && strcmp(plogp, "measure") == 0) {
        snprintf(err, errlen, "ISTHMUS_PLOGP=measure: the P-LogP parameters cannot be measured "
                 "across zipper hosts (expected a parameters file, or none)");
        return -1;
    }
    return 0;
}

int ist_env_check(char *err, size_t errlen)
{
    if (ist_env_check_values(getenv("ISTHMUS_CLUSTERS"), getenv("ISTHMUS_WAIT"),
                             getenv("ISTHMUS_ZIP_SITE"), err, errlen) != 0)
        return -1;
    return ist_env_check_zip(getenv("ISTHMUS_ZIP_SITES"), getenv("ISTHMUS_CLUSTERS"),
                             getenv("ISTHMUS_PLOGP"), err, errlen);
}
