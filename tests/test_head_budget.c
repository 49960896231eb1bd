/* test_head_budget.c - head-wise budgets (AdaKV, `head_budget: adakv`) on the CPU engine: the
 * head runs (model/backend.h zp_head_runs) that let one KV head of a layer keep more tokens than
 * the uniform budget in cells another head leaves, inside the request's N_max cap.
 * - With a floor share of 1 every head's count is the uniform budget, so the runs change where
 *   the kept rows sit and nothing else: the tokens must be those of the uniform layout, for every
 *   kind of plan (attention windows, a stored and a live history, R-KV's score order, keys only,
 *   SnapKV's prompt compression), synchronous and asynchronous.
 * - At the authors' default floor (0.2) the heads' runs differ, stay inside the cells (the
 *   engine's invariants every step) and the cells past a layer's runs are never read: they are set
 *   to NaN after each compression and the tokens do not change.
 * - The refusals, before anything loads.
 * The allocation rule itself is checked against the authors' code by tests/reference/check_adakv.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

static run_spec head_spec(const char *policy, const char *head_budget, float floor_share) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.ec.policy = policy;
    rs.ec.nmax = 3;
    rs.ec.window = 4;
    rs.ec.head_budget = head_budget;
    rs.ec.head_floor = floor_share;
    rs.sp.max_tokens = 110;
    rs.n_req = 3;
    rs.prompt_len = !strcmp(policy, "snapkv") ? 70 : 9; /* SnapKV compresses prompts longer than the cap only */
    rs.check_invariants = 1;
    return rs;
}

static void floor_one_is_uniform(void) {
    static const char *const policies[] = {"zipage", "h2o", "snapkv-d", "rkv", "gkv", "keynorm", "tova", "snapkv"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = head_spec(policies[i], "uniform", 0.2f);
        run_result a, b, c;
        run_requests(&rs, &a);
        rs.ec.head_budget = "adakv";
        rs.ec.head_floor = 1.0f;
        run_requests(&rs, &b);
        rs.ec.async_compress = 1;
        run_requests(&rs, &c);
        const int same = run_same_outputs(&a, &b), same_async = run_same_outputs(&a, &c);
        printf("  %-8s adakv floor 1: %lld compressions, tokens %s the uniform layout's (async %s)\n", policies[i], (long long)b.st.compressions,
               same ? "equal" : "DIFFER from", same_async ? "equal" : "DIFFER");
        CHECK(b.st.compressions > 0 && b.st.compressions == a.st.compressions);
        CHECK(same && same_async);
        run_result_free(&a);
        run_result_free(&b);
        run_result_free(&c);
    }
}

/* After each compression: every layer's cells past its runs (in the budget's blocks) set to NaN;
 * the runs observed (how many differ from the uniform budget). */
typedef struct {
    int done[8];
    int64_t cells, uneven;
} poison_ctx;

static void poison_unused_cells(zp_engine *e, void *vctx) {
    poison_ctx *p = vctx;
    const zp_model_config *mc = zp_engine_model_config(e);
    const int bs = e->cfg.block_size, H = mc->n_kv_heads, D = mc->head_dim;
    const size_t per = (size_t)bs * (size_t)H;
    CHECK(e->be->cache_elem_bytes == (int)sizeof(float));
    for (int i = 0; i < e->sched.running.n; i++) {
        zp_seq *q = e->sched.running.v[i];
        if (q->request_id < 0 || q->request_id >= 8 || q->n_compressions == p->done[q->request_id] || q->compressing || q->run_base <= 0)
            continue;
        p->done[q->request_id] = q->n_compressions;
        for (int l = 0; l < mc->n_layers; l++) {
            const int *run = q->runs + (size_t)l * H;
            size_t used = 0;
            for (int h = 0; h < H; h++) { used += (size_t)run[h]; p->uneven += run[h] != q->run_base; }
            for (size_t c = used; c < (size_t)H * (size_t)q->run_base; c++) {
                const size_t row = (size_t)q->blocks[c / per] * per + c % per, at = ((size_t)l * e->kv.dims.num_blocks * per + row) * D;
                for (int x = 0; x < D; x++) ((float *)e->kv.k)[at + x] = ((float *)e->kv.v)[at + x] = NAN;
                p->cells++;
            }
        }
    }
}

static void adakv_runs(void) {
    static const char *const policies[] = {"zipage", "snapkv-d", "h2o", "snapkv"};
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        run_spec rs = head_spec(policies[i], "adakv", 0.2f);
        run_result a, b, c;
        run_requests(&rs, &a);
        poison_ctx p = {{0}, 0, 0};
        rs.on_step = poison_unused_cells;
        rs.ctx = &p;
        run_requests(&rs, &b);
        rs.on_step = NULL;
        rs.ec.async_compress = 1;
        run_requests(&rs, &c);
        const int same = run_same_outputs(&a, &b);
        printf("  %-8s adakv floor 0.2: %lld compressions, %lld (layer, head) runs off the uniform budget, %lld unused cells set to NaN: "
               "tokens %s; async %s\n", policies[i], (long long)a.st.compressions, (long long)p.uneven, (long long)p.cells,
               same ? "unchanged" : "CHANGED", run_same_outputs(&a, &c) ? "identical" : "DIFFERS");
        CHECK(a.st.compressions > 0 && p.uneven > 0);
        CHECK(same);
        CHECK(run_same_outputs(&a, &c));
        run_result_free(&a);
        run_result_free(&b);
        run_result_free(&c);
    }
}

static void refusals(void) {
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model("tiny-qwen3");
    ec.block_size = 16;
    ec.nmax = 3;
    ec.num_blocks = 64;
    zp_engine *e = NULL;
    ec.policy = "zipage";
    ec.head_budget = "adakvs";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "head_budget \"adakvs\" is not known (uniform, adakv)");
    ec.head_budget = "adakv";
    ec.policy = "full";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "head_budget adakv needs an evicting policy");
    ec.policy = "streaming";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "policy streaming gives its tokens no score per KV head");
    ec.policy = "zipage";
    ec.layer_budget = "pyramid";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_UNSUPPORTED, "head_budget adakv: not with layer_budget pyramid");
    CHECK(e == NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    refusals();
    floor_one_is_uniform();
    adakv_runs();
    return zp_test_finish("test_head_budget");
}
