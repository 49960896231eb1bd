/* bench_timeline.h - `zipage bench --timeline FILE`: the engine's progress through each run,
 * one CSV row per interval (tokens/s, mean running requests, requests finished, recomputed
 * prefill, preemptions, compressions), so that "at capacity" can be seen rather than assumed:
 * when the ramp from an empty engine ends, and whether a policy's rate still drifts when a run
 * is cut. Rows are appended and flushed as they come (a killed run keeps them). Not here: the
 * run's summary row (bench_run.c) and the plot (bench/plot_timeline.sh). */
#ifndef ZP_BENCH_TIMELINE_H
#define ZP_BENCH_TIMELINE_H

#include <stdio.h>

#include "engine.h"

typedef struct {
    FILE *f;                /* NULL: no timeline */
    double interval;        /* seconds between rows */
    const char *label, *pool;
    double t0, last;        /* the run's start; the time of the last row */
    zp_engine_stats prev;   /* the counters at the last row */
} bench_timeline;

/* Opens `path` for appending (header when new or empty); path NULL: a disabled timeline. */
zp_status bench_timeline_open(bench_timeline *tl, const char *path, double interval);
/* A run begins at t0 (seconds, a monotonic clock), its counters at st. */
void bench_timeline_begin(bench_timeline *tl, const char *label, const char *pool, double t0, const zp_engine_stats *st);
/* Whether a row is due at `now` (an interval since the last one). */
int bench_timeline_due(const bench_timeline *tl, double now);
/* Writes the row of the interval ending at now: st the counters then, finished the requests
 * finished so far; no row when no step ran since the last one. */
zp_status bench_timeline_row(bench_timeline *tl, double now, const zp_engine_stats *st, int finished);
zp_status bench_timeline_close(bench_timeline *tl);

#endif
