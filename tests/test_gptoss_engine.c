/* test_gptoss_engine.c (label cpu) - a gpt-oss model (the tiny-gpt-oss preset: sliding layers of
 * window 16 beside full layers, attention sinks, 8 biased experts, top 2) through the whole CPU
 * engine with full KV: every token generated; the same greedy tokens whether the requests run
 * together (ragged prefills and decodes in one batch, each with its own window) or one at a time,
 * and with the prefix cache serving a shared prompt; every evicting policy refused by name (its
 * compression of sliding layers is not built). The model's numbers against transformers:
 * test_gptoss_hf; its forward (prefill equals decode, ragged batches, golden): test_model. */
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "test_runner.h"
#include "test_util.h"

static const char *const PRESET = "tiny-gpt-oss";

static run_spec gptoss_spec(void) {
    run_spec rs = run_spec_default(PRESET);
    rs.sp.temperature = 0.0f; /* greedy */
    rs.sp.max_tokens = 48;    /* prompts of 9 to 44 tokens: prefill and decode cross the window */
    rs.check_invariants = 1;
    return rs;
}

static int tokens_of(const run_result *r) {
    int total = 0;
    for (int i = 0; i < r->n_req * r->samples; i++) total += r->n[i];
    return total;
}

int main(void) {
    run_spec rs = gptoss_spec();
    run_result together, alone, shared, shared_cached;
    run_requests(&rs, &together);
    printf("  full KV, together : %d tokens over %d requests, at most %d running\n", tokens_of(&together), together.n_req,
           together.max_running);
    CHECK(tokens_of(&together) == rs.n_req * rs.sp.max_tokens);
    CHECK(together.max_running > 1);
    rs.ec.max_num_seqs = 1;
    run_requests(&rs, &alone);
    printf("  full KV, one by one: %s\n", run_same_outputs(&together, &alone) ? "the same tokens" : "OTHER TOKENS");
    CHECK(run_same_outputs(&together, &alone));
    rs = gptoss_spec();
    rs.shared_prompt = 1;
    rs.prompt_len = 40; /* two and a half blocks: the cache serves two of them */
    rs.ec.enable_prefix_cache = 0;
    run_requests(&rs, &shared);
    rs.ec.enable_prefix_cache = 1;
    run_requests(&rs, &shared_cached);
    printf("  shared prompt, prefix cache: %lld cached tokens, %s\n", (long long)shared_cached.st.prefix_hit_tokens,
           run_same_outputs(&shared, &shared_cached) ? "the same tokens" : "OTHER TOKENS");
    CHECK(shared_cached.st.prefix_hit_tokens > 0);
    CHECK(run_same_outputs(&shared, &shared_cached));
    const zp_policy_ops *const *reg = policy_registry();
    int refused = 0;
    for (int p = 0; reg[p]; p++) {
        if (!reg[p]->evicts) continue;
        zp_engine_config ec = gptoss_spec().ec;
        ec.model_dir = zp_test_model(PRESET);
        ec.policy = reg[p]->name;
        ec.nmax = 2;
        ec.window = 4;
        if (reg[p]->needs_stats) ec.policy_params = "{\"stats\": \"/nonexistent\"}";
        zp_engine *e = NULL;
        CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_UNSUPPORTED, "sliding-window layers or attention sinks is not built yet");
        CHECK(e == NULL);
        refused++;
    }
    printf("  %d evicting policies refused\n", refused);
    CHECK(refused > 5);
    run_result_free(&together), run_result_free(&alone), run_result_free(&shared), run_result_free(&shared_cached);
    return zp_test_finish("test_gptoss_engine");
}
