/* graph_keys.c (session 24, CPU only; a log artifact, not built by CMake) - the shapes of the decode
 * steps of a reasoning run on the CPU engine (tiny-qwen3-vocab, greedy: the schedule depends on
 * the workload's lengths, not on the tokens) and the share of them a CUDA-graph table like
 * graph_cuda.cu's (64 entries, least recently used out, a key recorded at its second sighting)
 * would replay, for four keys: model.c's shape part before session 24 (n_tokens, n_seqs,
 * max_blocks, n_out, n_views, n_qstore), without n_qstore (session 24), without max_blocks too,
 * and without n_qstore with max_blocks in 8s (engine.c DECODE_TABLE_ROUND, session 24). Buffer addresses and the backend's parts of the key are taken as fixed.
 * Usage: graph_keys full|zipage NUM_BLOCKS MAX_DECODE_STEPS [BLOCK_SIZE=32] [LENGTH_SCALE=8]
 * Build from the repository root after `make build` (see bench/log/s24-2026-12-04.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine_internal.h"
#include "bench_workload.h"
#include "mkmodel.h"
typedef struct { uint64_t key, used; int seen, rec; } ent;
typedef struct { ent t[64]; uint64_t clock; long hits, steps, recs; } lru;
static void lru_see(lru *l, uint64_t key) {
    int slot = -1, v = 0;
    for (int i = 0; i < 64; i++) { if (l->t[i].used && l->t[i].key == key) { slot = i; break; } if (l->t[i].used < l->t[v].used) v = i; }
    if (slot < 0) { slot = v; l->t[v] = (ent){key, 0, 0, 0}; }
    ent *e = &l->t[slot]; e->used = ++l->clock; e->seen++; l->steps++;
    if (e->rec) l->hits++; else if (e->seen >= 2) { e->rec = 1; l->recs++; }
}
static uint64_t h(const uint64_t *p, int n) { uint64_t x = 1469598103934665603ull; for (int i = 0; i < n; i++) x = (x ^ p[i]) * 1099511628211ull; return x; }
int main(int argc, char **argv) {
    const char *policy = argv[1]; int nb = atoi(argv[2]), maxsteps = atoi(argv[3]), bs = argc > 4 ? atoi(argv[4]) : 32, F = argc > 5 ? atoi(argv[5]) : 8;
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = "tiny-qwen3-vocab"; c.random_weights = 1; c.weight_seed = 1;
    c.block_size = bs; c.num_blocks = nb; c.max_num_seqs = 512; c.max_num_batched_tokens = 63840;
    if (strcmp(policy, "full")) { c.policy = policy; c.nmax = 8; c.window = 16; c.scheduler = "hybrid"; }
    zp_engine *e; if (zp_engine_init(&c, &e) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
    char td[4096]; zp_preset_dir("tiny-qwen3-vocab", td, sizeof td);
    bench_workload w; if (bench_workload_reasoning(td, "aime24,amc23", 960, 32768, F, 0, &w) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
    zp_sampling_params sp = zp_sampling_default(); sp.temperature = 0.f; sp.ignore_eos = 1;
    for (int r = 0; r < w.n; r++) { sp.max_tokens = w.gen[r]; if (zp_engine_add_request(e, w.prompt[r], w.prompt_len[r], &sp, r, 0, 0) != ZP_OK) { fprintf(stderr, "add: %s\n", zp_last_error()); return 1; } }
    lru a = {0}, b = {0}, cc = {0}, d = {0}; long rows = 0, qs = 0;
    for (int s = 0; zp_engine_has_unfinished(e) && a.steps < maxsteps; s++) {
        if (zp_engine_step(e) != ZP_OK) { fprintf(stderr, "%s\n", zp_last_error()); return 1; }
        zp_output o[64]; for (int n; (n = zp_engine_poll(e, o, 64)) > 0;) for (int i = 0; i < n; i++) zp_output_free(&o[i]);
        if (e->last_decode_rows <= 0) continue;
        const zp_batch *x = &e->last_batch;
        uint64_t k1[] = {x->n_tokens, x->n_seqs, x->max_blocks, x->n_out, x->n_views, x->n_qstore};
        lru_see(&a, h(k1, 6)); lru_see(&b, h(k1, 5));
        uint64_t k3[] = {x->n_tokens, x->n_seqs, x->n_out, x->n_views}; lru_see(&cc, h(k3, 4));
        uint64_t k4[] = {x->n_tokens, x->n_seqs, (x->max_blocks + 7) / 8, x->n_out, x->n_views}; lru_see(&d, h(k4, 5)); /* widths in 8s */
        rows += x->n_tokens; qs += x->n_qstore;
    }
    printf("%s blocks %d bs %d: %ld decode steps, mean rows %.1f, mean n_qstore %.1f; replayed: old key (with n_qstore) %.3f (%ld recorded), without n_qstore %.3f (%ld recorded), without n_qstore and max_blocks %.3f (%ld recorded), without n_qstore, max_blocks in 8s %.3f (%ld recorded)\n",
           policy, nb, bs, a.steps, (double)rows / a.steps, (double)qs / a.steps, (double)a.hits / a.steps, a.recs, (double)b.hits / b.steps, b.recs, (double)cc.hits / cc.steps, cc.recs, (double)d.hits / d.steps, d.recs);
    return 0;
}
