/* Which forwarder connection takes a rendezvous's next bulk slice (zip_transport.c).
 *
 * When: every bulk slice, with more than one forwarder. A connection with room for a
 * frame takes the slice only while it is expected to deliver it first: its expected
 * finish is (what its socket still holds + the slice) / its drain rate, against the
 * same for every other connection whose rate is known. Otherwise the slice waits for a
 * faster connection to have room. Without this rule, whichever connection had room took
 * the next slice, and the last slices of a message on a slow zipper link finished long
 * after the fast one was done: one 4 MiB message over a 200 and a 50 Mbit/s zipper link
 * went at 135-151 Mbit/s, against 198 over the 200 Mbit/s link alone.
 *
 * The drain rate: what the socket accepted since the last sample less what it holds more
 * now (SIOCOUTQ: bytes written and not yet acknowledged), over the real time between, a
 * moving average, sampled at most every SAMPLE_NS and only when the connection held
 * bytes through the interval (an idle connection shows our pace, not the link's). Until
 * a connection's rate is known it takes slices, which measures it.
 *
 * Cost: one ioctl per connection per slice (a slice is up to 64 KiB). */
#include <linux/sockios.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "clock.h"
#include "zip_engine.h"

#define SAMPLE_NS 1000000 /* 1 ms of real time: several frames at the slowest link's pace */

struct drain {
    int fd;
    double rate;     /* bytes per ns, 0: not known yet */
    uint64_t at;     /* real time of the last sample */
    long held;       /* bytes the socket held then */
    long written;    /* bytes it accepted since */
};

static struct drain *drains;
static int ndrains;

void ist_zip_stripe_start(const int *fds, int n)
{
    drains = calloc((size_t)n, sizeof *drains);
    if (!drains) ist_zip_fatal("out of memory");
    ndrains = n;
    for (int i = 0; i < n; i++) drains[i].fd = fds[i];
}

void ist_zip_stripe_wrote(int i, size_t bytes) { drains[i].written += (long)bytes; }

static long held(const struct drain *d)
{
    int n = 0;
    return ioctl(d->fd, SIOCOUTQ, &n) == 0 ? n : 0;
}

/* Sample connection d: what it holds now, and its drain rate when an interval is over. */
static long sample(struct drain *d, uint64_t now)
{
    long q = held(d);
    if (d->at == 0) {
        d->at = now, d->held = q, d->written = 0;
        return q;
    }
    uint64_t dt = now - d->at;
    if (dt < SAMPLE_NS) return q;
    long drained = d->held + d->written - q;
    if (d->held > 0 && drained > 0) {
        double r = (double)drained / (double)dt;
        d->rate = d->rate > 0 ? d->rate + (r - d->rate) / 4.0 : r;
    }
    d->at = now, d->held = q, d->written = 0;
    return q;
}

int ist_zip_stripe_takes(int i, size_t slice)
{
    if (ndrains < 2) return 1;
    uint64_t now = ist_real_now_ns();
    long mine = sample(&drains[i], now);
    if (drains[i].rate <= 0) return 1; /* not known yet: taking slices measures it */
    double finish = ((double)mine + (double)slice) / drains[i].rate;
    for (int j = 0; j < ndrains; j++) {
        if (j == i) continue;
        long theirs = sample(&drains[j], now);
        if (drains[j].rate > 0 && ((double)theirs + (double)slice) / drains[j].rate < finish) return 0;
    }
    return 1;
}
