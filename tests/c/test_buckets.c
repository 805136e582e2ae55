/* The size buckets of the profiler: 0 for empty calls, [2^(k-1), 2^k) for k >= 1. */
#include <stdio.h>
#include <stdlib.h>

#include "profiler.h"

static int failures;

static void expect(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    expect(ist_bucket_of(0) == 0, "0 bytes in bucket 0");
    expect(ist_bucket_of(1) == 1, "1 byte in bucket 1");
    expect(ist_bucket_of(7) == 3 && ist_bucket_of(4) == 3, "4..7 in bucket 3");
    expect(ist_bucket_of(8) == 4, "8 in bucket 4");
    expect(ist_bucket_low(4) == 8, "bucket 4 starts at 8");
    expect(ist_bucket_low(0) == 0, "bucket 0 starts at 0");
    for (int k = 1; k < IST_NBUCKETS; k++) {
        uint64_t lo = ist_bucket_low(k);
        expect(ist_bucket_of(lo) == k, "low bound falls in its bucket");
        expect(ist_bucket_of(2 * lo - 1) == k, "2*low-1 falls in the same bucket");
    }
    expect(ist_bucket_of(UINT64_MAX) == IST_NBUCKETS - 1, "huge sizes clamp to the last bucket");
    printf("%d failed\n", failures);
    return failures != 0;
}
