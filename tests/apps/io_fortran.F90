! MPI-IO from Fortran: each rank writes its block of integers to one file collectively,
! reads the next rank's back and checks it. The profile must name the file exactly (the
! name reaches the layer as a blank-padded string with a hidden length).
program io_fortran
    use mpi
    implicit none
    integer, parameter :: n = 1024
    integer :: ierr, rank, nranks, fh, i, bad, total, next
    integer :: buf(n)
    integer(kind=MPI_OFFSET_KIND) :: offset
    integer :: status(MPI_STATUS_SIZE)
    character(len=4096) :: path

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
    call get_command_argument(1, path)
    do i = 1, n
        buf(i) = rank * n + i
    end do
    call MPI_File_open(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_WRONLY, &
                       MPI_INFO_NULL, fh, ierr)
    offset = int(rank, MPI_OFFSET_KIND) * n * 4
    call MPI_File_write_at_all(fh, offset, buf, n, MPI_INTEGER, status, ierr)
    call MPI_File_close(fh, ierr)
    call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
    next = mod(rank + 1, nranks)
    offset = int(next, MPI_OFFSET_KIND) * n * 4
    call MPI_File_read_at(fh, offset, buf, n, MPI_INTEGER, status, ierr)
    call MPI_File_close(fh, ierr)
    bad = 0
    do i = 1, n
        if (buf(i) /= next * n + i) bad = bad + 1
    end do
    call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a,i0)', 'bad ', total
    call MPI_Finalize(ierr)
    if (total /= 0) stop 1
end program io_fortran
