/* test_cuda_ops.c (label gpu) - every CUDA backend op against the CPU reference on random
 * inputs, in both CUDA precisions, each buffer of its declared type (backend.h zp_act_type).
 * bf16 storage: operand-typed buffers and caches hold bf16 (a value's relative error up to
 * 2^-8), so |cuda - cpu| <= 2e-2 * max|cpu| (+ 1e-3) for GEMM-fed, operand-typed and cached
 * values, 1e-5 for fp32 results of fp32 inputs. fp32 storage: every op within 1e-4 relative
 * (only summation order differs). Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "rope.h"
#include "sampler.h"
#include "test_util.h"

static float rnd(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(99, s, 0, i) - 1.0f; }

typedef struct {
    zp_backend *cpu, *gpu;
    double tight; /* 1 for bf16 storage; 1e-2 scales tolerances down for fp32 storage */
} pair;

#define F ZP_ACT_F32
#define OP ZP_ACT_OPERAND

static void *upw(zp_backend *be, const float *x, size_t n) {
    float *h = malloc(sizeof(float) * n);
    memcpy(h, x, sizeof(float) * n);
    void *w;
    CHECK_OK(be->weight_upload(be, h, n, &w));
    return w;
}
static void down(zp_backend *be, float *dst, const void *src, zp_act_type type, size_t n) { CHECK_OK(be->to_host(be, dst, src, type, 0, n)); }

/* Compares an op's output buffers (n values of type `type`) of both backends. */
static void compare(const char *op, pair *p, const void *a, const void *b, zp_act_type type, size_t n, double rel, double abs_tol) {
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    down(p->cpu, x, a, type, n);
    down(p->gpu, y, b, type, n);
    double scale = zp_max_abs(x, n), diff = zp_max_abs_diff(x, y, n);
    if (rel > 1e-4) rel = rel * p->tight > 1e-4 ? rel * p->tight : 1e-4;
    if (abs_tol > 1e-5) abs_tol = abs_tol * p->tight > 1e-5 ? abs_tol * p->tight : 1e-5;
    printf("  %-18s max|diff| %.3e  max|cpu| %.3e  (tol %.1e)\n", op, diff, scale, rel * scale + abs_tol);
    CHECK(diff <= rel * scale + abs_tol);
    free(x);
    free(y);
}

static void test_dense(pair *p) {
    enum { M = 37, N = 96, K = 256, I = 160 };
    float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * N * K), *bias = malloc(sizeof(float) * N), *gu = malloc(sizeof(float) * M * 2 * I);
    float *wgu = malloc(sizeof(float) * 2 * I * K);
    for (int i = 0; i < 2 * I * K; i++) wgu[i] = rnd((uint32_t)i, 5) * 0.1f;
    for (int i = 0; i < M * K; i++) x[i] = rnd((uint32_t)i, 1);
    for (int i = 0; i < N * K; i++) w[i] = rnd((uint32_t)i, 2) * 0.1f;
    for (int i = 0; i < N; i++) bias[i] = rnd((uint32_t)i, 3);
    for (int i = 0; i < M * 2 * I; i++) gu[i] = 3 * rnd((uint32_t)i, 4);
    zp_backend *b[2] = {p->cpu, p->gpu};
    /* X: the residual (f32); XO: the same values as a GEMM operand; OF: f32 outputs; O, G, A:
     * operand-typed outputs (normed rows or GEMM outputs; gate/up; activation) */
    void *X[2], *XO[2], *W[2], *B[2], *OF[2], *O[2], *G[2], *A[2], *NW[2], *WGU[2];
    int ids[M], rows[5] = {0, 36, 5, 5, 17};
    for (int t = 0; t < M; t++) ids[t] = (t * 7) % N;
    zp_batch bt = {.n_tokens = M, .token_ids = ids, .positions = ids, .n_out = 5, .out_rows = rows};
    const size_t nmax = M * N > M * K ? M * N : M * K;
    for (int k = 0; k < 2; k++) {
        X[k] = zp_test_up(b[k], x, F, M * K); XO[k] = zp_test_up(b[k], x, OP, M * K);
        W[k] = upw(b[k], w, N * K); B[k] = upw(b[k], bias, N); NW[k] = upw(b[k], w, K);
        WGU[k] = upw(b[k], wgu, 2 * I * K);
        G[k] = zp_test_up(b[k], gu, OP, M * 2 * I);
        OF[k] = zp_test_buf(b[k], F, nmax);
        O[k] = zp_test_buf(b[k], OP, nmax);
        A[k] = zp_test_buf(b[k], OP, M * I);
        CHECK_OK(b[k]->set_batch(b[k], &bt));
    }
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->matmul(b[k], OF[k], F, XO[k], W[k], B[k], M, N, K));
    compare("matmul+bias (f32)", p, OF[0], OF[1], F, M * N, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->matmul(b[k], O[k], OP, XO[k], W[k], B[k], M, N, K));
    compare("matmul+bias (op)", p, O[0], O[1], OP, M * N, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->matmul(b[k], O[k], OP, XO[k], W[k], NULL, M, N, K));
    compare("matmul (op)", p, O[0], O[1], OP, M * N, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->rmsnorm(b[k], O[k], X[k], NW[k], M, K, 1e-6f));
    compare("rmsnorm", p, O[0], O[1], OP, M * K, 1e-2, 1e-5); /* weight and output rounded to bf16 on the GPU */
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->silu_mul(b[k], A[k], G[k], M, I));
    compare("silu_mul", p, A[0], A[1], OP, M * I, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->add(b[k], X[k], A[k], M * I < M * K ? M * I : M * K));
    compare("add", p, X[0], X[1], F, M * K, 1e-2, 1e-5);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->embed(b[k], OF[k], W[k], K));
    compare("embed", p, OF[0], OF[1], F, M * K, 1e-2, 1e-6);
    for (int k = 0; k < 2; k++) CHECK_OK(b[k]->gather_rows(b[k], OF[k], X[k], K));
    compare("gather_rows", p, OF[0], OF[1], F, 5 * K, 1e-2, 1e-5); /* copies of X, which holds the bf16 add above */
    /* the chains of the model's layer: norm -> GEMM (with a bias, as Qwen2's QKV); the MLP
     * (norm -> gate/up GEMM -> activation -> down GEMM); a GEMM's output -> the residual add
     * and the next norm, whose output goes over that GEMM output (out aliasing y) */
    for (int k = 0; k < 2; k++) {
        CHECK_OK(b[k]->rmsnorm(b[k], O[k], X[k], NW[k], M, K, 1e-6f));
        CHECK_OK(b[k]->matmul(b[k], OF[k], F, O[k], W[k], B[k], M, N, K));
    }
    compare("rmsnorm->matmul", p, OF[0], OF[1], F, M * N, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) {
        CHECK_OK(b[k]->rmsnorm(b[k], O[k], X[k], NW[k], M, K, 1e-6f));
        CHECK_OK(b[k]->matmul(b[k], G[k], OP, O[k], WGU[k], NULL, M, 2 * I, K));
        CHECK_OK(b[k]->silu_mul(b[k], A[k], G[k], M, I));
        CHECK_OK(b[k]->matmul(b[k], OF[k], F, A[k], W[k], NULL, M, N, I)); /* W's first N x I values as [N, I] */
    }
    compare("mlp: gate/up", p, G[0], G[1], OP, M * 2 * I, 2e-2, 1e-3);
    compare("mlp: activation", p, A[0], A[1], OP, M * I, 2e-2, 1e-3);
    compare("mlp: down", p, OF[0], OF[1], F, M * N, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) {
        CHECK_OK(b[k]->matmul(b[k], O[k], OP, XO[k], WGU[k], NULL, M, K, K)); /* WGU's first K x K values as [K, K] */
        CHECK_OK(b[k]->add_rmsnorm(b[k], O[k], X[k], O[k], NW[k], M, K, 1e-6f));
        CHECK_OK(b[k]->matmul(b[k], OF[k], F, O[k], W[k], B[k], M, N, K));
    }
    compare("GEMM->add_rmsnorm: sum", p, X[0], X[1], F, M * K, 2e-2, 1e-3);
    compare("GEMM->add_rmsnorm: norm", p, O[0], O[1], OP, M * K, 2e-2, 1e-3);
    compare("add_rmsnorm->matmul", p, OF[0], OF[1], F, M * N, 2e-2, 1e-3);
    /* the buffer types are checked: a value that is not a zp_act_type is refused by name */
    CHECK(p->gpu->matmul(p->gpu, OF[1], (zp_act_type)7, XO[1], W[1], NULL, M, N, K) == ZP_ERR_INVALID);
    CHECK(strstr(zp_last_error(), "not a zp_act_type") != NULL);
    for (int k = 0; k < 2; k++) { void *bufs[10] = {X[k], XO[k], W[k], B[k], OF[k], O[k], G[k], A[k], NW[k], WGU[k]}; for (int i = 0; i < 10; i++) b[k]->release(b[k], bufs[i]); }
    free(x); free(w); free(bias); free(gu); free(wgu);
}

/* q/k norm + RoPE + KV store, query store, paged attention over scattered blocks, key gather,
 * compaction: the whole compression-facing path on both backends. */
static void test_attention_path(pair *p) {
    enum { Hq = 4, Hkv = 2, D = 64, BS = 16, NB = 12, L = 2, LAYER = 1, W = 4 };
    const int len[2] = {37, 20}, T = 57;
    const int bt[2][3] = {{9, 2, 6}, {5, 11, -1}};
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = Hq,
                      .n_kv_heads = Hkv,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.0f / 8.0f,
                      .qk_norm_eps = 1e-6f,
                      .window = W,
                      .n_qslots = 2};
    float inv[D / 2], *qkv = malloc(sizeof(float) * T * (Hq + 2 * Hkv) * D), qn[D], kn[D];
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
    for (int i = 0; i < T * (Hq + 2 * Hkv) * D; i++) qkv[i] = rnd((uint32_t)i, 7);
    for (int i = 0; i < D; i++) { qn[i] = 1 + 0.1f * rnd((uint32_t)i, 8); kn[i] = 1 + 0.1f * rnd((uint32_t)i, 9); }
    int ids[57] = {0}, pos[57], slots[57], q0[2] = {0, 37}, kvl[2] = {37, 20}, qrows[3] = {33, 36, 56}, qslots[3] = {0, 3, 4 + 1};
    for (int s = 0, t = 0; s < 2; s++)
        for (int i = 0; i < len[s]; i++, t++) { pos[t] = i + 100 * s; slots[t] = bt[s][i / BS] * BS + i % BS; }
    zp_batch b = {.n_tokens = T,
                  .n_seqs = 2,
                  .token_ids = ids,
                  .positions = pos,
                  .slot_mapping = slots,
                  .seq_q_start = q0,
                  .seq_q_len = kvl,
                  .seq_kv_len = kvl,
                  .block_tables = &bt[0][0],
                  .max_blocks = 3,
                  .is_prefill = 1,
                  .n_qstore = 3,
                  .qstore_rows = qrows,
                  .qstore_slots = qslots,
                  .n_views = 1};
    zp_backend *be[2] = {p->cpu, p->gpu};
    void *QKV[2], *Q[2], *O[2], *KC[2], *VC[2], *QC[2], *QN[2], *KN[2];
    size_t cache_n = (size_t)L * NB * BS * Hkv * D;
    for (int k = 0; k < 2; k++) {
        QKV[k] = zp_test_up(be[k], qkv, OP, T * (Hq + 2 * Hkv) * D); /* a GEMM's output */
        QN[k] = upw(be[k], qn, D); KN[k] = upw(be[k], kn, D);
        Q[k] = zp_test_buf(be[k], F, T * Hq * D);
        O[k] = zp_test_buf(be[k], OP, T * Hq * D);
        CHECK_OK(be[k]->alloc_cache(be[k], cache_n, &KC[k]));
        CHECK_OK(be[k]->alloc_cache(be[k], cache_n, &VC[k]));
        CHECK_OK(be[k]->alloc_cache(be[k], (size_t)L * 2 * W * Hq * D, &QC[k]));
        CHECK_OK(be[k]->rope_init(be[k], inv, D / 2, 1.0f));
        CHECK_OK(be[k]->set_batch(be[k], &b));
        CHECK_OK(be[k]->qkv_rope_store(be[k], &d, QKV[k], Q[k], QN[k], KN[k], KC[k], VC[k], LAYER));
        CHECK_OK(be[k]->query_store(be[k], &d, Q[k], QC[k], LAYER));
        CHECK_OK(be[k]->attn_prefill(be[k], &d, O[k], Q[k], KC[k], VC[k], LAYER));
    }
    compare("q (norm+rope)", p, Q[0], Q[1], F, T * Hq * D, 1e-2, 1e-5);
    compare("attention", p, O[0], O[1], OP, T * Hq * D, 2e-2, 1e-3);
    /* key gather, query read */
    float *k0 = malloc(sizeof(float) * Hkv * 37 * D), *k1 = malloc(sizeof(float) * Hkv * 37 * D);
    CHECK_OK(be[0]->key_gather(be[0], &d, KC[0], LAYER, bt[0], 37, k0));
    CHECK_OK(be[1]->key_gather(be[1], &d, KC[1], LAYER, bt[0], 37, k1));
    double dk = zp_max_abs_diff(k0, k1, Hkv * 37 * D), sk = zp_max_abs(k0, Hkv * 37 * D);
    printf("  %-18s max|diff| %.3e  max|cpu| %.3e\n", "key cache", dk, sk);
    CHECK(dk <= 1e-2 * p->tight * sk + 1e-6);
    float q0h[W * Hq * D], q1h[W * Hq * D];
    CHECK_OK(be[0]->query_read(be[0], &d, QC[0], LAYER, 0, q0h));
    CHECK_OK(be[1]->query_read(be[1], &d, QC[1], LAYER, 0, q1h));
    CHECK(zp_max_abs_diff(q0h, q1h, W * Hq * D) <= 1e-2 * zp_max_abs(q0h, W * Hq * D));
    CHECK(zp_max_abs(q0h + Hq * D, Hq * D) == 0.0 && zp_max_abs(q0h + 3 * Hq * D, Hq * D) > 0.0); /* slots 0 and 3 written */
    /* compaction in place of sequence 0 (37 tokens -> 20 kept per head), then gather again */
    uint8_t keep[Hkv * 37];
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < 37; t++) keep[g * 37 + t] = ((t * (g + 3)) % 5 < 3) && t < 34;
    int dst[3] = {9, 2, 6};
    for (int g = 0; g < Hkv; g++) { int c = 0; for (int t = 0; t < 37; t++) c += keep[g * 37 + t]; CHECK(c > 0); }
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &d, KC[k], VC[k], NULL, LAYER, bt[0], 37, dst, keep, NULL, NULL, 0));
    CHECK_OK(be[0]->key_gather(be[0], &d, KC[0], LAYER, dst, 37, k0));
    CHECK_OK(be[1]->key_gather(be[1], &d, KC[1], LAYER, dst, 37, k1));
    dk = zp_max_abs_diff(k0, k1, Hkv * 37 * D);
    printf("  %-18s max|diff| %.3e\n", "compacted keys", dk);
    CHECK(dk <= 1e-2 * p->tight * sk + 1e-6);
    /* the first 16 compacted tokens of every head again, in place, into a per-head order
     * (R-KV's score order path: compaction, then the kept rows permuted in place) */
    enum { N2 = 16 };
    uint8_t keep2[Hkv * N2];
    int order[Hkv * N2];
    memset(keep2, 1, sizeof keep2);
    for (int g = 0; g < Hkv; g++)
        for (int i = 0; i < N2; i++) order[g * N2 + i] = (i * 5 + 3 * g) % N2;
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &d, KC[k], VC[k], NULL, LAYER, dst, N2, dst, keep2, NULL, order, 0));
    float *k2 = malloc(sizeof(float) * Hkv * N2 * D);
    CHECK_OK(be[0]->key_gather(be[0], &d, KC[0], LAYER, dst, N2, k2));
    int moved = 1; /* the CPU result is the permutation of its own compacted keys k0 */
    for (int g = 0; g < Hkv; g++)
        for (int i = 0; i < N2; i++)
            moved &= !memcmp(k2 + ((size_t)g * N2 + i) * D, k0 + ((size_t)g * 37 + order[g * N2 + i]) * D, sizeof(float) * D);
    CHECK(moved);
    CHECK_OK(be[1]->key_gather(be[1], &d, KC[1], LAYER, dst, N2, k1));
    dk = zp_max_abs_diff(k2, k1, Hkv * N2 * D);
    printf("  %-18s max|diff| %.3e\n", "ordered keys", dk);
    CHECK(dk <= 1e-2 * p->tight * sk + 1e-6);
    /* StreamingLLM's position shift: tokens 0, 1 and 9..15 kept, each moved key re-rotated from
     * its index to its new one (the CPU: zp_rope_shift_row of its own rows, exactly) */
    uint8_t keep3[Hkv * N2];
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < N2; t++) keep3[g * N2 + t] = t < 2 || t >= 9;
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &d, KC[k], VC[k], NULL, LAYER, dst, N2, dst, keep3, NULL, NULL, 1));
    float *k3 = malloc(sizeof(float) * Hkv * 9 * D), *k4 = malloc(sizeof(float) * Hkv * 9 * D);
    CHECK_OK(be[0]->key_gather(be[0], &d, KC[0], LAYER, dst, 9, k3));
    int shifted = 1;
    for (int g = 0; g < Hkv; g++)
        for (int i = 0; i < 9; i++) {
            float want[D];
            const int t = i < 2 ? i : i + 7;
            memcpy(want, k2 + ((size_t)g * N2 + t) * D, sizeof want);
            zp_rope_shift_row(want, inv, D / 2, t, i);
            shifted &= !memcmp(k3 + ((size_t)g * 9 + i) * D, want, sizeof want);
        }
    CHECK(shifted);
    CHECK_OK(be[1]->key_gather(be[1], &d, KC[1], LAYER, dst, 9, k4));
    dk = zp_max_abs_diff(k3, k4, Hkv * 9 * D);
    printf("  %-18s max|diff| %.3e\n", "shifted keys", dk);
    CHECK(dk <= 1e-2 * p->tight * sk + 1e-6);
    CHECK_FAILS(be[1]->kv_compact(be[1], &d, KC[1], VC[1], NULL, LAYER, dst, N2, dst, keep2, NULL, order, 1), ZP_ERR_INVALID, "position order");
    free(k3); free(k4);
    free(k2);
    free(k0); free(k1); free(qkv);
    for (int k = 0; k < 2; k++) { void *bufs[8] = {QKV[k], Q[k], O[k], KC[k], VC[k], QC[k], QN[k], KN[k]}; for (int i = 0; i < 8; i++) be[k]->release(be[k], bufs[i]); }
}

/* Attention of query rows over paged KV: sequence s holds len[s] tokens in scattered blocks;
 * decode (ql NULL): one query per sequence, attn_decode (the GPU splits long sequences over
 * partitions and merges); prefill: the last ql[s] rows of each sequence query causally,
 * attn_prefill (the GPU's tile kernel in bf16, with rows past the tiles' ends and chunked
 * rows that see earlier KV). */
static void test_paged_attention(pair *p, int S, const int *len, const int *ql, int Hq, int Hkv, int D, const char *what) {
    enum { BS = 16, L = 1 };
    int total = 0, nb = 0, maxb = 0, T = 0;
    for (int s = 0; s < S; s++) {
        total += len[s];
        T += ql ? ql[s] : 1;
        nb += (len[s] + BS - 1) / BS;
        maxb = (len[s] + BS - 1) / BS > maxb ? (len[s] + BS - 1) / BS : maxb;
    }
    const int NB = nb + 3;
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = Hq,
                      .n_kv_heads = Hkv,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.0f / sqrtf((float)D),
                      .qk_norm_eps = 1e-6f};
    int *tables = malloc(sizeof(int) * S * maxb), *slots = malloc(sizeof(int) * total), *pos = malloc(sizeof(int) * total);
    int *ids = calloc((size_t)total, sizeof(int)), *q0 = malloc(sizeof(int) * S), *qlen = malloc(sizeof(int) * S), next = 0, t = 0;
    for (int s = 0, r = 0; s < S; s++) {
        for (int b = 0; b < maxb; b++) tables[s * maxb + b] = b < (len[s] + BS - 1) / BS ? (next++ * 37) % NB : -1;
        for (int i = 0; i < len[s]; i++, t++) { slots[t] = tables[s * maxb + i / BS] * BS + i % BS; pos[t] = i; }
        q0[s] = r;
        qlen[s] = ql ? ql[s] : 1;
        r += qlen[s];
    }
    const size_t nkv = (size_t)total * (Hq + 2 * Hkv) * D, nq = (size_t)T * Hq * D;
    float *inv = malloc(sizeof(float) * D / 2), *qkv = malloc(sizeof(float) * nkv), *qd = malloc(sizeof(float) * nq);
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
    for (size_t i = 0; i < nkv; i++) qkv[i] = rnd((uint32_t)i, 21);
    for (size_t i = 0; i < nq; i++) qd[i] = 2.0f * rnd((uint32_t)i, 22);
    zp_batch fill = {
        .n_tokens = total, .token_ids = ids, .positions = pos, .slot_mapping = slots, .is_prefill = 1, .n_views = 1};
    zp_batch att = {.n_tokens = T,
                    .n_seqs = S,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .seq_q_start = q0,
                    .seq_q_len = qlen,
                    .seq_kv_len = len,
                    .block_tables = tables,
                    .max_blocks = maxb,
                    .is_prefill = ql != NULL,
                    .n_views = 1};
    zp_backend *be[2] = {p->cpu, p->gpu};
    void *QKV[2], *QF[2], *Q[2], *O[2], *KC[2], *VC[2];
    for (int k = 0; k < 2; k++) {
        QKV[k] = zp_test_up(be[k], qkv, OP, nkv);
        Q[k] = zp_test_up(be[k], qd, F, nq);
        QF[k] = zp_test_buf(be[k], F, (size_t)total * Hq * D);
        O[k] = zp_test_buf(be[k], OP, nq);
        CHECK_OK(be[k]->alloc_cache(be[k], (size_t)L * NB * BS * Hkv * D, &KC[k]));
        CHECK_OK(be[k]->alloc_cache(be[k], (size_t)L * NB * BS * Hkv * D, &VC[k]));
        CHECK_OK(be[k]->rope_init(be[k], inv, D / 2, 1.0f));
        CHECK_OK(be[k]->set_batch(be[k], &fill));
        CHECK_OK(be[k]->qkv_rope_store(be[k], &d, QKV[k], QF[k], NULL, NULL, KC[k], VC[k], 0));
        CHECK_OK(be[k]->set_batch(be[k], &att));
        if (ql) CHECK_OK(be[k]->attn_prefill(be[k], &d, O[k], Q[k], KC[k], VC[k], 0));
        else CHECK_OK(be[k]->attn_decode(be[k], &d, O[k], Q[k], KC[k], VC[k], 0));
    }
    compare(what, p, O[0], O[1], OP, nq, 2e-2, 1e-3);
    /* the live attention history of the same rows (exact H2O) over a score cache of earlier
     * sums: each row's keys add to theirs, the keys of these rows start from 0, the rest stay */
    const size_t ns = (size_t)L * NB * BS * Hkv;
    float *old = malloc(sizeof(float) * ns);
    for (size_t i = 0; i < ns; i++) old[i] = 1.0f + rnd((uint32_t)i, 24);
    void *SC[2], *ST[2];
    for (int k = 0; k < 2; k++) {
        SC[k] = zp_test_up(be[k], old, F, ns);
        ST[k] = zp_test_buf(be[k], F, (size_t)T * Hq * 2);
        CHECK_OK(be[k]->attn_history(be[k], &d, Q[k], KC[k], SC[k], ST[k], 0));
    }
    compare("  -> history", p, SC[0], SC[1], F, ns, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) { be[k]->release(be[k], SC[k]); be[k]->release(be[k], ST[k]); }
    free(old);
    /* the output projection right after, on the attention's operand-typed rows */
    enum { NP = 32 };
    const int K = Hq * D;
    float *wp = malloc(sizeof(float) * (size_t)NP * K);
    for (int i = 0; i < NP * K; i++) wp[i] = rnd((uint32_t)i, 23) / sqrtf((float)K);
    void *WP[2], *P[2];
    for (int k = 0; k < 2; k++) {
        WP[k] = upw(be[k], wp, (size_t)NP * K);
        P[k] = zp_test_buf(be[k], F, (size_t)T * NP);
        if (ql) CHECK_OK(be[k]->attn_prefill(be[k], &d, O[k], Q[k], KC[k], VC[k], 0));
        else CHECK_OK(be[k]->attn_decode(be[k], &d, O[k], Q[k], KC[k], VC[k], 0));
        CHECK_OK(be[k]->matmul(be[k], P[k], F, O[k], WP[k], NULL, T, NP, K));
    }
    compare("  -> projection", p, P[0], P[1], F, (size_t)T * NP, 2e-2, 1e-3);
    for (int k = 0; k < 2; k++) { void *bufs[8] = {QKV[k], QF[k], Q[k], O[k], KC[k], VC[k], WP[k], P[k]}; for (int i = 0; i < 8; i++) be[k]->release(be[k], bufs[i]); }
    free(tables); free(slots); free(pos); free(ids); free(q0); free(qlen); free(qkv); free(qd); free(inv); free(wp);
}

static const int DEC_LONG[3] = {3000, 17, 700};
/* 150 sequence lengths in 1..300 */
static void decode_short_lengths(int *len) {
    for (int s = 0; s < 150; s++) len[s] = 1 + (s * 97) % 300;
}

/* Decode attention: sequences split over partitions (3,000 / 17 / 700 tokens), a batch of 150
 * short ones, head dim 64, and 8 query heads per KV head (every A row of the tensor-core tiles);
 * 150 x 8 KV heads: items enough for the warp-per-item kernel (>= 2 blocks x 4 warps per SM on
 * 132 SMs), head dim 128 and 64. */
static void test_decode_cases(pair *p) {
    int short_len[150];
    decode_short_lengths(short_len);
    test_paged_attention(p, 3, DEC_LONG, NULL, 8, 2, 128, "decode attn split");
    test_paged_attention(p, 150, short_len, NULL, 8, 2, 128, "decode attn batch");
    test_paged_attention(p, 40, short_len, NULL, 4, 4, 64, "decode attn D64");
    test_paged_attention(p, 40, short_len, NULL, 16, 2, 128, "decode attn G8");
    test_paged_attention(p, 150, short_len, NULL, 32, 8, 128, "decode attn 150x8");
    test_paged_attention(p, 150, short_len, NULL, 32, 8, 64, "decode attn 150x8 D64");
}

/* ---- device sampling (backend op `sample`) against zp_sample_token on the same logits ---- */

enum { SHAPE_GAUSS, SHAPE_PEAKED, SHAPE_TIES, SHAPE_FLAT, SHAPE_COUNT };
static const char *const SHAPE_NAME[SHAPE_COUNT] = {"gaussian", "peaked", "ties", "flat"};

static float gauss(uint32_t i, uint32_t s) {
    const float u1 = zp_rng_uniform(7, s, 1, i) * 0.999f + 1e-4f, u2 = zp_rng_uniform(7, s, 2, i);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}
/* Row r of a shape: random-weight logits (sd 1.3), a few clear winners over a wide bulk,
 * values on a 1/4 grid (many exact ties at the top), or all equal. */
static void sampling_row(float *x, int V, int shape, uint32_t r) {
    for (int i = 0; i < V; i++) {
        const float g = gauss((uint32_t)i, r);
        x[i] = shape == SHAPE_GAUSS ? 1.3f * g : shape == SHAPE_PEAKED ? 2.0f * g - 4.0f : shape == SHAPE_TIES ? floorf(4.0f * g) / 4.0f : 0.5f;
    }
    if (shape == SHAPE_PEAKED)
        for (int j = 0; j < 6; j++) x[(r * 7919u + (uint32_t)j * 104729u) % (uint32_t)V] = 9.0f + (float)j;
}
static int desc_float(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x < y) - (x > y); }
/* Whether zp_sample_token's candidate set (the tokens at or above the largest threshold that holds
 * top_k tokens or top_p of the mass) exceeds the device's 4,096: then the device must answer -1. */
static int host_needs_fallback(const float *x, int V, const zp_sampling_params *sp, float *p) {
    float mx = x[0], sum = 0.f;
    for (int i = 1; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < V; i++) { p[i] = expf((x[i] - mx) / sp->temperature); sum += p[i]; }
    qsort(p, (size_t)V, sizeof *p, desc_float);
    const int k = sp->top_k > 0 && sp->top_k < V ? sp->top_k : 0;
    const float want = sp->top_p + 1e-3f < 1.0f ? sp->top_p + 1e-3f : 1.0f;
    float mass = 0.f;
    int n = V;
    for (int i = 0; i < V; i++) {
        mass += p[i];
        if ((k && i + 1 >= k) || (sp->top_p < 1.0f && mass >= want * sum)) { n = i + 1; break; }
    }
    while (n < V && p[n] == p[n - 1]) n++; /* ties at the threshold are candidates too */
    return n > 4096;
}

static void test_sampling(pair *p) {
    const int V = 151936, R = 6; /* Qwen3's vocabulary; rows per (shape, setting) */
    const zp_sampling_params base = zp_sampling_default();
    struct { float T, top_p; int top_k; } set[] = {{0.6f, 0.95f, 20}, {1.0f, 1.0f, 5}, {0.7f, 0.9f, 0}, {0.6f, 1.0f, 3000},
                                                    {1.0f, 0.5f, 0}, {0.8f, 1.0f, 0}, {0.f, 1.0f, 0}, {1.0f, 0.3f, 1000}};
    const int n_set = (int)(sizeof set / sizeof set[0]);
    float *x = malloc(sizeof(float) * (size_t)V * R), *row = malloc(sizeof(float) * V), *scratch = malloc(sizeof(float) * 2 * V);
    zp_sample_row rows[6];
    int ids[6];
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        for (int r = 0; r < R; r++) sampling_row(x + (size_t)r * V, V, shape, (uint32_t)(shape * 100 + r));
        void *d = zp_test_up(p->gpu, x, F, (size_t)V * R);
        for (int s = 0; s < n_set; s++) {
            zp_sampling_params sp = base;
            sp.temperature = set[s].T;
            sp.top_p = set[s].top_p;
            sp.top_k = set[s].top_k;
            for (int r = 0; r < R; r++)
                rows[r] = (zp_sample_row){.temperature = sp.temperature,
                                          .top_p = sp.top_p,
                                          .top_k = sp.top_k,
                                          .sample_index = (uint32_t)r,
                                          .step = (uint32_t)(s + 1),
                                          .seed = 1234u,
                                          .request_id = (uint64_t)(shape * 10 + r)};
            CHECK_OK(p->gpu->sample(p->gpu, d, R, V, rows, ids));
            int same = 0, fallback = 0;
            for (int r = 0; r < R; r++) {
                const float *xr = x + (size_t)r * V;
                const int need_host = sp.temperature > 0.f && (sp.top_k > 0 || sp.top_p < 1.0f) && host_needs_fallback(xr, V, &sp, scratch);
                if (need_host) { CHECK(ids[r] == -1); fallback += ids[r] == -1; continue; }
                const float u = zp_rng_uniform(1234u, rows[r].request_id, rows[r].sample_index, rows[r].step);
                /* A draw within float rounding of a token boundary may pick the neighbour (the sums
                 * run in another order): the host's picks for u - eps and u + eps bound the device's.
                 * In id order (temperature alone) the host's sequential sum over the whole vocabulary
                 * is itself off by ~1e-5 of the mass; candidate sets sum a few thousand at most. */
                const int id_order = sp.top_k == 0 && sp.top_p >= 1.0f, greedy = sp.temperature <= 0.f;
                const float eps = greedy ? 0.f : id_order ? 1e-4f : 2e-6f;
                int pick[3];
                for (int e = -1; e <= 1; e++) {
                    memcpy(row, xr, sizeof(float) * V);
                    pick[e + 1] = zp_sample_token(row, V, &sp, NULL, 0, u + (float)e * eps, scratch);
                }
                const int ok = id_order ? pick[0] <= ids[r] && ids[r] <= pick[2] : ids[r] == pick[0] || ids[r] == pick[1] || ids[r] == pick[2];
                if (!ok) fprintf(stderr, "  %s T %.1f top-p %.2f top-k %d row %d: device %d\n", SHAPE_NAME[shape], sp.temperature, sp.top_p, sp.top_k, r, ids[r]);
                CHECK(ok);
                same += ok;
            }
            printf("  sample %-8s T %.1f top-p %.2f top-k %4d: %d/%d = host sampler, %d left to the host (candidates > 4096)\n",
                   SHAPE_NAME[shape], sp.temperature, sp.top_p, sp.top_k, same, R, fallback);
        }
        p->gpu->release(p->gpu, d);
    }
    free(x);
    free(row);
    free(scratch);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pair p;
    CHECK_OK(zp_backend_cpu_create(2, &p.cpu));
    for (int fp32 = 0; fp32 < 2; fp32++) {
        if (zp_backend_cuda_create(0, fp32, NULL, &p.gpu) != ZP_OK) {
            printf("test_cuda_ops: skipped (%s)\n", zp_last_error());
            p.cpu->destroy(p.cpu);
            return 77;
        }
        p.tight = fp32 ? 1e-2 : 1.0;
        printf("CUDA storage %s:\n", fp32 ? "fp32" : "bf16");
        test_dense(&p);
        test_attention_path(&p);
        test_decode_cases(&p);
        test_paged_attention(&p, 3, DEC_LONG, NULL, 16, 2, 256, "decode attn D256");
        /* head sizes and groups the tensor-core kernels do not take: the row kernel (decode and prefill) */
        const int odd_len[5] = {3000, 1, 17, 700, 129};
        test_paged_attention(&p, 5, odd_len, NULL, 8, 2, 96, "decode attn D96 (rows)");
        test_paged_attention(&p, 5, odd_len, NULL, 4, 1, 80, "decode attn D80 MQA (rows)");
        test_paged_attention(&p, 5, odd_len, NULL, 6, 3, 32, "decode attn D32 (rows)");
        test_paged_attention(&p, 5, odd_len, NULL, 12, 1, 128, "decode attn G12 (rows)");
        test_paged_attention(&p, 5, odd_len, NULL, 2, 1, 512, "decode attn D512 (rows)");
        test_paged_attention(&p, 5, odd_len, NULL, 4, 2, 42, "decode attn D42 (rows)");
        /* prefill: whole prompts, a chunk after earlier KV, single rows (decode rows of a mixed step) */
        const int pf_len[4] = {300, 77, 530, 5}, pf_q[4] = {300, 77, 130, 1};
        test_paged_attention(&p, 4, pf_len, pf_q, 32, 8, 128, "prefill attn G4");
        test_paged_attention(&p, 4, pf_len, pf_q, 16, 2, 128, "prefill attn G8");
        test_paged_attention(&p, 4, pf_len, pf_q, 8, 4, 64, "prefill attn D64");
        test_paged_attention(&p, 4, pf_len, pf_q, 8, 2, 256, "prefill attn D256");
        test_paged_attention(&p, 4, pf_len, pf_q, 8, 2, 96, "prefill attn D96 (rows)");
        test_paged_attention(&p, 4, pf_len, pf_q, 4, 1, 80, "prefill attn D80 MQA (rows)");
        test_paged_attention(&p, 4, pf_len, pf_q, 12, 1, 128, "prefill attn G12");
        test_paged_attention(&p, 4, pf_len, pf_q, 4, 2, 42, "prefill attn D42 (rows)");
        if (fp32) test_sampling(&p);
        p.gpu->destroy(p.gpu);
    }
    /* bf16 GEMMs by measured cublasLt algorithms (gemm_tune): the dense ops again */
    zp_backend_options opt = zp_backend_options_default();
    opt.gemm_tune = 1;
    CHECK_OK(zp_backend_cuda_create(0, 0, &opt, &p.gpu));
    p.tight = 1.0;
    printf("CUDA storage bf16, gemm_tune=1:\n");
    test_dense(&p);
    p.gpu->destroy(p.gpu);
    p.cpu->destroy(p.cpu);
    return zp_test_finish("test_cuda_ops");
}
