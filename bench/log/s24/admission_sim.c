/* admission_sim.c (session 24, CPU only; a log artifact, not built by CMake) - the engine's whole
 * schedule of the reasoning workload (zipage bench's: 960 requests, its lengths / F, its prompts
 * through the Qwen3 tokenizer, ids taken modulo a 256-token vocabulary: equal prompts stay equal
 * for the prefix cache) on a one-layer model of 32 hidden units on the CPU: the schedule does not
 * depend on the model, its tokens or the time steps take (ignore_eos, fixed lengths; compression
 * joined one step later whatever the worker's speed). It reports the schedule's counts, exact,
 * and a roofline model of the time Qwen3-8B would take on the H200 (an estimate: every decode
 * step at max(weights / BW, rows x 2P / F) + K/V read / BW, every prefill step at max(weights /
 * BW, tokens x 2P / F); P = 7.57e9, 147,456 K/V bytes a token, BW 4.1975e12 B/s (s19's copy
 * bandwidth), F 790e12 flop/s (the device notes)).
 * Usage: admission_sim CONFIG.json full|zipage NUM_BLOCKS SCHEDULER(hybrid|strict|-) RESERVE [F=8] [BLOCK=32] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"
#include "bench_workload.h"
#include "mkmodel.h"
int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: see the file\n"); return 2; }
    const char *policy = argv[2], *sched = argv[4];
    const int nb = atoi(argv[3]), F = argc > 6 ? atoi(argv[6]) : 8, bs = argc > 7 ? atoi(argv[7]) : 32;
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = argv[1]; c.random_weights = 1; c.weight_seed = 1; c.n_threads = 1;
    c.block_size = bs; c.num_blocks = nb; c.max_num_seqs = 512; c.max_num_batched_tokens = 63840;
    c.admission_reserve = atof(argv[5]);
    if (strcmp(sched, "-")) c.scheduler = sched;
    if (strcmp(policy, "full")) { c.policy = policy; c.nmax = 8; c.window = 16; c.async_compress = 1; }
    zp_engine *e;
    if (zp_engine_init(&c, &e) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
    char td[4096];
    zp_preset_dir("Qwen3-8B", td, sizeof td);
    bench_workload w;
    if (bench_workload_reasoning(td, "aime24,amc23", 960, 32768, F, 0, &w) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
    zp_sampling_params sp = zp_sampling_default(); sp.temperature = 1.f; sp.ignore_eos = 1;
    for (int r = 0; r < w.n; r++) {
        for (int i = 0; i < w.prompt_len[r]; i++) w.prompt[r][i] %= 256;
        sp.max_tokens = w.gen[r];
        if (zp_engine_add_request(e, w.prompt[r], w.prompt_len[r], &sp, r, 0, 0) != ZP_OK) { fprintf(stderr, "add: %s\n", zp_last_error()); return 1; }
    }
    const double P = 7.57e9, WB = 2 * P, KVB = 147456, BW = 4.1975e12, FL = 790e12;
    double t = 0, t_dec = 0, t_pre = 0;
    long dsteps = 0, psteps = 0, rows = 0;
    int64_t pre0 = 0;
    zp_engine_stats st;
    double lat_sum = 0; int fin = 0; double *lat = malloc(sizeof(double) * w.n);
    while (zp_engine_has_unfinished(e)) {
        zp_engine_get_stats(e, &st);
        pre0 = st.prefill_tokens;
        if (zp_engine_step(e) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
        zp_engine_get_stats(e, &st);
        int dr; int64_t kv;
        zp_engine_last_step(e, &dr, &kv);
        if (dr > 0) { const double s = fmax(WB / BW, dr * 2 * P / FL) + kv * KVB / BW; t += s; t_dec += s; dsteps++; rows += dr; }
        const int64_t pt = st.prefill_tokens - pre0;
        if (pt > 0) { const double s = fmax(WB / BW, pt * 2 * P / FL); t += s; t_pre += s; psteps++; }
        zp_output o[64];
        for (int n; (n = zp_engine_poll(e, o, 64)) > 0;) for (int i = 0; i < n; i++) { lat[fin++] = t; lat_sum += t; zp_output_free(&o[i]); }
    }
    zp_engine_get_stats(e, &st);
    int64_t gen = 0; for (int r = 0; r < w.n; r++) gen += w.gen[r];
    printf("%s %s reserve %s blocks %d: %lld preemptions, %lld prefill tokens, %ld decode steps (mean rows %.1f), %ld prefill steps, "
           "%lld compressions, peak running %d; modeled H200 time %.1f s (decode %.1f, prefill %.1f), %.0f tok/s, p50 latency %.1f s\n",
           policy, sched, argv[5], nb, (long long)st.preemptions, (long long)st.prefill_tokens, dsteps, (double)rows / dsteps, psteps,
           (long long)st.compressions, st.peak_running, t, t_dec, t_pre, gen / t, lat[fin / 2]);
    return 0;
}
