/* What the floor programs (fold_floor.c, rappor_floor.c) share: a monotonic clock, and emptying the caches of what
 * was read before by reading other memory (the sum is kept in sink, so the read is not optimized away). */
#ifndef LDP_FLOOR_TIMING_H
#define LDP_FLOOR_TIMING_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t sink;
static void evict(const uint64_t *big, size_t words)
{
    uint64_t s = 0;
    for (size_t i = 0; i < words; i++)
        s += big[i];
    sink += s;
}
#endif /* LDP_FLOOR_TIMING_H */
