/* Cartesian and graph topologies on communicators that span sites (docs/zipper.md).
 *
 * The native MPI cannot hold the topology of a communicator whose other members it does
 * not know, so the layer keeps it (ranks are never reordered: `reorder` is a hint) and
 * answers the topology calls itself. A new communicator all of whose members are in one
 * site gets the native topology instead, so the MPI answers for it as usual. */
#include <stdlib.h>
#include <string.h>

#include "zip.h"
#include "world_calls.h"
#include "zip_engine.h"

struct ist_ztopo {
    int kind;          /* MPI_CART or MPI_GRAPH */
    int ndims;         /* Cartesian: dimensions, periods */
    int *dims, *periods;
    int nnodes;        /* graph: index and edges as MPI_Graph_create takes them */
    int *index, *edges;
};

static struct ist_zcomm *topo_comm(MPI_Comm comm, int kind)
{
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    return c && c->topo && (kind < 0 || c->topo->kind == kind) ? c : NULL;
}

static int *copy_ints(const int *a, int n)
{
    int *out = malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    if (n > 0) memcpy(out, a, sizeof *a * (size_t)n);
    return out;
}

void ist_zip_free_topo(struct ist_ztopo *t)
{
    if (!t) return;
    free(t->dims);
    free(t->periods);
    free(t->index);
    free(t->edges);
    free(t);
}

struct ist_ztopo *ist_zip_copy_topo(const struct ist_ztopo *t)
{
    if (!t) return NULL;
    struct ist_ztopo *o = calloc(1, sizeof *o);
    int nedges = t->nnodes ? t->index[t->nnodes - 1] : 0;
    *o = (struct ist_ztopo){t->kind, t->ndims, t->dims ? copy_ints(t->dims, t->ndims) : NULL,
                            t->periods ? copy_ints(t->periods, t->ndims) : NULL, t->nnodes,
                            t->index ? copy_ints(t->index, t->nnodes) : NULL,
                            t->edges ? copy_ints(t->edges, nedges) : NULL};
    return o;
}

/* The first n ranks of c, in order, as a Cartesian communicator of ndims dimensions. */
static int make_cart(struct ist_zcomm *c, int ndims, const int dims[], const int periods[],
                     MPI_Comm *out)
{
    int n = 1;
    for (int d = 0; d < ndims; d++) n *= dims[d];
    if (n > c->size) return MPI_ERR_DIMS;
    MPI_Comm split;
    int rc = ist_zip_split(c, c->rank < n ? 0 : MPI_UNDEFINED, c->rank, &split);
    *out = split;
    if (rc != MPI_SUCCESS || split == MPI_COMM_NULL) return rc;
    struct ist_zcomm *z = ist_zip_comm(split);
    if (!z) { /* all in this site: a native Cartesian communicator */
        rc = PMPI_Cart_create(split, ndims, dims, periods, 0, out);
        PMPI_Comm_free(&split);
        return rc;
    }
    struct ist_ztopo *t = calloc(1, sizeof *t);
    *t = (struct ist_ztopo){MPI_CART, ndims, copy_ints(dims, ndims), copy_ints(periods, ndims),
                            0, NULL, NULL};
    z->topo = t;
    z->free_topo = ist_zip_free_topo;
    return MPI_SUCCESS;
}

int ist_span_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                        int reorder, MPI_Comm *comm_cart, int *rc)
{
    (void)reorder;
    struct ist_zcomm *c = ist_zip_comm(comm_old);
    if (!c) return 0;
    *rc = make_cart(c, ndims, dims, periods, comm_cart);
    return 1;
}

static void coords_of(const struct ist_ztopo *t, int rank, int coords[])
{
    for (int d = t->ndims - 1; d >= 0; d--) { /* row-major: the last dimension varies fastest */
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

static int rank_of(const struct ist_ztopo *t, const int coords[])
{
    int rank = 0;
    for (int d = 0; d < t->ndims; d++) {
        int x = coords[d];
        if (t->periods[d]) x = ((x % t->dims[d]) + t->dims[d]) % t->dims[d];
        else if (x < 0 || x >= t->dims[d]) return MPI_PROC_NULL;
        rank = rank * t->dims[d] + x;
    }
    return rank;
}

int ist_span_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[], int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    if (maxdims < c->topo->ndims || rank < 0 || rank >= c->size) return ist_answered(answer, MPI_ERR_ARG);
    coords_of(c->topo, rank, coords);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Cart_rank(MPI_Comm comm, const int coords[], int *rank, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    *rank = rank_of(c->topo, coords);
    return ist_answered(answer, *rank == MPI_PROC_NULL ? MPI_ERR_ARG : MPI_SUCCESS);
}

int ist_span_Cart_shift(MPI_Comm comm, int direction, int disp, int *source, int *dest, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    if (direction < 0 || direction >= c->topo->ndims) return ist_answered(answer, MPI_ERR_ARG);
    int coords[64];
    coords_of(c->topo, c->rank, coords);
    coords[direction] += disp;
    *dest = rank_of(c->topo, coords);
    coords[direction] -= 2 * disp;
    *source = rank_of(c->topo, coords);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Cartdim_get(MPI_Comm comm, int *ndims, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    *ndims = c->topo->ndims;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[], int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    if (maxdims < c->topo->ndims) return ist_answered(answer, MPI_ERR_ARG);
    memcpy(dims, c->topo->dims, sizeof *dims * (size_t)c->topo->ndims);
    memcpy(periods, c->topo->periods, sizeof *periods * (size_t)c->topo->ndims);
    coords_of(c->topo, c->rank, coords);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_CART);
    if (!c) return 0; /* the site's MPI answers */
    const struct ist_ztopo *t = c->topo;
    int coords[64], color = 0, key = 0, nd = 0, dims[64], periods[64];
    coords_of(t, c->rank, coords);
    for (int d = 0; d < t->ndims; d++) {
        if (remain_dims[d]) {
            key = key * t->dims[d] + coords[d];
            dims[nd] = t->dims[d];
            periods[nd++] = t->periods[d];
        } else {
            color = color * t->dims[d] + coords[d];
        }
    }
    MPI_Comm split;
    int rc = ist_zip_split(c, color, key, &split);
    if (rc != MPI_SUCCESS) return ist_answered(answer, rc);
    struct ist_zcomm *z = ist_zip_comm(split);
    if (!z) {
        if (nd == 0) { /* no dimension left: a communicator of one rank, as MPI says */
            *newcomm = split;
            return ist_answered(answer, MPI_SUCCESS);
        }
        rc = PMPI_Cart_create(split, nd, dims, periods, 0, newcomm);
        PMPI_Comm_free(&split);
        return ist_answered(answer, rc);
    }
    struct ist_ztopo *s = calloc(1, sizeof *s);
    *s = (struct ist_ztopo){MPI_CART, nd, copy_ints(dims, nd), copy_ints(periods, nd), 0, NULL, NULL};
    z->topo = s;
    z->free_topo = ist_zip_free_topo;
    *newcomm = split;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Topo_test(MPI_Comm comm, int *status, int *answer)
{
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    if (!c) return 0; /* the site's MPI answers */
    *status = c->topo ? c->topo->kind : MPI_UNDEFINED;
    return ist_answered(answer, MPI_SUCCESS);
}

/* ---- graphs ---------------------------------------------------------------------------- */

int ist_span_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                          MPI_Comm *comm_graph, int *answer)
{
    (void)reorder; /* ranks keep their order */
    struct ist_zcomm *c = ist_multi_site ? ist_zip_comm(comm) : NULL;
    if (!c) return 0; /* the site's MPI answers */
    if (nnodes > c->size) return ist_answered(answer, MPI_ERR_ARG);
    MPI_Comm split;
    int rc = ist_zip_split(c, c->rank < nnodes ? 0 : MPI_UNDEFINED, c->rank, &split);
    *comm_graph = split;
    if (rc != MPI_SUCCESS || split == MPI_COMM_NULL) return ist_answered(answer, rc);
    struct ist_zcomm *z = ist_zip_comm(split);
    if (!z) {
        rc = PMPI_Graph_create(split, nnodes, index, edges, 0, comm_graph);
        PMPI_Comm_free(&split);
        return ist_answered(answer, rc);
    }
    int nedges = nnodes ? index[nnodes - 1] : 0;
    struct ist_ztopo *t = calloc(1, sizeof *t);
    *t = (struct ist_ztopo){MPI_GRAPH, 0, NULL, NULL, nnodes, copy_ints(index, nnodes),
                            copy_ints(edges, nedges)};
    z->topo = t;
    z->free_topo = ist_zip_free_topo;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_GRAPH);
    if (!c) return 0; /* the site's MPI answers */
    *nnodes = c->topo->nnodes;
    *nedges = c->topo->nnodes ? c->topo->index[c->topo->nnodes - 1] : 0;
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[], int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_GRAPH);
    if (!c) return 0; /* the site's MPI answers */
    const struct ist_ztopo *t = c->topo;
    int nedges = t->nnodes ? t->index[t->nnodes - 1] : 0;
    memcpy(index, t->index, sizeof *index * (size_t)(maxindex < t->nnodes ? maxindex : t->nnodes));
    memcpy(edges, t->edges, sizeof *edges * (size_t)(maxedges < nedges ? maxedges : nedges));
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors, int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_GRAPH);
    if (!c) return 0; /* the site's MPI answers */
    *nneighbors = c->topo->index[rank] - (rank ? c->topo->index[rank - 1] : 0);
    return ist_answered(answer, MPI_SUCCESS);
}

int ist_span_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[], int *answer)
{
    struct ist_zcomm *c = topo_comm(comm, MPI_GRAPH);
    if (!c) return 0; /* the site's MPI answers */
    int first = rank ? c->topo->index[rank - 1] : 0, n = c->topo->index[rank] - first;
    memcpy(neighbors, c->topo->edges + first, sizeof *neighbors * (size_t)(n < maxneighbors ? n : maxneighbors));
    return ist_answered(answer, MPI_SUCCESS);
}

/* ---- Fortran (Open MPI: its entries would call PMPI_X, past the functions above) ---- */
#ifdef OPEN_MPI
#include "zip_fortran.h"

#define C(x) PMPI_Comm_f2c(*(x))

void mpi_cart_coords_(MPI_Fint *comm, MPI_Fint *rank, MPI_Fint *maxdims, MPI_Fint *coords, MPI_Fint *ierr)
{
    *ierr = ist_world_Cart_coords(C(comm), *rank, *maxdims, coords);
}
IST_ZIP_FORTRAN(mpi_cart_coords, MPI_CART_COORDS, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_cart_rank_(MPI_Fint *comm, MPI_Fint *coords, MPI_Fint *rank, MPI_Fint *ierr)
{
    *ierr = ist_world_Cart_rank(C(comm), coords, rank);
}
IST_ZIP_FORTRAN(mpi_cart_rank, MPI_CART_RANK, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_cart_shift_(MPI_Fint *comm, MPI_Fint *dir, MPI_Fint *disp, MPI_Fint *src, MPI_Fint *dst, MPI_Fint *ierr)
{
    *ierr = ist_world_Cart_shift(C(comm), *dir, *disp, src, dst);
}
IST_ZIP_FORTRAN(mpi_cart_shift, MPI_CART_SHIFT, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_cartdim_get_(MPI_Fint *comm, MPI_Fint *ndims, MPI_Fint *ierr) { *ierr = ist_world_Cartdim_get(C(comm), ndims); }
IST_ZIP_FORTRAN(mpi_cartdim_get, MPI_CARTDIM_GET, (MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_cart_get_(MPI_Fint *comm, MPI_Fint *maxdims, MPI_Fint *dims, MPI_Fint *periods, MPI_Fint *coords, MPI_Fint *ierr)
{
    *ierr = ist_world_Cart_get(C(comm), *maxdims, dims, periods, coords);
}
IST_ZIP_FORTRAN(mpi_cart_get, MPI_CART_GET, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_cart_sub_(MPI_Fint *comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    MPI_Comm out;
    *ierr = ist_world_Cart_sub(C(comm), remain, &out);
    *newcomm = PMPI_Comm_c2f(out);
}
IST_ZIP_FORTRAN(mpi_cart_sub, MPI_CART_SUB, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))

void mpi_topo_test_(MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) { *ierr = ist_world_Topo_test(C(comm), status); }
IST_ZIP_FORTRAN(mpi_topo_test, MPI_TOPO_TEST, (MPI_Fint *, MPI_Fint *, MPI_Fint *))
#endif
