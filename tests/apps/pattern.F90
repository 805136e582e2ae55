! The known pattern of pattern.c, in Fortran. One source for the three bindings, chosen
! when compiling: -DUSE_F08 (use mpi_f08), -DUSE_MPI (use mpi), or neither (mpif.h).
#if defined(USE_F08)
#define COMM_T type(MPI_Comm)
#define REQ_T type(MPI_Request)
#define STATUS_T type(MPI_Status)
#define STATUS_DIM
#else
#define COMM_T integer
#define REQ_T integer
#define STATUS_T integer
#define STATUS_DIM (MPI_STATUS_SIZE)
#endif
program pattern
#if defined(USE_F08)
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if !defined(USE_F08) && !defined(USE_MPI)
  include 'mpif.h'
#endif
  integer :: rank, n, right, left, i, ierr, hrank, hsize, one, isum
  double precision :: d, dsum
  integer :: ibuf(250), ibuf2(250), two(2)
  real, allocatable :: big(:), big2(:)
  integer, allocatable :: a2a(:), a2a2(:), gathered(:)
  COMM_T :: half, dup
  REQ_T :: req(2)
  STATUS_T :: st STATUS_DIM
  STATUS_T :: sts STATUS_DIM, sts2 STATUS_DIM

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  right = mod(rank + 1, n)
  left = mod(rank + n - 1, n)
  d = rank
  do i = 1, 10
    if (mod(rank, 2) == 0) then
      call MPI_Send(d, 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(d, 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Recv(d, 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(d, 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    end if
  end do
  ibuf = rank
  do i = 1, 5
    call MPI_Sendrecv(ibuf, 250, MPI_INTEGER, right, 2, ibuf2, 250, MPI_INTEGER, left, 2, &
                      MPI_COMM_WORLD, st, ierr)
  end do
  allocate(big(16384), big2(16384))
  big = 0.0
  do i = 1, 2
    call MPI_Irecv(big2, 16384, MPI_REAL, left, 3, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Isend(big, 16384, MPI_REAL, right, 3, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  end do
  one = 1
  do i = 1, 3
    call MPI_Bcast(one, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end do
  do i = 1, 4
    call MPI_Allreduce(d, dsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  allocate(a2a(4 * n), a2a2(4 * n), gathered(2 * n))
  a2a = 0
  call MPI_Alltoall(a2a, 4, MPI_INTEGER, a2a2, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  two = rank
  call MPI_Gather(two, 2, MPI_INTEGER, gathered, 2, MPI_INTEGER, n - 1, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(one, isum, 1, MPI_INTEGER, MPI_SUM, 1, MPI_COMM_WORLD, ierr)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  if (hsize >= 2 .and. hrank == 0) call MPI_Send(ibuf, 25, MPI_INTEGER, 1, 4, half, ierr)
  if (hsize >= 2 .and. hrank == 1) call MPI_Recv(ibuf2, 25, MPI_INTEGER, 0, 4, half, st, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Allreduce(d, dsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, dup, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(half, ierr)
  if (rank == 0) print '(a,i0,a)', 'pattern: done on ', n, ' ranks'
  call MPI_Finalize(ierr)
end program pattern
