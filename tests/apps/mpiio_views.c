/* MPI-IO on pio against the MPI's own MPI-IO, byte for byte (docs/mpiio.md). An
 * unmodified MPI-IO program: every case writes the same data twice, once to DIR/NAME (the
 * MPI's own MPI-IO) and once to pio:NAME, through a file view whose filetype is of one
 * datatype kind (contiguous, vector, hvector, indexed, hindexed, indexed_block, struct,
 * subarray, darray, resized), by one access form (explicit offset, individual pointer,
 * collective, nonblocking, split collective, ordered); each rank reads its part back
 * through the view and compares; then rank 0 reads both files whole and compares them,
 * and the answers of get_size, get_position and get_byte_offset. The last case truncates
 * both with set_size. Prints "mpiio_views: N cases, M bytes compared, K differ"; exits 1
 * when K > 0.  Usage: mpiio_views DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INTS = 96 }; /* each rank's ints per case (2 instances of every filetype) */
static int rank, nranks, ncases, ndiffer;
static long long nbytes;

static void differ(const char *what, const char *label)
{
    ndiffer++;
    if (ndiffer < 20) fprintf(stderr, "rank %d: %s: %s differ\n", rank, label, what);
}

/* A filetype of `kind` that gives each rank its own 48 ints of every 48 * nranks, and
 * tiles: its extent is the whole frame. */
static MPI_Datatype filetype_of(const char *kind)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, inner;
    int frame = 48 * nranks; /* ints */
    if (!strcmp(kind, "contiguous")) {
        MPI_Type_contiguous(48, MPI_INT, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t); /* displacement in the view */
        MPI_Type_free(&inner);
    } else if (!strcmp(kind, "vector")) { /* blocks of 4 ints, round robin */
        MPI_Type_vector(12, 4, 4 * nranks, MPI_INT, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t);
        MPI_Type_free(&inner);
    } else if (!strcmp(kind, "hvector")) { /* blocks of 3 ints */
        MPI_Type_create_hvector(16, 3, (MPI_Aint)12 * nranks, MPI_INT, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t);
        MPI_Type_free(&inner);
    } else if (!strcmp(kind, "indexed") || !strcmp(kind, "hindexed")) { /* uneven blocks */
        int len[4] = {5, 19, 1, 23}, disp[4], at = 0;
        MPI_Aint hdisp[4];
        /* block i of rank r at (sum of earlier blocks) * nranks + r * len[i] */
        for (int i = 0; i < 4; i++) {
            disp[i] = at * nranks + rank * len[i];
            hdisp[i] = (MPI_Aint)disp[i] * 4;
            at += len[i];
        }
        if (kind[0] == 'i') MPI_Type_indexed(4, len, disp, MPI_INT, &inner);
        else MPI_Type_create_hindexed(4, len, hdisp, MPI_INT, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t);
        MPI_Type_free(&inner);
        return t; /* the rank is in the displacements: no view displacement */
    } else if (!strcmp(kind, "indexed_block")) {
        int disp[6];
        for (int i = 0; i < 6; i++) disp[i] = (i * nranks + rank) * 8;
        MPI_Type_create_indexed_block(6, 8, disp, MPI_INT, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t);
        MPI_Type_free(&inner);
        return t;
    } else if (!strcmp(kind, "struct")) { /* 40 ints, then 8 ints as 4 doubles' bytes */
        int len[2] = {40, 4};
        MPI_Aint disp[2] = {(MPI_Aint)rank * 160, (MPI_Aint)nranks * 160 + rank * 32};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct(2, len, disp, types, &inner);
        MPI_Type_create_resized(inner, 0, (MPI_Aint)frame * 4, &t);
        MPI_Type_free(&inner);
        return t;
    } else if (!strcmp(kind, "subarray")) { /* columns of a 6 x (8 nranks) array */
        int sizes[2] = {6, 8 * nranks}, sub[2] = {6, 8}, start[2] = {0, 8 * rank};
        MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
        return t;
    } else if (!strcmp(kind, "darray")) { /* a 2-D block-cyclic array over a grid */
        int psizes[2] = {0, 0}, gsizes[2], distribs[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
        int dargs[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
        MPI_Dims_create(nranks, 2, psizes);
        gsizes[0] = 4 * psizes[0] * 2; /* rows: 4 cycles of 2 per process row */
        gsizes[1] = 6 * psizes[1];     /* columns: 6 per process column */
        MPI_Type_create_darray(nranks, rank, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
        return t;
    }
    if (t == MPI_DATATYPE_NULL) {
        fprintf(stderr, "mpiio_views: unknown kind %s\n", kind);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return t;
}

/* The view's displacement: the kinds whose filetype does not place the rank do here. */
static MPI_Offset disp_of(const char *kind)
{
    if (!strcmp(kind, "contiguous")) return (MPI_Offset)rank * 48 * 4;
    if (!strcmp(kind, "vector")) return (MPI_Offset)rank * 16;
    if (!strcmp(kind, "hvector")) return (MPI_Offset)rank * 12;
    return 0;
}

/* Writes buf (INTS ints of this rank) through the view by one access form. */
static void write_by(MPI_File fh, const char *form, const int *buf, MPI_Datatype memtype, int memcount)
{
    MPI_Status st;
    MPI_Request req;
    if (!strcmp(form, "at_all")) {
        MPI_File_write_at_all(fh, 0, buf, memcount, memtype, &st);
    } else if (!strcmp(form, "at")) {
        MPI_File_write_at(fh, 0, buf, INTS / 2, MPI_INT, &st);
        MPI_File_write_at(fh, INTS / 2, buf + INTS / 2, INTS / 2, MPI_INT, &st);
    } else if (!strcmp(form, "pointer")) {
        MPI_File_write(fh, buf, INTS / 3, MPI_INT, &st);
        MPI_File_write_all(fh, buf + INTS / 3, INTS - INTS / 3, MPI_INT, &st);
    } else if (!strcmp(form, "nonblocking")) {
        MPI_File_iwrite_at(fh, 0, buf, INTS / 2, MPI_INT, &req);
        MPI_Wait(&req, &st);
        MPI_File_seek(fh, INTS / 2, MPI_SEEK_SET);
        MPI_File_iwrite_all(fh, buf + INTS / 2, INTS / 4, MPI_INT, &req); /* at the pointer */
        MPI_Wait(&req, &st);
        MPI_File_iwrite_at_all(fh, 3 * INTS / 4, buf + 3 * INTS / 4, INTS / 4, MPI_INT, &req);
        MPI_Wait(&req, &st);
    } else if (!strcmp(form, "split")) {
        MPI_File_write_all_begin(fh, buf, INTS, MPI_INT);
        MPI_File_write_all_end(fh, buf, &st);
    } else if (!strcmp(form, "ordered")) {
        MPI_File_write_ordered(fh, buf, INTS, MPI_INT, &st);
    }
    int count = 0;
    MPI_Get_count(&st, MPI_INT, &count);
    (void)count;
}

static void one_case(const char *dir, const char *kind, const char *form, int memory_vector)
{
    char plain[4200], piofile[300], label[200];
    snprintf(label, sizeof label, "%s/%s%s", kind, form, memory_vector ? "/memory-vector" : "");
    snprintf(plain, sizeof plain, "%s/views-%d", dir, ncases);
    snprintf(piofile, sizeof piofile, "pio:views-%d", ncases);
    ncases++;
    int *buf = malloc(2 * INTS * sizeof *buf), *back = calloc(2 * INTS, sizeof *back);
    for (int i = 0; i < 2 * INTS; i++) buf[i] = rank * 1000003 + i * 7 + ncases;
    /* memory as a vector: the data in every other int of a buffer twice as long */
    MPI_Datatype memtype = MPI_INT;
    int memcount = INTS;
    int *membuf = buf;
    if (memory_vector) {
        MPI_Type_vector(INTS, 1, 2, MPI_INT, &memtype);
        MPI_Type_commit(&memtype);
        memcount = 1;
        membuf = malloc(2 * INTS * sizeof *membuf);
        for (int i = 0; i < 2 * INTS; i++) membuf[i] = i % 2 ? -1 : buf[i / 2];
    }
    MPI_Offset answers[2][4];
    for (int which = 0; which < 2; which++) {
        const char *name = which ? piofile : plain;
        char where[4500];
        snprintf(where, sizeof where, "%s, %s", label, name);
        MPI_File fh;
        if (MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
            fprintf(stderr, "mpiio_views: cannot open %s\n", name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_File_set_size(fh, 0);
        MPI_Datatype ft = filetype_of(kind);
        MPI_Type_commit(&ft);
        MPI_File_set_view(fh, disp_of(kind), MPI_INT, ft, "native", MPI_INFO_NULL);
        write_by(fh, form, membuf, memtype, memcount);
        MPI_File_get_position(fh, &answers[which][0]);
        MPI_File_get_byte_offset(fh, 5, &answers[which][1]);
        MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_get_size(fh, &answers[which][2]);
        /* read back through the view, collective and independent */
        MPI_Status st;
        int got = -1;
        /* ordered: rank r's data at the view's position r * INTS (the counts before it) */
        MPI_Offset at = strcmp(form, "ordered") ? 0 : (MPI_Offset)rank * INTS;
        memset(back, 0, 2 * INTS * sizeof *back);
        MPI_File_read_at_all(fh, at, back, INTS, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &got);
        if (got != INTS || memcmp(back, buf, INTS * sizeof *back)) differ("the collective read-back", where);
        memset(back, 0, 2 * INTS * sizeof *back);
        MPI_File_seek(fh, at + 1, MPI_SEEK_SET);
        MPI_File_read(fh, back, INTS - 1, MPI_INT, &st);
        MPI_Get_count(&st, MPI_INT, &got);
        answers[which][3] = got;
        nbytes += 2 * INTS * 4;
        if (got != INTS - 1 || memcmp(back, buf + 1, (INTS - 1) * sizeof *back))
            differ("the independent read-back", where);
        MPI_File_close(&fh);
        MPI_Type_free(&ft);
    }
    for (int k = 0; k < 4; k++)
        if (answers[0][k] != answers[1][k]) {
            char what[100];
            snprintf(what, sizeof what, "answer %d (%lld against %lld)", k, (long long)answers[1][k],
                     (long long)answers[0][k]);
            differ(what, label);
        }
    /* the files whole: opened by every rank (pio's files are), read by rank 0 */
    MPI_File a, b;
    MPI_Offset sa = 0, sb = 0;
    MPI_File_open(MPI_COMM_WORLD, plain, MPI_MODE_RDONLY, MPI_INFO_NULL, &a);
    MPI_File_open(MPI_COMM_WORLD, piofile, MPI_MODE_RDONLY, MPI_INFO_NULL, &b);
    MPI_File_get_size(a, &sa);
    MPI_File_get_size(b, &sb);
    if (rank == 0) { /* 100 bytes more than the file: both read what there is */
        char *da = calloc((size_t)sa + 100, 1), *db = calloc((size_t)sa + 100, 1);
        MPI_Status sta, stb;
        int ga = 0, gb = 0;
        MPI_File_read_at(a, 0, da, (int)sa + 100, MPI_BYTE, &sta);
        MPI_File_read_at(b, 0, db, (int)sa + 100, MPI_BYTE, &stb);
        MPI_Get_count(&sta, MPI_BYTE, &ga);
        MPI_Get_count(&stb, MPI_BYTE, &gb);
        if (ga != gb || ga != sa) differ("the counts read at the end of file", label);
        /* The ordered form leaves holes below the end of file (each rank's data at its own
         * view's position r * INTS); what a hole holds is the MPI-IO's own business (ROMIO's
         * and OMPIO's data-sieving writes leave their buffers' stale bytes there, seen: 0xff),
         * so there the read-backs above and the size are the check. */
        int compare = strcmp(form, "ordered") != 0;
        if (sa != sb || (compare && memcmp(da, db, (size_t)sa))) {
            char what[160];
            long long first = -1;
            for (MPI_Offset i = 0; i < sa && first < 0; i++)
                if (da[i] != db[i]) first = i;
            snprintf(what, sizeof what, "the files (sizes %lld and %lld, first byte apart %lld)", (long long)sa,
                     (long long)sb, first);
            differ(what, label);
        }
        nbytes += sa;
        free(da), free(db);
    }
    MPI_File_close(&a);
    MPI_File_close(&b);
    if (memory_vector) {
        MPI_Type_free(&memtype);
        free(membuf);
    }
    free(buf), free(back);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpiio_views DIR\n");
        MPI_Finalize();
        return 2;
    }
    static const char *kinds[] = {"contiguous", "vector", "hvector", "indexed", "hindexed",
                                  "indexed_block", "struct", "subarray", "darray"};
    static const char *forms[] = {"at_all", "at", "pointer", "nonblocking", "split", "ordered"};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) one_case(argv[1], kinds[k], forms[f], 0);
    one_case(argv[1], "vector", "at_all", 1);
    one_case(argv[1], "darray", "at_all", 1);
    int all = 0;
    MPI_Allreduce(&ndiffer, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    long long bytes = 0;
    MPI_Allreduce(&nbytes, &bytes, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpiio_views: %d cases, %lld bytes compared, %d differ\n", ncases, bytes, all);
    MPI_Finalize();
    return all != 0;
}
