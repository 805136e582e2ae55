/* A sleeping wait's pause on one site ends early when one of this process's sockets has
 * something to read (the zipper's idle does the same with its forwarders' sockets).
 *
 * Chosen for every pause of the sleeping waits when the communicator does not span sites.
 * Why: a message that arrives during a timed pause waits for its end. On these machines
 * a pause costs its thread about 25 us of CPU whatever its length (a block and a wake-up:
 * nanosleep(0) alone costs that in this VM), so when dilated the pauses must be long for
 * the tests to stay within the host's share (src/util/wait_pause.c): 4 x K x 27 us real,
 * about 100 us of virtual time, which a message arriving meanwhile would wait for.
 * The sockets are the MPI's own (Open MPI's TCP BTL, UCX's TCP transport), found in
 * /proc/self/fd; a wait also wakes for a socket another thread reads (PMIx's): one pause
 * ends early, nothing more. Shared memory has no socket: those pauses run to their end.
 *
 * Cost: one ppoll over at most MAX_SOCKETS sockets instead of one nanosleep; a scan of
 * /proc/self/fd at the start of a wait at most every RESCAN_NS of real time (connections
 * open lazily, at a pair's first message). A socket that stays readable without the MPI
 * reading it (a peer gone) would turn the pauses into spins: after EARLY_LIMIT early ends
 * in a row without the wait completing, one pause runs to its end without the sockets. */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "world.h"

#define MAX_SOCKETS 64
#define RESCAN_NS 100000000L /* 100 ms */
#define EARLY_LIMIT 8

/* per thread: each waiting thread keeps its own list */
static _Thread_local struct pollfd sockets[MAX_SOCKETS];
static _Thread_local int nsockets;
static _Thread_local uint64_t scanned_at;
static _Thread_local int scanned;
static _Thread_local int early_in_a_row;

static void scan_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    int dir_fd = dirfd(d);
    nsockets = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && nsockets < MAX_SOCKETS;) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || fd == dir_fd) continue;
        struct stat st;
        if (fstat((int)fd, &st) == 0 && S_ISSOCK(st.st_mode))
            sockets[nsockets++] = (struct pollfd){.fd = (int)fd, .events = POLLIN};
    }
    closedir(d);
}

void ist_wait_sockets_rescan(void) { scanned = 0; }

void ist_wait_pause(long real_ns, int tries)
{
    if (real_ns <= 0) return;
    uint64_t now = ist_real_now_ns();
    if (tries == 0) early_in_a_row = 0;
    if (tries == 0 && (!scanned || now - scanned_at > (uint64_t)RESCAN_NS)) {
        scan_sockets();
        scanned_at = now;
        scanned = 1;
    }
    if (nsockets == 0 || early_in_a_row >= EARLY_LIMIT) {
        early_in_a_row = 0;
        ist_real_nanosleep(real_ns);
        return;
    }
    if (ist_real_ppoll(sockets, (nfds_t)nsockets, real_ns) > 0) early_in_a_row++;
}
