/* test_cuda_kv_fp8.c (label gpu) - the CUDA ops over an FP8 E4M3 K/V cache (kv_dtype fp8,
 * issue 39) against the CPU reference (model/cpu), in both CUDA precisions, with a scale per
 * (layer, KV head) (powers of two, so a division is exact on both):
 *   writes: qkv_rope_store's value bytes equal the CPU's (the same inputs: bf16-rounded ones in
 *     bf16 storage), its key bytes all but a few, those a neighbouring code (a key's fp32 norm and
 *     rotation, summed in another order, may round across an E4M3 tie);
 *   reads, over the same bytes (the CPU's, uploaded): key_gather exactly; prefill and decode
 *     attention and the attention history within the tolerances of test_cuda_ops;
 *   compaction: in position order and in a policy's order, the bytes exactly; with
 *     StreamingLLM's position shift (decode, re-rotate, round again) all but a few bytes, those
 *     a neighbouring code;
 *   calibration (kv_amax, kv_scales prompt): the maxima of the keys as stored and of the values
 *     over the rows that write a slot, against the CPU's and the inputs;
 *   decode attention over random bytes at head sizes 128, 256 and 64: a 3,000-token sequence
 *     over partitions among short ones, and 1,200 short sequences (in bf16 storage the
 *     tensor-core kernels, block and warp-per-item, at 64 and 128; the CUDA-core kernel at 256
 *     and in fp32 storage; the row kernel at 64 in fp32 storage).
 * Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dtype.h"
#include "sampler.h" /* zp_rng_uniform */
#include "test_util.h"

enum { Hq = 4, Hkv = 2, D = 64, BS = 16, NB = 12, L = 2, LAYER = 1, T = 57, W = (Hq + 2 * Hkv) * D };
enum { CACHE = L * NB * BS * Hkv * D, CACHE_F = (CACHE + 3) / 4 };

static float rnd(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(77, s, 0, i) - 1.0f; }

/* An fp8 cache's bytes to the host (held as fp32 elements: CACHE_F of them). */
static void bytes_down(zp_backend *be, uint8_t *dst, const void *cache) {
    float *h = malloc(sizeof(float) * CACHE_F);
    CHECK_OK(be->to_host(be, h, cache, ZP_ACT_F32, 0, CACHE_F));
    memcpy(dst, h, CACHE);
    free(h);
}
static void bytes_up(zp_backend *be, void *cache, const uint8_t *src) {
    float *h = calloc(CACHE_F, sizeof(float));
    memcpy(h, src, CACHE);
    CHECK_OK(be->from_host(be, cache, ZP_ACT_F32, h, 0, CACHE_F));
    free(h);
}
/* Codes of the same sign one apart (E4M3's order is the code's order within a sign). */
static int neighbours(uint8_t a, uint8_t b) { return (a & 0x80) == (b & 0x80) && abs((a & 0x7f) - (b & 0x7f)) <= 1; }
/* Bytes of the two caches that differ, and those that are not even neighbours. */
static void byte_diff(const uint8_t *a, const uint8_t *b, int *differ, int *far) {
    *differ = *far = 0;
    for (int i = 0; i < CACHE; i++) {
        *differ += a[i] != b[i];
        *far += !neighbours(a[i], b[i]);
    }
}
static void compare(const char *what, zp_backend *cpu, zp_backend *gpu, const void *a, const void *b, zp_act_type type, size_t n, double rel) {
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    CHECK_OK(cpu->to_host(cpu, x, a, type, 0, n));
    CHECK_OK(gpu->to_host(gpu, y, b, type, 0, n));
    const double scale = zp_max_abs(x, n), diff = zp_max_abs_diff(x, y, n);
    printf("  %-22s max|diff| %.3e  max|cpu| %.3e  (tol %.1e)\n", what, diff, scale, rel * scale + 1e-5);
    CHECK(scale > 0 && diff <= rel * scale + 1e-5);
    free(x);
    free(y);
}

/* kv_amax (kv_scales prompt's calibration) over the rows of `fill` with every third one writing
 * no slot: the values' maxima equal |v|'s largest over the writing rows of the inputs (exact on
 * both backends), the keys' (normed and rotated in fp32, summed in another order) the CPU's
 * within 1e-5 relative; leaving rows out must change some maximum (the rule is exercised). */
static void kv_amax_case(zp_backend **be, const zp_attn_dims *dd, const zp_batch *fill, void **QKV, void **KN, const float *qkv) {
    int part[T], top[T] = {0}; /* top: the rows that hold value head 0's largest |v| (bf16 ties), left out too */
    float best = -1.f;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < D; i++) best = fmaxf(best, fabsf(qkv[(size_t)t * W + (Hq + Hkv) * D + i]));
    for (int t = 0; t < T; t++)
        for (int i = 0; i < D; i++) top[t] |= fabsf(qkv[(size_t)t * W + (Hq + Hkv) * D + i]) == best;
    for (int t = 0; t < T; t++) part[t] = t % 3 && !top[t] ? fill->slot_mapping[t] : -1;
    zp_batch pb = *fill;
    pb.slot_mapping = part;
    float am[2][2 * Hkv], all[2 * Hkv], want[Hkv] = {0};
    for (int t = 0; t < T; t++)
        for (int h = 0; h < Hkv && part[t] >= 0; h++)
            for (int i = 0; i < D; i++) want[h] = fmaxf(want[h], fabsf(qkv[(size_t)t * W + (Hq + Hkv + h) * D + i]));
    for (int k = 0; k < 2; k++) {
        CHECK(be[k]->kv_amax != NULL);
        if (!be[k]->kv_amax) return;
        CHECK_OK(be[k]->set_batch(be[k], &pb));
        CHECK_OK(be[k]->kv_amax(be[k], &dd[k], QKV[k], KN[k], am[k]));
    }
    CHECK_OK(be[0]->set_batch(be[0], fill));
    CHECK_OK(be[0]->kv_amax(be[0], &dd[0], QKV[0], KN[0], all));
    int moved = 0;
    for (int h = 0; h < Hkv; h++) {
        const double rel = fabs(am[0][h] - am[1][h]) / am[0][h];
        printf("  %-22s KV head %d: keys cpu %.6f cuda %.6f (rel %.1e), values cpu %.6f cuda %.6f inputs %.6f\n", "kv_amax", h, am[0][h], am[1][h],
               rel, am[0][Hkv + h], am[1][Hkv + h], want[h]);
        CHECK(am[0][h] > 0 && rel <= 1e-5);
        CHECK(am[0][Hkv + h] == want[h] && am[1][Hkv + h] == want[h]);
        moved += all[h] != am[0][h] || all[Hkv + h] != am[0][Hkv + h];
    }
    CHECK(moved > 0);
    CHECK_OK(be[1]->set_batch(be[1], fill)); /* the ops that follow run over the whole batch */
}

static void run(int fp32) {
    zp_backend *be[2];
    CHECK_OK(zp_backend_cpu_create(2, &be[0]));
    if (zp_backend_cuda_create(0, fp32, NULL, &be[1]) != ZP_OK) { CHECK(0); be[0]->destroy(be[0]); return; }
    printf("%s storage:\n", fp32 ? "fp32" : "bf16");
    const double rel = fp32 ? 1e-4 : 2e-2;
    const int len[2] = {37, 20}, bt[2][3] = {{9, 2, 6}, {5, 11, -1}};
    const float scales[2 * L * Hkv] = {0.5f, 0.25f, 1.0f, 2.0f, 2.0f, 0.5f, 0.125f, 1.0f}; /* [side][layer][head] */
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = Hq,
                      .n_kv_heads = Hkv,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.0f / 8.0f,
                      .qk_norm_eps = 1e-6f,
                      .kv_fp8 = 1,
                      .k_scale = scales,
                      .v_scale = scales + L * Hkv};
    zp_attn_dims dd[2] = {d, d};
    float inv[D / 2], qn[D], kn[D], *qkv = malloc(sizeof(float) * T * W);
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
    /* across E4M3's normal range, none past 448 x scale; in bf16 storage rounded to bf16 for both
     * backends, so that both start from the same inputs (the GPU's buffers hold bf16) */
    for (int i = 0; i < T * W; i++) qkv[i] = 4.0f * rnd((uint32_t)i, 1);
    for (int i = 0; i < D; i++) { qn[i] = 1 + 0.1f * rnd((uint32_t)i, 2); kn[i] = 1 + 0.1f * rnd((uint32_t)i, 3); }
    if (!fp32) {
        for (int i = 0; i < T * W; i++) qkv[i] = zp_bf16_to_f32(zp_f32_to_bf16(qkv[i]));
        for (int i = 0; i < D; i++) qn[i] = zp_bf16_to_f32(zp_f32_to_bf16(qn[i])), kn[i] = zp_bf16_to_f32(zp_f32_to_bf16(kn[i]));
    }
    int ids[T] = {0}, pos[T], slots[T], q0[2] = {0, 37}, kvl[2] = {37, 20};
    for (int s = 0, t = 0; s < 2; s++)
        for (int i = 0; i < len[s]; i++, t++) { pos[t] = i + 100 * s; slots[t] = bt[s][i / BS] * BS + i % BS; }
    zp_batch fill = {.n_tokens = T,
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
                     .n_views = 1};
    void *QKV[2], *Q[2], *O[2], *KC[2], *VC[2], *QN[2], *KN[2], *DS[2];
    for (int k = 0; k < 2; k++) {
        QKV[k] = zp_test_up(be[k], qkv, ZP_ACT_OPERAND, T * W);
        QN[k] = zp_test_up(be[k], qn, ZP_ACT_OPERAND, D); /* a norm weight in the storage type: weight_upload's */
        KN[k] = zp_test_up(be[k], kn, ZP_ACT_OPERAND, D);
        Q[k] = zp_test_buf(be[k], ZP_ACT_F32, T * Hq * D);
        O[k] = zp_test_buf(be[k], ZP_ACT_OPERAND, T * Hq * D);
        KC[k] = zp_test_buf(be[k], ZP_ACT_F32, CACHE_F);
        VC[k] = zp_test_buf(be[k], ZP_ACT_F32, CACHE_F);
        DS[k] = zp_test_up(be[k], scales, ZP_ACT_F32, 2 * L * Hkv);
        dd[k].dev_scales = DS[k];
        static const float zero[CACHE_F];
        CHECK_OK(be[k]->from_host(be[k], KC[k], ZP_ACT_F32, zero, 0, CACHE_F));
        CHECK_OK(be[k]->from_host(be[k], VC[k], ZP_ACT_F32, zero, 0, CACHE_F));
        CHECK_OK(be[k]->rope_init(be[k], inv, D / 2, 1.0f));
        CHECK_OK(be[k]->set_batch(be[k], &fill));
        CHECK_OK(be[k]->qkv_rope_store(be[k], &dd[k], QKV[k], Q[k], QN[k], KN[k], KC[k], VC[k], LAYER));
    }
    static uint8_t kc[2][CACHE], vc[2][CACHE];
    for (int k = 0; k < 2; k++) { bytes_down(be[k], kc[k], KC[k]); bytes_down(be[k], vc[k], VC[k]); }
    int kd, kf, vd, vf, written = 0;
    byte_diff(kc[0], kc[1], &kd, &kf);
    byte_diff(vc[0], vc[1], &vd, &vf);
    for (int i = 0; i < CACHE; i++) written += kc[0][i] != 0;
    printf("  %-22s keys: %d of %d bytes differ (%d not neighbours); values: %d differ (%d not neighbours); %d keys written\n",
           "qkv_rope_store", kd, CACHE, kf, vd, vf, written);
    CHECK(written > T * Hkv * D / 2);
    CHECK(vd == 0 && kf == 0 && kd <= T * Hkv * D / 500 + 1);
    kv_amax_case(be, dd, &fill, QKV, KN, qkv);
    /* the reads over the same bytes: the CPU's */
    bytes_up(be[1], KC[1], kc[0]);
    bytes_up(be[1], VC[1], vc[0]);
    float *g0 = malloc(sizeof(float) * Hkv * 37 * D), *g1 = malloc(sizeof(float) * Hkv * 37 * D);
    CHECK_OK(be[0]->key_gather(be[0], &dd[0], KC[0], LAYER, bt[0], 37, g0));
    CHECK_OK(be[1]->key_gather(be[1], &dd[1], KC[1], LAYER, bt[0], 37, g1));
    CHECK(!memcmp(g0, g1, sizeof(float) * Hkv * 37 * D) && zp_max_abs(g0, Hkv * 37 * D) > 0);
    printf("  %-22s %s\n", "key_gather", !memcmp(g0, g1, sizeof(float) * Hkv * 37 * D) ? "identical" : "DIFFERS");
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->attn_prefill(be[k], &dd[k], O[k], Q[k], KC[k], VC[k], LAYER));
    compare("attn_prefill", be[0], be[1], O[0], O[1], ZP_ACT_OPERAND, T * Hq * D, rel);
    /* decode: the last row of each sequence as its one query */
    int dq0[2] = {0, 1}, dql[2] = {1, 1}, drow[2] = {36, 56};
    float *qd = malloc(sizeof(float) * 2 * Hq * D), *qall = malloc(sizeof(float) * T * Hq * D);
    CHECK_OK(be[0]->to_host(be[0], qall, Q[0], ZP_ACT_F32, 0, T * Hq * D));
    for (int s = 0; s < 2; s++) memcpy(qd + s * Hq * D, qall + (size_t)drow[s] * Hq * D, sizeof(float) * Hq * D);
    zp_batch dec = {.n_tokens = 2,
                    .n_seqs = 2,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .seq_q_start = dq0,
                    .seq_q_len = dql,
                    .seq_kv_len = kvl,
                    .block_tables = &bt[0][0],
                    .max_blocks = 3,
                    .n_views = 1};
    void *QD[2], *OD[2], *SC[2], *ST[2];
    const size_t ns = (size_t)L * NB * BS * Hkv;
    float *old = malloc(sizeof(float) * ns);
    for (size_t i = 0; i < ns; i++) old[i] = 1.0f + rnd((uint32_t)i, 4);
    for (int k = 0; k < 2; k++) {
        QD[k] = zp_test_up(be[k], qd, ZP_ACT_F32, 2 * Hq * D);
        OD[k] = zp_test_buf(be[k], ZP_ACT_OPERAND, 2 * Hq * D);
        SC[k] = zp_test_up(be[k], old, ZP_ACT_F32, ns);
        ST[k] = zp_test_buf(be[k], ZP_ACT_F32, 2 * Hq * 2);
        CHECK_OK(be[k]->set_batch(be[k], &dec));
        CHECK_OK(be[k]->attn_decode(be[k], &dd[k], OD[k], QD[k], KC[k], VC[k], LAYER));
        CHECK_OK(be[k]->attn_history(be[k], &dd[k], QD[k], KC[k], SC[k], ST[k], LAYER));
    }
    compare("attn_decode", be[0], be[1], OD[0], OD[1], ZP_ACT_OPERAND, 2 * Hq * D, rel);
    compare("attn_history", be[0], be[1], SC[0], SC[1], ZP_ACT_F32, ns, fp32 ? 1e-4 : 1e-3);
    /* compaction of sequence 0 in place: position order, then a policy's order, then a position shift */
    uint8_t keep[Hkv * 37];
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < 37; t++) keep[g * 37 + t] = ((t * (g + 3)) % 5 < 3) && t < 34;
    const int dst[3] = {9, 2, 6};
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &dd[k], KC[k], VC[k], NULL, LAYER, bt[0], 37, dst, keep, NULL, NULL, 0));
    for (int k = 0; k < 2; k++) { bytes_down(be[k], kc[k], KC[k]); bytes_down(be[k], vc[k], VC[k]); }
    CHECK(!memcmp(kc[0], kc[1], CACHE) && !memcmp(vc[0], vc[1], CACHE));
    enum { N2 = 16 };
    uint8_t keep2[Hkv * N2];
    int order[Hkv * N2];
    memset(keep2, 1, sizeof keep2);
    for (int g = 0; g < Hkv; g++)
        for (int i = 0; i < N2; i++) order[g * N2 + i] = (i * 5 + 3 * g) % N2;
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &dd[k], KC[k], VC[k], NULL, LAYER, dst, N2, dst, keep2, NULL, order, 0));
    for (int k = 0; k < 2; k++) { bytes_down(be[k], kc[k], KC[k]); bytes_down(be[k], vc[k], VC[k]); }
    const int ordered = !memcmp(kc[0], kc[1], CACHE) && !memcmp(vc[0], vc[1], CACHE);
    CHECK(ordered);
    uint8_t keep3[Hkv * N2];
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < N2; t++) keep3[g * N2 + t] = t < 2 || t >= 9;
    for (int k = 0; k < 2; k++) CHECK_OK(be[k]->kv_compact(be[k], &dd[k], KC[k], VC[k], NULL, LAYER, dst, N2, dst, keep3, NULL, NULL, 1));
    for (int k = 0; k < 2; k++) { bytes_down(be[k], kc[k], KC[k]); bytes_down(be[k], vc[k], VC[k]); }
    int sd, sf;
    byte_diff(kc[0], kc[1], &sd, &sf);
    printf("  %-22s position order and a policy's order: %s; shifted keys: %d bytes differ (%d not neighbours)\n", "kv_compact",
           ordered ? "identical" : "DIFFER", sd, sf);
    CHECK(!memcmp(vc[0], vc[1], CACHE) && sf == 0 && sd <= 9 * Hkv * D / 100 + 1);
    free(g0); free(g1); free(qd); free(qall); free(old); free(qkv);
    for (int k = 0; k < 2; k++) {
        void *bufs[] = {QKV[k], Q[k], O[k], KC[k], VC[k], QN[k], KN[k], DS[k], QD[k], OD[k], SC[k], ST[k]};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be[k]->release(be[k], bufs[i]);
        be[k]->destroy(be[k]);
    }
}

/* Decode attention over random E4M3 bytes (no NaN) with head size Dd, S sequences of len[s] keys,
 * GQA groups of 4, per-head scales: the CUDA kernel decode_launch picks against the CPU. */
static void decode_case(int fp32, int Dd, int S, const int *len, const char *shape) {
    enum { H = 8, G = 2, BSZ = 16 };
    int nb = 0, maxb = 0;
    for (int s = 0; s < S; s++) { nb += (len[s] + BSZ - 1) / BSZ; maxb = (len[s] + BSZ - 1) / BSZ > maxb ? (len[s] + BSZ - 1) / BSZ : maxb; }
    const int NBr = nb + 2;
    const size_t cache = (size_t)NBr * BSZ * G * Dd, cf = (cache + 3) / 4;
    const float scales[2 * G] = {0.25f, 2.0f, 0.5f, 1.0f};
    zp_attn_dims d = {.n_layers = 1,
                      .n_heads = H,
                      .n_kv_heads = G,
                      .head_dim = Dd,
                      .block_size = BSZ,
                      .num_blocks = NBr,
                      .scale = 1.0f / sqrtf((float)Dd),
                      .qk_norm_eps = 1e-6f,
                      .kv_fp8 = 1,
                      .k_scale = scales,
                      .v_scale = scales + G};
    int *tables = malloc(sizeof(int) * S * maxb), next = 0, *ids = calloc(S, sizeof(int)), *pos = calloc(S, sizeof(int));
    int *slots = malloc(sizeof(int) * S), *q0 = malloc(sizeof(int) * S), *ql = malloc(sizeof(int) * S);
    for (int s = 0; s < S; s++) {
        slots[s] = -1;
        for (int b = 0; b < maxb; b++) tables[s * maxb + b] = b < (len[s] + BSZ - 1) / BSZ ? (next++ * 37) % NBr : -1;
        q0[s] = s, ql[s] = 1;
    }
    float *kb = malloc(sizeof(float) * cf), *vb = malloc(sizeof(float) * cf), *q = malloc(sizeof(float) * S * H * Dd);
    uint8_t *k8 = (uint8_t *)kb, *v8 = (uint8_t *)vb;
    for (size_t i = 0; i < 4 * cf; i++) {
        uint8_t a = (uint8_t)(zp_rng_uniform(5, 1, 0, (uint32_t)i) * 256), b = (uint8_t)(zp_rng_uniform(5, 2, 0, (uint32_t)i) * 256);
        k8[i] = (a & 0x7f) == 0x7f ? (uint8_t)(a - 1) : a; /* E4M3's NaN codes left out */
        v8[i] = (b & 0x7f) == 0x7f ? (uint8_t)(b - 1) : b;
    }
    for (int i = 0; i < S * H * Dd; i++) q[i] = 0.05f * rnd((uint32_t)i, 9);
    zp_batch dec = {.n_tokens = S,
                    .n_seqs = S,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .seq_q_start = q0,
                    .seq_q_len = ql,
                    .seq_kv_len = len,
                    .block_tables = tables,
                    .max_blocks = maxb,
                    .n_views = 1};
    zp_backend *be[2];
    CHECK_OK(zp_backend_cpu_create(2, &be[0]));
    CHECK_OK(zp_backend_cuda_create(0, fp32, NULL, &be[1]));
    void *KC[2], *VC[2], *Q[2], *O[2], *DS[2];
    for (int k = 0; k < 2; k++) {
        zp_attn_dims dk = d;
        KC[k] = zp_test_up(be[k], kb, ZP_ACT_F32, cf);
        VC[k] = zp_test_up(be[k], vb, ZP_ACT_F32, cf);
        Q[k] = zp_test_up(be[k], q, ZP_ACT_F32, (size_t)S * H * Dd);
        O[k] = zp_test_buf(be[k], ZP_ACT_OPERAND, (size_t)S * H * Dd);
        DS[k] = zp_test_up(be[k], scales, ZP_ACT_F32, 2 * G);
        dk.dev_scales = DS[k];
        CHECK_OK(be[k]->set_batch(be[k], &dec));
        CHECK_OK(be[k]->attn_decode(be[k], &dk, O[k], Q[k], KC[k], VC[k], 0));
    }
    char what[64];
    snprintf(what, sizeof what, "attn_decode D %d %s", Dd, shape);
    compare(what, be[0], be[1], O[0], O[1], ZP_ACT_OPERAND, (size_t)S * H * Dd, fp32 ? 1e-4 : 2e-2);
    for (int k = 0; k < 2; k++) {
        void *bufs[] = {KC[k], VC[k], Q[k], O[k], DS[k]};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) be[k]->release(be[k], bufs[i]);
        be[k]->destroy(be[k]);
    }
    free(tables); free(kb); free(vb); free(q); free(ids); free(pos); free(slots); free(q0); free(ql);
}

/* A long sequence split over partitions among short ones (at head size 128 and 64 in bf16
 * storage the tensor-core block kernel, at 256 and in fp32 storage the CUDA-core one; 64 in
 * fp32 storage the row kernel). */
static void decode_random(int fp32, int Dd) {
    const int len[3] = {3000, 17, 700};
    decode_case(fp32, Dd, 3, len, "3 seqs");
}
/* Enough short sequences to fill the resident warps (the warp-per-item kernel in bf16 storage
 * at head size 64 and 128: 2 x SMs x 4 items; 1,200 sequences of 2 KV heads fill up to 300 SMs). */
static void decode_many(int fp32, int Dd) {
    enum { S = 1200 };
    int *len = malloc(sizeof(int) * S);
    for (int s = 0; s < S; s++) len[s] = 1 + (int)(zp_rng_uniform(6, 0, 0, (uint32_t)s) * 300);
    decode_case(fp32, Dd, S, len, "1,200 seqs");
    free(len);
}

int main(void) {
    zp_backend *probe = NULL;
    if (zp_backend_cuda_create(0, 0, NULL, &probe) != ZP_OK) {
        printf("test_cuda_kv_fp8: skipped (%s)\n", zp_last_error());
        return 77;
    }
    probe->destroy(probe);
    run(1);
    run(0);
    for (int fp32 = 1; fp32 >= 0; fp32--) {
        decode_random(fp32, 128);
        decode_random(fp32, 256);
        decode_random(fp32, 64);
        decode_many(fp32, 128);
        decode_many(fp32, 64);
    }
    return zp_test_finish("test_cuda_kv_fp8");
}
