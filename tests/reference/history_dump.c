/* history_dump.c - replays one request through the CPU backend's live attention history and
 * the engine's compression, as an engine run of policy h2o (history "all") does, from the
 * post-RoPE keys and queries of every token that check_history.py writes, and prints the
 * positions each KV head keeps at the end: the C side of the exact-H2O oracle comparison.
 * What it runs is the library's: attn_history (every prompt row, in two prefill chunks, then
 * one decode row a step) and compressor_run (host path: gathers, policy_select, kv_compact)
 * each time the growth block fills. What it does not: the model forward (the keys and queries
 * come from the file) and the scheduler (one request, in-place targets).
 * Input (little-endian): int32 H_kv, N, D, G, P (prompt), budget, block_size, window; then
 * float32 keys [H_kv][N][D] and queries [H_kv][N][G][D].
 * Output: one line a KV head, the kept positions in ascending order.
 * Usage: history_dump CASE.bin PARAMS_JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "compress.h"

typedef struct {
    int H, N, D, G, P, budget, bs, w;
    const float *keys, *queries; /* [H][N][D], [H][N][G][D] */
    zp_backend *be;
    zp_model m;
    zp_kv_storage kv;
    zp_compressor comp;
    void *qbuf, *stats;
    int *table, n_blocks, n_kv, *free_blocks, n_free, *pos; /* pos [H][budget + bs]: original position per physical token */
} replay;

#define TRY(x) do { if ((x) != ZP_OK) { fprintf(stderr, "history_dump: %s\n", zp_last_error()); exit(1); } } while (0)

/* Tokens [t0, t1) as one batch row each of the request: K into the cache, then attn_history. */
static void run_rows(replay *r, int t0, int t1) {
    const int T = t1 - t0, Hq = r->H * r->G, D = r->D;
    int *slots = malloc(sizeof(int) * T), *positions = malloc(sizeof(int) * T), *ids = calloc((size_t)T, sizeof(int));
    float *kc = r->kv.k, *q = r->qbuf;
    for (int i = 0; i < T; i++) {
        const int t = t0 + i;
        if (r->n_kv % r->bs == 0) r->table[r->n_blocks++] = r->free_blocks[--r->n_free];
        slots[i] = r->table[r->n_kv / r->bs] * r->bs + r->n_kv % r->bs;
        positions[i] = t;
        for (int h = 0; h < r->H; h++) {
            memcpy(kc + ((size_t)slots[i] * r->H + h) * D, r->keys + ((size_t)h * r->N + t) * D, sizeof(float) * D);
            for (int g = 0; g < r->G; g++)
                memcpy(q + ((size_t)i * Hq + h * r->G + g) * D, r->queries + (((size_t)h * r->N + t) * r->G + g) * D, sizeof(float) * D);
            r->pos[h * (r->budget + r->bs) + r->n_kv] = t;
        }
        r->n_kv++;
    }
    const int q0 = 0, kv_len = r->n_kv;
    zp_batch b = {.n_tokens = T, .n_seqs = 1, .token_ids = ids, .positions = positions, .slot_mapping = slots, .seq_q_start = &q0,
                  .seq_q_len = &T, .seq_kv_len = &kv_len, .block_tables = r->table, .max_blocks = r->budget / r->bs + 1,
                  .is_prefill = T > 1};
    TRY(r->be->set_batch(r->be, &b));
    TRY(r->be->attn_history(r->be, &r->kv.dims, r->qbuf, r->kv.k, r->kv.score, r->stats, 0));
    free(slots), free(positions), free(ids);
}

/* The growth block is full: compress in place to the budget, as the engine would. */
static void compress(replay *r, int compressed) {
    const int n = r->n_kv, L = r->budget + r->bs;
    zp_seq q = {.n_kv = n, .blocks = r->table, .n_blocks = r->n_blocks, .qid = 0, .compressed = compressed, .compressing = ZP_COMPRESS_PLANNED,
                .target = r->table};
    zp_seq *qs = &q;
    TRY(compressor_run(&r->comp, &r->m, &r->kv, &qs, 1));
    for (int h = 0; h < r->H; h++) { /* keep mask of layer 0, head h: c->keep [Hkv][n] */
        int *p = r->pos + h * L, k = 0;
        for (int t = 0; t < n; t++)
            if (r->comp.keep[(size_t)h * n + t]) p[k++] = p[t];
    }
    while (r->n_blocks > r->budget / r->bs) r->free_blocks[r->n_free++] = r->table[--r->n_blocks];
    r->n_kv = r->budget;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: history_dump CASE.bin PARAMS_JSON\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    int32_t h[8];
    if (!f || fread(h, sizeof h, 1, f) != 1) { fprintf(stderr, "history_dump: cannot read %s\n", argv[1]); return 1; }
    replay r = {.H = h[0], .N = h[1], .D = h[2], .G = h[3], .P = h[4], .budget = h[5], .bs = h[6], .w = h[7]};
    if (r.H <= 0 || r.N <= r.P || r.D <= 0 || r.G <= 0 || r.P < 2 || r.bs <= 0 || r.budget % r.bs || r.P >= r.budget || r.w > r.bs) {
        fprintf(stderr, "history_dump: bad header\n");
        return 1;
    }
    const size_t nk = (size_t)r.H * r.N * r.D, nq = nk * r.G;
    float *keys = malloc(sizeof(float) * nk), *queries = malloc(sizeof(float) * nq);
    if (!keys || !queries || fread(keys, sizeof(float), nk, f) != nk || fread(queries, sizeof(float), nq, f) != nq) {
        fprintf(stderr, "history_dump: %s is truncated\n", argv[1]);
        return 1;
    }
    fclose(f);
    r.keys = keys, r.queries = queries;
    const int Hq = r.H * r.G, NB = 2 * (r.budget / r.bs + 1);
    TRY(zp_backend_cpu_create(1, &r.be));
    r.m.be = r.be;
    r.m.cfg.n_layers = 1, r.m.cfg.n_heads = Hq, r.m.cfg.n_kv_heads = r.H, r.m.cfg.head_dim = r.D;
    r.kv.dims = (zp_attn_dims){1, Hq, r.H, r.D, r.bs, NB, 1.0f / sqrtf((float)r.D), 1e-6f, r.w, 1};
    r.kv.history_live = 1;
    TRY(r.be->alloc_cache(r.be, (size_t)NB * r.bs * r.H * r.D, &r.kv.k));
    TRY(r.be->alloc_cache(r.be, (size_t)NB * r.bs * r.H * r.D, &r.kv.v));
    TRY(r.be->alloc_cache(r.be, (size_t)r.w * Hq * r.D, &r.kv.q));
    TRY(r.be->alloc(r.be, (size_t)NB * r.bs * r.H, &r.kv.score));
    TRY(r.be->alloc(r.be, (size_t)r.P * Hq * r.D, &r.qbuf));
    TRY(r.be->alloc(r.be, (size_t)r.P * Hq * 2, &r.stats));
    TRY(compressor_init(&r.comp, "h2o", argv[2], r.budget / r.bs, r.bs, r.w, 1));
    r.comp.device = 0;
    if (!r.comp.history_live) { fprintf(stderr, "history_dump: params %s give no live history\n", argv[2]); return 1; }
    r.table = malloc(sizeof(int) * (NB + 1));
    r.free_blocks = malloc(sizeof(int) * NB);
    r.pos = malloc(sizeof(int) * (size_t)r.H * (r.budget + r.bs));
    for (int i = 0; i < NB; i++) r.free_blocks[r.n_free++] = NB - 1 - i; /* blocks 0, 1, ... first */
    run_rows(&r, 0, r.P / 2); /* the prompt in two chunks: the second sees the first's keys */
    run_rows(&r, r.P / 2, r.P);
    int compressed = 0;
    for (int t = r.P; t < r.N; t++) {
        run_rows(&r, t, t + 1);
        if (r.n_kv == r.budget + r.bs) compress(&r, compressed++ > 0);
    }
    for (int hd = 0; hd < r.H; hd++) {
        int *p = r.pos + hd * (r.budget + r.bs), n = r.n_kv;
        for (int i = 1; i < n; i++) /* ascending (insertion sort: n is small) */
            for (int j = i; j > 0 && p[j - 1] > p[j]; j--) { int x = p[j]; p[j] = p[j - 1]; p[j - 1] = x; }
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", p[i]);
        printf("\n");
    }
    compressor_free(&r.comp);
    zp_model_kv_free(&r.m, &r.kv);
    r.be->release(r.be, r.qbuf), r.be->release(r.be, r.stats);
    r.be->destroy(r.be);
    free(keys), free(queries), free(r.table), free(r.free_blocks), free(r.pos);
    return 0;
}
