/* fp8_envelope.c - the CPU reference engine with an fp8 KV cache, greedy, as test_cuda_engine's
 * fp8_parity runs it (6 requests x 64 tokens, N_max 2, window 4, blocks of 16), printing every
 * request's tokens with the reference's top-two logit gap (over max |logit|) at each step. Not a
 * test: tests/device/fp8_envelope.sh runs it under two OpenBLAS kernels and compares, to measure
 * how far the reference agrees with itself when only its fp32 summation order changes (the
 * envelope that the CUDA engine's fp8 parity is held to).
 * Usage: fp8_envelope PRESET POLICY */
#include <stdio.h>

#include "test_runner.h"
#include "test_util.h"

enum { MAX_REQ = 8, MAX_STEPS = 64 };
static float gaps[MAX_REQ][MAX_STEPS];

static void record_gap(void *ctx, int64_t rid, int sample, int step, const float *row, int V) {
    (void)ctx;
    if (sample || rid < 0 || rid >= MAX_REQ || step < 0 || step >= MAX_STEPS) return;
    gaps[rid][step] = zp_top_two_gap(row, V);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fp8_envelope PRESET POLICY\n");
        return 2;
    }
    run_spec rs = run_spec_default(argv[1]);
    rs.sp.max_tokens = MAX_STEPS;
    rs.ec.policy = argv[2];
    rs.ec.nmax = 2;
    rs.ec.window = 4;
    rs.ec.kv_dtype = "fp8";
    rs.logits_hook = record_gap;
    run_result r;
    run_requests(&rs, &r);
    for (int i = 0; i < r.n_req && i < MAX_REQ; i++) {
        for (int k = 0; k < r.n[i]; k++) printf("%d:%.3e ", r.tokens[i][k], k < MAX_STEPS ? gaps[i][k] : 0.0f);
        printf("\n");
    }
    run_result_free(&r);
    return 0;
}
