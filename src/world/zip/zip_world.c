/* One MPI_COMM_WORLD over the sites' jobs (docs/zipper.md): set-up, the communicators
 * that span sites, and the calls that only need to know them.
 *
 * At MPI_Init each rank finds its world rank from its rank in its site's job and the
 * site of every world rank (ISTHMUS_ZIP_SITES, in world order: a site's ranks are its
 * job's ranks in the same order), connects to every forwarder, says hello and waits
 * until the forwarders have heard from every rank of the world: MPI_Init returns on no
 * rank before every rank of every site has started. A rank on a zipper host
 * (ISTHMUS_ZIP_AT: the forwarder on each rank's host, -1 for none) reaches the other
 * sites through that forwarder alone, and everybody reaches it so: no network hop. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "world_calls.h"
#include "zip.h"
#include "zip_engine.h"
#include "wire.h"

#define CONNECT_SECONDS 60
#define READY_SECONDS 300 /* every rank of every site must have started by then */
#define MAX_FORWARDERS 64


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int connect_to(const char *spec)
{
    char host[64];
    const char *colon = strrchr(spec, ':');
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (!colon || (size_t)(colon - spec) >= sizeof host)
        ist_zip_fatal("ISTHMUS_ZIP_FORWARDERS: %s: expected ADDRESS:PORT", spec);
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    a.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        ist_zip_fatal("ISTHMUS_ZIP_FORWARDERS: %s: expected an IPv4 ADDRESS:PORT", spec);
    double until = now() + CONNECT_SECONDS;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        int err = errno;
        if (fd >= 0) close(fd);
        if (now() > until)
            ist_zip_fatal("cannot reach the forwarder at %s in %d s: %s", spec, CONNECT_SECONDS,
                          strerror(err));
        usleep(50000);
    }
}

static void write_all(int fd, const void *p, size_t n, const char *spec)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) ist_zip_fatal("the forwarder at %s: %s", spec, strerror(errno));
        p = (const char *)p + w;
        n -= (size_t)w;
    }
}

static void wait_ready(int fd, const char *spec)
{
    struct ist_zip_frame h;
    size_t got = 0;
    double until = now() + READY_SECONDS;
    while (got < sizeof h) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left_ms = (int)((until - now()) * 1000);
        if (left_ms <= 0 || poll(&p, 1, left_ms) == 0)
            ist_zip_fatal("the forwarder at %s did not hear from every rank in %d s", spec, READY_SECONDS);
        ssize_t n = read(fd, (char *)&h + got, sizeof h - got);
        if (n == 0) ist_zip_fatal("the forwarder at %s closed the connection while the ranks started", spec);
        if (n < 0 && errno != EINTR) ist_zip_fatal("the forwarder at %s: %s", spec, strerror(errno));
        if (n > 0) got += (size_t)n;
    }
    if (h.kind != IST_ZIP_READY || h.len != 0)
        ist_zip_fatal("the forwarder at %s answered with a frame of kind %u", spec, h.kind);
}

/* A communicator over comm ranks -> world ranks, with this site's members in `site_comm`. */
static struct ist_zcomm *new_comm(MPI_Comm handle, MPI_Comm site_comm, uint64_t context, int size,
                                  int rank, const int *world)
{
    struct ist_zcomm *c = calloc(1, sizeof *c);
    c->handle = handle;
    c->site_comm = site_comm;
    c->context = context;
    c->size = size;
    c->rank = rank;
    c->world = malloc(sizeof *c->world * (size_t)size);
    c->site_rank = malloc(sizeof *c->site_rank * (size_t)size);
    c->from_site = malloc(sizeof *c->from_site * (size_t)size);
    int n = 0;
    for (int r = 0; r < size; r++) {
        c->world[r] = world[r];
        c->site_rank[r] = ist_zip.site_of[world[r]] == ist_zip.site ? n : -1;
        if (c->site_rank[r] >= 0) c->from_site[n++] = r;
    }
    return c;
}

/* The numbers (each at least `least`) of variable `name`, separated by commas. */
static int *parse_numbers(const char *name, const char *text, long least, int *n)
{
    int cap = 16, *out = malloc(sizeof *out * (size_t)cap);
    *n = 0;
    for (const char *p = text; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < least || (*end && *end != ','))
            ist_zip_fatal("%s=%s: expected numbers of at least %ld separated by commas", name, text, least);
        if (*n == cap) out = realloc(out, sizeof *out * (size_t)(cap *= 2));
        out[(*n)++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return out;
}

void ist_zip_init(void)
{
    const char *sites = getenv("ISTHMUS_ZIP_SITES");
    if (!sites || !*sites) return;
    ist_multi_site = 1;
    const char *site = getenv("ISTHMUS_ZIP_SITE"), *forwarders = getenv("ISTHMUS_ZIP_FORWARDERS");
    if (!site || !forwarders || !*forwarders)
        ist_zip_fatal("ISTHMUS_ZIP_SITES is set without ISTHMUS_ZIP_SITE and ISTHMUS_ZIP_FORWARDERS");
    ist_zip.site = atoi(site);
    ist_zip.site_of = parse_numbers("ISTHMUS_ZIP_SITES", sites, 0, &ist_zip.world_size);
    ist_zip.site_rank_of = malloc(sizeof *ist_zip.site_rank_of * (size_t)ist_zip.world_size);
    int native_rank, native_size, mine = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &native_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &native_size);
    int *count = calloc((size_t)ist_zip.world_size + 1, sizeof *count);
    ist_zip.world_rank = -1;
    for (int w = 0; w < ist_zip.world_size; w++) {
        int s = ist_zip.site_of[w];
        if (s >= ist_zip.world_size) ist_zip_fatal("ISTHMUS_ZIP_SITES: site %d of %d ranks", s, ist_zip.world_size);
        ist_zip.site_rank_of[w] = count[s]++;
        if (s == ist_zip.site && ist_zip.site_rank_of[w] == native_rank) ist_zip.world_rank = w;
    }
    mine = count[ist_zip.site];
    free(count);
    if (mine != native_size)
        ist_zip_fatal("this site's job has %d ranks, ISTHMUS_ZIP_SITES gives it %d", native_size, mine);

    struct forwarder_address addrs[MAX_FORWARDERS];
    int nf = 0;
    char *list = strdup(forwarders), *save = NULL;
    for (char *spec = strtok_r(list, ",", &save); spec && nf < MAX_FORWARDERS;
         spec = strtok_r(NULL, ",", &save)) {
        addrs[nf].fd = connect_to(spec);
        snprintf(addrs[nf].text, sizeof addrs[nf].text, "%s", spec);
        struct ist_zip_frame hello = {IST_ZIP_HELLO, (uint32_t)ist_zip.world_rank,
                                      (uint32_t)ist_zip.world_size, 0};
        write_all(addrs[nf].fd, &hello, sizeof hello, spec);
        nf++;
    }
    free(list);
    const char *at = getenv("ISTHMUS_ZIP_AT");
    int nat = 0;
    ist_zip.hosted_by = at && *at ? parse_numbers("ISTHMUS_ZIP_AT", at, -1, &nat) : NULL;
    if (!ist_zip.hosted_by) {
        ist_zip.hosted_by = malloc(sizeof *ist_zip.hosted_by * (size_t)ist_zip.world_size);
        for (int w = 0; w < ist_zip.world_size; w++) ist_zip.hosted_by[w] = -1;
    } else if (nat != ist_zip.world_size) {
        ist_zip_fatal("ISTHMUS_ZIP_AT gives %d ranks, ISTHMUS_ZIP_SITES %d", nat, ist_zip.world_size);
    }
    for (int w = 0; w < ist_zip.world_size; w++)
        if (ist_zip.hosted_by[w] >= nf)
            ist_zip_fatal("ISTHMUS_ZIP_AT: forwarder %d of %d for rank %d", ist_zip.hosted_by[w], nf, w);
    for (int i = 0; i < nf; i++) {
        wait_ready(addrs[i].fd, addrs[i].text);
        fcntl(addrs[i].fd, F_SETFL, fcntl(addrs[i].fd, F_GETFL) | O_NONBLOCK);
    }
    ist_zip_engine_start(addrs, nf);
    ist_zip_credit_init();
    ist_zip_on_progress(ist_zip_schedules_progress);

    int *identity = malloc(sizeof *identity * (size_t)ist_zip.world_size);
    for (int w = 0; w < ist_zip.world_size; w++) identity[w] = w;
    struct ist_zcomm *world = new_comm(MPI_COMM_WORLD, MPI_COMM_WORLD, 0, ist_zip.world_size,
                                       ist_zip.world_rank, identity);
    MPI_Comm coll_site;
    PMPI_Comm_dup(MPI_COMM_WORLD, &coll_site);
    world->coll = new_comm(MPI_COMM_NULL, coll_site, 1, ist_zip.world_size, ist_zip.world_rank, identity);
    free(identity);
    ist_zip_comms_add(world);
}

/* Contexts of new communicators: a block from a counter of one member (the parent's
 * rank 0, or the first member of a group), whose world rank in the high half makes them
 * unique in the world. Even ones for the communicators, the next odd one for their
 * collectives. */
static uint64_t next_context = 2;

uint64_t ist_zip_new_contexts(int count)
{
    uint64_t base = ((uint64_t)(ist_zip.world_rank + 1) << 32) | next_context;
    next_context += 2 * (uint64_t)count;
    return base;
}

int ist_zip_register(MPI_Comm native, uint64_t context, int n, int me, const int *world,
                     MPI_Comm *newcomm)
{
    int sites = 0;
    for (int i = 0; i < n; i++) sites |= ist_zip.site_of[world[i]] != ist_zip.site ? 2 : 1;
    *newcomm = native;
    if (sites != 3) return MPI_SUCCESS; /* all in this site: the native one is the whole */
    struct ist_zcomm *z = new_comm(native, native, context, n, me, world);
    MPI_Comm coll_site;
    PMPI_Comm_dup(native, &coll_site);
    z->coll = new_comm(MPI_COMM_NULL, coll_site, context + 1, n, me, world);
    ist_zip_comms_add(z);
    return MPI_SUCCESS;
}

int ist_zip_split(struct ist_zcomm *c, int color, int key, MPI_Comm *newcomm)
{
    /* Every member's (color, key), and a block of contexts, from rank 0 to all. */
    int *all = malloc(sizeof *all * 2 * (size_t)c->size);
    int mine[2] = {color, key};
    int *counts = malloc(sizeof *counts * (size_t)c->size), *displs = malloc(sizeof *displs * (size_t)c->size);
    for (int r = 0; r < c->size; r++) counts[r] = 2, displs[r] = 2 * r;
    int rc = ist_zip_gatherv(c, mine, 2, MPI_INT, all, counts, displs, MPI_INT, 0);
    uint64_t base = c->rank == 0 ? ist_zip_new_contexts(c->size) : 0;
    if (rc == MPI_SUCCESS) rc = ist_zip_bcast(c, all, 2 * c->size, MPI_INT, 0);
    if (rc == MPI_SUCCESS) rc = ist_zip_bcast(c, &base, 1, MPI_UINT64_T, 0);
    free(counts);
    free(displs);
    MPI_Comm native;
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_split(c->site_comm, color, key, &native);
    if (rc != MPI_SUCCESS || color == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        free(all);
        return rc;
    }
    /* Members of my color by (key, rank); the color's index orders the contexts. */
    int n = 0, index = 0, *members = malloc(sizeof *members * (size_t)c->size);
    for (int r = 0; r < c->size; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= all[2 * q] == all[2 * r];
        if (!seen && all[2 * r] != MPI_UNDEFINED && all[2 * r] < color) index++;
        if (all[2 * r] == color) members[n++] = r;
    }
    for (int i = 1; i < n; i++) /* insertion sort by key, then rank: stable */
        for (int j = i; j > 0 && all[2 * members[j - 1] + 1] > all[2 * members[j] + 1]; j--) {
            int t = members[j];
            members[j] = members[j - 1];
            members[j - 1] = t;
        }
    int me = -1, *world = malloc(sizeof *world * (size_t)n);
    for (int i = 0; i < n; i++) {
        world[i] = c->world[members[i]];
        if (members[i] == c->rank) me = i;
    }
    rc = ist_zip_register(native, base + 2 * (uint64_t)index, n, me, world, newcomm);
    free(all);
    free(members);
    free(world);
    return rc;
}

static void free_arrays(struct ist_zcomm *c)
{
    free(c->world);
    free(c->site_rank);
    free(c->from_site);
    free(c);
}

int ist_zip_free_comm(struct ist_zcomm *c)
{
    if (c->handle == MPI_COMM_WORLD) return MPI_ERR_COMM;
    ist_zip_comms_remove(c);
    PMPI_Comm_free(&c->coll->site_comm);
    PMPI_Comm_free(&c->site_comm);
    if (c->topo) c->free_topo(c->topo);
    free_arrays(c->coll);
    free_arrays(c);
    return MPI_SUCCESS;
}

void ist_zip_finalize(void)
{
    if (!ist_multi_site) return;
    /* Everything queued leaves first (acknowledgements of synchronous sends too). */
    for (int tries = 0; !ist_zip_engine_flushed(); tries++) {
        ist_zip_progress();
        ist_zip_idle(tries);
    }
    for (int i = 0; i < ist_zip_engine_forwarders(); i++) {
        int fd = ist_zip_engine_fd(i);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        ist_zip_engine_send_raw(i, IST_ZIP_BYE);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    ist_multi_site = 0;
}

/* ---- calls that need only the communicator ---------------------------------------- */

int ist_span_Comm_rank(MPI_Comm comm, int *rank, int *answer)
{
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    if (!c) return 0; /* the site's MPI answers */
    *rank = c->rank;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Comm_size(MPI_Comm comm, int *size, int *answer)
{
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    if (!c) return 0; /* the site's MPI answers */
    *size = c->size;
    return ist_answered(answer, MPI_SUCCESS);
}

/* Open MPI's Fortran entries call PMPI_X, past the C functions above: the same for
 * Fortran (zip_fortran.h). */
#ifdef OPEN_MPI
#include "zip_fortran.h"

void mpi_comm_rank_(MPI_Fint *comm, MPI_Fint *rank, MPI_Fint *ierr)
{
    *ierr = ist_world_Comm_rank(PMPI_Comm_f2c(*comm), rank);
}
IST_ZIP_FORTRAN(mpi_comm_rank, MPI_COMM_RANK, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_comm_size_(MPI_Fint *comm, MPI_Fint *size, MPI_Fint *ierr)
{
    *ierr = ist_world_Comm_size(PMPI_Comm_f2c(*comm), size);
}
IST_ZIP_FORTRAN(mpi_comm_size, MPI_COMM_SIZE, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_comm_compare_(MPI_Fint *a, MPI_Fint *b, MPI_Fint *result, MPI_Fint *ierr)
{
    *ierr = ist_world_Comm_compare(PMPI_Comm_f2c(*a), PMPI_Comm_f2c(*b), result);
}
IST_ZIP_FORTRAN(mpi_comm_compare, MPI_COMM_COMPARE, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
#endif

/* Comm_compare: congruent when the same world ranks in the same order. */
int ist_span_Comm_compare(MPI_Comm a, MPI_Comm b, int *result, int *answer)
{
    struct ist_zcomm *x = ist_multi_site ? ist_zip_comm(a) : NULL, *y = ist_multi_site ? ist_zip_comm(b) : NULL;
    if (!x && !y) return 0; /* the site's MPI answers */
    *result = MPI_UNEQUAL;
    if (a == b) *result = MPI_IDENT;
    else if (x && y && x->size == y->size) {
        int same = 1, order = 1;
        for (int i = 0; i < x->size; i++) {
            order &= x->world[i] == y->world[i];
            int found = 0;
            for (int j = 0; j < y->size; j++) found |= x->world[i] == y->world[j];
            same &= found;
        }
        *result = order ? MPI_CONGRUENT : same ? MPI_SIMILAR : MPI_UNEQUAL;
    }
    return ist_answered(answer, MPI_SUCCESS);
}
