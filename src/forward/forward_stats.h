/* What a forwarder carried, counted as it relays (forward_stats.c): per pair of ranks the
 * frames and bytes, and how long frames waited in it; written with --stats FILE when the
 * run ends, and merged by `isthmus run` into the profile (docs/profile.md). */
#ifndef ISTHMUS_FORWARD_STATS_H
#define ISTHMUS_FORWARD_STATS_H

#include <stddef.h>

/* Seconds on CLOCK_MONOTONIC: read once per system call, not per frame. */
double fwd_now(void);

void fwd_stats_init(int nranks);
/* A relayed frame has gone out whole: `payload` bytes from src to dst, whose last byte
 * arrived at `arrived` and left at `left` (the forwarder's own delay: left - arrived). */
void fwd_stats_frame(int src, int dst, size_t payload, double arrived, double left);
/* Flow control held sender `src` because the queue to `dst` was full. */
void fwd_stats_held(int src, int dst);
/* Payload bytes dropped for a rank that had already ended. */
void fwd_stats_dropped(size_t bytes);
/* Rank r's connection: the address it came from, whether that is this host's own (a rank
 * on the zipper host: no network between), bytes read from it and written to it. */
void fwd_stats_connection(int r, const char *peer, int same_host, long long bytes_in,
                          long long bytes_out);
/* The counts as JSON in `path` (written whole or not at all); 0, or -1 with errno. */
int fwd_stats_write(const char *path, const char *name, double seconds);

#endif
