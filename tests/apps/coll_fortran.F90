! Collectives from Fortran with known results, for the WAN-aware collectives: Bcast,
! Allreduce (also MPI_IN_PLACE), Reduce, Gather, Scatter, Allgather, Alltoall, Scan and
! Barrier over MPI_COMM_WORLD. Prints "coll_fortran: ok" or the first wrong result and
! stops with code 1. One source for the three bindings, as pattern.F90: -DUSE_F08,
! -DUSE_MPI, or neither (mpif.h).
program coll_fortran
#if defined(USE_F08)
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if !defined(USE_F08) && !defined(USE_MPI)
  include 'mpif.h'
#endif
  integer, parameter :: m = 1000
  integer :: rank, n, ierr, i, root
  integer :: v(m), w(m), s, x
  integer, allocatable :: every(:), mine(:), a2a_in(:), a2a_out(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  allocate(every(n * m), mine(m), a2a_in(n * 3), a2a_out(n * 3))
  root = n - 1

  ! Bcast from the last rank
  v = 0
  if (rank == root) v = [(i * 7, i = 1, m)]
  call MPI_Bcast(v, m, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call check(all_equal(v, [(i * 7, i = 1, m)]), 'Bcast')

  ! Allreduce, then in place: sum of ranks + i
  v = [(rank + i, i = 1, m)]
  call MPI_Allreduce(v, w, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all_equal(w, [(n * (n - 1) / 2 + n * i, i = 1, m)]), 'Allreduce')
  call MPI_Allreduce(MPI_IN_PLACE, v, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all_equal(v, [(n * (n - 1) / 2 + n * i, i = 1, m)]), 'Allreduce in place')

  ! Reduce (max) to the last rank, in place there
  v = [(rank * i, i = 1, m)]
  if (rank == root) then
    call MPI_Reduce(MPI_IN_PLACE, v, m, MPI_INTEGER, MPI_MAX, root, MPI_COMM_WORLD, ierr)
    call check(all_equal(v, [((n - 1) * i, i = 1, m)]), 'Reduce in place')
  else
    call MPI_Reduce(v, w, m, MPI_INTEGER, MPI_MAX, root, MPI_COMM_WORLD, ierr)
  end if

  ! Gather and Allgather of m integers per rank
  mine = [(rank * m + i, i = 1, m)]
  every = -1
  call MPI_Gather(mine, m, MPI_INTEGER, every, m, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call check(all_equal(every, [(i, i = 1, n * m)]), 'Gather')
  every = -1
  call MPI_Allgather(mine, m, MPI_INTEGER, every, m, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all_equal(every, [(i, i = 1, n * m)]), 'Allgather')

  ! Scatter from rank 0
  if (rank == 0) every = [(i, i = 1, n * m)]
  mine = -1
  call MPI_Scatter(every, m, MPI_INTEGER, mine, m, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(all_equal(mine, [(rank * m + i, i = 1, m)]), 'Scatter')

  ! Alltoall of 3 integers per pair: from rank r to rank d, 100 r + d
  a2a_in = [((100 * rank + (i - 1) / 3), i = 1, 3 * n)]
  call MPI_Alltoall(a2a_in, 3, MPI_INTEGER, a2a_out, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all_equal(a2a_out, [((100 * ((i - 1) / 3) + rank), i = 1, 3 * n)]), 'Alltoall')

  ! Scan: prefix sum of rank + 1
  x = rank + 1
  call MPI_Scan(x, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(s == (rank + 1) * (rank + 2) / 2, 'Scan')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a)', 'coll_fortran: ok'
  call MPI_Finalize(ierr)

contains

  logical function all_equal(a, b)
    integer, intent(in) :: a(:), b(:)
    all_equal = size(a) == size(b)
    if (all_equal) all_equal = all(a == b)
  end function

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print '(a, a, a, i0)', 'coll_fortran: wrong result of ', what, ' on rank ', rank
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine
end program
