/* test_policies.c - the worked examples of eviction-policies.md at the component level, each
 * scorer against a naive implementation on random inputs, and every registered policy's
 * contract (exactly `budget` kept per head, window always kept, parameters validated). */
#include <math.h>
#include <string.h>

#include "policy.h"
#include "sampler.h"
#include "test_util.h"

static float frand(uint32_t i, uint32_t s) { return 2.0f * zp_rng_uniform(77, s, 0, i) - 1.0f; }

static void expect_keep(const uint8_t *keep, int n, const int *want, int n_want, const char *what) {
    int ok = 1, count = 0;
    for (int t = 0; t < n; t++) count += keep[t];
    ok = count == n_want;
    for (int i = 0; i < n_want; i++) ok = ok && keep[want[i]];
    if (!ok) {
        fprintf(stderr, "%s: kept {", what);
        for (int t = 0; t < n; t++) if (keep[t]) fprintf(stderr, " %d", t);
        fprintf(stderr, " }\n");
    }
    CHECK(ok);
}

/* One-hot keys e_t (D = n) and queries whose logit against e_t is ln p[t]: softmax gives p. */
static void onehot_view(zp_score_view *v, float *keys, float *q, int n, int w, int G, const float *probs /*[w][G][n]*/) {
    memset(keys, 0, sizeof(float) * n * n);
    for (int t = 0; t < n; t++) keys[t * n + t] = 1.f;
    for (int j = 0; j < w; j++)
        for (int g = 0; g < G; g++)
            for (int t = 0; t < n; t++) {
                float p = probs[(j * G + g) * n + t];
                q[(j * G + g) * n + t] = p > 0 ? logf(p) : -1e4f;
            }
    *v = (zp_score_view){.n = n, .head_dim = n, .group = G, .window = w, .scale = 1.0f, .keys = keys, .queries = q};
}

static void test_streaming_example(void) {
    zp_policy p;
    CHECK_OK(policy_create("streaming", "{\"sink\": 2}", &p));
    uint8_t keep[8];
    float scratch[6 * 8 + 8];
    zp_select_input in = {.view = {.n = 8, .head_dim = 1, .window = 1}, .budget = 5, .scratch = scratch};
    CHECK_OK(policy_select(&p, &in, keep, NULL, NULL));
    const int want[] = {0, 1, 5, 6, 7};
    expect_keep(keep, 8, want, 5, "streaming S=2 R=3");
    policy_destroy(&p);
}

static void test_h2o_example(void) {
    const float H[4] = {2.5f, .6f, .7f, .2f}, A[5] = {.35f, .05f, .25f, .15f, .20f};
    float S[5];
    scorer_cumulative(A, H, 5, 4, S);
    const float want_s[5] = {2.85f, .65f, .95f, .35f, .20f};
    for (int t = 0; t < 5; t++) CHECK_NEAR(S[t], want_s[t], 1e-6);
    uint8_t keep[5];
    scorer_keep_topk_recent(S, 5, 4, 2, keep); /* hh 2 + recent 2 */
    const int want[] = {0, 2, 3, 4};
    expect_keep(keep, 5, want, 4, "h2o hh2 recent2");
}

static void test_snapkv_example(void) {
    const float s[6] = {.10f, .60f, .05f, .15f, .30f, .20f};
    float pooled[6];
    uint8_t keep[8];
    scorer_topk(s, 6, 3, keep);
    keep[6] = keep[7] = 1;
    const int none[] = {1, 4, 5, 6, 7};
    expect_keep(keep, 8, none, 5, "snapkv no pooling");
    scorer_max_pool(s, 6, 3, pooled);
    const float want_p[6] = {.6f, .6f, .6f, .3f, .3f, .3f};
    for (int t = 0; t < 6; t++) CHECK_NEAR(pooled[t], want_p[t], 1e-7);
    scorer_topk(pooled, 6, 3, keep);
    const int maxk3[] = {0, 1, 2, 6, 7};
    expect_keep(keep, 8, maxk3, 5, "snapkv max k=3");
}

static void test_rkv_example(void) {
    const float keys[12] = {1, 0, 1, 0, 0, 1, 1, 0, .6f, .8f, -1, 0};
    float r[6], R[6], kn[12], f[6];
    scorer_redundancy_raw(keys, 6, 2, 0.5f, 1, r, kn);
    const float m[6] = {.4333f, .2667f, .1333f, .1667f, -.1f, -.6f};
    for (int t = 0; t < 6; t++) CHECK_NEAR(r[t] / 6, m[t], 1e-4);
    scorer_softmax(r, 6, 6.f, R);
    const float want_r[6] = {.2328f, .1971f, .1725f, .1783f, .1366f, .0828f};
    for (int t = 0; t < 6; t++) CHECK_NEAR(R[t], want_r[t], 1e-4);
    const float a[6] = {.40f, .30f, .10f, .20f, 0, 0};
    const struct { float lambda; int k0, k1; } cases[] = {{0.1f, 2, 3}, {0.07f, 2, 3}, {0.5f, 0, 1}};
    for (int c = 0; c < 3; c++) {
        scorer_mix(a, R, 6, cases[c].lambda, f);
        uint8_t keep[6];
        scorer_keep_topk_recent(f, 6, 4, 2, keep);
        const int want[] = {cases[c].k0, cases[c].k1, 4, 5};
        expect_keep(keep, 6, want, 4, "rkv lambda");
    }
    scorer_mix(a, R, 6, 0.1f, f);
    CHECK_NEAR(f[0], -.1695, 2e-4);
    CHECK_NEAR(f[3], -.1405, 2e-4);
    /* without the quirk token 0 keeps the similarity it shares with token 5 */
    scorer_redundancy_raw(keys, 6, 2, 0.5f, 0, r, kn);
    CHECK_NEAR(r[0], 1.6, 1e-5);
}

static void test_lightning_examples(void) {
    const float dup[8] = {1, 0, 1, 0, 1, 0, 0, 1};
    float r[6], R[4], kn[12];
    scorer_redundancy_lightning(dup, 4, 2, 4, 0.5f, r, kn);
    const float rows[4] = {2, 1, 0, 0};
    for (int t = 0; t < 4; t++) CHECK_NEAR(r[t], rows[t], 1e-6);
    scorer_softmax(r, 4, 0.4f * 4, R);
    const float want[4] = {.4743f, .2539f, .1359f, .1359f};
    for (int t = 0; t < 4; t++) CHECK_NEAR(R[t], want[t], 1e-4);
    const float six[12] = {1, 0, 1, 0, 0, 1, 1, 0, .6f, .8f, -1, 0};
    scorer_redundancy_lightning(six, 6, 2, 8, 0.5f, r, kn);
    const float sums[6] = {1.6f, 1.6f, .8f, 1.0f, -.6f, -3.6f};
    for (int t = 0; t < 6; t++) CHECK_NEAR(r[t], sums[t], 1e-5);
}

static void test_morphkv_example(void) {
    /* candidates 0-4, window rows = tokens 5 and 6 (w = 2, n = 7) */
    float probs[2 * 7] = {.05f, .35f, .55f, .02f, .03f, 0, 0, .05f, .35f, .05f, .50f, .05f, 0, 0};
    float keys[49], q[14], out[7], scratch[14];
    zp_score_view v;
    onehot_view(&v, keys, q, 7, 2, 1, probs);
    uint8_t keep[7];
    CHECK_OK(scorer_morph_history(&v, 0, out, scratch));
    const float sum[5] = {.10f, .70f, .60f, .52f, .08f};
    for (int t = 0; t < 5; t++) CHECK_NEAR(out[t], sum[t], 1e-5);
    scorer_keep_topk_recent(out, 7, 4, 2, keep);
    const int want_sum[] = {1, 2, 5, 6};
    expect_keep(keep, 7, want_sum, 4, "morphkv sum_fused");
    CHECK_OK(scorer_morph_history(&v, 1, out, scratch));
    scorer_keep_topk_recent(out, 7, 4, 2, keep);
    const int want_max[] = {2, 3, 5, 6};
    expect_keep(keep, 7, want_max, 4, "morphkv max_fused");
}

static void test_zipage_example(void) {
    /* b = 4, N_max = 1, w = 2, G = 2; rows: query at slot 6 (cannot see 7), query at slot 7 */
    const float probs[2 * 2 * 8] = {
        .30f, .05f, .05f, .20f, .05f, .05f, .30f, 0,   /* j0 head A */
        .05f, .05f, .45f, .05f, .05f, .05f, .30f, 0,   /* j0 head B */
        .25f, .05f, .05f, .25f, .05f, .05f, .10f, .20f, /* j1 head A */
        .20f, .05f, .05f, .20f, .05f, .05f, .20f, .20f, /* j1 head B */
    };
    float keys[64], q[32], A[8], scratch[16];
    zp_score_view v;
    onehot_view(&v, keys, q, 8, 2, 2, probs);
    zp_attn_opts o = {ZP_GQA_MAX_PROB, ZP_QRED_MEAN, 0, 0};
    CHECK_OK(scorer_window_attention(&v, &o, A, scratch));
    const float want_a[8] = {.275f, .05f, .25f, .225f, .05f, .05f, .25f, .10f};
    for (int t = 0; t < 8; t++) CHECK_NEAR(A[t], want_a[t], 1e-5);
    /* policy level: without history and pooling/redundancy -> {0, 2, 6, 7} */
    zp_policy p;
    CHECK_OK(policy_create("zipage", "{\"use_pooling\": false, \"use_redundancy\": false}", &p));
    float big[6 * 8 + 8 * 8], hist_out[8];
    const float H[4] = {.40f, .30f, .05f, .35f};
    uint8_t keep[8];
    zp_select_input in = {v, H, 0, 4, 4, big};
    CHECK_OK(policy_select(&p, &in, keep, hist_out, NULL));
    const int first[] = {0, 2, 6, 7};
    expect_keep(keep, 8, first, 4, "zipage no history");
    in.n_hist = 4; /* compressed before: block 0 has history */
    CHECK_OK(policy_select(&p, &in, keep, hist_out, NULL));
    const int glob[] = {0, 3, 6, 7};
    expect_keep(keep, 8, glob, 4, "zipage global decay 0.8");
    const float stored[4] = {.32f, .28f, .25f, .10f};
    const int kept_idx[4] = {0, 3, 6, 7};
    for (int i = 0; i < 4; i++) CHECK_NEAR(hist_out[kept_idx[i]], stored[i], 1e-5);
    policy_destroy(&p);
    /* mean over heads instead of max changes the answer without any history */
    o.gqa = ZP_GQA_MEAN_PROB;
    CHECK_OK(scorer_window_attention(&v, &o, A, scratch));
    const float want_mean[8] = {.20f, .05f, .15f, .175f, .05f, .05f, .225f, .10f};
    for (int t = 0; t < 8; t++) CHECK_NEAR(A[t], want_mean[t], 1e-5);
}

/* Lightning redundancy against its definition, raw against the O(n^2) formula, on random keys
 * with planted near-duplicates. */
static void test_redundancy_random(void) {
    enum { N = 40, D = 8, B = 8 };
    float keys[N * D], kn[N * D], r[N], rl[N];
    for (int i = 0; i < N * D; i++) keys[i] = frand((uint32_t)i, 1);
    for (int i = 0; i < D; i++) { keys[9 * D + i] = keys[3 * D + i] * 2.f; keys[15 * D + i] = keys[3 * D + i] + .01f; }
    double c[N][N];
    for (int x = 0; x < N; x++)
        for (int y = 0; y < N; y++) {
            double dx = 0, dy = 0, xy = 0;
            for (int i = 0; i < D; i++) { dx += keys[x * D + i] * keys[x * D + i]; dy += keys[y * D + i] * keys[y * D + i]; xy += keys[x * D + i] * keys[y * D + i]; }
            c[x][y] = x == y ? 0 : xy / sqrt(dx) / sqrt(dy);
        }
    for (int lightning = 0; lightning < 2; lightning++) {
        double want[N] = {0};
        for (int x = 0; x < N; x++)
            for (int y = 0; y < N; y++)
                if (!lightning || x / B == y / B) want[x] += c[x][y];
        for (int y = 0; y < N; y++) {
            int last = -1;
            for (int x = 0; x < N; x++)
                if (x != y && (!lightning || x / B == y / B) && c[x][y] > 0.5) last = x;
            if (last >= 0) want[last] -= c[last][y];
        }
        if (lightning) scorer_redundancy_lightning(keys, N, D, B, 0.5f, rl, kn);
        else scorer_redundancy_raw(keys, N, D, 0.5f, 0, r, kn);
        for (int x = 0; x < N; x++) CHECK_NEAR(lightning ? rl[x] : r[x], want[x], 1e-4);
    }
}

/* Window attention against a naive per-head implementation on random data (G = 3). */
static void test_attention_random(void) {
    enum { N = 30, D = 16, G = 3, W = 4 };
    float keys[N * D], q[W * G * D], out[N], scratch[2 * N];
    for (int i = 0; i < N * D; i++) keys[i] = frand((uint32_t)i, 2);
    for (int i = 0; i < W * G * D; i++) q[i] = frand((uint32_t)i, 3);
    zp_score_view v = {.n = N, .head_dim = D, .group = G, .window = W, .scale = 0.25f, .keys = keys, .queries = q};
    for (int mode = 0; mode < ZP_GQA_COUNT; mode++) {
        for (int excl = 0; excl < 2; excl++) {
            zp_attn_opts o = {(zp_gqa_reduce)mode, ZP_QRED_MEAN, excl, 0};
            CHECK_OK(scorer_window_attention(&v, &o, out, scratch));
            double want[N] = {0};
            for (int j = 0; j < W; j++) {
                int vis = excl ? N - W : N - W + j + 1;
                double z[G][N], row[N] = {0};
                for (int g = 0; g < G; g++)
                    for (int t = 0; t < vis; t++) {
                        double d = 0;
                        for (int i = 0; i < D; i++) d += (double)q[(j * G + g) * D + i] * keys[t * D + i];
                        z[g][t] = d * 0.25;
                    }
                if (mode == ZP_GQA_MAX_LOGIT || mode == ZP_GQA_SUM_LOGIT) {
                    double m = -1e30, s = 0, red[N];
                    for (int t = 0; t < vis; t++) {
                        red[t] = mode == ZP_GQA_MAX_LOGIT ? fmax(fmax(z[0][t], z[1][t]), z[2][t]) : z[0][t] + z[1][t] + z[2][t];
                        m = fmax(m, red[t]);
                    }
                    for (int t = 0; t < vis; t++) s += exp(red[t] - m);
                    for (int t = 0; t < vis; t++) row[t] = exp(red[t] - m) / s;
                } else {
                    for (int g = 0; g < G; g++) {
                        double m = -1e30, s = 0;
                        for (int t = 0; t < vis; t++) m = fmax(m, z[g][t]);
                        for (int t = 0; t < vis; t++) s += exp(z[g][t] - m);
                        for (int t = 0; t < vis; t++) {
                            double p = exp(z[g][t] - m) / s;
                            row[t] = mode == ZP_GQA_MAX_PROB ? fmax(row[t], p) : row[t] + p / G;
                        }
                    }
                }
                for (int t = 0; t < N; t++) want[t] += row[t] / W;
            }
            for (int t = 0; t < N; t++) CHECK_NEAR(out[t], want[t], 1e-5);
        }
    }
}

/* Every policy: exactly budget kept, its protected recent tokens kept, deterministic. */
/* random (kvpress RandomPress's floor): each token kept with probability budget / n whatever its
 * position, a draw of (seed, layer, head, n, t) only (the same for other keys, another one for
 * another layer, head or seed). 2,000 trials of n 64, budget 16 (trial r at layer r): each
 * position's count is 500 +- 19.4 (binomial); every one must be within 6 sigma, and the counts
 * must not follow the position (first half against second half within 3%). */
static void test_random_policy(void) {
    enum { N = 64, D = 8, BUDGET = 16, TRIALS = 2000 };
    float keys[N * D], q[D], scratch[6 * N + N * D];
    int count[N] = {0};
    zp_policy p, p2;
    CHECK_OK(policy_create("random", NULL, &p));
    CHECK_FAILS(policy_create("random", "{\"seed\": -1}", &p2), ZP_ERR_INVALID, "seed");
    CHECK_OK(policy_create("random", "{\"seed\": 7}", &p2));
    for (int i = 0; i < D; i++) q[i] = 1.f;
    int differ = 0;
    for (int r = 0; r < TRIALS; r++) {
        for (int i = 0; i < N * D; i++) keys[i] = frand((uint32_t)(r * N * D + i), 9);
        zp_select_input in = {{.n = N,
                               .head_dim = D,
                               .group = 1,
                               .window = 1,
                               .scale = 0.35f,
                               .keys = keys,
                               .queries = q,
                               .layer = r,
                               .head = 0},
                              NULL,
                              0,
                              16,
                              BUDGET,
                              scratch};
        uint8_t keep[N], again[N], other[N];
        CHECK_OK(policy_select(&p, &in, keep, NULL, NULL));
        CHECK_OK(policy_select(&p, &in, again, NULL, NULL));
        CHECK_OK(policy_select(&p2, &in, other, NULL, NULL));
        for (int i = 0; i < N * D; i++) keys[i] = frand((uint32_t)(r * N * D + i), 8); /* other keys: the same draws */
        CHECK_OK(policy_select(&p, &in, again, NULL, NULL));
        CHECK(memcmp(keep, again, N) == 0);
        differ += memcmp(keep, other, N) != 0;
        int kept = 0;
        for (int t = 0; t < N; t++) { count[t] += keep[t]; kept += keep[t]; }
        CHECK(kept == BUDGET);
    }
    CHECK(differ > TRIALS * 9 / 10);
    const double mean = (double)TRIALS * BUDGET / N, sd = sqrt(mean * (1.0 - (double)BUDGET / N));
    long first = 0, second = 0;
    for (int t = 0; t < N; t++) {
        CHECK(fabs(count[t] - mean) <= 6 * sd);
        if (t < N / 2) first += count[t]; else second += count[t];
    }
    CHECK(fabs((double)(first - second)) <= 0.03 * (first + second));
    const float d0 = scorer_key_draw(0, 3, 1, 64, 5);
    CHECK(d0 >= 0.f && d0 < 1.f && d0 == scorer_key_draw(0, 3, 1, 64, 5) && d0 != scorer_key_draw(1, 3, 1, 64, 5) &&
          d0 != scorer_key_draw(0, 3, 2, 64, 5) && d0 != scorer_key_draw(0, 4, 1, 64, 5) && d0 != scorer_key_draw(0, 3, 1, 65, 5));
    policy_destroy(&p);
    policy_destroy(&p2);
}

static void test_policy_contracts(void) {
    enum { N = 48, D = 8, G = 2, W = 4, BUDGET = 32, BS = 16 };
    float keys[N * D], q[W * G * D], H[N], hist[N], scratch[6 * N + N * D];
    for (int i = 0; i < N * D; i++) keys[i] = frand((uint32_t)i, 4);
    for (int i = 0; i < W * G * D; i++) q[i] = frand((uint32_t)i, 5);
    for (int t = 0; t < N; t++) H[t] = 0.5f + 0.5f * frand((uint32_t)t, 6);
    const zp_policy_ops *const *reg = policy_registry();
    int n_pol = 0;
    for (int i = 0; reg[i]; i++, n_pol++) {
        if (!reg[i]->evicts || reg[i]->needs_stats)
            continue; /* TriAttention runs with its statistics file: its own tests (test_triattention_engine) */
        zp_policy p;
        CHECK_OK(policy_create(reg[i]->name, NULL, &p));
        zp_select_input in = {
            {.n = N, .head_dim = D, .group = G, .window = W, .scale = 0.35f, .keys = keys, .queries = q},
            reg[i]->needs_history ? H : NULL,
            reg[i]->needs_history ? N - BS : 0,
            BS,
            BUDGET,
            scratch};
        uint8_t keep[N], keep2[N];
        CHECK_OK(policy_select(&p, &in, keep, hist, NULL));
        CHECK_OK(policy_select(&p, &in, keep2, hist, NULL));
        int count = 0;
        for (int t = 0; t < N; t++) count += keep[t];
        CHECK(count == BUDGET);
        zp_score_plan pl;
        CHECK_OK(policy_plan(&p, BUDGET, W, &pl));
        for (int t = N - (pl.recent < BUDGET ? pl.recent : BUDGET); t < N; t++) CHECK(keep[t]);
        CHECK(memcmp(keep, keep2, N) == 0);
        char desc[512];
        p.ops->describe(p.state, desc, sizeof desc);
        CHECK(desc[0] == '{');
        policy_destroy(&p);
    }
    CHECK(n_pol == 14);
    zp_policy p;
    CHECK_FAILS(policy_create("lru", NULL, &p), ZP_ERR_INVALID, "unknown policy \"lru\"");
    CHECK_FAILS(policy_create("zipage", "{\"lamda\": 0.3}", &p), ZP_ERR_INVALID, "unknown parameter \"lamda\"");
    CHECK_FAILS(policy_create("zipage", "{\"decay\": 1.5}", &p), ZP_ERR_INVALID, "\"decay\" must be a number in [0, 1]");
    CHECK_FAILS(policy_create("morphkv", "{\"gqa\": \"mean\"}", &p), ZP_ERR_INVALID, "gqa");
    CHECK_FAILS(policy_create("gkv", "{\"smooth\": \"mean\"}", &p), ZP_ERR_INVALID, "smooth");
    CHECK_FAILS(policy_create("rkv", "{\"gqa\": \"mean\"}", &p), ZP_ERR_INVALID, "gqa");
    CHECK_FAILS(policy_create("snapkv-d", "{\"keys\": \"window\"}", &p), ZP_ERR_INVALID, "keys");
    CHECK_FAILS(policy_create("snapkv-d", "{\"kernel\": 4}", &p), ZP_ERR_INVALID, "odd");
    {   /* SnapKV-D / R-KV as G-KV's scripts run them: probabilities' max over the group, all keys */
        zp_policy r;
        zp_score_plan pl;
        CHECK_OK(policy_create("rkv", "{\"gqa\": \"max_prob\", \"keys\": \"all\", \"kernel\": 5}", &r));
        CHECK_OK(policy_plan(&r, 64, 16, &pl));
        CHECK(pl.attn.gqa == ZP_GQA_MAX_PROB && !pl.attn.exclude_window && pl.pool_kernel == 5 && pl.pool_candidates &&
              pl.redundancy == ZP_RED_RAW);
        char d[256];
        r.ops->describe(r.state, d, sizeof d);
        CHECK(!strcmp(d, "{\"lambda\": 0.1, \"kernel\": 5, \"gqa\": \"max_prob\", \"keys\": \"all\", \"order\": \"score\", \"theta\": 0.5, "
                         "\"parity\": true}"));
        CHECK(pl.order_score); /* R-KV's code gathers its survivors in score order */
        policy_destroy(&r);
        CHECK_OK(policy_create("snapkv-d", NULL, &r));
        r.ops->describe(r.state, d, sizeof d);
        CHECK(!strcmp(d, "{\"kernel\": 7, \"gqa\": \"max_logit\", \"keys\": \"non_window\", \"order\": \"score\"}"));
        CHECK_OK(policy_plan(&r, 64, 8, &pl));
        CHECK(pl.order_score);
        policy_destroy(&r);
        CHECK_OK(policy_create("snapkv-d", "{\"order\": \"position\"}", &r));
        CHECK_OK(policy_plan(&r, 64, 8, &pl));
        CHECK(!pl.order_score);
        policy_destroy(&r);
        CHECK_FAILS(policy_create("rkv", "{\"order\": \"rank\"}", &p), ZP_ERR_INVALID, "\"order\" must be one of score, position");
    }
    {   /* the cache order policy_select returns: score order puts the kept candidates by descending
         * score, then the window; position order is ascending; both hold exactly the kept set */
        enum { NN = 40, WW = 4, BB = 16 };
        float keys[NN * 8], q[WW * 2 * 8], scratch[6 * NN + NN * 8];
        for (int i = 0; i < NN * 8; i++) keys[i] = sinf(0.37f * (float)i) + 0.2f * cosf(1.3f * (float)(i % 13));
        for (int i = 0; i < WW * 2 * 8; i++) q[i] = cosf(0.71f * (float)i);
        zp_select_input in = {
            {.n = NN, .head_dim = 8, .group = 2, .window = WW, .scale = 0.35f, .keys = keys, .queries = q},
            NULL,
            0,
            8,
            BB,
            scratch};
        uint8_t k1[NN], k2[NN];
        int o1[NN], o2[NN];
        zp_policy a, b;
        CHECK_OK(policy_create("rkv", NULL, &a));
        CHECK_OK(policy_create("rkv", "{\"order\": \"position\"}", &b));
        CHECK_OK(policy_select(&a, &in, k1, NULL, o1));
        CHECK_OK(policy_select(&b, &in, k2, NULL, o2));
        CHECK(!memcmp(k1, k2, NN));
        int asc = 1, same_set = 1, window = 1;
        for (int i = 0; i < BB; i++) {
            asc &= i == 0 || o2[i] > o2[i - 1];
            same_set &= k1[o1[i]] && k2[o2[i]];
        }
        for (int j = 0; j < WW; j++) window &= o1[BB - WW + j] == NN - WW + j;
        CHECK(asc && same_set && window);
        int sorted = 1;
        for (int i = 1; i < BB - WW; i++) sorted &= o1[i] > o1[i - 1];
        CHECK(!sorted); /* score order is not position order on these keys */
        policy_destroy(&a);
        policy_destroy(&b);
    }
    CHECK_FAILS(policy_create("gkv", "{\"alpha\": 0.8}", &p), ZP_ERR_INVALID, "alpha");
    {   /* G-KV: maxima over the candidates, no history for the kept window tokens, raw redundancy */
        zp_policy g;
        zp_score_plan pl;
        CHECK_OK(policy_create("gkv", NULL, &g));
        CHECK_OK(policy_plan(&g, 64, 16, &pl));
        CHECK(pl.attn.gqa == ZP_GQA_MAX_PROB && !pl.attn.exclude_window && pl.max_norm && pl.norm_candidates &&
              pl.history_excludes_window && pl.global == ZP_GLOBAL_MAX && pl.gamma == 0.8f && pl.pool_kernel == 0 &&
              pl.redundancy == ZP_RED_RAW && pl.lambda == 0.5f && pl.recent == 16 && pl.sink == 0);
        CHECK(g.ops->default_window == 16 && policy_stores_history(&g, 64, 16));
        char d[256];
        g.ops->describe(g.state, d, sizeof d);
        CHECK(strstr(d, "\"smooth\": \"max\"") && strstr(d, "\"clip_history\": true"));
        policy_destroy(&g);
    }
    {   /* MorphKV's GQA reduction: max over the group of per-head softmaxes by default */
        zp_policy mk;
        zp_score_plan pl;
        CHECK_OK(policy_create("morphkv", NULL, &mk));
        CHECK_OK(policy_plan(&mk, 64, 16, &pl));
        CHECK(pl.attn.gqa == ZP_GQA_MAX_PROB && pl.attn.exclude_window && pl.attn.qred == ZP_QRED_MAX);
        policy_destroy(&mk);
        CHECK_OK(policy_create("morphkv", "{\"gqa\": \"sum_logit\", \"fusion\": \"sum\"}", &mk));
        CHECK_OK(policy_plan(&mk, 64, 16, &pl));
        CHECK(pl.attn.gqa == ZP_GQA_SUM_LOGIT && pl.attn.qred == ZP_QRED_SUM);
        policy_destroy(&mk);
    }
    CHECK_FAILS(policy_create("snapkv-d", "{\"kernel\": 4}", &p), ZP_ERR_INVALID, "must be odd");
    CHECK_FAILS(policy_create("morphkv", "{\"fusion\": \"avg\"}", &p), ZP_ERR_INVALID, "fusion");
    CHECK_FAILS(policy_create("rkv", "[1,2]", &p), ZP_ERR_INVALID, "not a JSON object");
}

int main(void) {
    test_streaming_example();
    test_h2o_example();
    test_snapkv_example();
    test_rkv_example();
    test_lightning_examples();
    test_morphkv_example();
    test_zipage_example();
    test_redundancy_random();
    test_attention_random();
    test_policy_contracts();
    test_random_policy();
    return zp_test_finish("test_policies");
}
