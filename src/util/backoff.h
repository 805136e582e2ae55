/* How long a wait pauses between its tests: the one policy every waiting loop of the C side
 * follows (src/world/wait.c's sleeping waits, the zipper's idle, discovery's pings, pio's
 * client and server). A wait that has failed `tries` tests so far tests again at once while
 * tries < spins (a message about to arrive costs no sleep), then pauses min_ns, `hold`
 * times, then twice as long after each pause up to max_ns: the cap bounds the delay a pause
 * adds to a message that arrives meanwhile. A wait that makes progress starts again at 0. */
#ifndef ISTHMUS_BACKOFF_H
#define ISTHMUS_BACKOFF_H

#include <time.h>

struct ist_backoff {
    int spins, hold;
    long min_ns, max_ns;
};

/* The sleeping waits' (src/world/wait.c), the zipper's idle and the MPI's own yields: 50
 * tests, then 5 us doubling to 160 us. */
static const struct ist_backoff ist_wait_backoff = {.spins = 50, .hold = 0, .min_ns = 5000,
                                                    .max_ns = 160000};

/* The pause after `tries` failed tests, in nanoseconds (0: test again at once). */
static inline long ist_backoff_ns(const struct ist_backoff *b, int tries)
{
    if (tries < b->spins) return 0;
    long ns = b->min_ns;
    for (int n = tries - b->spins - b->hold; n > 0 && ns < b->max_ns; n--) ns *= 2;
    return ns < b->max_ns ? ns : b->max_ns;
}

/* Take that pause (nanosleep: under time dilation it lasts K times longer, as the
 * application's own would). */
static inline void ist_backoff_sleep(const struct ist_backoff *b, int tries)
{
    long ns = ist_backoff_ns(b, tries);
    if (ns <= 0) return;
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&ts, NULL);
}

/* The sleeping waits' pause after `tries` failed tests, in real nanoseconds: as
 * ist_wait_backoff when undilated, one that follows the host's CPU share when dilated
 * (wait_pause.c says how). */
long ist_wait_pause_ns(int tries);

#endif
