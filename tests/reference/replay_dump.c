/* replay_dump.c - replays one request through the library's compression as an engine run of
 * POLICY does, from the post-RoPE keys and queries of every token that a reference script
 * (check_history.py, check_order.py) writes, and prints the original position of every token
 * each KV head holds at the end, in the cache's physical order: the C side of the whole-request
 * oracle comparisons. What it runs is the library's: for a policy with a live history (exact
 * H2O) the CPU backend's attn_history over every prompt row (two prefill chunks) and every
 * decode row; the window queries in the query cache, as the engine stores them; compressor_run
 * (host path: gathers, policy_select, kv_compact, in position or score order) each time the
 * growth block fills. Positions are read back from the V cache, where token t's value row is
 * (t, 0, ...). What it does not: the model forward (keys and queries come from the file) and
 * the scheduler (one request, in-place targets).
 * Input (little-endian): int32 H_kv, N, D, G, P (prompt), budget, block_size, window; then
 * float32 keys [H_kv][N][D] and queries [H_kv][N][G][D]; for TriAttention (a policy that
 * needs_stats) then int32 L (layers), float32 keys of layers 1 .. L - 1 [L - 1][H_kv][N][D],
 * statistics [L][H_q][q_re | q_im | q_abs][D/2] and RoPE frequencies [D/2], which the
 * compressor takes as the engine's compressor_load_trig leaves them. A compression at newest
 * token t runs with the request's next position t + 1 and its prompt P.
 * Output: one line a (layer, KV head), layer-major: the held positions in physical order.
 * Usage: replay_dump CASE.bin POLICY PARAMS_JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "compress.h"

typedef struct {
    int H, N, D, G, P, budget, bs, w, L;
    const float *keys, *queries; /* [L][H][N][D], [H][N][G][D] */
    zp_backend *be;
    zp_model m;
    zp_kv_storage kv;
    zp_compressor comp;
    void *qbuf, *stats;
    int *table, n_blocks, n_kv, *free_blocks, n_free;
} replay;

#define TRY(x) do { if ((x) != ZP_OK) { fprintf(stderr, "replay_dump: %s\n", zp_last_error()); exit(1); } } while (0)

/* Tokens [t0, t1) as one batch row each of the request: K and V (the position) into the cache,
 * then attn_history when the policy keeps a live history. */
static void run_rows(replay *r, int t0, int t1) {
    const int T = t1 - t0, Hq = r->H * r->G, D = r->D;
    int *slots = malloc(sizeof(int) * T), *positions = malloc(sizeof(int) * T), *ids = calloc((size_t)T, sizeof(int));
    float *kc = r->kv.k, *vc = r->kv.v, *q = r->qbuf;
    for (int i = 0; i < T; i++) {
        const int t = t0 + i;
        if (r->n_kv % r->bs == 0) r->table[r->n_blocks++] = r->free_blocks[--r->n_free];
        slots[i] = r->table[r->n_kv / r->bs] * r->bs + r->n_kv % r->bs;
        positions[i] = t;
        for (int h = 0; h < r->H; h++) {
            for (int l = 0; l < r->L; l++) { /* layer l's cache at l x the pool's elements (cpu_kv_layer) */
                const size_t lo = (size_t)l * r->kv.dims.num_blocks * r->bs * r->H * D,
                             at = lo + ((size_t)slots[i] * r->H + h) * D;
                memcpy(kc + at, r->keys + (((size_t)l * r->H + h) * r->N + t) * D, sizeof(float) * D);
                memset(vc + at, 0, sizeof(float) * D);
                vc[at] = (float)t;
            }
            for (int g = 0; g < r->G; g++)
                memcpy(q + ((size_t)i * Hq + h * r->G + g) * D, r->queries + (((size_t)h * r->N + t) * r->G + g) * D, sizeof(float) * D);
        }
        r->n_kv++;
    }
    const int q0 = 0, kv_len = r->n_kv;
    zp_batch b = {.n_tokens = T, .n_seqs = 1, .token_ids = ids, .positions = positions, .slot_mapping = slots, .seq_q_start = &q0,
                  .seq_q_len = &T, .seq_kv_len = &kv_len, .block_tables = r->table, .max_blocks = r->budget / r->bs + 1,
                  .is_prefill = T > 1};
    TRY(r->be->set_batch(r->be, &b));
    if (r->comp.history_live) TRY(r->be->attn_history(r->be, &r->kv.dims, r->qbuf, r->kv.k, r->kv.score, r->stats, 0));
    free(slots), free(positions), free(ids);
}

/* The growth block is full (token t the newest): the window queries of tokens t - w + 1 .. t
 * into query slot 0, then compress in place to the budget, as the engine would. */
static void compress(replay *r, int t, int compressed) {
    const int Hq = r->H * r->G, D = r->D;
    float *qc = r->kv.q; /* [1 layer][1 slot][w][Hq][D] */
    for (int j = 0; j < r->w; j++)
        for (int h = 0; h < r->H; h++)
            memcpy(qc + ((size_t)j * Hq + h * r->G) * D, r->queries + (((size_t)h * r->N + t - r->w + 1 + j) * r->G) * D,
                   sizeof(float) * (size_t)r->G * D);
    const zp_compress_item q = {.n_kv = r->n_kv,
                                .blocks = r->table,
                                .n_blocks = r->n_blocks,
                                .qid = 0,
                                .compressed = compressed,
                                .target = r->table,
                                .n_prompt = r->P,
                                .next_pos = t + 1};
    TRY(compressor_run(&r->comp, &r->m, &r->kv, &q, 1));
    while (r->n_blocks > r->budget / r->bs) r->free_blocks[r->n_free++] = r->table[--r->n_blocks];
    r->n_kv = r->budget;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: replay_dump CASE.bin POLICY PARAMS_JSON\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    int32_t h[8];
    if (!f || fread(h, sizeof h, 1, f) != 1) { fprintf(stderr, "replay_dump: cannot read %s\n", argv[1]); return 1; }
    replay r = {.H = h[0], .N = h[1], .D = h[2], .G = h[3], .P = h[4], .budget = h[5], .bs = h[6], .w = h[7]};
    if (r.H <= 0 || r.N <= r.P || r.D <= 0 || r.G <= 0 || r.P < 2 || r.bs <= 0 || r.budget % r.bs || r.P >= r.budget || r.w > r.bs) {
        fprintf(stderr, "replay_dump: bad header\n");
        return 1;
    }
    const size_t nk = (size_t)r.H * r.N * r.D, nq = nk * r.G;
    float *keys = malloc(sizeof(float) * nk), *queries = malloc(sizeof(float) * nq);
    if (!keys || !queries || fread(keys, sizeof(float), nk, f) != nk || fread(queries, sizeof(float), nq, f) != nq) {
        fprintf(stderr, "replay_dump: %s is truncated\n", argv[1]);
        return 1;
    }
    const zp_policy_ops *ops = policy_find(argv[2]);
    float *trig = NULL, *freqs = NULL;
    r.L = 1;
    if (ops && ops->needs_stats) {
        int32_t L;
        if (fread(&L, sizeof L, 1, f) != 1 || L < 1 || L > 64) {
            fprintf(stderr, "replay_dump: %s has no layer count for %s\n", argv[1], argv[2]);
            return 1;
        }
        r.L = L;
        float *all = realloc(keys, sizeof(float) * nk * (size_t)L);
        if (!all) {
            fprintf(stderr, "replay_dump: out of memory\n");
            return 1;
        }
        keys = all;
        const size_t F = (size_t)r.D / 2, ns = (size_t)L * r.H * r.G * 3 * F, more = nk * (size_t)(L - 1);
        trig = malloc(sizeof(float) * ns), freqs = malloc(sizeof(float) * F);
        if (!trig || !freqs || fread(keys + nk, sizeof(float), more, f) != more ||
            fread(trig, sizeof(float), ns, f) != ns || fread(freqs, sizeof(float), F, f) != F) {
            fprintf(stderr, "replay_dump: %s has no statistics for %s\n", argv[1], argv[2]);
            return 1;
        }
    }
    fclose(f);
    r.keys = keys, r.queries = queries;
    const int Hq = r.H * r.G, NB = 2 * (r.budget / r.bs + 1);
    TRY(zp_backend_cpu_create(1, &r.be));
    r.m.be = r.be;
    r.m.cfg.n_layers = r.L, r.m.cfg.n_heads = Hq, r.m.cfg.n_kv_heads = r.H, r.m.cfg.head_dim = r.D;
    r.kv.dims = (zp_attn_dims){.n_layers = r.L,
                               .n_heads = Hq,
                               .n_kv_heads = r.H,
                               .head_dim = r.D,
                               .block_size = r.bs,
                               .num_blocks = NB,
                               .scale = 1.0f / sqrtf((float)r.D),
                               .qk_norm_eps = 1e-6f,
                               .window = r.w,
                               .n_qslots = 1};

    TRY(r.be->alloc_cache(r.be, (size_t)r.L * NB * r.bs * r.H * r.D, &r.kv.k));
    TRY(r.be->alloc_cache(r.be, (size_t)r.L * NB * r.bs * r.H * r.D, &r.kv.v));
    TRY(r.be->alloc_cache(r.be, (size_t)r.L * r.w * Hq * r.D, &r.kv.q));
    TRY(r.be->alloc(r.be, (size_t)NB * r.bs * r.H, ZP_ACT_F32, &r.kv.score));
    TRY(r.be->alloc(r.be, (size_t)r.P * Hq * r.D, ZP_ACT_F32, &r.qbuf));
    TRY(r.be->alloc(r.be, (size_t)r.P * Hq * 2, ZP_ACT_F32, &r.stats));
    zp_kv_geometry geo;
    if (!ops) { fprintf(stderr, "replay_dump: unknown policy %s\n", argv[2]); return 1; }
    TRY(zp_geometry_resolve(ops, r.bs, r.budget / r.bs, r.w, &geo));
    zp_policy pol; /* the policy's live history (exact H2O), as the engine's plan reads it */
    zp_score_plan plan;
    TRY(policy_init_ops(ops, argv[3], &pol));
    const int live = ops->evicts && policy_plan(&pol, geo.budget, geo.window, &plan) == ZP_OK && plan.history_live;
    policy_destroy(&pol);
    TRY(compressor_init(&r.comp, ops, argv[3], &geo, live));
    r.comp.device = 0;
    r.comp.trig_stats = trig, r.comp.trig_freqs = freqs; /* compressor_free frees them */
    zp_score_plan tplan;                                 /* as compressor_load_trig settles it */
    if (trig && policy_plan(&r.comp.policy, geo.budget, geo.window, &tplan) == ZP_OK)
        r.comp.trig_across = tplan.trig_mode != ZP_TRIG_PER_LAYER_PERHEAD;
    r.kv.history_live = live;
    r.table = malloc(sizeof(int) * (NB + 1));
    r.free_blocks = malloc(sizeof(int) * NB);
    for (int i = 0; i < NB; i++) r.free_blocks[r.n_free++] = NB - 1 - i; /* blocks 0, 1, ... first */
    run_rows(&r, 0, r.P / 2); /* the prompt in two chunks: the second sees the first's keys */
    run_rows(&r, r.P / 2, r.P);
    int compressed = 0;
    for (int t = r.P; t < r.N; t++) {
        run_rows(&r, t, t + 1);
        if (r.n_kv == r.budget + r.bs) compress(&r, t, compressed++ > 0);
    }
    float *v = malloc(sizeof(float) * (size_t)r.H * r.n_kv * r.D); /* [H][n][D] in physical order */
    if (!v) { fprintf(stderr, "replay_dump: out of memory\n"); return 1; }
    for (int l = 0; l < r.L; l++) {
        TRY(r.be->key_gather(r.be, &r.kv.dims, r.kv.v, l, r.table, r.n_kv, v));
        for (int hd = 0; hd < r.H; hd++) {
            for (int i = 0; i < r.n_kv; i++) printf(i ? " %d" : "%d", (int)v[((size_t)hd * r.n_kv + i) * r.D]);
            printf("\n");
        }
    }
    free(v);
    compressor_free(&r.comp);
    zp_model_kv_free(&r.m, &r.kv);
    r.be->release(r.be, r.qbuf), r.be->release(r.be, r.stats);
    r.be->destroy(r.be);
    free(keys), free(queries), free(r.table), free(r.free_blocks);
    return 0;
}
