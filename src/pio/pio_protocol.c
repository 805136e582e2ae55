/* What pio's client and server share (pio_protocol.h): where a server keeps a file, and
 * the fault tests' hooks. */
#include "pio_protocol.h"

#include <stdio.h>
#include <stdlib.h>

int pio_data_path(const struct pio_ctx *c, const char *name, char *out, size_t len)
{
    return snprintf(out, len, "%s/server-%d/%s", c->directory, c->server_index, name) < (int)len ? 0 : -1;
}

int pio_meta_path(const struct pio_ctx *c, const char *name, char *out, size_t len)
{
    return snprintf(out, len, "%s/server-0/%s.pio-meta", c->directory, name) < (int)len ? 0 : -1;
}

long pio_test_hook(const char *var, int index)
{
    const char *v = getenv(var);
    char *end;
    long who = v && *v ? strtol(v, &end, 10) : -1;
    return who >= 0 && who == index && *end == ':' ? strtol(end + 1, NULL, 10) : -1;
}
