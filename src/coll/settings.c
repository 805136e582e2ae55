/* Parsing the collectives' settings (settings.h). */
#include "settings.h"

#include <stdio.h>
#include <string.h>

#include "units.h"

/* "a, b, c" of the names in names[0..n) whose bit is set in mask (all when mask is ~0). */
static void name_list(char *out, size_t len, const char *const *names, int first, int n,
                      unsigned mask)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = first; i < n && used < len; i++)
        if (mask & (1u << i))
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", names[i]);
}

/* The collective named p[0..len) or -1 with the error written. */
static int collective(const char *var, const char *p, size_t len, char *err, size_t errlen)
{
    int id = ist_coll_by_name(p, len);
    if (id >= 0) return id;
    char known[512];
    name_list(known, sizeof known, ist_coll_names, 0, IST_COLL_COUNT, ~0u);
    snprintf(err, errlen, "%s: unknown collective '%.*s' (expected one of %s)", var, (int)len, p,
             known);
    return -1;
}

static int disable_one(struct ist_coll_settings *s, const char *item, size_t len, char *err,
                       size_t errlen)
{
    int id = collective("ISTHMUS_COLL_DISABLE", item, len, err, errlen);
    if (id < 0) return -1;
    s->disabled[id] = 1;
    return 0;
}

static int force_one(struct ist_coll_settings *s, const char *item, size_t len, char *err,
                     size_t errlen)
{
    const char *var = "ISTHMUS_COLL_ALGORITHM";
    const char *colon = memchr(item, ':', len);
    if (!colon) {
        snprintf(err, errlen, "%s: '%.*s' names no algorithm (expected COLLECTIVE:ALGORITHM, "
                 "such as bcast:flat)", var, (int)len, item);
        return -1;
    }
    int id = collective(var, item, (size_t)(colon - item), err, errlen);
    if (id < 0) return -1;
    const char *name = colon + 1;
    size_t nlen = len - (size_t)(name - item);
    unsigned allowed = ist_coll_registry[id].algorithms;
    int alg = ist_alg_by_name(name, nlen);
    if (alg < 0 || !(allowed & (1u << alg))) {
        char known[256];
        name_list(known, sizeof known, ist_alg_names, 1, IST_ALG_COUNT, allowed);
        snprintf(err, errlen, "%s: %s: unknown algorithm '%.*s' (expected one of %s)", var,
                 ist_coll_names[id], (int)nlen, name, known);
        return -1;
    }
    s->forced[id] = alg;
    return 0;
}

/* The collectives a setting applies to, as a mask over enum ist_coll_id. */
static unsigned takers(enum ist_coll_setting k)
{
    unsigned mask = 0;
    for (int i = 0; i < IST_COLL_COUNT; i++)
        if (ist_coll_registry[i].settings & (1u << k)) mask |= 1u << i;
    return mask;
}

static int segment_one(struct ist_coll_settings *s, const char *item, size_t len, char *err,
                       size_t errlen)
{
    const char *var = "ISTHMUS_COLL_SEGMENT";
    const char *colon = memchr(item, ':', len);
    const char *value = colon ? colon + 1 : item;
    size_t vlen = len - (size_t)(value - item);
    char text[64] = "";
    long bytes = 0;
    snprintf(text, sizeof text, "%.*s", (int)vlen, value);
    if (vlen >= sizeof text || ist_parse_size(text, &bytes) != 0 || bytes <= 0) {
        snprintf(err, errlen, "%s: '%.*s' is not a positive size (expected a size such as "
                 "16KiB, or COLLECTIVE:SIZE such as bcast:64KiB)", var, (int)vlen, value);
        return -1;
    }
    unsigned mask = takers(IST_SET_SEGMENT);
    if (!colon) {
        for (int i = 0; i < IST_COLL_COUNT; i++)
            if (mask & (1u << i)) s->segment[i] = bytes;
        return 0;
    }
    int id = collective(var, item, (size_t)(colon - item), err, errlen);
    if (id < 0) return -1;
    if (!(mask & (1u << id))) {
        char known[512];
        name_list(known, sizeof known, ist_coll_names, 0, IST_COLL_COUNT, mask);
        snprintf(err, errlen, "%s: %s takes no segment (the collectives with one: %s)", var,
                 ist_coll_names[id], known);
        return -1;
    }
    s->segment[id] = bytes;
    return 0;
}

typedef int item_parser(struct ist_coll_settings *s, const char *item, size_t len, char *err,
                        size_t errlen);

/* Each comma-separated item of value (spaces around it ignored). */
static int each_item(struct ist_coll_settings *s, const char *value, item_parser *parse,
                     char *err, size_t errlen)
{
    for (const char *p = value; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len && parse(s, p, len, err, errlen) != 0) return -1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int ist_coll_settings_parse(struct ist_coll_settings *s, const char *disable,
                            const char *algorithm, const char *segment, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (each_item(s, disable, disable_one, err, errlen) != 0) return -1;
    if (each_item(s, algorithm, force_one, err, errlen) != 0) return -1;
    return each_item(s, segment, segment_one, err, errlen);
}

int ist_coll_choice(const char *var, const char *value, const char *const *choices, int n,
                    char *err, size_t errlen)
{
    if (!value || !*value) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(value, choices[i]) == 0) return 0;
    char known[256];
    name_list(known, sizeof known, choices, 0, n, ~0u);
    snprintf(err, errlen, "%s: unknown value '%s' (expected one of %s)", var, value, known);
    return -1;
}
