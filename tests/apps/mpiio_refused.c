/* What MPI-IO on pio refuses, each with one line (tests/python/test_mpiio_pio.py): an
 * open with MPI_MODE_EXCL, a datarep other than "native", atomic mode. Prints the size of
 * MPI_COMM_WORLD it sees and 1 for each call refused. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_File fh;
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = MPI_File_open(MPI_COMM_WORLD, "pio:x", MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
    int rc2 = MPI_File_open(MPI_COMM_WORLD, "pio:y", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    rc2 = rc2 == MPI_SUCCESS ? MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "internal", MPI_INFO_NULL) : 0;
    MPI_File_close(&fh);
    MPI_File_open(MPI_COMM_WORLD, "pio:z", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    int rc3 = MPI_File_set_atomicity(fh, 1);
    int rc4 = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL);
    MPI_File_close(&fh);
    printf("size %d refused %d %d %d %d\n", size, rc != MPI_SUCCESS, rc2 != MPI_SUCCESS,
           rc3 != MPI_SUCCESS, rc4 != MPI_SUCCESS);
    MPI_Finalize();
    return 0;
}
