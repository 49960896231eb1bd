/* clock.h - the one host clock of the project: monotonic seconds (zp_now), for the engine's
 * timings, the runner, the server and the benchmarks. Deliberately not here: device timing
 * (CUDA events live in the backends) and wall-clock dates. */
#ifndef ZP_CLOCK_H
#define ZP_CLOCK_H

#include <time.h>

static inline double zp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
