/* test_kv_fp8.c - the K/V cache in FP8 E4M3 on the CPU backend (kv_dtype fp8, issue 39).
 * Ops: keys and values written through a scattered block table with a scale per (layer, KV head)
 * (powers of two from 1/8 to 4) are, byte for byte, zp_f32_to_e4m3(the fp32 cache's value / scale) (test_fp8 ties that
 * conversion to ml_dtypes' and torch's float8_e4m3fn); attention, the attention history and the
 * key gather over the fp8 cache equal, bit for bit, the same ops over an fp32 cache holding its
 * decoded values (byte's value x scale); compaction with StreamingLLM's position shift moves the
 * bytes and re-rounds the re-rotated keys, and compaction in a policy's order moves whole rows,
 * each as compacting the decoded cache and rounding it.
 * Engine: every policy runs with kv_dtype fp8 (invariants every step, compressions under way), a
 * shared prompt is served from the prefix cache, a pool of the same bytes holds four times the
 * fp32 tokens, and prefill logits move from the fp32 cache's but stay close. Refusal: an
 * unknown kv_dtype. What it does not check: CUDA (test_cuda_kv_fp8 and test_cuda_engine, on the GPU). */
#include <math.h>
#include <string.h>

#include "backend.h"
#include "dtype.h"
#include "engine.h"
#include "model.h"
#include "policy.h"
#include "test_runner.h"
#include "test_util.h"

enum { Hq = 4, Hkv = 2, D = 16, BS = 4, NB = 12, L = 2, LAYER = 1, T = 17, W = (Hq + 2 * Hkv) * D, CACHE = L * NB * BS * Hkv * D };

static float rnd(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(43, s, 0, i) - 1.0f; }

/* The K (side 0) or V (side 1) scale of cache element i ([L][NB][BS][Hkv][D]): scales [2][L][Hkv]. */
static float scale_of(const float *scales, int side, int i) {
    const int l = i / (NB * BS * Hkv * D), g = i / D % Hkv;
    return scales[(side * L + l) * Hkv + g];
}

/* Bytes of layer LAYER's fp8 caches that are not e4m3(decoded fp32 cache / scale). */
static int layer_differs(const uint8_t *k8, const uint8_t *v8, const float *kd, const float *vd, const float *scales) {
    const int per_layer = NB * BS * Hkv * D;
    int bad = 0;
    for (int i = LAYER * per_layer; i < (LAYER + 1) * per_layer; i++)
        bad += k8[i] != zp_f32_to_e4m3(kd[i] / scale_of(scales, 0, i)) || v8[i] != zp_f32_to_e4m3(vd[i] / scale_of(scales, 1, i));
    return bad;
}

static void test_ops(zp_backend *be) {
    const int len[2] = {7, 10};
    const int bt[2][4] = {{9, 2, -1, -1}, {5, 11, 0, 7}};
    /* K of layers 0, 1 (a scale per KV head), then V: powers of two, exact to divide by */
    const float scales[2 * L * Hkv] = {1.0f, 0.25f, 0.5f, 2.0f, 1.0f, 4.0f, 2.0f, 0.125f};
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = Hq,
                      .n_kv_heads = Hkv,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.0f / sqrtf(D),
                      .qk_norm_eps = 1e-6f};
    zp_attn_dims d8 = d;
    d8.kv_fp8 = 1, d8.k_scale = scales, d8.v_scale = scales + L * Hkv;
    float inv[D / 2];
    for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
    CHECK_OK(be->rope_init(be, inv, D / 2, 1.0f));
    static float qkv[T * W], q[T * Hq * D], q8[T * Hq * D], kc[CACHE], vc[CACHE], kd[CACHE], vd[CACHE], qn[D], kn[D];
    static uint8_t k8[CACHE], v8[CACHE];
    for (int i = 0; i < T * W; i++) qkv[i] = 3.0f * rnd((uint32_t)i, 1); /* some values past E4M3's subnormals, none near 448 */
    for (int i = 0; i < D; i++) qn[i] = 1.0f + 0.5f * rnd((uint32_t)i, 2), kn[i] = 1.0f + 0.5f * rnd((uint32_t)i, 3);
    int ids[T] = {0}, pos[T], slots[T], q0[2] = {0, 7}, ql[2] = {7, 10}, kvl[2] = {7, 10};
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
    memset(kc, 0, sizeof kc), memset(vc, 0, sizeof vc), memset(k8, 0, sizeof k8), memset(v8, 0, sizeof v8);
    CHECK_OK(be->qkv_rope_store(be, &d, qkv, q, qn, kn, kc, vc, LAYER));
    CHECK_OK(be->qkv_rope_store(be, &d8, qkv, q8, qn, kn, k8, v8, LAYER));
    CHECK(!memcmp(q, q8, sizeof q)); /* queries are not the cache's */
    int bad = 0, nonzero = 0;
    for (int i = 0; i < CACHE; i++) {
        bad += k8[i] != zp_f32_to_e4m3(kc[i] / scale_of(scales, 0, i)) || v8[i] != zp_f32_to_e4m3(vc[i] / scale_of(scales, 1, i));
        nonzero += k8[i] != 0;
        kd[i] = zp_e4m3_to_f32(k8[i]) * scale_of(scales, 0, i);
        vd[i] = zp_e4m3_to_f32(v8[i]) * scale_of(scales, 1, i);
    }
    printf("fp8 cache: %d of %d bytes differ from e4m3(fp32 / scale); %d keys written\n", bad, 2 * CACHE, nonzero);
    CHECK(bad == 0 && nonzero > T * Hkv * D / 2);
    /* reads: the fp8 cache's ops equal the fp32 ops over its decoded values */
    static float o8[T * Hq * D], od[T * Hq * D], g8[T * Hkv * D], gd[T * Hkv * D];
    CHECK_OK(be->attn_prefill(be, &d8, o8, q, k8, v8, LAYER));
    CHECK_OK(be->attn_prefill(be, &d, od, q, kd, vd, LAYER));
    CHECK(!memcmp(o8, od, sizeof o8));
    CHECK(zp_max_abs(o8, T * Hq * D) > 0);
    const int table[3] = {5, 11, 0};
    CHECK_OK(be->key_gather(be, &d8, k8, LAYER, table, 10, g8));
    CHECK_OK(be->key_gather(be, &d, kd, LAYER, table, 10, gd));
    CHECK(!memcmp(g8, gd, sizeof(float) * 10 * Hkv * D));
    static float sc8[L * NB * BS * Hkv], scd[L * NB * BS * Hkv], st8[T * Hq * 2], std_[T * Hq * 2];
    CHECK_OK(be->attn_history(be, &d8, q, k8, sc8, st8, LAYER));
    CHECK_OK(be->attn_history(be, &d, q, kd, scd, std_, LAYER));
    CHECK(!memcmp(sc8, scd, sizeof sc8) && !memcmp(st8, std_, sizeof st8));
    /* compaction with a position shift (sequence 1, keep every other token into its first blocks) */
    uint8_t keep[Hkv * 10];
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < 10; t++) keep[g * 10 + t] = t % 2 == 0;
    const int src[3] = {5, 11, 0}, dst[2] = {5, 11};
    CHECK_OK(be->kv_compact(be, &d8, k8, v8, NULL, LAYER, src, 10, dst, keep, NULL, NULL, 1));
    CHECK_OK(be->kv_compact(be, &d, kd, vd, NULL, LAYER, src, 10, dst, keep, NULL, NULL, 1));
    CHECK(layer_differs(k8, v8, kd, vd, scales) == 0);
    /* compaction in a policy's order (R-KV's score order): the kept rows reversed, bytes moved whole */
    int order[Hkv * 10];
    for (int g = 0; g < Hkv; g++)
        for (int i = 0, m = 0; i < 10; i++) order[g * 10 + i] = i < 5 ? 8 - 2 * m++ : -1; /* kept tokens 8, 6, 4, 2, 0 */
    for (int g = 0; g < Hkv; g++)
        for (int t = 0; t < 10; t++) keep[g * 10 + t] = t % 2 == 0;
    const int src2[3] = {5, 11, 0}, dst2[2] = {5, 11}; /* 10 tokens in 3 blocks, the 5 kept into 2 */
    static uint8_t kb[CACHE];
    memcpy(kb, k8, sizeof kb);
    CHECK_OK(be->kv_compact(be, &d8, k8, v8, NULL, LAYER, src2, 10, dst2, keep, NULL, order, 0));
    CHECK_OK(be->kv_compact(be, &d, kd, vd, NULL, LAYER, src2, 10, dst2, keep, NULL, order, 0));
    CHECK(layer_differs(k8, v8, kd, vd, scales) == 0);
    CHECK(memcmp(kb, k8, sizeof kb) != 0); /* the order moved rows */
}

/* Every policy with kv_dtype fp8 against itself with the fp32 cache: both run their requests
 * whole; agreement is reported (random weights: near-ties flip under rounding), not asserted. */
static void test_policies(void) {
    const zp_policy_ops *const *reg = policy_registry();
    int64_t all_same = 0, all_tokens = 0;
    for (int p = 0; reg[p]; p++) {
        if (reg[p]->needs_stats)
            continue; /* TriAttention runs with its statistics file: its own tests (test_triattention_engine) */
        run_spec rs = run_spec_zipage("tiny-qwen3");
        rs.ec.policy = reg[p]->name;
        rs.check_invariants = 1;
        rs.sp.max_tokens = 40;
        rs.n_req = 3;
        rs.prompt_len = 30; /* 30, 37, 44 tokens: two prompts past SnapKV's budget of 32 */
        run_result a, f;
        run_requests(&rs, &a);
        rs.ec.kv_dtype = "fp8";
        run_requests(&rs, &f);
        int same = 0;
        for (int r = 0; r < rs.n_req * rs.samples; r++)
            for (int i = 0; i < f.n[r] && i < a.n[r] && f.tokens[r][i] == a.tokens[r][i]; i++) same++;
        printf("  %-9s fp8: %lld tokens, %lld compressions; %d of %lld tokens as with the fp32 cache before the first difference\n", reg[p]->name,
               (long long)f.st.generated_tokens, (long long)f.st.compressions, same, (long long)a.st.generated_tokens);
        all_same += same, all_tokens += f.st.generated_tokens;
        CHECK(f.st.generated_tokens == (int64_t)rs.n_req * rs.samples * rs.sp.max_tokens);
        if (reg[p]->evicts) CHECK(f.st.compressions > 0);
        run_result_free(&a);
        run_result_free(&f);
    }
    CHECK(all_same < all_tokens); /* the rounding reached the tokens somewhere: the engine read fp8 */
}

static void test_engine(void) {
    /* a shared prompt: the second request's full blocks come from the prefix cache */
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.ec.kv_dtype = "fp8";
    rs.shared_prompt = 1;
    rs.prompt_len = 40;
    rs.check_invariants = 1;
    run_result r;
    run_requests(&rs, &r);
    CHECK(r.st.prefix_hit_tokens > 0);
    run_result_free(&r);
    /* the same bytes: four times the blocks of the fp32 cache */
    int nb[2];
    for (int k = 0; k < 2; k++) {
        zp_engine_config c = zp_engine_config_default();
        c.model_dir = zp_test_model("tiny-qwen3");
        c.block_size = 16;
        c.kv_pool_bytes = 8 << 20;
        c.kv_dtype = k ? "fp8" : "auto";
        zp_engine *e;
        CHECK_OK(zp_engine_init(&c, &e));
        if (!e) return;
        zp_engine_stats st;
        zp_engine_get_stats(e, &st);
        nb[k] = st.num_blocks;
        CHECK(e->kv.dims.kv_fp8 == k); /* the storage, not only the accounting */
        CHECK(zp_engine_block_bytes(e) == zp_model_kv_block_bytes(zp_engine_model_config(e), 16, k ? 1 : 4));
        zp_engine_free(e);
    }
    printf("8 MiB of KV: %d blocks with the fp32 cache, %d with fp8\n", nb[0], nb[1]);
    CHECK(nb[1] >= 4 * nb[0] - 1 && nb[1] <= 4 * nb[0] + 1);
    /* prefill logits: moved by the rounding, not far */
    zp_engine_config c = zp_engine_config_default();
    c.model_dir = zp_test_model("tiny-qwen3");
    int prompt[64];
    for (int i = 0; i < 64; i++) prompt[i] = (i * 37 + 11) % 1000;
    float *lg[2];
    int rows, V;
    for (int k = 0; k < 2; k++) {
        c.kv_dtype = k ? "fp8" : "auto";
        CHECK_OK(zp_prompt_logits(&c, prompt, 64, 1, &lg[k], &rows, &V));
    }
    const double diff = zp_max_abs_diff(lg[0], lg[1], (size_t)rows * V), scale = zp_max_abs(lg[0], (size_t)rows * V);
    printf("prefill logits, fp8 against the fp32 cache: largest difference %.3g of the largest logit %.3g\n", diff, scale);
    CHECK(diff > 0 && diff < 0.25 * scale);
    free(lg[0]);
    free(lg[1]);
    /* refusals */
    c.kv_dtype = "fp16";
    zp_engine *e;
    CHECK_FAILS(zp_engine_init(&c, &e), ZP_ERR_INVALID, "neither auto nor fp8");
}

int main(void) {
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(2, &be));
    test_ops(be);
    be->destroy(be);
    test_policies();
    test_engine();
    return zp_test_finish("test_kv_fp8");
}
