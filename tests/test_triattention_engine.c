/* test_triattention_engine.c (label cpu) - the TriAttention policy through the whole CPU engine:
 * the engine loads the statistics file its parameters name (checked against the model), every
 * request decodes to its end with compressions at the cache cap, the engine's invariants hold at
 * every step, and runs repeat exactly. Refusals, each one error before any run: no statistics
 * file, statistics of another head count, the modes not built yet (per_head, union), the CUDA
 * device without host scoring (no CUDA stage yet; checked where a GPU is: test_cuda_engine does
 * not run TriAttention). The kept tokens against the authors' code:
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

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char params[700];
    snprintf(params, sizeof params, "{\"stats\": \"%s\"}", zp_test_trig_stats("tiny-qwen3", L, HQ, HALF));
    run_spec rs = spec(params);
    run_result a, b;
    run_requests(&rs, &a);
    run_requests(&rs, &b);
    const long long want = (long long)rs.n_req * rs.sp.max_tokens;
    printf("  triattention on tiny-qwen3: %lld tokens, %lld compressions, %lld tokens evicted\n",
           (long long)a.st.generated_tokens, (long long)a.st.compressions, (long long)a.st.tokens_evicted);
    CHECK(a.st.generated_tokens == want && a.st.compressions >= rs.n_req && a.st.tokens_evicted > 0);
    CHECK(run_same_outputs(&a, &b));
    run_result_free(&a);
    run_result_free(&b);
    refused("{}", NULL, ZP_ERR_INVALID, "no statistics file");
    snprintf(params, sizeof params, "{\"stats\": \"%s\"}", zp_test_trig_stats("three-heads", L, 3, HALF));
    refused(params, NULL, ZP_ERR_INVALID, "the model needs [4, 32]");
    refused("{\"stats\": \"x\", \"mode\": \"per_head\"}", NULL, ZP_ERR_UNSUPPORTED, "mode \"per_head\"");
    refused("{\"stats\": \"x\", \"mode\": \"union\"}", NULL, ZP_ERR_UNSUPPORTED, "is not built yet");
    refused("{\"stats\": \"x\", \"mode\": \"sideways\"}", NULL, ZP_ERR_INVALID, "must be one of per_layer_perhead");
    refused("{\"stats\": 3}", NULL, ZP_ERR_INVALID, "parameter \"stats\" must be the path");
    return zp_test_finish("test_triattention_engine");
}
