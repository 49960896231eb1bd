/* cmd_bench.c - `zipage bench --model DIR --batch B --prompt P --gen T`: a fixed workload of B
 * requests with P random prompt tokens each, T greedy tokens each (EOS ignored), through the
 * engine. Prints the resolved configuration, then one CSV header and row: prefill and decode
 * tokens/s, overall tokens/s, peak KV blocks and peak resident memory. A benchmark, not a test:
 * compare ratios measured in one run. The reasoning workload and GPU columns come later. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h" /* flag parsing, cli_now, cli_peak_rss_mib */
#include "engine.h"     /* zp_engine_* */

static void usage(FILE *f) {
    fprintf(f, "usage: zipage bench --model DIR [--device cpu|cuda] [--batch 8] [--prompt 128] [--gen 32] [--block-size 256]\n"
               "                    [--kv-pool-tokens N] [--threads N] [--seed 0]\n");
}

typedef struct {
    zp_engine_config ec;
    int batch, prompt, gen;
    int64_t seed;
} bench_args;

static zp_status parse(int argc, char **argv, bench_args *b) {
    memset(b, 0, sizeof *b);
    b->ec = zp_engine_config_default();
    b->batch = 8; b->prompt = 128; b->gen = 32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help")) { usage(stdout); exit(0); }
        if (!(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(a, "--model")) b->ec.model_dir = v;
        else if (!strcmp(a, "--device")) b->ec.device = v;
        else if (!strcmp(a, "--batch")) ZP_TRY(cli_int(a, v, 1, 1 << 20, &b->batch));
        else if (!strcmp(a, "--prompt")) ZP_TRY(cli_int(a, v, 1, 1 << 24, &b->prompt));
        else if (!strcmp(a, "--gen")) ZP_TRY(cli_int(a, v, 1, 1 << 24, &b->gen));
        else if (!strcmp(a, "--block-size")) ZP_TRY(cli_int(a, v, 1, 65536, &b->ec.block_size));
        else if (!strcmp(a, "--kv-pool-tokens")) ZP_TRY(cli_i64(a, v, 1, INT64_MAX, &b->ec.kv_pool_tokens));
        else if (!strcmp(a, "--threads")) ZP_TRY(cli_int(a, v, 0, 4096, &b->ec.n_threads));
        else if (!strcmp(a, "--seed")) ZP_TRY(cli_i64(a, v, 0, INT64_MAX, &b->seed));
        else { usage(stderr); return zp_fail(ZP_ERR_INVALID, "unknown flag %s", a); }
    }
    if (!b->ec.model_dir) return zp_fail(ZP_ERR_INVALID, "--model DIR is required");
    if (!b->ec.kv_pool_tokens) b->ec.kv_pool_tokens = (int64_t)b->batch * (b->prompt + b->gen + b->ec.block_size);
    b->ec.max_num_seqs = b->batch;
    b->ec.max_num_batched_tokens = b->batch * b->prompt > 8192 ? b->batch * b->prompt : 8192;
    b->ec.enable_prefix_cache = 0; /* random prompts share nothing; measure plain prefill */
    return ZP_OK;
}

static zp_status run(const bench_args *b) {
    double t_load = cli_now();
    zp_engine *e;
    ZP_TRY(zp_engine_init(&b->ec, &e));
    t_load = cli_now() - t_load;
    const zp_model_config *mc = zp_engine_model_config(e);
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = b->gen;
    sp.ignore_eos = 1;
    int *prompt = malloc(sizeof(int) * (size_t)b->prompt);
    ZP_CHECK_ALLOC(prompt);
    zp_status s = ZP_OK;
    for (int r = 0; s == ZP_OK && r < b->batch; r++) {
        for (int i = 0; i < b->prompt; i++)
            prompt[i] = (int)(zp_rng_uniform((uint64_t)b->seed, (uint64_t)r, 7, (uint32_t)i) * (float)mc->vocab) % mc->vocab;
        s = zp_engine_add_request(e, prompt, b->prompt, &sp, r, 0, (uint64_t)b->seed);
    }
    free(prompt);
    double t0 = cli_now();
    while (s == ZP_OK && zp_engine_has_unfinished(e)) s = zp_engine_step(e);
    double wall = cli_now() - t0;
    zp_output o[64];
    for (int n; (n = zp_engine_poll(e, o, 64)) > 0;)
        for (int i = 0; i < n; i++) zp_output_free(&o[i]);
    if (s == ZP_OK) {
        zp_engine_stats st;
        zp_engine_get_stats(e, &st);
        printf("# zipage bench --model %s --batch %d --prompt %d --gen %d --block-size %d (arch %s, %d layers, hidden %d; load %.2f s)\n",
               b->ec.model_dir, b->batch, b->prompt, b->gen, b->ec.block_size, mc->arch_name, mc->n_layers, mc->hidden, t_load);
        printf("device,batch,prompt,gen,prefill_tok_s,decode_tok_s,total_tok_s,wall_s,peak_kv_blocks,kv_blocks,peak_rss_mib\n");
        printf("%s,%d,%d,%d,%.1f,%.1f,%.1f,%.3f,%d,%d,%.0f\n", b->ec.device ? b->ec.device : "cpu", b->batch, b->prompt, b->gen,
               st.prefill_seconds > 0 ? st.prefill_tokens / st.prefill_seconds : 0.0,
               st.decode_seconds > 0 ? st.decode_tokens / st.decode_seconds : 0.0,
               wall > 0 ? (st.prefill_tokens + st.decode_tokens) / wall : 0.0, wall, st.peak_blocks, st.num_blocks, cli_peak_rss_mib());
    }
    zp_engine_free(e);
    return s;
}

int cmd_bench(int argc, char **argv) {
    bench_args b;
    zp_status s = parse(argc, argv, &b);
    if (s == ZP_OK) s = run(&b);
    return s == ZP_OK ? 0 : cli_report("bench", s);
}
