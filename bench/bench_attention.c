/* bench_attention.c - the CUDA attention kernels alone, on synthetic paged KV: decode (one
 * query per sequence, `decode`) or prefill (every row of each sequence queries causally,
 * `prefill`), S sequences of N tokens in blocks of B, Qwen3-8B attention shape by default
 * (32 query heads, 8 KV heads, head dim 128), bf16 storage, one layer. Blocks are handed out
 * in order, or shuffled with --scatter (as a long-running pool does). Reports the median of
 * 9 calls after a warm-up: milliseconds, the K/V bytes read per second against the copy
 * bandwidth of the same run (decode), or TFLOP/s (prefill: 4 N^2/2 D flops per head and
 * sequence). The cache contents do not change the work (zeros). A benchmark for the GPU
 * machine (also a small target for ncu); without a GPU it says so and exits 77.
 * Usage: bench_attention decode|prefill [S N B] [--heads HQ HKV D] [--scatter] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "bench_clock.h"

static void die(const char *what) {
    fprintf(stderr, "bench_attention: %s: %s\n", what, zp_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "decode") && strcmp(argv[1], "prefill"))) {
        fprintf(stderr, "usage: bench_attention decode|prefill [S N B] [--heads HQ HKV D] [--scatter]\n");
        return 2;
    }
    const int prefill = !strcmp(argv[1], "prefill");
    int S = prefill ? 64 : 256, N = prefill ? 1024 : 384, B = 256, HQ = 32, HKV = 8, D = 128, scatter = 0, pos = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--scatter")) scatter = 1;
        else if (!strcmp(argv[i], "--heads") && i + 3 < argc) { HQ = atoi(argv[i + 1]); HKV = atoi(argv[i + 2]); D = atoi(argv[i + 3]); i += 3; }
        else if (pos < 3) { int v = atoi(argv[i]); if (pos == 0) S = v; else if (pos == 1) N = v; else B = v; pos++; }
    }
    if (S < 1 || N < 1 || B < 1 || HQ < 1 || HKV < 1 || HQ % HKV || D < 32) {
        fprintf(stderr, "bench_attention: S %d, N %d, B %d, heads %d/%d, D %d: impossible\n", S, N, B, HQ, HKV, D);
        return 2;
    }
    zp_backend *be;
    if (zp_backend_cuda_create(0, 0, NULL, &be) != ZP_OK) {
        printf("bench_attention: skipped (%s)\n", zp_last_error());
        return 77;
    }
    const int per = (N + B - 1) / B, NB = S * per, T = prefill ? S * N : S;
    zp_attn_dims d = {.n_layers = 1, .n_heads = HQ, .n_kv_heads = HKV, .head_dim = D, .block_size = B, .num_blocks = NB,
                      .scale = 1.0f / 11.3137f, .qk_norm_eps = 1e-6f};
    int *tables = malloc(sizeof(int) * (size_t)NB), *perm = malloc(sizeof(int) * (size_t)NB);
    int *q0 = malloc(sizeof(int) * (size_t)S), *ql = malloc(sizeof(int) * (size_t)S), *kl = malloc(sizeof(int) * (size_t)S);
    int *ids = calloc((size_t)T, sizeof(int)), *slots = malloc(sizeof(int) * (size_t)T), *posn = malloc(sizeof(int) * (size_t)T);
    float *qh = malloc(sizeof(float) * (size_t)T * HQ * D);
    if (!tables || !perm || !q0 || !ql || !kl || !ids || !slots || !posn || !qh) die("host memory");
    uint32_t r = 2463534242u;
    for (int i = 0; i < NB; i++) perm[i] = i;
    for (int i = NB - 1; scatter && i > 0; i--) { r ^= r << 13; r ^= r >> 17; r ^= r << 5; int j = (int)(r % (uint32_t)(i + 1)), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    for (int i = 0; i < NB; i++) tables[i] = perm[i];
    for (int s = 0; s < S; s++) { q0[s] = prefill ? s * N : s; ql[s] = prefill ? N : 1; kl[s] = N; }
    for (int t = 0; t < T; t++) { slots[t] = -1; posn[t] = t; }
    for (size_t i = 0; i < (size_t)T * HQ * D; i++) { r ^= r << 13; r ^= r >> 17; r ^= r << 5; qh[i] = (float)(r >> 8) / 16777216.0f - 0.5f; }
    zp_batch b = {.n_tokens = T, .n_seqs = S, .token_ids = ids, .positions = posn, .slot_mapping = slots, .seq_q_start = q0,
                  .seq_q_len = ql, .seq_kv_len = kl, .block_tables = tables, .max_blocks = per, .is_prefill = prefill, .n_views = 1};
    void *k = NULL, *v = NULL, *q = NULL, *o = NULL;
    if (be->alloc_cache(be, (size_t)NB * B * HKV * D, &k) || be->alloc_cache(be, (size_t)NB * B * HKV * D, &v) ||
        be->alloc(be, (size_t)T * HQ * D, ZP_ACT_F32, &q) || be->alloc(be, (size_t)T * HQ * D, ZP_ACT_OPERAND, &o))
        die("device memory");
    if (be->from_host(be, q, ZP_ACT_F32, qh, 0, (size_t)T * HQ * D) || be->set_batch(be, &b)) die("setup");
    double t[9], bw = 0;
    float probe;
    for (int i = -1; i < 9; i++) {
        const double t0 = zp_now();
        zp_status s = prefill ? be->attn_prefill(be, &d, o, q, k, v, 0) : be->attn_decode(be, &d, o, q, k, v, 0);
        if (s != ZP_OK || be->to_host(be, &probe, o, ZP_ACT_OPERAND, 0, 1) != ZP_OK) die("attention");
        if (i >= 0) t[i] = zp_now() - t0;
    }
    qsort(t, 9, sizeof *t, bench_cmp_double);
    if (be->copy_bandwidth(be, &bw) != ZP_OK) die("copy bandwidth");
    const double kv_bytes = 2.0 * S * (double)N * HKV * D * be->cache_elem_bytes;
    printf("bench_attention %s: %d sequences x %d tokens, block %d%s, heads %d/%d, D %d: %.3f ms (median of 9)\n", argv[1], S, N, B,
           scatter ? " (scattered)" : "", HQ, HKV, D, 1e3 * t[4]);
    if (prefill)
        printf("  %.1f TFLOP/s (causal: 2 N^2 D flops per query head and sequence)\n", 2.0 * S * HQ * (double)N * N * D / t[4] / 1e12);
    else
        printf("  K/V read %.1f MB: %.0f GB/s; copy bandwidth %.0f GB/s (read + write): ratio %.2f\n", kv_bytes / 1e6,
               kv_bytes / t[4] / 1e9, bw / 1e9, kv_bytes / t[4] / bw);
    be->release(be, k); be->release(be, v); be->release(be, q); be->release(be, o);
    free(tables); free(perm); free(q0); free(ql); free(kl); free(ids); free(slots); free(posn); free(qh);
    be->destroy(be);
    return 0;
}
