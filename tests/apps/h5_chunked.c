/* A parallel HDF5 program (issue 49): every rank writes its slab of a chunked 3-D dataset
 * collectively, with an attribute, closes the file, reopens it and reads the whole
 * dataset back collectively, checking every element. Through HDF5's MPI-IO driver: run
 * on pio it takes a "pio:NAME" file name unchanged (docs/mpiio.md).
 *
 * Usage: h5_chunked FILE [write|read]
 *   write (the default): create FILE, write, then read back and check;
 *   read: only read FILE back and check (a file another run wrote, any number of ranks).
 * Prints "h5_chunked: N elements, K bad" and exits 1 when K > 0. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NX_PER_RANK = 6, NY = 40, NZ = 24 }; /* the dataset: (NX_PER_RANK * 4) x NY x NZ */
enum { WRITERS = 4 };                       /* the slabs: as many as the writing job's ranks */

static double value(hsize_t x, hsize_t y, hsize_t z) { return (double)(x * 1000000 + y * 1000 + z) + 0.25; }

static hid_t open_file(const char *name, int create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = create ? H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : H5Fopen(name, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    return file;
}

static void write_file(const char *name, int rank, int nranks)
{
    hsize_t dims[3] = {NX_PER_RANK * WRITERS, NY, NZ}, chunk[3] = {NX_PER_RANK, NY / 2, NZ / 3};
    hid_t file = open_file(name, 1);
    if (file < 0) {
        fprintf(stderr, "h5_chunked: cannot create %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hid_t space = H5Screate_simple(3, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, chunk);
    hid_t dset = H5Dcreate2(file, "field", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    /* rank r writes slabs r, r + nranks, ... (4 slabs over the job's ranks) */
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    double *buf = malloc(sizeof(double) * NX_PER_RANK * NY * NZ);
    for (int round = 0; round < (WRITERS + nranks - 1) / nranks; round++) {
        int slab = round * nranks + rank;
        hsize_t start[3] = {(hsize_t)slab * NX_PER_RANK, 0, 0}, count[3] = {NX_PER_RANK, NY, NZ};
        hid_t mem = H5Screate_simple(3, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        if (slab >= WRITERS) { /* nothing this round, but the call is collective */
            H5Sselect_none(space);
            H5Sselect_none(mem);
        }
        for (hsize_t x = 0; x < NX_PER_RANK; x++)
            for (hsize_t y = 0; y < NY; y++)
                for (hsize_t z = 0; z < NZ; z++) buf[(x * NY + y) * NZ + z] = value(start[0] + x, y, z);
        H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf);
        H5Sclose(mem);
    }
    int writers = nranks;
    hid_t ascalar = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(dset, "writers", H5T_NATIVE_INT, ascalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_INT, &writers);
    H5Aclose(attr), H5Sclose(ascalar);
    free(buf);
    H5Pclose(dxpl), H5Pclose(dcpl), H5Dclose(dset), H5Sclose(space), H5Fclose(file);
}

/* Reads the whole dataset on every rank (collectively) and counts the wrong elements. */
static long read_back(const char *name, long *elements)
{
    hid_t file = open_file(name, 0);
    if (file < 0) {
        fprintf(stderr, "h5_chunked: cannot open %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    hid_t dset = H5Dopen2(file, "field", H5P_DEFAULT), space = H5Dget_space(dset);
    hsize_t dims[3];
    H5Sget_simple_extent_dims(space, dims, NULL);
    size_t n = (size_t)(dims[0] * dims[1] * dims[2]);
    double *buf = malloc(n * sizeof *buf);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    long bad = H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, buf) < 0 ? (long)n : 0;
    for (hsize_t x = 0; x < dims[0] && !bad; x++)
        for (hsize_t y = 0; y < dims[1]; y++)
            for (hsize_t z = 0; z < dims[2]; z++) bad += buf[(x * dims[1] + y) * dims[2] + z] != value(x, y, z);
    if (dims[0] != NX_PER_RANK * WRITERS || dims[1] != NY || dims[2] != NZ) bad++;
    int writers = 0;
    hid_t attr = H5Aopen(dset, "writers", H5P_DEFAULT);
    if (attr < 0 || H5Aread(attr, H5T_NATIVE_INT, &writers) < 0 || writers < 1) bad++;
    if (attr >= 0) H5Aclose(attr);
    free(buf);
    H5Pclose(dxpl), H5Sclose(space), H5Dclose(dset), H5Fclose(file);
    *elements = (long)n;
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "write") && strcmp(argv[2], "read"))) {
        if (rank == 0) fprintf(stderr, "usage: h5_chunked FILE [write|read]\n");
        MPI_Finalize();
        return 2;
    }
    if (argc < 3 || !strcmp(argv[2], "write")) write_file(argv[1], rank, nranks);
    long elements = 0, bad = read_back(argv[1], &elements), all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("h5_chunked: %ld elements, %ld bad\n", elements, all);
    MPI_Finalize();
    return all != 0;
}
