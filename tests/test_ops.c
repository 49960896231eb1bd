/* test_ops.c - every CPU backend op against a naive dense double-precision implementation:
 * matmul (+bias), RMSNorm, SiLU-mul, embedding, row gather, llama3 RoPE frequencies, and
 * q/k-norm + RoPE + KV store + paged attention over scattered blocks against contiguous
 * causal attention; the decode-attention partition rule of the CUDA backend (arithmetic). */
#include <string.h>

#include "backend.h"
#include "../dev/cuda/decode_split.h" /* the lab's split rule: plain C */
#include "model.h"
#include "sampler.h"
#include "test_util.h"

static float rnd(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(42, s, 0, i) - 1.0f; }
static void fill(float *x, size_t n, uint32_t s) { for (size_t i = 0; i < n; i++) x[i] = rnd((uint32_t)i, s); }

static void test_dense_ops(zp_backend *be) {
    enum { M = 5, N = 7, K = 33 };
    float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * N * K), *bias = malloc(sizeof(float) * N);
    float out[M * N], want[M * N];
    fill(x, M * K, 1); fill(w, N * K, 2); fill(bias, N, 3);
    CHECK_OK(be->matmul(be, out, ZP_ACT_F32, x, w, bias, M, N, K));
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = bias[n];
            for (int k = 0; k < K; k++) acc += (double)x[m * K + k] * w[n * K + k];
            want[m * N + n] = (float)acc;
        }
    CHECK(zp_max_abs_diff(out, want, M * N) < 1e-5);
    /* rmsnorm */
    float nw[K], r[M * K];
    fill(nw, K, 4);
    CHECK_OK(be->rmsnorm(be, r, x, nw, M, K, 1e-6f));
    double maxd = 0;
    for (int m = 0; m < M; m++) {
        double ss = 0;
        for (int k = 0; k < K; k++) ss += (double)x[m * K + k] * x[m * K + k];
        double inv = 1.0 / sqrt(ss / K + 1e-6);
        for (int k = 0; k < K; k++) maxd = fmax(maxd, fabs(r[m * K + k] - nw[k] * x[m * K + k] * inv));
    }
    CHECK(maxd < 1e-6);
    /* silu_mul: gu [M, 2*16] */
    float gu[M * 32], act[M * 16];
    fill(gu, M * 32, 5);
    CHECK_OK(be->silu_mul(be, act, gu, M, 16));
    maxd = 0;
    for (int m = 0; m < M; m++)
        for (int i = 0; i < 16; i++) {
            double g = gu[m * 32 + i], u = gu[m * 32 + 16 + i];
            maxd = fmax(maxd, fabs(act[m * 16 + i] - g / (1 + exp(-g)) * u));
        }
    CHECK(maxd < 1e-6);
    /* add */
    float a[4] = {1, 2, 3, 4}, b2[4] = {10, 20, 30, 40};
    CHECK_OK(be->add(be, a, b2, 4));
    CHECK(a[0] == 11 && a[3] == 44);
    /* add_rmsnorm = add, then rmsnorm, exactly; out may be the added buffer */
    {
        float xs[M * K], ys[M * K], xr[M * K], want[M * K];
        fill(xs, M * K, 7);
        fill(ys, M * K, 8);
        memcpy(xr, xs, sizeof xs);
        CHECK_OK(be->add(be, xr, ys, M * K));
        CHECK_OK(be->rmsnorm(be, want, xr, nw, M, K, 1e-6f));
        CHECK_OK(be->add_rmsnorm(be, ys, xs, ys, nw, M, K, 1e-6f));
        CHECK(memcmp(xs, xr, sizeof xs) == 0 && memcmp(ys, want, sizeof ys) == 0);
    }
    /* embed + gather through a batch */
    int ids[3] = {4, 0, 2}, pos[3] = {0, 1, 2}, rows[2] = {2, 0};
    zp_batch bt = {.n_tokens = 3, .token_ids = ids, .positions = pos, .n_out = 2, .out_rows = rows};
    CHECK_OK(be->set_batch(be, &bt));
    float emb[3 * K], g2[2 * K];
    CHECK_OK(be->embed(be, emb, x, K));
    CHECK(memcmp(emb, x + 4 * K, sizeof(float) * K) == 0 && memcmp(emb + 2 * K, x + 2 * K, sizeof(float) * K) == 0);
    CHECK_OK(be->gather_rows(be, g2, emb, K));
    CHECK(memcmp(g2, emb + 2 * K, sizeof(float) * K) == 0 && memcmp(g2 + K, emb, sizeof(float) * K) == 0);
    free(x); free(w); free(bias);
}

static void test_llama3_freqs(void) {
    zp_rope_config c;
    memset(&c, 0, sizeof c);
    c.theta = 500000.0;
    c.type = ZP_ROPE_LLAMA3;
    c.factor = 8;
    c.low_freq = 1;
    c.high_freq = 4;
    c.orig_max_pos = 8192;
    float f[64], att;
    zp_rope_frequencies(&c, 128, f, &att);
    CHECK(att == 1.0f);
    int n_low = 0, n_mid = 0, n_high = 0;
    for (int i = 0; i < 64; i++) {
        double base = 1.0 / pow(500000.0, 2.0 * i / 128.0), wl = 2 * M_PI / base, want;
        if (wl < 8192.0 / 4) { want = base; n_high++; }
        else if (wl > 8192.0 / 1) { want = base / 8; n_low++; }
        else {
            double sm = (8192.0 / wl - 1) / (4 - 1);
            want = (1 - sm) * base / 8 + sm * base;
            n_mid++;
        }
        CHECK(fabs(f[i] - want) <= 1e-5 * want);
    }
    CHECK(n_low > 0 && n_mid > 0 && n_high > 0); /* all three bands exercised */
}

/* Two sequences of different lengths, K/V written through a scattered block table, then
 * attention of each row against naive causal attention over contiguous rope'd K/V. */
static void test_paged_attention(zp_backend *be) {
    enum { Hq = 4, Hkv = 2, D = 16, BS = 4, NB = 12, L = 2, LAYER = 1 };
    const int len[2] = {7, 10}, T = 17;
    const int bt[2][4] = {{9, 2, -1, -1}, {5, 11, 0, 7}}; /* scattered physical blocks */
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = Hq,
                      .n_kv_heads = Hkv,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.0f / sqrtf(D),
                      .qk_norm_eps = 1e-6f};
    float inv[D / 2];
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
    CHECK_OK(be->rope_init(be, inv, D / 2, 1.0f));
    const int W = (Hq + 2 * Hkv) * D;
    float *qkv = malloc(sizeof(float) * T * W), *q = malloc(sizeof(float) * T * Hq * D), *out = malloc(sizeof(float) * T * Hq * D);
    float *kc = calloc((size_t)L * NB * BS * Hkv * D, sizeof(float)), *vc = calloc((size_t)L * NB * BS * Hkv * D, sizeof(float));
    float qn[D], kn[D];
    fill(qkv, (size_t)T * W, 7); fill(qn, D, 8); fill(kn, D, 9);
    int ids[17] = {0}, pos[17], slots[17], q0[2] = {0, 7}, ql[2] = {7, 10}, kvl[2] = {7, 10};
    for (int s = 0, t = 0; s < 2; s++)
        for (int i = 0; i < len[s]; i++, t++) { pos[t] = i + 3 * s; slots[t] = bt[s][i / BS] * BS + i % BS; }
    zp_batch b = {.n_tokens = T,
                  .n_seqs = 2,
                  .token_ids = ids,
                  .positions = pos,
                  .slot_mapping = slots,
                  .seq_q_start = q0,
                  .seq_q_len = ql,
                  .seq_kv_len = kvl,
                  .block_tables = &bt[0][0],
                  .max_blocks = 4,
                  .is_prefill = 1,
                  .n_views = 1};
    CHECK_OK(be->set_batch(be, &b));
    CHECK_OK(be->qkv_rope_store(be, &d, qkv, q, qn, kn, kc, vc, LAYER));
    CHECK_OK(be->attn_prefill(be, &d, out, q, kc, vc, LAYER));
    /* naive reference in double */
    double maxd = 0;
    static double rq[17][Hq][D], rk[17][Hkv][D], rv[17][Hkv][D];
    for (int t = 0; t < T; t++) {
        const float *row = qkv + (size_t)t * W;
        for (int h = 0; h < Hq + Hkv; h++) {
            const float *x = row + h * D, *nw = h < Hq ? qn : kn;
            double ss = 0, y[D];
            for (int i = 0; i < D; i++) ss += (double)x[i] * x[i];
            for (int i = 0; i < D; i++) y[i] = nw[i] * x[i] / sqrt(ss / D + 1e-6);
            double *dst = h < Hq ? rq[t][h] : rk[t][h - Hq];
            for (int i = 0; i < D / 2; i++) { /* rotate (y_i, y_{i+D/2}) by pos * inv_i */
                double a = (double)(float)((float)pos[t] * inv[i]);
                dst[i] = y[i] * cos(a) - y[i + D / 2] * sin(a);
                dst[i + D / 2] = y[i + D / 2] * cos(a) + y[i] * sin(a);
            }
        }
        for (int h = 0; h < Hkv; h++)
            for (int i = 0; i < D; i++) rv[t][h][i] = row[(Hq + Hkv + h) * D + i];
    }
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < len[s]; i++) {
            int t = q0[s] + i;
            for (int h = 0; h < Hq; h++) {
                int kh = h / (Hq / Hkv);
                double sc[10], mx = -1e30, z = 0, o[D] = {0};
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int e = 0; e < D; e++) dot += rq[t][h][e] * rk[q0[s] + j][kh][e];
                    sc[j] = dot / sqrt(D);
                    mx = fmax(mx, sc[j]);
                }
                for (int j = 0; j <= i; j++) z += sc[j] = exp(sc[j] - mx);
                for (int j = 0; j <= i; j++)
                    for (int e = 0; e < D; e++) o[e] += sc[j] / z * rv[q0[s] + j][kh][e];
                for (int e = 0; e < D; e++) maxd = fmax(maxd, fabs(out[((size_t)t * Hq + h) * D + e] - o[e]));
            }
        }
    CHECK(maxd < 1e-5);
    /* K/V landed in the named slots of the named layer only */
    double layer0 = zp_max_abs(kc, (size_t)NB * BS * Hkv * D);
    CHECK(layer0 == 0.0);
    const float *k_slot = kc + (size_t)LAYER * NB * BS * Hkv * D + (size_t)slots[8] * Hkv * D;
    CHECK(fabs(k_slot[3] - rk[8][0][3]) < 1e-5);
    free(qkv); free(q); free(out); free(kc); free(vc);
}

/* The wave-efficiency split of decode attention (pure arithmetic, used by the CUDA backend). */
static void test_decode_split(void) {
    CHECK(zp_decode_parts_waves(24 * 8, 264, 48) == 4);    /* 576 blocks would be 2.18 rounds; 768 are 2.91 */
    CHECK(zp_decode_parts_waves(256 * 8, 264, 6) == 1);    /* 2048 blocks: 7.76 of 8 rounds already */
    CHECK(zp_decode_parts_waves(8, 264, 10) == 10);        /* batch 1: never a full round, every partition */
    CHECK(zp_decode_parts_waves(20 * 8, 264, 48) == 3);    /* 480 blocks, 1.82 of 2 rounds */
    CHECK(zp_decode_parts_waves(5, 264, 0) == 1);
    for (long base = 1; base <= 600; base += 7)
        for (int mp = 1; mp <= 80; mp += 9) {
            const int n = zp_decode_parts_waves(base, 264, mp);
            CHECK(n >= 1 && n <= mp);
            if (base * mp > 264) CHECK(base * n >= 264); /* at least one whole round when it can be had */
        }
}

int main(void) {
    test_decode_split();
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(2, &be));
    test_dense_ops(be);
    test_llama3_freqs();
    test_paged_attention(be);
    be->destroy(be);
    return zp_test_finish("test_ops");
}
