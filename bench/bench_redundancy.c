/* bench_redundancy.c - the lightning redundancy kernel against the raw one, on the device
 * compression path: Zipage's score plan with redundancy lightning / raw / off, N_max 8,
 * block 256 (requests of 9 blocks = 2,304 tokens), Qwen3-8B attention shape (8 KV heads,
 * 32 query heads, head dim 128), 8 layers x 16 requests per call. Redundancy time = time of
 * the plan with it minus time without it (same call otherwise: window attention, top-k,
 * compaction); reports both and their ratio (the throughput issue asks >= 5x). Median of 7
 * calls after a warm-up. The caches hold random keys (every other token a near-duplicate of
 * the one before, so the "above theta" branch is taken) and random window queries. A benchmark for the GPU machine; without a GPU it says so and exits 77.
 * Usage: bench_redundancy [requests] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "bench_clock.h"

enum { L = 8, HQ = 32, HKV = 8, D = 128, BS = 256, NMAX = 8, W = 16 };

/* Median seconds of one compress call of all requests with plan p (compaction is in place
 * into the same blocks, so every call sees the same kind of data). */
static double time_plan(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *p, zp_compress_req *reqs, int nr, void *k, void *v,
                        void *q, void *sc) {
    double t[7];
    for (int i = -1; i < 7; i++) {
        double t0 = zp_now();
        if (be->compress(be, d, p, NMAX * BS, 0, L, reqs, nr, k, v, q, sc) != ZP_OK || be->compress_wait(be) != ZP_OK) {
            fprintf(stderr, "bench_redundancy: %s\n", zp_last_error());
            exit(1);
        }
        if (i >= 0) t[i] = zp_now() - t0;
    }
    qsort(t, 7, sizeof *t, bench_cmp_double);
    return t[3];
}

/* Random K/V for every slot of every layer and random window queries, through the model ops. */
static zp_status fill(zp_backend *be, const zp_attn_dims *d, int nr, void *k, void *v, void *q) {
    const int T = d->num_blocks * BS, row = (HQ + 2 * HKV) * D;
    float *x = malloc(sizeof(float) * (size_t)T * row), inv[D / 2];
    int *pos = malloc(sizeof(int) * (size_t)T * 2), *slots = pos + T, *qrows = malloc(sizeof(int) * (size_t)nr * W * 2), *qslots = qrows + nr * W;
    if (!x || !pos || !qrows) return zp_fail(ZP_ERR_OOM, "bench_redundancy: no host memory");
    uint32_t s = 12345u;
    for (size_t i = 0; i < (size_t)T * row; i++) { s = s * 1664525u + 1013904223u; x[i] = (float)(s >> 8) / 8388608.0f - 1.0f; }
    for (int t = 1; t < T; t += 2) /* near-duplicate keys */
        for (int e = 0; e < HKV * D; e++) x[(size_t)t * row + HQ * D + e] = 1.02f * x[(size_t)(t - 1) * row + HQ * D + e];
    for (int t = 0; t < T; t++) { pos[t] = t % ((NMAX + 1) * BS); slots[t] = t; }
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < W; j++) { qrows[r * W + j] = (r + 1) * (NMAX + 1) * BS - W + j; qslots[r * W + j] = r * W + j; }
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(1e6f, 2.0f * (float)i / D);
    void *qkv, *qo;
    ZP_TRY(be->alloc(be, (size_t)T * row, ZP_ACT_OPERAND, &qkv));
    ZP_TRY(be->alloc(be, (size_t)T * HQ * D, ZP_ACT_F32, &qo));
    ZP_TRY(be->from_host(be, qkv, ZP_ACT_OPERAND, x, 0, (size_t)T * row));
    ZP_TRY(be->rope_init(be, inv, D / 2, 1.0f));
    zp_batch b = {.n_tokens = T, .positions = pos, .token_ids = pos, .slot_mapping = slots, .n_qstore = nr * W, .qstore_rows = qrows,
                  .qstore_slots = qslots};
    ZP_TRY(be->set_batch(be, &b));
    for (int l = 0; l < L; l++) {
        ZP_TRY(be->qkv_rope_store(be, d, qkv, qo, NULL, NULL, k, v, l));
        ZP_TRY(be->query_store(be, d, qo, q, l));
    }
    be->release(be, qkv);
    be->release(be, qo);
    free(x); free(pos); free(qrows);
    return ZP_OK;
}

int main(int argc, char **argv) {
    const int nr = argc > 1 ? atoi(argv[1]) : 16;
    zp_backend *be;
    if (zp_backend_cuda_create(0, 0, NULL, &be) != ZP_OK || !be->compress) {
        printf("bench_redundancy: skipped (%s)\n", zp_last_error());
        return 77;
    }
    const int nb = nr * (NMAX + 1);
    zp_attn_dims d = {.n_layers = L, .n_heads = HQ, .n_kv_heads = HKV, .head_dim = D, .block_size = BS, .num_blocks = nb,
                      .scale = 1.0f / 11.3137f, .qk_norm_eps = 1e-6f, .window = W, .n_qslots = nr};
    void *k, *v, *q, *sc;
    if (be->alloc_cache(be, (size_t)L * nb * BS * HKV * D, &k) || be->alloc_cache(be, (size_t)L * nb * BS * HKV * D, &v) ||
        be->alloc_cache(be, (size_t)L * nr * W * HQ * D, &q) || be->alloc(be, (size_t)L * nb * BS * HKV, ZP_ACT_F32, &sc)) {
        fprintf(stderr, "bench_redundancy: %s\n", zp_last_error());
        return 1;
    }
    if (fill(be, &d, nr, k, v, q) != ZP_OK) {
        fprintf(stderr, "bench_redundancy: %s\n", zp_last_error());
        return 1;
    }
    int *tables = malloc(sizeof(int) * (size_t)nb);
    zp_compress_req *reqs = malloc(sizeof *reqs * (size_t)nr);
    for (int i = 0; i < nb; i++) tables[i] = i;
    for (int r = 0; r < nr; r++)
        reqs[r] = (zp_compress_req){.src = tables + r * (NMAX + 1),
                                    .dst = tables + r * (NMAX + 1),
                                    .n = (NMAX + 1) * BS,
                                    .n_hist = NMAX * BS,
                                    .qid = r};
    zp_score_plan p = {.attention = 1, .attn = {ZP_GQA_MAX_PROB, ZP_QRED_MEAN, 0, 0}, .max_norm = 1, .global = ZP_GLOBAL_MAX, .gamma = 0.8f,
                       .pool_kernel = 5, .pool_first_only = 1, .redundancy = ZP_RED_NONE, .theta = 0.5f, .temperature = 0.4f,
                       .lambda = 0.2f, .recent = W};
    const double base = time_plan(be, &d, &p, reqs, nr, k, v, q, sc);
    p.redundancy = ZP_RED_LIGHTNING;
    const double light = time_plan(be, &d, &p, reqs, nr, k, v, q, sc);
    p.redundancy = ZP_RED_RAW;
    const double raw = time_plan(be, &d, &p, reqs, nr, k, v, q, sc);
    printf("bench_redundancy: %d requests x %d layers x %d KV heads, %d tokens each (N_max %d, block %d)\n", nr, L, HKV, (NMAX + 1) * BS,
           NMAX, BS);
    printf("plan without redundancy %.3f ms; with lightning %.3f ms; with raw %.3f ms\n", 1e3 * base, 1e3 * light, 1e3 * raw);
    printf("redundancy alone: lightning %.3f ms, raw %.3f ms, raw / lightning = %.1fx\n", 1e3 * (light - base), 1e3 * (raw - base),
           (raw - base) / (light - base > 1e-9 ? light - base : 1e-9));
    be->release(be, k); be->release(be, v); be->release(be, q); be->release(be, sc);
    free(tables);
    free(reqs);
    be->destroy(be);
    return 0;
}
