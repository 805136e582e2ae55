/* Groups and the communicators made from them, across sites (docs/zipper.md).
 *
 * A group of a communicator that spans sites names processes the native MPI of this site
 * does not know. It is a list of world ranks here, behind a native handle the
 * application holds (a one-process group of its own, made for it, so every handle is
 * distinct and Fortran's conversions work). Every group call is answered here when one of
 * its groups is such a list; a native group mixed with one is read as world ranks.
 * Comm_create on a spanning communicator is a split (members in group order);
 * Comm_create_group has its members agree on a context by messages on the parent;
 * Comm_split_type gives each rank the native communicator of its site's part (a shared-
 * memory node never spans sites). */
#include <stdlib.h>
#include <string.h>

#include "zip.h"
#include "world_calls.h"
#include "zip_engine.h"

struct vgroup {
    struct vgroup *next;
    MPI_Group handle;
    int n;
    int *world;
};
static struct vgroup *groups;

static struct vgroup *find(MPI_Group g)
{
    for (struct vgroup *v = groups; v; v = v->next)
        if (v->handle == g) return v;
    return NULL;
}

/* A new group of n world ranks: MPI_GROUP_EMPTY when n is 0. */
static int make(int n, const int *world, MPI_Group *out)
{
    if (n == 0) {
        *out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    struct vgroup *v = calloc(1, sizeof *v);
    v->n = n;
    v->world = malloc(sizeof *v->world * (size_t)n);
    memcpy(v->world, world, sizeof *world * (size_t)n);
    MPI_Group self;
    PMPI_Comm_group(MPI_COMM_SELF, &self);
    int zero = 0;
    int rc = PMPI_Group_incl(self, 1, &zero, &v->handle);
    PMPI_Group_free(&self);
    v->next = groups;
    groups = v;
    *out = v->handle;
    return rc;
}

/* The world ranks of any group (malloc'd): ours, or a native one of this site. */
static int *world_of(MPI_Group g, int *n)
{
    struct vgroup *v = find(g);
    if (v) {
        *n = v->n;
        int *out = malloc(sizeof *out * (size_t)(v->n ? v->n : 1));
        memcpy(out, v->world, sizeof *out * (size_t)v->n);
        return out;
    }
    PMPI_Group_size(g, n);
    int *ranks = malloc(sizeof *ranks * (size_t)(*n ? *n : 1)), *site_ranks = malloc(sizeof *site_ranks * (size_t)(*n ? *n : 1));
    for (int i = 0; i < *n; i++) ranks[i] = i;
    MPI_Group site;
    PMPI_Comm_group(MPI_COMM_WORLD, &site);
    PMPI_Group_translate_ranks(g, *n, ranks, site, site_ranks);
    PMPI_Group_free(&site);
    for (int i = 0; i < *n; i++) {
        int w = 0;
        while (w < ist_zip.world_size && !(ist_zip.site_of[w] == ist_zip.site && ist_zip.site_rank_of[w] == site_ranks[i])) w++;
        ranks[i] = w;
    }
    free(site_ranks);
    return ranks;
}

static int index_of(const int *list, int n, int w)
{
    for (int i = 0; i < n; i++)
        if (list[i] == w) return i;
    return MPI_UNDEFINED;
}

#define EITHER_OURS(a, b) (ist_multi_site && (find(a) || find(b)))

int ist_span_Comm_group(MPI_Comm comm, MPI_Group *group, int *answer)
{
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    if (!c) return 0; /* the site's MPI answers */
    return ist_answered(answer, make(c->size, c->world, group));
}

int ist_span_Group_size(MPI_Group group, int *size, int *answer)
{
    struct vgroup *v = ist_multi_site ? find(group) : NULL;
    if (!v) return 0; /* the site's MPI answers */
    *size = v->n;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Group_rank(MPI_Group group, int *rank, int *answer)
{
    struct vgroup *v = ist_multi_site ? find(group) : NULL;
    if (!v) return 0; /* the site's MPI answers */
    *rank = index_of(v->world, v->n, ist_zip.world_rank);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Group_free(MPI_Group *group, int *answer)
{
    if (ist_multi_site)
        for (struct vgroup **p = &groups; *p; p = &(*p)->next)
            if ((*p)->handle == *group) {
                struct vgroup *v = *p;
                *p = v->next;
                int rc = PMPI_Group_free(&v->handle);
                free(v->world);
                free(v);
                *group = MPI_GROUP_NULL;
                return ist_answered(answer, rc);
            }
    return 0; /* the site's MPI answers */
}

int ist_span_Group_translate_ranks(MPI_Group a, int n, const int ranks_a[], MPI_Group b, int ranks_b[], int *answer)
{
    if (!EITHER_OURS(a, b)) return 0; /* the site's MPI answers */
    int na, nb, *wa = world_of(a, &na), *wb = world_of(b, &nb);
    for (int i = 0; i < n; i++)
        ranks_b[i] = ranks_a[i] == MPI_PROC_NULL ? MPI_PROC_NULL : index_of(wb, nb, wa[ranks_a[i]]);
    free(wa);
    free(wb);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Group_compare(MPI_Group a, MPI_Group b, int *result, int *answer)
{
    if (!EITHER_OURS(a, b)) return 0; /* the site's MPI answers */
    int na, nb, *wa = world_of(a, &na), *wb = world_of(b, &nb);
    *result = MPI_UNEQUAL;
    if (na == nb) {
        int same = 1, ident = 1;
        for (int i = 0; i < na; i++) {
            ident &= wa[i] == wb[i];
            same &= index_of(wb, nb, wa[i]) != MPI_UNDEFINED;
        }
        *result = ident ? MPI_IDENT : same ? MPI_SIMILAR : MPI_UNEQUAL;
    }
    free(wa);
    free(wb);
    return ist_answered(answer, MPI_SUCCESS);
}

/* Union, intersection, difference: in the order of a, then (union) of b. */
static int combine(MPI_Group a, MPI_Group b, int keep_in_b, int add_b, MPI_Group *out)
{
    int na, nb, *wa = world_of(a, &na), *wb = world_of(b, &nb);
    int *r = malloc(sizeof *r * (size_t)(na + nb + 1)), n = 0;
    for (int i = 0; i < na; i++)
        if (add_b || (index_of(wb, nb, wa[i]) != MPI_UNDEFINED) == keep_in_b) r[n++] = wa[i];
    if (add_b)
        for (int i = 0; i < nb; i++)
            if (index_of(wa, na, wb[i]) == MPI_UNDEFINED) r[n++] = wb[i];
    int rc = make(n, r, out);
    free(wa);
    free(wb);
    free(r);
    return rc;
}

int ist_span_Group_union(MPI_Group a, MPI_Group b, MPI_Group *out, int *answer)
{
    if (!EITHER_OURS(a, b)) return 0; /* the site's MPI answers */
    return ist_answered(answer, combine(a, b, 0, 1, out));
}

int ist_span_Group_intersection(MPI_Group a, MPI_Group b, MPI_Group *out, int *answer)
{
    if (!EITHER_OURS(a, b)) return 0; /* the site's MPI answers */
    return ist_answered(answer, combine(a, b, 1, 0, out));
}

int ist_span_Group_difference(MPI_Group a, MPI_Group b, MPI_Group *out, int *answer)
{
    if (!EITHER_OURS(a, b)) return 0; /* the site's MPI answers */
    return ist_answered(answer, combine(a, b, 0, 0, out));
}

int ist_span_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *out, int *answer)
{
    struct vgroup *v = ist_multi_site ? find(group) : NULL;
    if (!v) return 0; /* the site's MPI answers */
    int *r = malloc(sizeof *r * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) r[i] = v->world[ranks[i]];
    int rc = make(n, r, out);
    free(r);
    return ist_answered(answer, rc);
}

int ist_span_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *out, int *answer)
{
    struct vgroup *v = ist_multi_site ? find(group) : NULL;
    if (!v) return 0; /* the site's MPI answers */
    int *r = malloc(sizeof *r * (size_t)v->n), k = 0;
    for (int i = 0; i < v->n; i++)
        if (index_of(ranks, n, i) == MPI_UNDEFINED) r[k++] = v->world[i];
    int rc = make(k, r, out);
    free(r);
    return ist_answered(answer, rc);
}

/* The ranks a list of (first, last, stride) triplets names, in order. */
static int *expand(int n, int ranges[][3], int *count)
{
    int cap = 16, *r = malloc(sizeof *r * (size_t)cap);
    *count = 0;
    for (int i = 0; i < n; i++)
        for (int x = ranges[i][0]; ranges[i][2] > 0 ? x <= ranges[i][1] : x >= ranges[i][1]; x += ranges[i][2]) {
            if (*count == cap) r = realloc(r, sizeof *r * (size_t)(cap *= 2));
            r[(*count)++] = x;
        }
    return r;
}

int ist_span_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *out, int *answer)
{
    if (!(ist_multi_site && find(group))) return 0; /* the site's MPI answers */
    int k, *r = expand(n, ranges, &k);
    int rc = ist_world_Group_incl(group, k, r, out);
    free(r);
    return ist_answered(answer, rc);
}

int ist_span_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *out, int *answer)
{
    if (!(ist_multi_site && find(group))) return 0; /* the site's MPI answers */
    int k, *r = expand(n, ranges, &k);
    int rc = ist_world_Group_excl(group, k, r, out);
    free(r);
    return ist_answered(answer, rc);
}

/* ---- communicators from groups ------------------------------------------------------ */

/* The members of n world ranks that are in this site, as a native group of this site. */
static int native_group_of_members(const int *w, int n, MPI_Group *out)
{
    int *site_ranks = malloc(sizeof *site_ranks * (size_t)(n ? n : 1)), k = 0;
    for (int i = 0; i < n; i++)
        if (ist_zip.site_of[w[i]] == ist_zip.site) site_ranks[k++] = ist_zip.site_rank_of[w[i]];
    MPI_Group site;
    PMPI_Comm_group(MPI_COMM_WORLD, &site);
    int rc = PMPI_Group_incl(site, k, site_ranks, out);
    PMPI_Group_free(&site);
    free(site_ranks);
    return rc;
}

/* A group all of whose members are in this site, as a native group of this site. */
static int native_group(MPI_Group g, MPI_Group *out)
{
    int n, *w = world_of(g, &n);
    for (int i = 0; i < n; i++) {
        if (ist_zip.site_of[w[i]] != ist_zip.site) {
            free(w);
            return MPI_ERR_GROUP;
        }
        w[i] = ist_zip.site_rank_of[w[i]];
    }
    MPI_Group site;
    PMPI_Comm_group(MPI_COMM_WORLD, &site);
    int rc = PMPI_Group_incl(site, n, w, out);
    PMPI_Group_free(&site);
    free(w);
    return rc;
}

int ist_span_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(comm);
    if (!c) {
        if (!find(group)) return 0;
        MPI_Group g; /* a group of ours on a communicator of this site */
        *rc = native_group(group, &g);
        if (*rc == MPI_SUCCESS) *rc = PMPI_Comm_create(comm, g, newcomm), PMPI_Group_free(&g);
        return 1;
    }
    int n, *w = world_of(group, &n);
    int at = index_of(w, n, ist_zip.world_rank);
    free(w);
    *rc = ist_zip_split(c, at == MPI_UNDEFINED ? MPI_UNDEFINED : 0, at, newcomm);
    return 1;
}

int ist_span_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                            MPI_Comm *newcomm, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(comm);
    if (!c) return 0;
    *rc = PMPI_Comm_split_type(c->site_comm, split_type, key, info, newcomm);
    return 1;
}

/* Only the group's members call it: its first member hands out a context, by messages
 * on the parent's collective twin with the caller's tag, and the others wait for it. */
int ist_span_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm, int *rc)
{
    struct ist_zcomm *c = ist_zip_comm(comm);
    if (!c) {
        if (!find(group)) return 0;
        MPI_Group g;
        *rc = native_group(group, &g);
        if (*rc == MPI_SUCCESS) *rc = PMPI_Comm_create_group(comm, g, tag, newcomm), PMPI_Group_free(&g);
        return 1;
    }
    int n, *w = world_of(group, &n);
    int me = index_of(w, n, ist_zip.world_rank);
    if (me == MPI_UNDEFINED) {
        free(w);
        *rc = MPI_ERR_GROUP;
        return 1;
    }
    /* The members' ranks in the parent. */
    int *parent = malloc(sizeof *parent * (size_t)n);
    for (int i = 0; i < n; i++) {
        parent[i] = 0;
        while (parent[i] < c->size && c->world[parent[i]] != w[i]) parent[i]++;
    }
    uint64_t context = 0;
    if (me == 0) {
        context = ist_zip_new_contexts(1);
        struct ist_zop **ops = malloc(sizeof *ops * (size_t)n);
        for (int i = 1; i < n; i++) ops[i - 1] = ist_zip_isend(c->coll, &context, 1, MPI_UINT64_T, parent[i], tag, 0);
        *rc = ist_zip_wait_ops(n - 1, ops, MPI_STATUSES_IGNORE);
        free(ops);
    } else {
        struct ist_zop *op = ist_zip_irecv(c->coll, &context, 1, MPI_UINT64_T, parent[0], tag);
        *rc = ist_zip_wait_ops(1, &op, MPI_STATUSES_IGNORE);
    }
    MPI_Group g;
    MPI_Comm native = MPI_COMM_NULL;
    if (*rc == MPI_SUCCESS) *rc = native_group_of_members(w, n, &g);
    if (*rc == MPI_SUCCESS) {
        *rc = PMPI_Comm_create_group(c->site_comm, g, tag, &native);
        PMPI_Group_free(&g);
    }
    if (*rc == MPI_SUCCESS) *rc = ist_zip_register(native, context, n, me, w, newcomm);
    free(parent);
    free(w);
    return 1;
}

/* ---- Fortran (Open MPI: its entries would call PMPI_X, past the functions above) ---- */
#ifdef OPEN_MPI
#include "zip_fortran.h"

#define G(x) PMPI_Group_f2c(*(x))

void mpi_comm_group_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *ierr)
{
    MPI_Group g;
    *ierr = ist_world_Comm_group(PMPI_Comm_f2c(*comm), &g);
    *group = PMPI_Group_c2f(g);
}
IST_ZIP_FORTRAN(mpi_comm_group, MPI_COMM_GROUP, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_group_size_(MPI_Fint *group, MPI_Fint *size, MPI_Fint *ierr) { *ierr = ist_world_Group_size(G(group), size); }
IST_ZIP_FORTRAN(mpi_group_size, MPI_GROUP_SIZE, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_group_rank_(MPI_Fint *group, MPI_Fint *rank, MPI_Fint *ierr) { *ierr = ist_world_Group_rank(G(group), rank); }
IST_ZIP_FORTRAN(mpi_group_rank, MPI_GROUP_RANK, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_group_free_(MPI_Fint *group, MPI_Fint *ierr)
{
    MPI_Group g = G(group);
    *ierr = ist_world_Group_free(&g);
    *group = PMPI_Group_c2f(g);
}
IST_ZIP_FORTRAN(mpi_group_free, MPI_GROUP_FREE, (MPI_Fint *, MPI_Fint *))

void mpi_group_translate_ranks_(MPI_Fint *a, MPI_Fint *n, MPI_Fint *ra, MPI_Fint *b, MPI_Fint *rb, MPI_Fint *ierr)
{
    *ierr = ist_world_Group_translate_ranks(G(a), *n, ra, G(b), rb);
}
IST_ZIP_FORTRAN(mpi_group_translate_ranks, MPI_GROUP_TRANSLATE_RANKS,
                (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_group_compare_(MPI_Fint *a, MPI_Fint *b, MPI_Fint *result, MPI_Fint *ierr)
{
    *ierr = ist_world_Group_compare(G(a), G(b), result);
}
IST_ZIP_FORTRAN(mpi_group_compare, MPI_GROUP_COMPARE, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

#define TWO_GROUPS(lower, upper, cfn)                                             \
    void lower##_(MPI_Fint *a, MPI_Fint *b, MPI_Fint *out, MPI_Fint *ierr)        \
    {                                                                             \
        MPI_Group g;                                                              \
        *ierr = cfn(G(a), G(b), &g);                                              \
        *out = PMPI_Group_c2f(g);                                                 \
    }                                                                             \
    IST_ZIP_FORTRAN(lower, upper, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
TWO_GROUPS(mpi_group_union, MPI_GROUP_UNION, ist_world_Group_union)
TWO_GROUPS(mpi_group_intersection, MPI_GROUP_INTERSECTION, ist_world_Group_intersection)
TWO_GROUPS(mpi_group_difference, MPI_GROUP_DIFFERENCE, ist_world_Group_difference)

#define RANKS_OF_GROUP(lower, upper, cfn, rtype)                                  \
    void lower##_(MPI_Fint *group, MPI_Fint *n, MPI_Fint *ranks, MPI_Fint *out, MPI_Fint *ierr) \
    {                                                                             \
        MPI_Group g;                                                              \
        *ierr = cfn(G(group), *n, (rtype)ranks, &g);                              \
        *out = PMPI_Group_c2f(g);                                                 \
    }                                                                             \
    IST_ZIP_FORTRAN(lower, upper, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
RANKS_OF_GROUP(mpi_group_incl, MPI_GROUP_INCL, ist_world_Group_incl, const int *)
RANKS_OF_GROUP(mpi_group_excl, MPI_GROUP_EXCL, ist_world_Group_excl, const int *)
RANKS_OF_GROUP(mpi_group_range_incl, MPI_GROUP_RANGE_INCL, ist_world_Group_range_incl, int(*)[3])
RANKS_OF_GROUP(mpi_group_range_excl, MPI_GROUP_RANGE_EXCL, ist_world_Group_range_excl, int(*)[3])
#endif
