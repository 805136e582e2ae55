/* What blocking and waking costs a thread on this machine (experiments/dilation/
 * interposition.toml): the part of every message's cost that a sleeping wait, a forwarder
 * and the router pay, which time dilation divides by K but never removes.
 *
 *   wake_cost
 *
 * Measured with the system calls themselves (no preloaded library interposes them):
 *   sleep0_cpu_ns   CPU time of one nanosleep of 0 (a trip through the scheduler);
 *   pingpong_cpu_ns CPU time per wake-up of two threads passing a byte through two pipes
 *                   (each blocks in read until the other writes);
 *   sleep1us_real_ns how long a nanosleep of 1 us lasts with a timer slack of 1 ns: the
 *                   wake-up's latency.
 * One JSON object on stdout, the median of 5 rounds each. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5
#define CALLS 2000

static double clock_ns(clockid_t c)
{
    struct timespec t;
    syscall(SYS_clock_gettime, c, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void raw_sleep(long ns)
{
    struct timespec t = {0, ns};
    syscall(SYS_nanosleep, &t, NULL);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, ROUNDS, sizeof *v, cmp);
    return v[ROUNDS / 2];
}

static int pipes[2][2];

static void *echo(void *arg)
{
    (void)arg;
    char c;
    for (int i = 0; i < CALLS; i++)
        if (read(pipes[0][0], &c, 1) != 1 || write(pipes[1][1], &c, 1) != 1) break;
    return NULL;
}

static double pingpong_cpu_per_wake(void)
{
    if (pipe(pipes[0]) != 0 || pipe(pipes[1]) != 0) return -1;
    pthread_t t;
    pthread_create(&t, NULL, echo, NULL);
    double c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    char c = 'x';
    for (int i = 0; i < CALLS; i++)
        if (write(pipes[0][1], &c, 1) != 1 || read(pipes[1][0], &c, 1) != 1) break;
    double cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
    pthread_join(t, NULL);
    for (int i = 0; i < 2; i++) close(pipes[i][0]), close(pipes[i][1]);
    return cpu / (2.0 * CALLS); /* two wake-ups per round */
}

int main(void)
{
    double sleep0[ROUNDS], pingpong[ROUNDS], sleep1[ROUNDS];
    prctl(PR_SET_TIMERSLACK, 1UL);
    for (int r = 0; r < ROUNDS; r++) {
        double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < CALLS; i++) raw_sleep(0);
        sleep0[r] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / CALLS;
        double t0 = clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < CALLS; i++) raw_sleep(1000);
        sleep1[r] = (clock_ns(CLOCK_MONOTONIC) - t0) / CALLS;
        pingpong[r] = pingpong_cpu_per_wake();
    }
    printf("{\"sleep0_cpu_ns\": %.0f, \"pingpong_cpu_ns\": %.0f, \"sleep1us_real_ns\": %.0f}\n",
           median(sleep0), median(pingpong), median(sleep1));
    return 0;
}
