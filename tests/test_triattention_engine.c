/* test_triattention_engine.c (label cpu) - the TriAttention policy through the whole CPU engine:
 * the engine loads the statistics file its parameters name (checked against the model), every
 * request decodes to its end with compressions at the cache cap, the engine's invariants hold at
 * every step, and runs repeat exactly. Refusals, each one error before any run: no statistics
 * file, statistics of another head count, an unknown mode, a mode across layers with per-layer
 * budgets. The CUDA engine's refusal (its stage not yet run on a GPU): test_cuda_engine.
 * Modes per_head (the default), per_layer_perhead and union. The kept tokens against the authors' code:
 * test_reference_triattention_replay (the compressor over whole requests) and
 * test_reference_triattention_scores (the scorers). */
#include <stdio.h>
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

enum { L = 2, HQ = 4, HALF = 32 }; /* tiny-qwen3: 2 layers, 4 query heads, head_dim 64 */

static run_spec spec(const char *params) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.ec.policy = "triattention";
    rs.ec.policy_params = params;
    rs.ec.nmax = 2; /* budget 32 tokens in blocks of 16: prompts of 9 to 44 tokens, some past the budget */
    rs.sp.max_tokens = 64;
    rs.check_invariants = 1;
    return rs;
}

static void refused(const char *params, const char *device, zp_status want, const char *needle) {
    run_spec rs = spec(params);
    zp_engine_config ec = rs.ec;
    ec.model_dir = zp_test_model("tiny-qwen3");
    if (device) ec.device = device;
    zp_engine *e = NULL;
    CHECK_FAILS(zp_engine_init(&ec, &e), want, needle);
    CHECK(e == NULL);
}

/* One mode through the engine twice: every token, compressions at the cap, the same outputs. */
static void runs(const char *stats, const char *mode) {
    char params[700];
    snprintf(params, sizeof params, "{\"stats\": \"%s\"%s%s%s}", stats, mode ? ", \"mode\": \"" : "", mode ? mode : "",
             mode ? "\"" : "");
    run_spec rs = spec(params);
    run_result a, b;
    run_requests(&rs, &a);
    run_requests(&rs, &b);
    const long long want = (long long)rs.n_req * rs.sp.max_tokens;
    printf("  triattention %-17s on tiny-qwen3: %lld tokens, %lld compressions, %lld tokens evicted\n",
           mode ? mode : "(per_head)", (long long)a.st.generated_tokens, (long long)a.st.compressions,
           (long long)a.st.tokens_evicted);
    CHECK(a.st.generated_tokens == want && a.st.compressions >= rs.n_req && a.st.tokens_evicted > 0);
    CHECK(run_same_outputs(&a, &b));
    run_result_free(&a);
    run_result_free(&b);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char stats[512];
    snprintf(stats, sizeof stats, "%s", zp_test_trig_stats("tiny-qwen3", L, HQ, HALF)); /* its buffer is reused below */
    runs(stats, NULL);
    runs(stats, "per_layer_perhead");
    runs(stats, "union");
    char params[700];
    refused("{}", NULL, ZP_ERR_INVALID, "no statistics file");
    snprintf(params, sizeof params, "{\"stats\": \"%s\"}", zp_test_trig_stats("three-heads", L, 3, HALF));
    refused(params, NULL, ZP_ERR_INVALID, "the model needs [4, 32]");
    refused("{\"stats\": \"x\", \"mode\": \"sideways\"}", NULL, ZP_ERR_INVALID,
            "must be one of per_layer_perhead, per_head, union");
    refused("{\"stats\": 3}", NULL, ZP_ERR_INVALID, "parameter \"stats\" must be the path");
    { /* one kept set across layers of different budgets: refused */
        snprintf(params, sizeof params, "{\"stats\": \"%s\"}", stats);
        run_spec rs = spec(params);
        zp_engine_config ec = rs.ec;
        ec.model_dir = zp_test_model("tiny-qwen3");
        ec.layer_budget = "pyramid";
        ec.nmax = 4;
        zp_engine *e = NULL;
        CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_INVALID, "a mode across layers needs layer_budget uniform");
    }
    return zp_test_finish("test_triattention_engine");
}
