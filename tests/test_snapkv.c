/* test_snapkv.c - the prompt-only policy (SnapKV as published) end to end on tiny checkpoints:
 * prompts no longer than the budget run exactly as full KV; longer prompts are compressed once,
 * right after their prefill, to the budget, and every generated token is kept after that (the
 * physical length is budget + generated at every step); the first token is the full-KV one;
 * preemption under a tiny pool completes every request; the hybrid scheduler is refused. The
 * kept set of one compression is checked against the authors' code in test_reference_plans. */
#include <string.h>

#include "engine_internal.h"
#include "test_runner.h"
#include "test_util.h"

typedef struct {
    int budget, bad, seen_compressed;
} grow_ctx;

/* Every running request: whole (n_kv = n_done) if its prompt fits the budget, else the budget
 * plus every token generated since. */
static void check_growth(zp_engine *e, void *vctx) {
    grow_ctx *c = vctx;
    for (int i = 0; i < e->sched.running.n; i++) {
        const zp_seq *q = e->sched.running.v[i];
        if (q->n_preemptions) continue; /* recomputed with its whole prompt */
        const int want = q->n_prompt > c->budget ? c->budget + (q->n_done - q->n_prompt) : q->n_done;
        if (q->n_kv != want || q->qid >= 0) c->bad++;
        c->seen_compressed += q->n_compressions == 1;
    }
}

static run_spec snapkv_spec(const char *preset, int prompt_len) {
    run_spec rs = run_spec_default(preset);
    rs.ec.nmax = 2; /* budget 32 tokens of block 16 */
    rs.ec.window = 8;
    rs.prompt_len = prompt_len;
    rs.check_invariants = 1;
    return rs;
}

static void test_short_prompts_are_full_kv(void) {
    run_spec rs = snapkv_spec("tiny-qwen2", 9); /* prompts 9..44: the first four fit 32 */
    rs.n_req = 4;
    run_result full, snap;
    rs.ec.policy = "full";
    run_requests(&rs, &full);
    rs.ec.policy = "snapkv";
    run_requests(&rs, &snap);
    CHECK(run_same_outputs(&full, &snap));
    CHECK(snap.st.compressions == 0 && snap.st.prefix_cache == 0);
    run_result_free(&full);
    run_result_free(&snap);
}

static void test_long_prompts_compressed_once(void) {
    const char *presets[] = {"tiny-qwen2", "tiny-llama", "tiny-qwen3"};
    for (int p = 0; p < 3; p++) {
        run_spec rs = snapkv_spec(presets[p], 33); /* prompts 33..68, all longer than 32 */
        grow_ctx c = {32, 0, 0};
        run_result full, snap;
        rs.ec.policy = "full";
        run_requests(&rs, &full);
        rs.ec.policy = "snapkv";
        rs.on_step = check_growth;
        rs.ctx = &c;
        run_requests(&rs, &snap);
        CHECK(snap.st.compressions == rs.n_req);
        CHECK(c.bad == 0 && c.seen_compressed > 0);
        const int longest = rs.prompt_len + rs.prompt_step * (rs.n_req - 1), grown = 32 + rs.sp.max_tokens - 1; /* the last token has no K/V */
        CHECK(snap.st.peak_request_tokens == (longest > grown ? longest : grown)); /* a prompt is held whole only during its prefill */
        for (int r = 0; r < rs.n_req; r++) { /* the first token is sampled before the compression */
            CHECK(snap.n[r] == rs.sp.max_tokens && full.n[r] == rs.sp.max_tokens);
            if (snap.n[r] && full.n[r]) CHECK(snap.tokens[r][0] == full.tokens[r][0]);
        }
        CHECK(!run_same_outputs(&full, &snap)); /* an eviction of 1..36 prompt tokens changes the random model's output */
        run_result_free(&full);
        run_result_free(&snap);
    }
}

static void test_preemption_and_slots(void) {
    run_spec rs = snapkv_spec("tiny-llama", 33);
    rs.ec.policy = "snapkv";
    rs.ec.num_blocks = 10; /* the 6 requests grow to 5..7 blocks each */
    rs.ec.max_num_batched_tokens = 80; /* room for two long prompts a prefill: two query slots */
    run_result r;
    run_requests(&rs, &r);
    CHECK(r.st.preemptions > 0 && r.st.n_qslots == 2);
    CHECK(r.st.compressions >= rs.n_req);
    for (int k = 0; k < rs.n_req; k++) CHECK(r.n[k] == rs.sp.max_tokens && r.finish[k] == ZP_FINISH_LENGTH);
    run_result_free(&r);
}

static void test_refusals(void) {
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model("tiny-llama");
    ec.block_size = 16;
    ec.num_blocks = 32;
    ec.nmax = 2;
    ec.policy = "snapkv";
    ec.scheduler = "hybrid";
    ec.window = 8;
    zp_engine *e = NULL;
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "compresses only prompts");
    ec.scheduler = NULL;
    ec.window = 0; /* snapkv's default window 32 exceeds block 16 */
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "window 32");
    ec.window = 8;
    ec.policy_params = "{\"kernel\": 4}";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "must be odd");
    ec.policy_params = "{\"gqa\": \"max_logit\"}";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "gqa");
    CHECK(e == NULL);
}

int main(void) {
    test_short_prompts_are_full_kv();
    test_long_prompts_compressed_once();
    test_preemption_and_slots();
    test_refusals();
    return zp_test_finish("test_snapkv");
}
