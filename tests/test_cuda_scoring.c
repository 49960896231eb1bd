/* test_cuda_scoring.c (label gpu) - the device compression path (backend op `compress`: score
 * plan on the GPU, top-k, batched compaction) against the host path (zp_compress_host: the same
 * plan run by scorers/plan.c on keys gathered to the host, then kv_compact), on one CUDA backend and the
 * same random caches, for every evicting policy and the Zipage ablation switches. Two rounds:
 * a first compression of three requests (in place and into fresh blocks), then a second one
 * that reads the history scores the first stored. Expected: the same tokens kept (compacted
 * K and V bit-identical, both paths copy the same stored values; in R-KV's score order the same
 * order too, except that in bf16 storage near-equal scores may swap) and history scores within
 * 1e-4 relative (only summation order differs). Both storage precisions; nine of the cases again
 * with the K/V caches in fp8 E4M3 (per-head scales). Exits 77 without a GPU.
 */
#include <math.h>
#include <string.h>

#include "compress.h"
#include "model.h"
#include "sampler.h"
#include "test_util.h"

enum { L = 2, HQ = 8, HKV = 2, D = 64, BS = 16, NB = 64, W = 8, NMAX = 4, NREQ = 3, BUDGET = NMAX * BS };

static float rnd(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(7, s, 0, i) - 1.0f; }

typedef struct {
    zp_kv_storage kv[2]; /* [0] host path, [1] device path */
    void *qkv, *q;       /* activations of the fill batch */
} caches;

/* Writes K/V of `nt` tokens at `slots` (positions `pos`) into every layer of both copies and
 * the queries of rows qrows[i] to query slots qslots[i]; qkv values from seed `seed`. */
static void fill(zp_backend *be, caches *c, int nt, const int *slots, const int *pos, int nq, const int *qrows, const int *qslots,
                 uint32_t seed) {
    const size_t row = (size_t)(HQ + 2 * HKV) * D;
    float *x = malloc(sizeof(float) * nt * row);
    int *ids = calloc((size_t)nt, sizeof(int));
    for (int l = 0; l < L; l++) {
        for (size_t i = 0; i < nt * row; i++) x[i] = rnd((uint32_t)i, seed + 17u * (uint32_t)l);
        for (int t = 0; t < nt; t++) /* a few near-duplicate keys, so redundancy has partners above theta */
            if (t % 5 == 1)
                for (int e = 0; e < HKV * D; e++) x[t * row + HQ * D + e] = x[(t - 1) * row + HQ * D + e] + 0.05f * rnd((uint32_t)(t * 999 + e), seed + 3);
        CHECK_OK(be->from_host(be, c->qkv, ZP_ACT_OPERAND, x, 0, nt * row));
        zp_batch b = {.n_tokens = nt, .n_seqs = 0, .token_ids = ids, .positions = pos, .slot_mapping = slots,
                      .n_qstore = nq, .qstore_rows = qrows, .qstore_slots = qslots};
        CHECK_OK(be->set_batch(be, &b));
        for (int k = 0; k < 2; k++) {
            zp_kv_storage *kv = &c->kv[k];
            CHECK_OK(be->qkv_rope_store(be, &kv->dims, c->qkv, c->q, NULL, NULL, kv->k, kv->v, l));
            CHECK_OK(be->query_store(be, &kv->dims, c->q, kv->q, l));
        }
    }
    free(x);
    free(ids);
}

/* Rows of head block x [n][D] that are not in y [n][D] (as a multiset). */
static int rows_missing(const float *x, const float *y, int n) {
    int missing = 0;
    uint8_t used[BUDGET] = {0};
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int j = 0; j < n && !found; j++)
            if (!used[j] && !memcmp(x + (size_t)i * D, y + (size_t)j * D, sizeof(float) * D)) used[j] = found = 1;
        missing += !found;
    }
    return missing;
}

/* Compares what both paths left at the requests' tables: K and V exactly, S within 1e-4. With
 * `sets` (a score-order plan in bf16 storage) the kept rows of each head must be the same set
 * and may stand in another order: two kept tokens whose scores differ by less than the paths'
 * summation-order error can swap places in score order without changing the kept set. */
static void compare_paths(zp_backend *be, caches *c, const zp_compress_item *items, int with_scores, int sets,
                          const char *what) {
    const int n = BUDGET;
    float *a = malloc(sizeof(float) * HKV * n * D), *b = malloc(sizeof(float) * HKV * n * D);
    int tokens_differ = 0, not_in_set = 0;
    double sdiff = 0, smax = 0;
    for (int r = 0; r < NREQ; r++)
        for (int l = 0; l < L; l++) {
            for (int kvv = 0; kvv < 2; kvv++) {
                CHECK_OK(be->key_gather(be, &c->kv[0].dims, kvv ? c->kv[0].v : c->kv[0].k, l, items[r].blocks, n, a));
                CHECK_OK(be->key_gather(be, &c->kv[1].dims, kvv ? c->kv[1].v : c->kv[1].k, l, items[r].blocks, n, b));
                for (int i = 0; i < HKV * n; i++) tokens_differ += memcmp(a + (size_t)i * D, b + (size_t)i * D, sizeof(float) * D) != 0;
                for (int g = 0; g < HKV; g++) not_in_set += rows_missing(a + (size_t)g * n * D, b + (size_t)g * n * D, n);
            }
            if (with_scores) {
                CHECK_OK(be->score_read(be, &c->kv[0].dims, c->kv[0].score, l, items[r].blocks, n, a));
                CHECK_OK(be->score_read(be, &c->kv[1].dims, c->kv[1].score, l, items[r].blocks, n, b));
                double d = zp_max_abs_diff(a, b, HKV * n), m = zp_max_abs(a, HKV * n);
                sdiff = d > sdiff ? d : sdiff;
                smax = m > smax ? m : smax;
            }
        }
    printf("    %-7s %d (token, head) rows differ, %d not in the other's kept set; history max|diff| %.2e of %.2e\n", what, tokens_differ,
           not_in_set, sdiff, smax);
    CHECK(not_in_set == 0);
    CHECK(sets || tokens_differ == 0);
    CHECK(tokens_differ <= HKV * n * L * NREQ / 50); /* a swap of near-equal scores, not a reordering */
    CHECK(sdiff <= 1e-4 * smax + 1e-6);
    free(a);
    free(b);
}

/* TriAttention's inputs as compressor_load_trig leaves them, without a file: seeded statistics
 * [L][Hq][3][D/2] (mean query parts in [-1, 1), mean moduli above their modulus) and the RoPE
 * frequencies main gives rope_init. */
static void trig_inputs(zp_compressor *c, const char *params) {
    const size_t F = D / 2, n = (size_t)L * HQ * 3 * F;
    c->trig_stats = malloc(sizeof(float) * n);
    c->trig_freqs = malloc(sizeof(float) * F);
    CHECK(c->trig_stats && c->trig_freqs);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < (size_t)L * HQ; i++) {
        float *q = c->trig_stats + i * 3 * F;
        for (size_t f = 0; f < F; f++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            q[f] = (float)((x >> 40) & 0xFFFF) / 32768.f - 1.f;
            q[F + f] = (float)((x >> 20) & 0xFFFF) / 32768.f - 1.f;
            q[2 * F + f] = sqrtf(q[f] * q[f] + q[F + f] * q[F + f]) + (float)((x >> 8) & 0xFF) / 256.f;
        }
    }
    for (size_t i = 0; i < F; i++) c->trig_freqs[i] = 1.0f / powf(10000.f, 2.f * (float)i / D);
    c->trig_across = !strstr(params, "per_layer_perhead");
}

/* kv_fp8: the K/V caches in E4M3 bytes with a scale per (layer, KV head) (powers of two), as the
 * engine's kv_dtype fp8: both paths read the keys decoded x scale and move the bytes. */
static void run_case(zp_backend *be, int fp32, const char *policy, const char *params, int kv_fp8) {
    zp_model m = {0};
    m.be = be;
    m.cfg.n_layers = L; m.cfg.n_heads = HQ; m.cfg.n_kv_heads = HKV; m.cfg.head_dim = D;
    caches c;
    static const float scales[2 * L * HKV] = {0.5f, 0.25f, 1.0f, 2.0f, 2.0f, 0.5f, 0.125f, 1.0f}; /* [side][layer][head] */
    void *dev_scales = NULL;
    if (kv_fp8) {
        CHECK_OK(be->alloc(be, 2 * L * HKV, ZP_ACT_F32, &dev_scales));
        CHECK_OK(be->from_host(be, dev_scales, ZP_ACT_F32, scales, 0, 2 * L * HKV));
    }
    /* KV head 0 of the model is head 3 (a tensor-parallel rank): seeded draws hash 3.. */
    zp_attn_dims dims = {.n_layers = L,
                         .n_heads = HQ,
                         .n_kv_heads = HKV,
                         .head_dim = D,
                         .block_size = BS,
                         .num_blocks = NB,
                         .scale = 1.0f / 8.0f,
                         .qk_norm_eps = 1e-6f,
                         .window = W,
                         .n_qslots = NREQ,
                         .kv_head0 = 3,
                         .kv_fp8 = kv_fp8,
                         .k_scale = kv_fp8 ? scales : NULL,
                         .v_scale = kv_fp8 ? scales + L * HKV : NULL,
                         .dev_scales = dev_scales};
    const size_t n_kv = (size_t)L * NB * BS * HKV * D;
    for (int k = 0; k < 2; k++) {
        zp_kv_storage *kv = &c.kv[k];
        kv->dims = dims;
        if (kv_fp8) { /* n_kv bytes each, held as fp32 elements (as zp_model_kv_alloc_typed) */
            CHECK_OK(be->alloc(be, (n_kv + 3) / 4, ZP_ACT_F32, &kv->k));
            CHECK_OK(be->alloc(be, (n_kv + 3) / 4, ZP_ACT_F32, &kv->v));
        } else {
            CHECK_OK(be->alloc_cache(be, n_kv, &kv->k));
            CHECK_OK(be->alloc_cache(be, n_kv, &kv->v));
        }
        CHECK_OK(be->alloc_cache(be, (size_t)L * NREQ * W * HQ * D, &kv->q));
        CHECK_OK(be->alloc(be, (size_t)L * NB * BS * HKV, ZP_ACT_F32, &kv->score)); /* fp32 on every backend */
    }
    CHECK_OK(be->alloc(be, (size_t)NREQ * 6 * BS * (HQ + 2 * HKV) * D, ZP_ACT_OPERAND, &c.qkv));
    CHECK_OK(be->alloc(be, (size_t)NREQ * 6 * BS * HQ * D, ZP_ACT_F32, &c.q));
    /* requests: 80, 96 and 80 tokens; request 1 compacts into fresh blocks, the others in place */
    const int nblk[NREQ] = {5, 6, 5};
    int tables[NREQ][8], targets[NREQ][8], next = 1;
    zp_compress_item sq[NREQ];
    int slots[NREQ * 6 * BS], pos[NREQ * 6 * BS], qrows[NREQ * W], qslots[NREQ * W], nt = 0, nq = 0;
    for (int r = 0; r < NREQ; r++) {
        for (int i = 0; i < nblk[r]; i++) tables[r][i] = (next++ * 7) % NB; /* scattered, distinct (7 is prime to 64) */
        for (int i = 0; i < NMAX; i++) targets[r][i] = r == 1 ? (next++ * 7) % NB : tables[r][i];
        for (int t = 0; t < nblk[r] * BS; t++, nt++) { slots[nt] = tables[r][t / BS] * BS + t % BS; pos[nt] = t; }
        for (int j = 0; j < W; j++, nq++) { qrows[nq] = nt - W + j; qslots[nq] = r * W + j; }
        sq[r] = (zp_compress_item){.request_id = r,
                                   .n_kv = nblk[r] * BS,
                                   .blocks = tables[r],
                                   .n_blocks = nblk[r],
                                   .qid = r,
                                   .target = targets[r],
                                   .next_pos = nblk[r] * BS,
                                   .n_prompt = 10 + 7 * r}; /* TriAttention's protected prompt and next position */
    }
    fill(be, &c, nt, slots, pos, nq, qrows, qslots, 11);
    zp_compressor comp[2];
    for (int k = 0; k < 2; k++) {
        zp_kv_geometry geo;
        CHECK_OK(zp_geometry_resolve(policy_find(policy), BS, NMAX, W, &geo));
        CHECK_OK(compressor_init(&comp[k], policy_find(policy), params, &geo, 0));
        comp[k].device = k;
        if (!strcmp(policy, "triattention")) trig_inputs(&comp[k], params);
    }
    zp_score_plan pl;
    CHECK_OK(policy_plan(&comp[0].policy, BUDGET, W, &pl));
    for (int k = 0; k < 2; k++) comp[k].history_live = pl.history_live; /* as an engine's plan settles it */
    const int hist = comp[0].policy.ops->needs_history, sets = !fp32 && pl.order_score;
    printf("  %-6s %-9s%s %s\n", fp32 ? "fp32" : "bf16", policy, kv_fp8 ? " fp8 KV" : "", params ? params : "");
    for (int k = 0; k < 2; k++) CHECK_OK(compressor_run(&comp[k], &m, &c.kv[k], sq, NREQ));
    for (int r = 0; r < NREQ; r++) { sq[r].blocks = targets[r]; sq[r].n_blocks = NMAX; sq[r].n_kv = BUDGET; sq[r].compressed = 1; }
    compare_paths(be, &c, sq, hist, sets, "round 1");
    /* round 2: one more block per request (fresh), new window queries, history from round 1 */
    nt = nq = 0;
    for (int r = 0; r < NREQ; r++) {
        targets[r][NMAX] = (next++ * 7) % NB;
        for (int t = 0; t < BS; t++, nt++) { slots[nt] = targets[r][NMAX] * BS + t; pos[nt] = nblk[r] * BS + t; }
        for (int j = 0; j < W; j++, nq++) { qrows[nq] = nt - W + j; qslots[nq] = r * W + j; }
    }
    fill(be, &c, nt, slots, pos, nq, qrows, qslots, 23);
    int targets2[NREQ][NMAX];
    for (int r = 0; r < NREQ; r++) {
        for (int i = 0; i < NMAX; i++) targets2[r][i] = targets[r][i];
        sq[r].n_blocks = NMAX + 1;
        sq[r].n_kv = (NMAX + 1) * BS;
        sq[r].target = targets2[r];
        sq[r].next_pos = (nblk[r] + 1) * BS;
    }
    for (int k = 0; k < 2; k++) CHECK_OK(compressor_run(&comp[k], &m, &c.kv[k], sq, NREQ));
    compare_paths(be, &c, sq, hist, sets, "round 2");
    CHECK(comp[1].stats.compressions == 2 * NREQ && comp[0].stats.compressions == 2 * NREQ);
    for (int k = 0; k < 2; k++) {
        compressor_free(&comp[k]);
        void *bufs[4] = {c.kv[k].k, c.kv[k].v, c.kv[k].q, c.kv[k].score};
        for (int i = 0; i < 4; i++) be->release(be, bufs[i]);
    }
    be->release(be, c.qkv);
    be->release(be, c.q);
    if (dev_scales) be->release(be, dev_scales);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    static const char *const cases[][2] = {
        {"streaming", NULL}, {"streaming", "{\"position_shift\": true}"}, {"h2o", NULL}, {"snapkv-d", NULL}, {"rkv", NULL}, {"rkv", "{\"parity\": false}"}, {"morphkv", NULL},
        {"morphkv", "{\"fusion\": \"sum\"}"}, {"morphkv", "{\"rows\": \"window\"}"}, {"zipage", NULL}, {"zipage", "{\"lightning\": false}"},
        {"zipage", "{\"global_mode\": \"sum\", \"continues_pooling\": true, \"use_sink\": true}"},
        {"zipage", "{\"use_redundancy\": false, \"max_norm\": true}"}, {"zipage", "{\"use_global\": false, \"use_pooling\": false}"},
        {"gkv", NULL}, {"gkv", "{\"clip_history\": false, \"smooth\": \"sum\", \"pooling\": true}"}, {"morphkv", "{\"gqa\": \"sum_logit\"}"},
        {"rkv", "{\"gqa\": \"max_prob\", \"keys\": \"all\", \"kernel\": 5, \"order\": \"position\", \"parity\": false}"}, {"snapkv-d", "{\"gqa\": \"max_prob\", \"keys\": \"all\"}"},
        {"snapkv", NULL}, {"snapkv", "{\"gqa\": \"max_prob\", \"kernel\": 5}"}, {"rkv", "{\"order\": \"position\"}"},
        {"snapkv-d", "{\"order\": \"position\", \"kernel\": 3}"}, {"rkv", "{\"parity\": true, \"lambda\": 0.5}"},
        {"tova", NULL}, {"keynorm", NULL}, {"keydiff", NULL}, {"random", NULL}, {"random", "{\"seed\": 3}"},
        {"triattention", "{\"stats\": \"seeded\"}"}, {"triattention", "{\"stats\": \"seeded\", \"mode\": \"union\"}"},
        {"triattention", "{\"stats\": \"seeded\", \"mode\": \"per_layer_perhead\"}"},
    };
    for (int fp32 = 1; fp32 >= 0; fp32--) {
        zp_backend *be;
        if (zp_backend_cuda_create(0, fp32, NULL, &be) != ZP_OK) {
            printf("test_cuda_scoring: skipped (%s)\n", zp_last_error());
            return 77;
        }
        float inv[D / 2];
        for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / D);
        CHECK_OK(be->rope_init(be, inv, D / 2, 1.0f));
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(be, fp32, cases[i][0], cases[i][1], 0);
        /* an fp8 cache (issue 39): every stage of the plans reading E4M3 keys (window attention,
         * key scores, both redundancies, history), compaction and its shift and order on bytes */
        static const char *const fp8_cases[][2] = {{"streaming", "{\"position_shift\": true}"}, {"h2o", NULL}, {"snapkv-d", NULL},
                                                   {"rkv", NULL}, {"zipage", NULL}, {"zipage", "{\"lightning\": false}"}, {"keydiff", NULL},
                                                   {"keynorm", NULL}, {"tova", NULL}, {"triattention", "{\"stats\": \"seeded\"}"}};
        for (size_t i = 0; i < sizeof fp8_cases / sizeof fp8_cases[0]; i++) run_case(be, fp32, fp8_cases[i][0], fp8_cases[i][1], 1);
        be->destroy(be);
    }
    return zp_test_finish("test_cuda_scoring");
}
