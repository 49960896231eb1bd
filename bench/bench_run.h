/* bench_run.h - the benchmark of one engine configuration (`zipage bench`): the workload run
 * through the engine, cut at a time limit or a stop signal, and its CSV row (tokens/s,
 * requests/s, running requests, decode step time, time shares of the decode steps, the share of
 * the wall time spent compressing, device memory, the ratio to the memory-bandwidth roofline:
 * weights + K/V attended per decode step, over the copy bandwidth measured at the start of the
 * same run). --pools sweeps KV-pool sizes on one set of weights. A benchmark, not a test:
 * compare ratios measured in one run. Not here: the command line (tools/cmd_bench.c), the
 * request sets (bench_workload.h), the progress rows (bench_timeline.h).
 */
#ifndef ZP_BENCH_RUN_H
#define ZP_BENCH_RUN_H

#include <signal.h>

#include "engine.h"

typedef struct {
    zp_engine_config ec;
    const char *workload, *datasets, *csv, *label, *model_name, *timeline;
    const char *dump;          /* --dump-workload: write the reasoning requests there, run nothing */
    int batch, prompt, gen, requests, max_tokens, profile;
    int length_scale;          /* reasoning: every output length (and max_tokens) divided by this, rounded up */
    int no_warmup_run;         /* fixed workload: time the first run (no untimed run before it) */
    int n_pools, pool_bytes;   /* pool_bytes: the sizes are bytes of KV state, not tokens */
    double pools[32];
    char pool_spec[32][32];    /* each size as given (the CSV's pool column) */
    float temperature, max_seconds, warmup_seconds, timeline_interval;
    int64_t seed, weight_seed;
} bench_config;

/* One --pools entry: a token count, or a memory size with a GiB / MiB suffix (bytes). */
/* The --pools entry i as the engine's pool (tokens or KV-state bytes). */
void bench_set_pool(bench_config *b, int i);
/* Runs the configuration (one row per pool) and appends the rows to b->csv. */
zp_status bench_run(bench_config *b);
/* --dump-workload: the reasoning requests as JSON lines, no model loaded. */
zp_status bench_dump_workload(const bench_config *b);

/* Set by a signal handler (SIGINT, SIGTERM): the run in progress stops and is reported, the
 * later pools are not run. */
extern volatile sig_atomic_t bench_stop_signal;

#endif
