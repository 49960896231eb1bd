/* bench_clock.h - the sort order of the timing programs (bench_attention, bench_redundancy,
 * bench_sample, the kernel lab): doubles ascending for qsort (medians of repeated calls), and
 * the project's host clock (clock.h's zp_now). Nothing else. */
#ifndef ZP_BENCH_CLOCK_H
#define ZP_BENCH_CLOCK_H

#include "clock.h"

static inline int bench_cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
