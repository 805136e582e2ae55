/* What MPI-IO asks of a file besides reads and writes (docs/pio.md): its size set
 * (MPI_File_set_size), its shared file pointer, which server 0 keeps, and its deletion.
 *
 * When: MPI_File_set_size and preallocate, and every call with the shared pointer
 * (read/write_shared, _ordered, seek_shared) on a file pio serves. Cost: set_size, a
 * barrier of the file's clients and one round trip to every server; the shared pointer, one
 * round trip to server 0 per call (as ROMIO's, which locks a file of its own). */
#include <stdlib.h>
#include <string.h>

#include "pio_client.h"

int pio_set_size(pio_file *f, int64_t size)
{
    const struct pio_ctx *c = f->ctx;
    int rc = PIO_OK;
    if (size < 0) rc = pio_fail(PIO_EINVAL, "pio: size %lld for %s: expected >= 0", (long long)size, f->name);
    else if (!(f->flags & PIO_WRONLY)) rc = pio_fail(PIO_EINVAL, "pio: %s is open read-only", f->name);
    rc = pio_agree(f->comm, rc); /* also: every client's writes before it have ended */
    if (rc) return rc;
    if (f->rank == 0) {
        struct pio_msg req = {.op = PIO_OP_TRUNCATE, .file = f->id, .a = size, .block = f->layout.stripe};
        struct pio_msg *rep = calloc((size_t)c->nservers, sizeof *rep);
        rc = rep ? pio_ask_servers(c, req, NULL, 0, NULL, rep) : pio_fail(PIO_EINVAL, "pio: out of memory");
        for (int s = 0; !rc && s < c->nservers; s++)
            if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "truncating", f->name);
        free(rep);
    }
    rc = pio_agree(f->comm, rc);
    if (!rc) f->known_size = size;
    return rc;
}

int pio_shared_pointer(pio_file *f, int set, int64_t value, int64_t *before)
{
    const struct pio_ctx *c = f->ctx;
    int *listed = calloc((size_t)c->nservers, sizeof *listed);
    struct pio_msg *rep = calloc((size_t)c->nservers, sizeof *rep);
    int rc = listed && rep ? PIO_OK : pio_fail(PIO_EINVAL, "pio: out of memory");
    if (!rc) {
        listed[0] = 1;
        struct pio_msg req = {.op = PIO_OP_SHARED, .file = f->id, .flags = set, .a = value};
        rc = pio_ask_servers(c, req, NULL, 0, listed, rep);
        if (!rc && rep[0].status) rc = pio_reply_error(c, &rep[0], 0, "the shared pointer of", f->name);
        if (!rc && before) *before = rep[0].b;
    }
    free(listed), free(rep);
    return rc;
}

int pio_delete(pio_ctx *c, const char *name)
{
    int rc = pio_check_name(name);
    if (rc) return rc;
    if (c->client_index < 0) return pio_fail(PIO_EINVAL, "pio: pio_delete on an I/O server");
    struct pio_msg req = {.op = PIO_OP_DELETE}, *rep = calloc((size_t)c->nservers, sizeof *rep);
    if (!rep) return pio_fail(PIO_EINVAL, "pio: out of memory");
    rc = pio_ask_servers(c, req, name, (int)strlen(name) + 1, NULL, rep);
    int missing = 0;
    for (int s = 0; !rc && s < c->nservers; s++) {
        if (rep[s].status == PIO_ENOENT) missing++;
        else if (rep[s].status) rc = pio_reply_error(c, &rep[s], s, "deleting", name);
    }
    free(rep);
    if (!rc && missing == c->nservers) rc = pio_fail(PIO_ENOENT, "pio: %s: no such file", name);
    return rc;
}
