/* Every clock and sleep libisthmus dilates, measured against real time (test_dilation.py).
 *
 *   dilated_clocks [--mpi]
 *
 * Real time comes from the clock_gettime system call itself, which no preloaded library
 * can interpose. For each clock: how far it advanced while 40 ms of real time passed (a
 * dilated clock advances 40 / K ms; the CPU clock is compared with the kernel's CPU time
 * over the same window, since a busy loop gets less than 40 ms of it under load), and whether 2000 reads in a row ever went back. For
 * each sleep or timeout of 20 ms (virtual): the real time it lasted (20 x K ms when
 * dilated). One JSON object on stdout. With --mpi it calls MPI_Init first (MPI_Wtime is
 * then measured after it too). */
#define _GNU_SOURCE
#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_MS 40.0
#define SLEEP_MS 20

static double real_ms(void)
{
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time as the kernel counts it: the reference for the CPU clock, which a preempted
 * process advances more slowly than real time. */
static double real_cpu_ms(void)
{
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double clock_ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double tod_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

static double wtime_ms(void) { return MPI_Wtime() * 1e3; }

enum { REALTIME, MONOTONIC, RAW, REALTIME_COARSE, MONOTONIC_COARSE, BOOTTIME, TOD, WTIME, CPU, NCLOCKS };
static const char *clock_names[NCLOCKS] = {"realtime", "monotonic", "monotonic_raw", "realtime_coarse",
                                           "monotonic_coarse", "boottime", "gettimeofday", "mpi_wtime",
                                           "process_cputime"};

static double read_clock(int i)
{
    static const clockid_t ids[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE,
                                    CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};
    if (i < TOD) return clock_ms(ids[i]);
    if (i == TOD) return tod_ms();
    if (i == WTIME) return wtime_ms();
    return clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

static double timed(int which)
{
    double t0 = real_ms();
    struct timespec ts = {0, SLEEP_MS * 1000000L};
    switch (which) {
    case 0: nanosleep(&ts, NULL); break;
    case 1: clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL); break;
    case 2: {
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_nsec += ts.tv_nsec;
        if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        break;
    }
    case 3: usleep(SLEEP_MS * 1000); break;
    case 4: poll(NULL, 0, SLEEP_MS); break;
    case 5: ppoll(NULL, 0, &ts, NULL); break;
    case 6: {
        struct timeval tv = {0, SLEEP_MS * 1000};
        select(0, NULL, NULL, NULL, &tv);
        break;
    }
    case 7: pselect(0, NULL, NULL, NULL, &ts, NULL); break;
    case 8: {
        int ep = epoll_create1(0);
        struct epoll_event ev;
        epoll_wait(ep, &ev, 1, SLEEP_MS);
        close(ep);
        break;
    }
    case 9: {
        int ep = epoll_create1(0);
        struct epoll_event ev;
        epoll_pwait(ep, &ev, 1, SLEEP_MS, NULL);
        close(ep);
        break;
    }
    case 10: {
        int fd = timerfd_create(CLOCK_MONOTONIC, 0);
        struct itimerspec its = {{0, 0}, ts};
        timerfd_settime(fd, 0, &its, NULL);
        unsigned long long n;
        if (read(fd, &n, sizeof n) < 0) perror("timerfd read");
        close(fd);
        break;
    }
    case 11: {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t c = PTHREAD_COND_INITIALIZER;
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += ts.tv_nsec;
        if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&m);
        while (pthread_cond_timedwait(&c, &m, &at) == 0) {
        }
        pthread_mutex_unlock(&m);
        break;
    }
    case 12: {
        sem_t s;
        sem_init(&s, 0, 0);
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += ts.tv_nsec;
        if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
        sem_timedwait(&s, &at);
        sem_destroy(&s);
        break;
    }
    }
    return real_ms() - t0;
}

static const char *sleep_names[] = {"nanosleep", "clock_nanosleep", "clock_nanosleep_abs", "usleep", "poll",
                                    "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait", "timerfd",
                                    "pthread_cond_timedwait", "sem_timedwait"};

int main(int argc, char **argv)
{
    int mpi = argc > 1 && strcmp(argv[1], "--mpi") == 0;
    if (mpi) MPI_Init(&argc, &argv);
    printf("{\"window_ms\": %g, \"sleep_ms\": %d, \"clocks\": {", WINDOW_MS, SLEEP_MS);
    for (int i = 0; i < NCLOCKS; i++) {
        int backwards = 0;
        double prev = read_clock(i);
        for (int k = 0; k < 2000; k++) {
            double v = read_clock(i);
            if (v < prev) backwards++;
            prev = v;
        }
        /* Each read of the clock sits between two reads of its reference; a preemption
         * between them (4 ms at HZ=250 under load) is reported as the uncertainty. */
        double (*reference)(void) = i == CPU ? real_cpu_ms : real_ms;
        double r0 = real_ms(), a0 = reference(), v0 = read_clock(i), b0 = reference();
        if (i == CPU) {
            while (real_ms() - r0 < WINDOW_MS) {
            }
        } else {
            while (real_ms() - r0 < WINDOW_MS) usleep(1000);
        }
        double a1 = reference(), v1 = read_clock(i), b1 = reference();
        printf("%s\"%s\": {\"advanced_ms\": %.4f, \"real_ms\": %.4f, \"uncertainty_ms\": %.4f, "
               "\"backwards\": %d}",
               i ? ", " : "", clock_names[i], v1 - v0, (a1 + b1) / 2 - (a0 + b0) / 2, (b0 - a0 + b1 - a1) / 2,
               backwards);
    }
    time_t t = time(NULL);
    printf("}, \"time_minus_realtime_s\": %.3f, \"sleeps_real_ms\": {", (double)t - clock_ms(CLOCK_REALTIME) / 1e3);
    for (int s = 0; s < (int)(sizeof sleep_names / sizeof *sleep_names); s++)
        printf("%s\"%s\": %.3f", s ? ", " : "", sleep_names[s], timed(s));
    printf("}}\n");
    if (mpi) MPI_Finalize();
    return 0;
}
