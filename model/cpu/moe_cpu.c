/* moe_cpu.c - the CPU backend's mixture of experts (backend.h `moe`), in fp32 and in the order
 * transformers' eager path computes it (docs/moe-port.md §1.3: Qwen3MoeTopKRouter, the eager
 * Qwen3MoeExperts): router logits by sgemm, each row's softmax in fp32, its k largest
 * probabilities (ties: the lower expert, as a stable sort), renormalised when norm_topk; then
 * expert by expert in index order, the rows that chose it gathered, gate/up and down by sgemm,
 * silu(gate) * up between them, and each row's weight times the expert's output added to the
 * row's sum (transformers' index_add_ into zeros in expert order). It does not compute the
 * experts no row chose. Buffers are allocated per call. */
#include <math.h>
#include <stdlib.h>

#include "cpu_ops.h"

/* Row t's top k experts (idx) and weights (wt) from its logits [E]. */
static void route_row(const float *logit, const zp_moe_dims *m, float *prob, int *idx, float *wt) {
    const int E = m->n_experts, k = m->top_k;
    float mx = -INFINITY, z = 0.f;
    for (int e = 0; e < E; e++) mx = logit[e] > mx ? logit[e] : mx;
    for (int e = 0; e < E; e++) z += prob[e] = expf(logit[e] - mx);
    for (int e = 0; e < E; e++) prob[e] /= z;
    for (int j = 0; j < k; j++) { /* selection: the largest left, the lower index on a tie */
        int best = -1;
        for (int e = 0; e < E; e++) {
            int taken = 0;
            for (int i = 0; i < j; i++) taken |= idx[i] == e;
            if (!taken && (best < 0 || prob[e] > prob[best])) best = e;
        }
        idx[j] = best;
        wt[j] = prob[best];
    }
    if (m->norm_topk) {
        float s = 0.f;
        for (int j = 0; j < k; j++) s += wt[j];
        for (int j = 0; j < k; j++) wt[j] /= s;
    }
}

zp_status cpu_moe(zp_backend *be, void *out, const void *x, const void *router, const void *w_gate_up, const void *w_down,
                  const zp_moe_dims *m, int T) {
    const int H = m->hidden, I = m->inter, E = m->n_experts, k = m->top_k;
    if (T <= 0) return ZP_OK;
    float *logits = malloc(sizeof(float) * (size_t)T * E), *prob = malloc(sizeof(float) * (size_t)E);
    float *wt = malloc(sizeof(float) * (size_t)T * k), *xs = malloc(sizeof(float) * (size_t)T * H);
    float *gu = malloc(sizeof(float) * (size_t)T * 2 * I), *act = malloc(sizeof(float) * (size_t)T * I), *y = malloc(sizeof(float) * (size_t)T * H);
    int *idx = malloc(sizeof(int) * (size_t)T * k), *rows = malloc(sizeof(int) * (size_t)T);
    float *rw = malloc(sizeof(float) * (size_t)T);
    zp_status s = logits && prob && wt && xs && gu && act && y && idx && rows && rw
                      ? ZP_OK
                      : zp_fail(ZP_ERR_OOM, "moe: no host memory for %d rows of %d experts", T, E);
    if (s == ZP_OK) s = cpu_matmul(be, logits, ZP_ACT_F32, x, router, NULL, T, E, H);
    for (int t = 0; s == ZP_OK && t < T; t++) route_row(logits + (size_t)t * E, m, prob, idx + (size_t)t * k, wt + (size_t)t * k);
    float *o = out;
    if (s == ZP_OK) memset(o, 0, sizeof(float) * (size_t)T * H);
    for (int e = 0; s == ZP_OK && e < E; e++) {
        int n = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++)
                if (idx[(size_t)t * k + j] == e) {
                    rows[n] = t;
                    rw[n] = wt[(size_t)t * k + j];
                    memcpy(xs + (size_t)n * H, (const float *)x + (size_t)t * H, sizeof(float) * (size_t)H);
                    n++;
                }
        if (n == 0) continue;
        s = cpu_matmul(be, gu, ZP_ACT_F32, xs, (const float *)w_gate_up + (size_t)e * 2 * I * H, NULL, n, 2 * I, H);
        if (s == ZP_OK) s = cpu_silu_mul(be, act, gu, n, I);
        if (s == ZP_OK) s = cpu_matmul(be, y, ZP_ACT_F32, act, (const float *)w_down + (size_t)e * H * I, NULL, n, H, I);
        for (int i = 0; s == ZP_OK && i < n; i++) {
            float *orow = o + (size_t)rows[i] * H;
            const float *yrow = y + (size_t)i * H;
            for (int h = 0; h < H; h++) orow[h] += yrow[h] * rw[i];
        }
    }
    free(logits), free(prob), free(wt), free(xs), free(gu), free(act), free(y), free(idx), free(rows), free(rw);
    return s;
}
