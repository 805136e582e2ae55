! Fortran's timers under dilation (tests/python/test_dilation.py): system_clock and
! MPI_WTIME advance in virtual time across a sleep of 0.5 s (virtual), cpu_time does not
! count the sleep. One line per rank: "system_clock S wtime W cpu C".
program dilated_clocks
  use mpi
  implicit none
  integer(8) :: c0, c1, rate
  double precision :: w0, w1
  real :: t0, t1
  integer :: ierr
  call MPI_Init(ierr)
  call system_clock(c0, rate)
  w0 = MPI_Wtime()
  call cpu_time(t0)
  call nap()
  call system_clock(c1)
  w1 = MPI_Wtime()
  call cpu_time(t1)
  print '(A,F8.4,A,F8.4,A,F8.4)', 'system_clock ', dble(c1 - c0) / dble(rate), &
        ' wtime ', w1 - w0, ' cpu ', t1 - t0
  call MPI_Finalize(ierr)
contains
  subroutine nap()
    interface
      integer(c_int) function usleep(us) bind(c)
        use iso_c_binding
        integer(c_int), value :: us
      end function
    end interface
    integer :: rc
    rc = usleep(500000)
  end subroutine
end program
