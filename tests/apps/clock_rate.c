/* What a clock read costs, and how fast the clock runs (the scale model's choice of
 * interposition, experiments/dilation/clock-cost.toml).
 *
 *   clock_rate [SECONDS]      (default 0.5 of real time)
 *
 * Reads CLOCK_MONOTONIC through clock_gettime as often as it can for SECONDS of real time
 * (real time from the system call itself, which no preloaded library interposes), then
 * prints one JSON object: reads per real second, and how far the clock advanced per real
 * second (1 undilated, 1/K dilated). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double real_s(void)
{
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double read_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    if (!(seconds > 0)) {
        fprintf(stderr, "clock_rate: SECONDS %s: expected a positive number\n", argv[1]);
        return 2;
    }
    double r0 = real_s(), v0 = read_s(), r1 = r0, v1 = v0;
    long reads = 1;
    while (r1 - r0 < seconds) {
        for (int i = 0; i < 1000; i++) v1 = read_s();
        reads += 1000;
        r1 = real_s();
    }
    printf("{\"reads_per_s\": %.0f, \"ns_per_read\": %.2f, \"clock_rate\": %.4f}\n", reads / (r1 - r0),
           (r1 - r0) * 1e9 / reads, (v1 - v0) / (r1 - r0));
    return 0;
}
