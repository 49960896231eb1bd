/* cmd_bench.c - `zipage bench`: its flags and usage; the benchmark itself is bench/bench_run.c
 * (one engine configuration on a fixed or a reasoning workload, one CSV row per pool). SIGINT
 * or SIGTERM (Ctrl-C, `timeout`) cuts the run in progress, which is still reported, and stops
 * before the next pool, so a killed sweep keeps what it measured. The transformers peer writes
 * the same columns (bench/peer_hf.py). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "cli_common.h" /* flag parsing */
#include "cli_engine.h" /* engine flags shared with generate */

static void usage(FILE *f) {
    fprintf(f, "usage: zipage bench (--model DIR | --preset NAME) [--device cpu|cuda] [--workload fixed|reasoning] [flags]\n"
               "  --model DIR            checkpoint folder;  --preset NAME: a preset (models/) or config.json with random weights\n"
               "  --weight-seed S        seed of the random weights (default 1)\n"
               "  --workload W           fixed (default): --batch B --prompt P --gen T (defaults 8, 128, 32)\n"
               "                         reasoning: --requests N (default 64) --datasets aime24,amc23 --max-tokens 32768\n"
               "  --length-scale F       reasoning: the scaled replica, each request's output length divided by F (rounded\n"
               "                         up; scale the cap N_max x block and the pool by F too: docs/benchmarks.md)\n"
               "  --temperature T        sampling (default: fixed 0 = greedy; reasoning 0.6 with top-p 0.95, top-k 20)\n"
               "  --seed S               prompt, length and sampling seed (default 0)\n"
               "  --profile              device time per op kind (CUDA; --backend-option profile=1, slows the run)\n"
               "  --csv FILE             append the row to FILE (header when new);  --label TEXT: first column\n"
               "  --max-seconds S        stop each run S seconds into the workload and report what it did so far (the\n"
               "                         requests still unfinished are dropped; the row's `finished` column counts\n"
               "                         the rest): throughput at capacity of a workload longer than the time at hand\n"
               "  --no-warmup-run        fixed workload: time its first run; by default (without --max-seconds) it\n"
               "                         runs once untimed first\n"
               "                         (CUDA graphs recorded, lazy initialisations done: steady decode, as the\n"
               "                         transformers peer's warm-up runs)\n"
               "  --dump-workload FILE   reasoning: write its requests to FILE as JSON lines {\"prompt\": [token ids],\n"
               "                         \"gen\": tokens to generate} (the same ones, for another engine, e.g.\n"
               "                         bench/peer_hf_reasoning.py --workload-file) and run nothing\n"
               "  --warmup-seconds W     the column tps_steady counts generated tokens/s after the first W seconds only\n"
               "                         (default 0: the whole run), leaving out the ramp-up from an empty engine\n"
               "  --timeline FILE        append the progress of each run to FILE, a row every --timeline-interval S\n"
               "                         seconds (default 10): tokens/s, mean running requests, finished requests,\n"
               "                         prefill tokens (recomputation included), preemptions, compressions\n"
               "  --pools N1,N2,...      run the workload once per KV-pool size, one row each, loading the weights\n"
               "                         once (instead of --kv-pool-tokens): tokens (65536), or the KV state's memory\n"
               "                         (9.5GiB, 512MiB: K/V plus an evicting policy's score and query caches, the\n"
               "                         same memory for every policy); a pool too small for one request gets a\n"
               "                         row of 0 tok/s, the others still run, and the command fails naming it\n");
    cli_engine_usage(f);
}

static zp_status parse_pool(char *tok, double *value, int *bytes) {
    const size_t n = strlen(tok);
    *bytes = n > 3 && (!strcmp(tok + n - 3, "GiB") || !strcmp(tok + n - 3, "MiB"));
    if (!*bytes) {
        int64_t t;
        ZP_TRY(cli_i64("--pools", tok, 1, INT64_MAX, &t));
        *value = (double)t;
        return ZP_OK;
    }
    const double unit = tok[n - 3] == 'G' ? 1073741824.0 : 1048576.0;
    tok[n - 3] = 0;
    float x;
    ZP_TRY(cli_float("--pools", tok, 1e-3, 1e6, &x));
    *value = (double)x * unit;
    return ZP_OK;
}

/* --pools: a comma-separated list of sizes, all token counts or all memory sizes. */
static zp_status parse_pools(const char *v, bench_config *b) {
    char buf[1024];
    if (strlen(v) >= sizeof buf) return zp_fail(ZP_ERR_INVALID, "--pools: list too long");
    ZP_TRY(cli_list("--pools", v));
    snprintf(buf, sizeof buf, "%s", v);
    b->n_pools = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (b->n_pools == (int)(sizeof b->pools / sizeof *b->pools)) return zp_fail(ZP_ERR_INVALID, "--pools: at most 32 sizes");
        if (strlen(tok) >= sizeof b->pool_spec[0]) return zp_fail(ZP_ERR_INVALID, "--pools: \"%s\" is too long", tok);
        snprintf(b->pool_spec[b->n_pools], sizeof b->pool_spec[0], "%s", tok);
        int bytes;
        ZP_TRY(parse_pool(tok, &b->pools[b->n_pools], &bytes));
        if (b->n_pools > 0 && bytes != b->pool_bytes)
            return zp_fail(ZP_ERR_INVALID, "--pools: \"%s\" mixes token counts and memory sizes", v);
        b->pool_bytes = bytes;
        b->n_pools++;
    }
    return b->n_pools ? ZP_OK : zp_fail(ZP_ERR_INVALID, "--pools: \"%s\" holds no size", v);
}

/* Sets the engine's pool to --pools entry i. */

static zp_status parse(int argc, char **argv, bench_config *b) {
    memset(b, 0, sizeof *b);
    b->ec = zp_engine_config_default();
    b->workload = "fixed";
    b->datasets = "aime24,amc23";
    b->label = "zipage";
    b->batch = 8; b->prompt = 128; b->gen = 32; b->requests = 64; b->max_tokens = 32768; b->length_scale = 1;
    b->temperature = -1.f;
    b->weight_seed = 1;
    b->timeline_interval = 10.f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--help")) { usage(stdout); exit(0); }
        const int sw = cli_engine_switch(a) || !strcmp(a, "--profile") || !strcmp(a, "--no-warmup-run");
        if (!sw && !(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(a, "--model")) b->ec.model_dir = v;
        else if (!strcmp(a, "--preset")) { b->ec.model_dir = v; b->ec.random_weights = 1; }
        else if (!strcmp(a, "--weight-seed")) ZP_TRY(cli_i64(a, v, 0, INT64_MAX, &b->weight_seed));
        else if (!strcmp(a, "--workload")) b->workload = v;
        else if (!strcmp(a, "--batch")) ZP_TRY(cli_int(a, v, 1, 1 << 20, &b->batch));
        else if (!strcmp(a, "--prompt")) ZP_TRY(cli_int(a, v, 1, 1 << 24, &b->prompt));
        else if (!strcmp(a, "--gen")) ZP_TRY(cli_int(a, v, 1, 1 << 24, &b->gen));
        else if (!strcmp(a, "--requests")) ZP_TRY(cli_int(a, v, 1, 1 << 20, &b->requests));
        else if (!strcmp(a, "--datasets")) { ZP_TRY(cli_list(a, v)); b->datasets = v; }
        else if (!strcmp(a, "--max-tokens")) ZP_TRY(cli_int(a, v, 256, 1 << 24, &b->max_tokens));
        else if (!strcmp(a, "--length-scale")) ZP_TRY(cli_int(a, v, 1, 1024, &b->length_scale));
        else if (!strcmp(a, "--temperature")) ZP_TRY(cli_float(a, v, 0, 100, &b->temperature));
        else if (!strcmp(a, "--seed")) ZP_TRY(cli_i64(a, v, 0, INT64_MAX, &b->seed));
        else if (!strcmp(a, "--profile")) b->profile = 1;
        else if (!strcmp(a, "--no-warmup-run")) b->no_warmup_run = 1;
        else if (!strcmp(a, "--csv")) b->csv = v;
        else if (!strcmp(a, "--label")) b->label = v;
        else if (!strcmp(a, "--pools")) ZP_TRY(parse_pools(v, b));
        else if (!strcmp(a, "--max-seconds")) ZP_TRY(cli_float(a, v, 1e-3f, 1e7f, &b->max_seconds));
        else if (!strcmp(a, "--warmup-seconds")) ZP_TRY(cli_float(a, v, 0.f, 1e7f, &b->warmup_seconds));
        else if (!strcmp(a, "--timeline")) b->timeline = v;
        else if (!strcmp(a, "--dump-workload")) b->dump = v;
        else if (!strcmp(a, "--timeline-interval")) ZP_TRY(cli_float(a, v, 1e-3f, 1e7f, &b->timeline_interval));
        else {
            int matched;
            ZP_TRY(cli_engine_flag(a, v, &b->ec, &matched));
            if (!matched) { usage(stderr); return zp_fail(ZP_ERR_INVALID, "unknown flag %s", a); }
        }
    }
    if (!b->ec.model_dir) return zp_fail(ZP_ERR_INVALID, "--model DIR or --preset NAME is required");
    if (b->n_pools && b->ec.kv_pool_tokens) return zp_fail(ZP_ERR_INVALID, "--pools and --kv-pool-tokens exclude each other");
    if (b->n_pools && b->ec.kv_pool_bytes) return zp_fail(ZP_ERR_INVALID, "--pools and --kv-pool-gib exclude each other");
    if (b->n_pools) bench_set_pool(b, 0);
    if (strcmp(b->workload, "fixed") && strcmp(b->workload, "reasoning"))
        return zp_fail(ZP_ERR_INVALID, "--workload: \"%s\" is neither fixed nor reasoning", b->workload);
    if (b->dump && strcmp(b->workload, "reasoning"))
        return zp_fail(ZP_ERR_INVALID, "--dump-workload needs --workload reasoning (the fixed workload is random prompts)");
    b->ec.weight_seed = (uint64_t)b->weight_seed;
    const char *slash = strrchr(b->ec.model_dir, '/');
    b->model_name = slash && slash[1] ? slash + 1 : b->ec.model_dir;
    if (!strcmp(b->workload, "fixed")) {
        if (!b->ec.kv_pool_tokens && !b->ec.kv_pool_bytes && (!b->ec.device || !strcmp(b->ec.device, "cpu")))
            b->ec.kv_pool_tokens = (int64_t)b->batch * (b->prompt + b->gen + b->ec.block_size);
        b->ec.max_num_seqs = b->batch;
        b->ec.max_num_batched_tokens = b->batch * b->prompt > 8192 ? b->batch * b->prompt : 8192;
        b->ec.enable_prefix_cache = 0; /* random prompts share nothing; measure plain prefill */
    }
    if (b->profile) b->ec.backend.profile = 1;
    return ZP_OK;
}

/* The handler only sets bench_stop_signal (bench_run.h); a second signal of the same kind finds
 * the default action again and ends the process. */
static void bench_on_signal(int sig) { bench_stop_signal = sig; }

static void bench_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = bench_on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cmd_bench(int argc, char **argv) {
    bench_config b;
    zp_status s = parse(argc, argv, &b);
    if (s == ZP_OK && !b.dump) bench_catch_signals();
    if (s == ZP_OK) s = b.dump ? bench_dump_workload(&b) : bench_run(&b);
    return s == ZP_OK ? 0 : cli_report("bench", s);
}
