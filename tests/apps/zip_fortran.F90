! Point-to-point, wildcards, nonblocking requests, collectives and a split from Fortran
! across zipper forwarding (tests/python/test_zipper.py). Prints "zip_fortran: ok" on every
! rank, or the first wrong result and stops with code 1. -DUSE_MPI: `use mpi`; -DUSE_F08:
! `use mpi_f08`; neither: mpif.h.
program zip_fortran
#if defined(USE_F08)
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if !defined(USE_F08) && !defined(USE_MPI)
  include 'mpif.h'
#endif
  integer :: rank, n, ierr, i, right, left, s, v, prank, psize, idx
  integer :: buf(100), got(100)
#if defined(USE_F08)
  type(MPI_Request) :: req(2)
  type(MPI_Status) :: st, sts(2)
  type(MPI_Comm) :: parity
#else
  integer :: req(2), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2), parity
#endif

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  call check(n == 4, 'MPI_Comm_size')
  right = mod(rank + 1, n)
  left = mod(rank - 1 + n, n)

  ! A ring with Isend, Irecv and Waitall
  buf = [(rank * 1000 + i, i = 1, 100)]
  call MPI_Irecv(got, 100, MPI_INTEGER, left, 1, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(buf, 100, MPI_INTEGER, right, 1, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, sts, ierr)
  call check(all(got == [(left * 1000 + i, i = 1, 100)]), 'ring')

  ! Everyone to rank 0, received with MPI_ANY_SOURCE; Waitany on two receives
  if (rank == 0) then
    s = 0
    do i = 1, n - 1
      call MPI_Recv(v, 1, MPI_INTEGER, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, st, ierr)
#if defined(USE_F08)
      call check(v == st%MPI_SOURCE, 'source')
#else
      call check(v == st(MPI_SOURCE), 'source')
#endif
      s = s + v
    end do
    call check(s == n * (n - 1) / 2, 'any source')
  else
    call MPI_Send(rank, 1, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Irecv(got(1), 1, MPI_INTEGER, left, 3, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Irecv(got(2), 1, MPI_INTEGER, right, 4, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, right, 3, MPI_COMM_WORLD, ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, left, 4, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, req, idx, st, ierr)
  call check(idx == 1 .or. idx == 2, 'Waitany index')
  call MPI_Waitany(2, req, idx, st, ierr)
  call check(got(1) == left .and. got(2) == right, 'Waitany')

  ! Collectives, also in place
  call MPI_Allreduce(rank, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(s == n * (n - 1) / 2, 'Allreduce')
  s = rank
  call MPI_Allreduce(MPI_IN_PLACE, s, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(s == n - 1, 'Allreduce in place')
  v = 0
  if (rank == n - 1) v = 77
  call MPI_Bcast(v, 1, MPI_INTEGER, n - 1, MPI_COMM_WORLD, ierr)
  call check(v == 77, 'Bcast')

  ! Even and odd ranks: each spans both clusters
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, parity, ierr)
  call MPI_Comm_rank(parity, prank, ierr)
  call MPI_Comm_size(parity, psize, ierr)
  call check(psize == n / 2 .and. prank == rank / 2, 'Comm_split')
  call MPI_Allreduce(rank, s, 1, MPI_INTEGER, MPI_SUM, parity, ierr)
  call check(s == mod(rank, 2) * (n / 2) + 2 * ((n / 2) * (n / 2 - 1) / 2), 'split Allreduce')
  call MPI_Comm_free(parity, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  print '(a)', 'zip_fortran: ok'
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print '(a, i0, 2a)', 'zip_fortran rank ', rank, ': wrong: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine check
end program zip_fortran
