/* test_layer_budget.c - per-layer budgets (model/layer_budget.c): PyramidKV's schedule in whole
 * blocks (properties: multiples of the block, within [1, N_max] blocks, non-increasing as the
 * authors' schedule, each layer within half a block of its exact budget unless lifted to one
 * block), the refusals, the
 * block-table views, and the compressor writing each layer's budget and reading it back through
 * the view. The kept sets are checked against StreamingLLM's definition (the first `sink`
 * tokens and the most recent ones), computed here from the tokens' positions, over two
 * compressions (the second reads each layer's view of the first's result). On whole runs, the
 * rows a layer does not keep are set to NaN after each compression and the tokens must not change
 * (decode's compression and SnapKV's prompt compression). The exact
 * schedule against the authors' code is tests/reference/check_pyramid.py.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "layer_budget.h"
#include "model.h"
#include "test_runner.h"
#include "test_util.h"

enum { L = 4, HQ = 4, HKV = 2, D = 8, BS = 16, NB = 32, W = 1, NMAX = 4, C = NMAX * BS, SINK = 4 };

static void schedule_properties(void) {
    zp_kv_geometry geo;
    CHECK_OK(zp_geometry_resolve(policy_find("zipage"), 256, 8, 0, &geo));
    zp_layer_plan p;
    CHECK_OK(zp_layer_plan_resolve("pyramid", 20, &geo, 36, &p));
    int exact[36], sum_exact = 0;
    zp_pyramid_caps(p.pyramid_total, geo.window, 36, 20, 1 << 30, exact);
    for (int l = 0; l < 36; l++) {
        exact[l] += geo.window;
        sum_exact += exact[l];
        CHECK(p.budget[l] % 256 == 0 && p.budget[l] >= 256 && p.budget[l] <= geo.budget);
        CHECK(l == 0 || p.budget[l] <= p.budget[l - 1]);
        CHECK(p.dead[p.view[l]] == 8 - p.budget[l] / 256);
        CHECK(p.budget[l] == 256 ? 2 * exact[l] < 3 * 256 : 2 * abs(p.budget[l] - exact[l]) <= 256);
    }
    CHECK(exact[0] <= geo.budget && exact[0] > geo.budget - 3); /* layer 0's budget fills the cap */
    CHECK(p.budget[0] > p.budget[35]);
    CHECK(p.n_views >= 2 && p.dead[0] == 0);
    printf("  pyramid, 36 layers, block 256, N_max 8: mean %.0f of %d tokens (authors' exact mean %.1f), %d views\n", (double)p.budget_sum / 36,
           geo.budget, sum_exact / 36.0, p.n_views);
    zp_layer_plan_free(&p);
    /* uniform: one view, every layer at the cap */
    CHECK_OK(zp_layer_plan_resolve("uniform", 20, &geo, 36, &p));
    CHECK(p.n_views == 1 && p.budget[0] == geo.budget && p.budget[35] == geo.budget);
    zp_layer_plan_free(&p);
    /* the rounding: half up, at least one block, at most N_max */
    int ex[4] = {24, 23, 3, 500}, out[4];
    zp_layer_round_blocks(ex, 4, 16, 8, out);
    CHECK(out[0] == 32 && out[1] == 16 && out[2] == 16 && out[3] == 128);
    /* a view leaves the dead blocks between the kept ones and the growth out */
    const int blocks[6] = {10, 11, 12, 13, 14, 15};
    int v[6];
    CHECK(zp_layer_view_table(blocks, 6, 4, 3, v) == 3 && v[0] == 10 && v[1] == 14 && v[2] == 15);
    CHECK(zp_layer_view_table(blocks, 5, 4, 0, v) == 5 && v[4] == 14);
}

static void refusals(void) {
    zp_kv_geometry geo, full, one;
    CHECK_OK(zp_geometry_resolve(policy_find("zipage"), 16, 4, 0, &geo));
    CHECK_OK(zp_geometry_resolve(policy_find("full"), 16, 4, 0, &full));
    CHECK_OK(zp_geometry_resolve(policy_find("zipage"), 16, 1, 0, &one));
    zp_layer_plan p;
    CHECK_FAILS(zp_layer_plan_resolve("pyramids", 20, &geo, 4, &p), ZP_ERR_INVALID, "layer_budget \"pyramids\" is unknown");
    CHECK_FAILS(zp_layer_plan_resolve("pyramid", 0, &geo, 4, &p), ZP_ERR_INVALID, "pyramid_beta 0");
    CHECK_FAILS(zp_layer_plan_resolve("pyramid", 20, &full, 4, &p), ZP_ERR_INVALID, "needs an evicting policy");
    CHECK_FAILS(zp_layer_plan_resolve("pyramid", 20, &geo, 1, &p), ZP_ERR_INVALID, "at least 2 layers");
    CHECK_FAILS(zp_layer_plan_resolve("pyramid", 20, &one, 4, &p), ZP_ERR_INVALID, "nmax >= 2");
}

/* K rows: a distinct value per (layer, slot, head) so a row names the token it came from. */
static float key_value(int l, int token, int g, int e) { return (float)(l * 100000 + token * 100 + g * 10) + (float)e * 0.5f; }

static void write_token(float *k, float *v, int l, int slot, int token) {
    for (int g = 0; g < HKV; g++)
        for (int e = 0; e < D; e++) {
            const size_t at = (((size_t)l * NB * BS + (size_t)slot) * HKV + (size_t)g) * D + (size_t)e;
            k[at] = v[at] = key_value(l, token, g, e);
        }
}

/* Layer l's rows at the target's first n positions name tokens want[0..n). */
static void expect_tokens(zp_backend *be, const zp_kv_storage *kv, int l, const int *table, int n, const int *want, const char *what) {
    float out[HKV * C * D];
    CHECK_OK(be->key_gather(be, &kv->dims, kv->k, l, table, n, out));
    int bad = 0;
    for (int g = 0; g < HKV; g++)
        for (int i = 0; i < n; i++) bad += out[((size_t)g * n + (size_t)i) * D + 1] != key_value(l, want[i], g, 1);
    if (bad) printf("  %s, layer %d: %d rows are not the expected tokens\n", what, l, bad);
    CHECK(bad == 0);
}

/* StreamingLLM over a list of live tokens: the first SINK and the most recent budget - SINK. */
static int streaming_keep(const int *live, int n, int budget, int *out) {
    int k = 0;
    for (int i = 0; i < SINK; i++) out[k++] = live[i];
    for (int i = n - (budget - SINK); i < n; i++) out[k++] = live[i];
    return k;
}

static void compressor_views(void) {
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    zp_model m = {0};
    m.be = be;
    m.cfg.n_layers = L; m.cfg.n_heads = HQ; m.cfg.n_kv_heads = HKV; m.cfg.head_dim = D;
    zp_kv_storage kv = {0};
    kv.dims = (zp_attn_dims){.n_layers = L,
                             .n_heads = HQ,
                             .n_kv_heads = HKV,
                             .head_dim = D,
                             .block_size = BS,
                             .num_blocks = NB,
                             .scale = 1.0f / 3.0f,
                             .qk_norm_eps = 1e-6f,
                             .window = W,
                             .n_qslots = 1};
    CHECK_OK(be->alloc_cache(be, (size_t)L * NB * BS * HKV * D, &kv.k));
    CHECK_OK(be->alloc_cache(be, (size_t)L * NB * BS * HKV * D, &kv.v));
    CHECK_OK(be->alloc_cache(be, (size_t)L * W * HQ * D, &kv.q));
    float *k = kv.k, *v = kv.v;
    zp_kv_geometry geo;
    CHECK_OK(zp_geometry_resolve(policy_find("streaming"), BS, NMAX, W, &geo));
    zp_layer_plan plan;
    CHECK_OK(zp_layer_plan_resolve("pyramid", 20, &geo, L, &plan));
    CHECK(plan.budget[0] == C && plan.budget[L - 1] < C);
    zp_compressor comp;
    CHECK_OK(compressor_init(&comp, policy_find("streaming"), NULL, &geo, 0)); /* StreamingLLM keeps no history */
    comp.layers = &plan;
    /* round 1: 5 blocks (80 tokens) in scattered blocks, compacted in place */
    int blocks[NMAX + 1] = {3, 9, 17, 5, 21}, target[NMAX + 1] = {3, 9, 17, 5, -1};
    for (int l = 0; l < L; l++)
        for (int t = 0; t < (NMAX + 1) * BS; t++) write_token(k, v, l, blocks[t / BS] * BS + t % BS, t);
    zp_compress_item q = {
        .request_id = 1, .n_kv = (NMAX + 1) * BS, .blocks = blocks, .n_blocks = NMAX + 1, .qid = 0, .target = target};
    CHECK_OK(compressor_run(&comp, &m, &kv, &q, 1));
    int kept[L][C], live[C + BS], nk[L];
    for (int l = 0; l < L; l++) {
        int all[(NMAX + 1) * BS];
        for (int t = 0; t < (NMAX + 1) * BS; t++) all[t] = t;
        nk[l] = streaming_keep(all, (NMAX + 1) * BS, plan.budget[l], kept[l]);
        expect_tokens(be, &kv, l, target, nk[l], kept[l], "round 1");
    }
    /* round 2: the request as the scheduler leaves it (N_max blocks, a growth block filled with
     * tokens 80..95), compressed once; each layer reads its view: kept tokens, then the growth */
    int blocks2[NMAX + 1] = {3, 9, 17, 5, 28};
    for (int l = 0; l < L; l++)
        for (int t = 0; t < BS; t++) write_token(k, v, l, blocks2[NMAX] * BS + t, (NMAX + 1) * BS + t);
    q = (zp_compress_item){.request_id = 1,
                           .n_kv = (NMAX + 1) * BS,
                           .blocks = blocks2,
                           .n_blocks = NMAX + 1,
                           .qid = 0,
                           .compressed = 1,
                           .target = target};
    CHECK_OK(compressor_run(&comp, &m, &kv, &q, 1));
    for (int l = 0; l < L; l++) {
        int n = 0, want[C];
        for (int i = 0; i < nk[l]; i++) live[n++] = kept[l][i];
        for (int t = 0; t < BS; t++) live[n++] = (NMAX + 1) * BS + t;
        const int nw = streaming_keep(live, n, plan.budget[l], want);
        expect_tokens(be, &kv, l, target, nw, want, "round 2");
    }
    printf("  streaming, pyramid budgets %d/%d/%d/%d of %d: both compressions keep the sinks and the most recent tokens of each layer's view\n",
           plan.budget[0], plan.budget[1], plan.budget[2], plan.budget[3], C);
    CHECK(comp.stats.compressions == 2);
    compressor_free(&comp);
    zp_layer_plan_free(&plan);
    be->release(be, kv.k);
    be->release(be, kv.v);
    be->release(be, kv.q);
    be->destroy(be);
}

/* n_req requests of `policy` on tiny-qwen3 with pyramid budgets, N_max 4, 120 tokens each. */
static run_spec pyramid_spec(const char *policy, int n_req) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.ec.policy = policy;
    rs.ec.nmax = 4;
    rs.ec.window = 4;
    rs.ec.layer_budget = "pyramid";
    rs.sp.max_tokens = 120;
    rs.n_req = n_req;
    rs.prompt_len = !strcmp(policy, "snapkv") ? 90 : 9; /* SnapKV compresses prompts longer than the cap only */
    return rs;
}

/* Whole requests on the CPU engine with pyramid budgets (the engine's invariants checked every
 * step): they compress, keep fewer tokens than the cap on average, and asynchronous compression
 * gives the synchronous tokens. */
static void engine_runs(void) {
    static const char *const policies[] = {"zipage", "h2o", "streaming", "snapkv-d", "snapkv"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = pyramid_spec(policies[i], 3);
        rs.check_invariants = 1;
        run_result a, b;
        run_requests(&rs, &a);
        rs.ec.async_compress = 1;
        run_requests(&rs, &b);
        printf("  engine, %-9s pyramid: %lld compressions, %.1f tokens kept per request of %d; async %s\n", policies[i],
               (long long)a.st.compressions, a.st.mean_retained, 4 * 16, run_same_outputs(&a, &b) ? "identical" : "DIFFERS");
        CHECK(a.st.compressions > 0 && a.st.mean_retained < 4 * 16);
        CHECK(run_same_outputs(&a, &b));
        run_result_free(&a);
        run_result_free(&b);
    }
    /* refused before anything loads */
    zp_engine_config ec = zp_engine_config_default();
    ec.layer_budget = "pyramid";
    zp_engine *e = NULL;
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "layer_budget pyramid needs an evicting policy");
    /* StreamingLLM's position shift gives tokens their cache index: one per request, not per layer */
    ec.model_dir = zp_test_model("tiny-qwen3");
    ec.policy = "streaming";
    ec.policy_params = "{\"position_shift\": true}";
    ec.block_size = 16;
    ec.nmax = 4;
    ec.num_blocks = 64;
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "position_shift needs layer_budget uniform");
    CHECK(e == NULL);
}

/* What a layer does not keep is never read: right after each compression installs its target,
 * the rows of the blocks each layer's view leaves out (the cap's blocks past its budget) are
 * overwritten with NaN; the run must give the same tokens as without (a NaN read anywhere would
 * reach the logits). Prompt-only SnapKV included, whose requests are compressed once and then
 * decode like full KV. */
typedef struct {
    int done[8]; /* compressions already poisoned, per request id */
    int64_t rows;
} poison_ctx;

static void poison_dead_rows(zp_engine *e, void *vctx) {
    poison_ctx *p = vctx;
    const zp_model_config *mc = zp_engine_model_config(e);
    const int bs = e->cfg.block_size, nmax = e->plan.geo.nmax;
    const size_t row = (size_t)mc->n_kv_heads * (size_t)mc->head_dim, block = (size_t)bs * row;
    CHECK(e->be->cache_elem_bytes == (int)sizeof(float)); /* the CPU engine's fp32 cache */
    for (int i = 0; i < e->sched.running.n; i++) {
        zp_seq *q = e->sched.running.v[i];
        if (q->request_id < 0 || q->request_id >= 8 || q->n_compressions == p->done[q->request_id] || q->compressing) continue;
        p->done[q->request_id] = q->n_compressions;
        for (int l = 0; l < mc->n_layers; l++) {
            const int dead = e->layers.dead[e->layers.view[l]];
            for (int j = nmax - dead; j < nmax; j++) {
                const size_t at = ((size_t)l * e->kv.dims.num_blocks + (size_t)q->blocks[j]) * block;
                for (size_t x = 0; x < block; x++) ((float *)e->kv.k)[at + x] = ((float *)e->kv.v)[at + x] = NAN;
                p->rows += bs;
            }
        }
    }
}

static void dead_rows_unread(void) {
    static const char *const policies[] = {"snapkv", "zipage"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = pyramid_spec(policies[i], 2);
        run_result a, b;
        run_requests(&rs, &a);
        poison_ctx p = {{0}, 0};
        rs.on_step = poison_dead_rows;
        rs.ctx = &p;
        run_requests(&rs, &b);
        const int same = run_same_outputs(&a, &b);
        printf("  %-6s pyramid: %lld compressions, %lld rows past the layers' budgets set to NaN: tokens %s\n", policies[i],
               (long long)b.st.compressions, (long long)p.rows, same ? "identical" : "DIFFER");
        CHECK(b.st.compressions > 0 && p.rows > 0);
        CHECK(same);
        run_result_free(&a);
        run_result_free(&b);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    schedule_properties();
    refusals();
    compressor_views();
    engine_runs();
    dead_rows_unread();
    return zp_test_finish("test_layer_budget");
}
