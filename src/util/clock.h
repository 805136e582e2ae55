/* The profiler's clock. Reading CLOCK_MONOTONIC costs about 20 ns through the vDSO, and a
 * timed call reads the clock twice, which alone would exceed the 25 ns budget per call. On
 * x86-64 with an invariant TSC (constant_tsc and nonstop_tsc in /proc/cpuinfo) rdtsc costs
 * a few ns; ticks are converted to seconds once, at MPI_Finalize, with a rate calibrated
 * against CLOCK_MONOTONIC over the whole run. Elsewhere ticks are nanoseconds. */
#ifndef ISTHMUS_CLOCK_H
#define ISTHMUS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ist_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ist_ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ist_ticks(void) { return ist_monotonic_ns(); }
#endif

/* Calibration: record a start point, later ask for ticks per second. */
struct ist_clock_ref {
    uint64_t ticks;
    uint64_t ns;
};

static inline struct ist_clock_ref ist_clock_now(void)
{
    struct ist_clock_ref r;
    r.ns = ist_monotonic_ns();
    r.ticks = ist_ticks();
    return r;
}

/* Ticks per second between 'start' and now; waits until at least min_ns have passed so
 * that the rate of a very short run is still accurate to about 0.1%. */
double ist_clock_rate(struct ist_clock_ref start, uint64_t min_ns);

/* Time dilation (time_dilation.c): the factor K in force (1: none); CLOCK_MONOTONIC in
 * microseconds, virtual time when dilated; and the machine's own time, for what is about
 * this machine rather than the emulated platform. */
double ist_dilation(void);
double ist_now_us(void);
uint64_t ist_real_now_ns(void);
void ist_real_nanosleep(long ns);
struct pollfd;
int ist_real_ppoll(struct pollfd *fds, unsigned long n, long ns); /* ns of real time */

#endif
