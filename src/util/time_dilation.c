/* Time dilation in the ranks (the scale model, docs/dilation.md).
 *
 * With ISTHMUS_DILATION="K:EPOCH" (K > 1, EPOCH a CLOCK_MONOTONIC time in ns, set by
 * `isthmus run`) a rank lives in virtual time, which runs K times slower than real time and
 * equals it at EPOCH, in every rank alike. Every clock an application reads returns
 * virtual time, and every sleep or timeout it asks for lasts K times longer in real time:
 *   clocks:   clock_gettime (realtime, monotonic, raw, coarse, boottime, tai), gettimeofday,
 *             time (and MPI_Wtime: src/layer/layer.c);
 *   sleeps:   nanosleep, clock_nanosleep, usleep, sleep;
 *   timeouts: poll, ppoll, select, pselect, epoll_wait, epoll_pwait, epoll_pwait2,
 *             timerfd_settime/gettime, pthread_cond_timedwait, pthread_cond_clockwait,
 *             sem_timedwait, sem_clockwait.
 * CPU-time clocks are not scaled: a rank capped at cores / K of a CPU already accrues its
 * virtual compute time. Chosen over libfaketime (Debian's 0.9.10), which at a rate factor
 * also scales CPU time, leaves ppoll unscaled, breaks sem_timedwait and costs more per read
 * (dilation/interposition in results/dilation/README.md).
 *
 * Without the variable (or with K = 1) every function here is the C library's, called
 * through a pointer: nothing changes. A rank's own libisthmus code reads virtual time too
 * (the profiler, P-LogP measurement and discovery measure the virtual platform); only the
 * sleeping waits' yield window (src/world/wait.c) is about this machine and reads real time,
 * through ist_real_now_ns.
 *
 * In clock C, virtual time is v = E_C + (r - E_C) / K for real time r, where E_C is EPOCH
 * in C's terms (EPOCH plus C's offset from CLOCK_MONOTONIC, read once); a relative
 * duration d lasts d x K, an absolute deadline v lies at E_C + (v - E_C) x K. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define NS 1000000000LL
#define MAX_TIMERFD 4096

static double factor = 1.0;   /* K */
static int64_t epoch_mono_ns; /* EPOCH, CLOCK_MONOTONIC */
static int state;             /* 0: not read yet, 1: real time, 2: dilated */
static clockid_t timerfd_clock[MAX_TIMERFD];

/* The C library's functions. */
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);
static time_t (*real_time)(time_t *);
static int (*real_nanosleep)(const struct timespec *, struct timespec *);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
static int (*real_usleep)(useconds_t);
static unsigned (*real_sleep)(unsigned);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
static int (*real_timerfd_create)(int, int);
static int (*real_timerfd_settime)(int, int, const struct itimerspec *, struct itimerspec *);
static int (*real_timerfd_gettime)(int, struct itimerspec *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }
static void read_offsets(void);

/* Resolves the C library's functions and reads ISTHMUS_DILATION. Called on the first
 * call of any function here (a library's constructor may come before ours); racing threads
 * resolve the same pointers. */
static void init(void)
{
    real_clock_gettime = next("clock_gettime");
    real_gettimeofday = next("gettimeofday");
    real_time = next("time");
    real_nanosleep = next("nanosleep");
    real_clock_nanosleep = next("clock_nanosleep");
    real_usleep = next("usleep");
    real_sleep = next("sleep");
    real_poll = next("poll");
    real_ppoll = next("ppoll");
    real_select = next("select");
    real_pselect = next("pselect");
    real_epoll_wait = next("epoll_wait");
    real_epoll_pwait = next("epoll_pwait");
    real_epoll_pwait2 = next("epoll_pwait2");
    real_timerfd_create = next("timerfd_create");
    real_timerfd_settime = next("timerfd_settime");
    real_timerfd_gettime = next("timerfd_gettime");
    real_cond_timedwait = next("pthread_cond_timedwait");
    real_cond_clockwait = next("pthread_cond_clockwait");
    real_sem_timedwait = next("sem_timedwait");
    real_sem_clockwait = next("sem_clockwait");
    const char *v = getenv("ISTHMUS_DILATION");
    double k = 1.0;
    long long epoch = 0;
    if (v && *v) {
        char *end = NULL;
        k = strtod(v, &end);
        if (end == v || *end != ':' || !(k >= 1.0 && k <= 1000.0) ||
            (epoch = strtoll(end + 1, &end, 10)) <= 0 || *end) {
            fprintf(stderr, "isthmus: ISTHMUS_DILATION=%s: expected K:EPOCH, K from 1 to 1000 and "
                            "EPOCH a CLOCK_MONOTONIC time in ns\n", v);
            exit(2);
        }
    }
    factor = k;
    epoch_mono_ns = epoch;
    if (k > 1.0) read_offsets();
    __atomic_store_n(&state, k > 1.0 ? 2 : 1, __ATOMIC_RELEASE);
}

static inline int dilated(void)
{
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (__builtin_expect(!s, 0)) {
        init();
        s = state;
    }
    return s == 2;
}

/* ---- conversions ---------------------------------------------------------------------- */

static int64_t ts_ns(const struct timespec *t) { return (int64_t)t->tv_sec * NS + t->tv_nsec; }

static struct timespec ns_ts(int64_t ns)
{
    if (ns < 0) ns = 0;
    return (struct timespec){(time_t)(ns / NS), (long)(ns % NS)};
}

/* Does this clock tell the time of day or elapsed time (scaled), or CPU time (not)? */
static int scaled_clock(clockid_t c)
{
    switch (c) {
    case CLOCK_REALTIME: case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW: case CLOCK_REALTIME_COARSE:
    case CLOCK_MONOTONIC_COARSE: case CLOCK_BOOTTIME: case CLOCK_REALTIME_ALARM:
    case CLOCK_BOOTTIME_ALARM: case CLOCK_TAI:
        return 1;
    default:
        return 0;
    }
}

/* E_C: the epoch in clock c's terms. Each clock's offset from CLOCK_MONOTONIC is read
 * once (a coarse clock takes its fine twin's: its own reading would jitter by its tick);
 * so a later step of the real-time clock is not followed. */
#define NCLOCKIDS 16
static int64_t clock_offset[NCLOCKIDS];

static clockid_t fine_twin(clockid_t c)
{
    if (c == CLOCK_REALTIME_COARSE || c == CLOCK_REALTIME_ALARM) return CLOCK_REALTIME;
    if (c == CLOCK_MONOTONIC_COARSE) return CLOCK_MONOTONIC;
    if (c == CLOCK_BOOTTIME_ALARM) return CLOCK_BOOTTIME;
    return c;
}

static void read_offsets(void)
{
    for (clockid_t c = 0; c < NCLOCKIDS; c++) {
        if (!scaled_clock(c) || fine_twin(c) != c) continue;
        struct timespec a, m;
        if (real_clock_gettime(c, &a) != 0) continue;
        real_clock_gettime(CLOCK_MONOTONIC, &m);
        clock_offset[c] = ts_ns(&a) - ts_ns(&m);
    }
    for (clockid_t c = 0; c < NCLOCKIDS; c++)
        if (scaled_clock(c)) clock_offset[c] = clock_offset[fine_twin(c)];
}

static int64_t epoch_of(clockid_t c) { return epoch_mono_ns + clock_offset[c]; }

static int64_t scale_up(int64_t ns) /* a virtual duration in real time */
{
    double r = (double)ns * factor;
    return r > 4e18 ? (int64_t)4e18 : (int64_t)r;
}

static int64_t virtual_of(clockid_t c, int64_t real_ns)
{
    int64_t e = epoch_of(c);
    return e + (int64_t)((double)(real_ns - e) / factor);
}

static int64_t real_deadline(clockid_t c, int64_t virtual_ns)
{
    int64_t e = epoch_of(c);
    return e + scale_up(virtual_ns - e);
}

/* A timeout in ms for poll and epoll: negative waits forever, 0 does not wait. */
static int scale_ms(int ms)
{
    if (ms <= 0) return ms;
    double r = (double)ms * factor;
    return r > 2e9 ? 2000000000 : (int)r;
}

uint64_t ist_real_now_ns(void)
{
    dilated();
    struct timespec t;
    real_clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)ts_ns(&t);
}

void ist_real_nanosleep(long ns)
{
    dilated();
    struct timespec t = ns_ts(ns);
    real_nanosleep(&t, NULL);
}

int ist_real_ppoll(struct pollfd *fds, nfds_t n, long ns)
{
    dilated();
    struct timespec t = ns_ts(ns);
    return real_ppoll(fds, n, &t, NULL);
}

double ist_dilation(void) { return dilated() ? factor : 1.0; }

double ist_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* this file's: virtual when dilated */
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* ---- clocks --------------------------------------------------------------------------- */

int clock_gettime(clockid_t c, struct timespec *t)
{
    if (!dilated() || !scaled_clock(c)) return real_clock_gettime(c, t);
    int rc = real_clock_gettime(c, t);
    if (rc == 0) *t = ns_ts(virtual_of(c, ts_ns(t)));
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    if (!dilated()) return real_gettimeofday(tv, tz);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (tz) real_gettimeofday(NULL, tz);
    tv->tv_sec = t.tv_sec;
    tv->tv_usec = t.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out)
{
    if (!dilated()) return real_time(out);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (out) *out = t.tv_sec;
    return t.tv_sec;
}

/* ---- sleeps ----------------------------------------------------------------------------- */

int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (!dilated() || !req) return real_nanosleep(req, rem);
    struct timespec r = ns_ts(scale_up(ts_ns(req))), left;
    int rc = real_nanosleep(&r, &left);
    if (rc != 0 && rem) *rem = ns_ts((int64_t)((double)ts_ns(&left) / factor));
    return rc;
}

int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
    if (!dilated() || !req || !scaled_clock(c)) return real_clock_nanosleep(c, flags, req, rem);
    struct timespec r, left;
    if (flags & TIMER_ABSTIME) {
        r = ns_ts(real_deadline(c, ts_ns(req)));
        return real_clock_nanosleep(c, flags, &r, rem);
    }
    r = ns_ts(scale_up(ts_ns(req)));
    int rc = real_clock_nanosleep(c, flags, &r, &left);
    if (rc == EINTR && rem) *rem = ns_ts((int64_t)((double)ts_ns(&left) / factor));
    return rc;
}

int usleep(useconds_t us)
{
    if (!dilated()) return real_usleep(us);
    struct timespec t = ns_ts((int64_t)us * 1000);
    return nanosleep(&t, NULL);
}

unsigned sleep(unsigned s)
{
    if (!dilated()) return real_sleep(s);
    struct timespec t = {(time_t)s, 0}, left = {0, 0};
    if (nanosleep(&t, &left) == 0) return 0;
    return (unsigned)left.tv_sec + (left.tv_nsec > 0);
}

/* ---- timeouts ----------------------------------------------------------------------------- */

int poll(struct pollfd *fds, nfds_t n, int ms)
{
    int d = dilated();
    return real_poll(fds, n, d ? scale_ms(ms) : ms);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
    if (!dilated() || !t) return real_ppoll(fds, n, t, mask);
    struct timespec r = ns_ts(scale_up(ts_ns(t)));
    return real_ppoll(fds, n, &r, mask);
}

int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    if (!dilated() || !tv) return real_select(n, rd, wr, ex, tv);
    int64_t ns = scale_up(((int64_t)tv->tv_sec * 1000000 + tv->tv_usec) * 1000);
    struct timeval r = {(time_t)(ns / NS), (suseconds_t)(ns % NS / 1000)};
    int rc = real_select(n, rd, wr, ex, &r);
    /* Linux leaves the time not slept in the timeval: give it back in virtual time */
    int64_t left = (int64_t)((double)((int64_t)r.tv_sec * 1000000 + r.tv_usec) / factor);
    tv->tv_sec = (time_t)(left / 1000000);
    tv->tv_usec = (suseconds_t)(left % 1000000);
    return rc;
}

int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *t, const sigset_t *mask)
{
    if (!dilated() || !t) return real_pselect(n, rd, wr, ex, t, mask);
    struct timespec r = ns_ts(scale_up(ts_ns(t)));
    return real_pselect(n, rd, wr, ex, &r, mask);
}

int epoll_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    int d = dilated();
    return real_epoll_wait(ep, ev, max, d ? scale_ms(ms) : ms);
}

int epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
    int d = dilated();
    return real_epoll_pwait(ep, ev, max, d ? scale_ms(ms) : ms, mask);
}

int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *t, const sigset_t *mask)
{
    int d = dilated();
    if (!real_epoll_pwait2) return (errno = ENOSYS, -1); /* a C library before 2.35 */
    if (!d || !t) return real_epoll_pwait2(ep, ev, max, t, mask);
    struct timespec r = ns_ts(scale_up(ts_ns(t)));
    return real_epoll_pwait2(ep, ev, max, &r, mask);
}

int timerfd_create(int c, int flags)
{
    dilated();
    int fd = real_timerfd_create(c, flags);
    if (fd >= 0 && fd < MAX_TIMERFD) timerfd_clock[fd] = c;
    return fd;
}

static struct itimerspec itimer_virtual(const struct itimerspec *r)
{
    struct itimerspec v;
    v.it_interval = ns_ts((int64_t)((double)ts_ns(&r->it_interval) / factor));
    v.it_value = ns_ts((int64_t)((double)ts_ns(&r->it_value) / factor));
    return v;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *want, struct itimerspec *old)
{
    if (!dilated() || !want) return real_timerfd_settime(fd, flags, want, old);
    clockid_t c = fd >= 0 && fd < MAX_TIMERFD ? timerfd_clock[fd] : CLOCK_MONOTONIC;
    struct itimerspec r, before;
    r.it_interval = ns_ts(scale_up(ts_ns(&want->it_interval)));
    int64_t value = ts_ns(&want->it_value);
    if (value == 0) r.it_value = want->it_value; /* disarms */
    else if (flags & TFD_TIMER_ABSTIME) r.it_value = ns_ts(real_deadline(c, value));
    else r.it_value = ns_ts(scale_up(value));
    int rc = real_timerfd_settime(fd, flags, &r, &before);
    if (rc == 0 && old) *old = itimer_virtual(&before); /* relative: time to expiry */
    return rc;
}

int timerfd_gettime(int fd, struct itimerspec *cur)
{
    int d = dilated();
    int rc = real_timerfd_gettime(fd, cur);
    if (rc == 0 && d && cur) *cur = itimer_virtual(cur);
    return rc;
}

/* glibc keeps a condition variable's clock in bit 0 of __wrefs (set: monotonic). */
static clockid_t cond_clock(const pthread_cond_t *cond)
{
    return (cond->__data.__wrefs & 1) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

int pthread_cond_timedwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict m,
                           const struct timespec *restrict at)
{
    if (!dilated()) return real_cond_timedwait(cond, m, at);
    struct timespec r = ns_ts(real_deadline(cond_clock(cond), ts_ns(at)));
    return real_cond_timedwait(cond, m, &r);
}

int pthread_cond_clockwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict m, clockid_t c,
                           const struct timespec *restrict at)
{
    if (!dilated() || !scaled_clock(c)) return real_cond_clockwait(cond, m, c, at);
    struct timespec r = ns_ts(real_deadline(c, ts_ns(at)));
    return real_cond_clockwait(cond, m, c, &r);
}

int sem_timedwait(sem_t *restrict s, const struct timespec *restrict at)
{
    if (!dilated()) return real_sem_timedwait(s, at);
    struct timespec r = ns_ts(real_deadline(CLOCK_REALTIME, ts_ns(at)));
    return real_sem_timedwait(s, &r);
}

int sem_clockwait(sem_t *restrict s, clockid_t c, const struct timespec *restrict at)
{
    if (!dilated() || !scaled_clock(c)) return real_sem_clockwait(s, c, at);
    struct timespec r = ns_ts(real_deadline(c, ts_ns(at)));
    return real_sem_clockwait(s, c, &r);
}
