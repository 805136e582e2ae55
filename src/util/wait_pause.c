/* How long a sleeping wait pauses after a failed test (src/world/wait.c's waits, the
 * zipper's idle). Chosen on every failed test of such a wait; costs one read of the
 * thread's CPU clock when dilated, nothing more otherwise.
 *
 * Undilated: ist_wait_backoff (src/util/backoff.h), real time.
 *
 * Dilated by K: each emulated host's CPU is a CFS quota of cores / K of a CPU. A waiting
 * rank whose tests use up that quota is throttled until the next period (up to about
 * 1 ms of virtual time) and answers the message it waited for only then; a pause in
 * virtual time instead (K times the undilated one) holds a message that arrives meanwhile
 * up to 160 us of virtual time whatever K, so sub-millisecond figures did not converge
 * (results/dilation/README.md). So a pause lasts, in real time, SHARE_MARGIN x K times
 * what one test-and-pause cycle costs this thread in CPU (its CPU clock, smoothed): the
 * waits then take at most 1 / SHARE_MARGIN of a core's share, and in virtual time a
 * pause lasts SHARE_MARGIN times that cost, whatever K. No tests back to back: at K = 16
 * fifty of them are 3 us of virtual time but a tenth of a 1 ms quota. */
#define _GNU_SOURCE
#include <stdint.h>
#include <time.h>

#include "backoff.h"
#include "clock.h"

#define SHARE_MARGIN 4.0
#define FIRST_COST_NS 2000.0 /* until measured: a test of either MPI plus a nanosleep */

static _Thread_local double cycle_cost_ns = FIRST_COST_NS;
static _Thread_local uint64_t last_cpu_ns;

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: never scaled */
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

long ist_wait_pause_ns(int tries)
{
    double k = ist_dilation();
    if (k <= 1.0) return ist_backoff_ns(&ist_wait_backoff, tries);
    uint64_t cpu = thread_cpu_ns();
    if (tries > 0) { /* the cycle since the previous pause of this wait */
        double sample = (double)(cpu - last_cpu_ns);
        if (sample > 4.0 * cycle_cost_ns) sample = 4.0 * cycle_cost_ns; /* one slow cycle */
        cycle_cost_ns += (sample - cycle_cost_ns) / 8.0;
    }
    last_cpu_ns = cpu;
    double ns = SHARE_MARGIN * k * cycle_cost_ns;
    double cap = k * (double)ist_wait_backoff.max_ns; /* never longer than a virtual pause */
    return (long)(ns < cap ? ns : cap);
}
