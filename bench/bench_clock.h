/* bench_clock.h - the host clock and the sort order of the timing programs (bench_attention,
 * bench_redundancy, bench_sample, the kernel lab): monotonic seconds, and doubles ascending
 * for qsort (medians of repeated calls). Nothing else. */
#ifndef ZP_BENCH_CLOCK_H
#define ZP_BENCH_CLOCK_H

#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static inline int bench_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
