/* test_moe_engine.c (label cpu) - a mixture-of-experts model (the tiny-qwen3-moe preset:
 * Qwen3MoeForCausalLM, 8 experts, top 2, a dense layer by mlp_only_layers) through the whole CPU
 * engine under every policy: full KV generates every token, each evicting policy compresses at
 * its cap with the engine's invariants checked at every step and repeats exactly, a large budget
 * leaves the outputs of full KV, TriAttention runs from a statistics file of the model's shape.
 * The model's numbers against transformers: test_moe_hf; its forward (prefill equals decode,
 * ragged batches, random weights, golden): test_model. */
#include <stdio.h>
#include <string.h>

#include "policy.h"
#include "test_runner.h"
#include "test_util.h"

static const char *const PRESET = "tiny-qwen3-moe";

static run_spec moe_spec(const char *policy, int nmax) {
    run_spec rs = run_spec_default(PRESET);
    rs.ec.policy = policy;
    rs.ec.nmax = nmax;
    rs.ec.window = 4;
    rs.sp.max_tokens = 64;
    rs.check_invariants = 1;
    return rs;
}

int main(void) {
    run_spec base = moe_spec("full", 0);
    run_result full;
    run_requests(&base, &full);
    int total = 0;
    for (int r = 0; r < full.n_req * full.samples; r++) total += full.n[r];
    printf("  full      : %d tokens over %d requests\n", total, full.n_req * full.samples);
    CHECK(total == full.n_req * full.samples * base.sp.max_tokens);
    const zp_policy_ops *const *reg = policy_registry();
    char trig[700];
    snprintf(trig, sizeof trig, "{\"stats\": \"%s\"}", zp_test_trig_stats("tiny-qwen3-moe", 3, 4, 32)); /* the preset's shape */
    for (int p = 0; reg[p]; p++) {
        if (!reg[p]->evicts) continue;
        run_spec rs = moe_spec(reg[p]->name, 2);
        if (reg[p]->needs_stats) rs.ec.policy_params = trig;
        run_result a, b;
        run_requests(&rs, &a);
        run_requests(&rs, &b);
        printf("  %-10s: %lld compressions, reruns %s\n", reg[p]->name, (long long)a.st.compressions,
               run_same_outputs(&a, &b) ? "identical" : "DIFFER");
        CHECK(run_same_outputs(&a, &b));
        CHECK(a.st.compressions > 0);
        run_result_free(&a);
        run_result_free(&b);
        if (reg[p]->needs_stats) continue; /* a large budget is checked for the policies without a file */
        rs.ec.nmax = 8; /* (8 + 1) * 16 tokens: more than any request holds */
        run_requests(&rs, &a);
        CHECK(a.st.compressions == 0 && run_same_outputs(&full, &a));
        run_result_free(&a);
    }
    run_result_free(&full);
    return zp_test_finish("test_moe_engine");
}
