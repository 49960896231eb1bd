/* moe_cpu.c - the CPU backend's mixture of experts (backend.h `moe`), in fp32 and in the order
 * transformers' eager paths compute it. Qwen3-MoE (docs/moe-port.md §1.3: Qwen3MoeTopKRouter,
 * the eager Qwen3MoeExperts): router logits by sgemm, each row's softmax in fp32, its k largest
 * probabilities (ties: the lower expert, as a stable sort), renormalised when norm_topk.
 * gpt-oss (§2.5: GptOssTopKRouter, GptOssExperts): logits plus the router's bias, the k largest,
 * the softmax of those k. Then expert by expert in index order, the rows that chose it
 * gathered, gate/up by sgemm (plus its bias), the activation (silu(gate) * up, or gpt-oss's
 * clamped SwiGLU), down by sgemm (plus its bias), and each row's weight times the expert's
 * output added to the row's sum (transformers' index_add_ into zeros in expert order). It does
 * not compute the experts no row chose. Buffers are allocated per call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"

/* v[n] = softmax(v) in fp32. */
static void softmax(float *v, int n) {
    float mx = -INFINITY, z = 0.f;
    for (int e = 0; e < n; e++) mx = v[e] > mx ? v[e] : mx;
    for (int e = 0; e < n; e++) z += v[e] = expf(v[e] - mx);
    for (int e = 0; e < n; e++) v[e] /= z;
}

/* Row t's top k experts (idx) and weights (wt) from its logits [E] (with the router's bias). */
static void route_row(const float *logit, const zp_moe_dims *m, float *prob, int *idx, float *wt) {
    const int E = m->n_experts, k = m->top_k;
    memcpy(prob, logit, sizeof(float) * (size_t)E);
    if (!m->topk_softmax) softmax(prob, E);
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
    if (m->topk_softmax) softmax(wt, k);
    if (m->norm_topk) {
        float s = 0.f;
        for (int j = 0; j < k; j++) s += wt[j];
        for (int j = 0; j < k; j++) wt[j] /= s;
    }
}

/* gpt-oss's activation of n rows: act[n,I] from gu [n][gate I; up I] (GptOssExperts._apply_gate). */
static void clamped_swiglu(float *act, const float *gu, int n, int I, float alpha, float limit) {
    for (int r = 0; r < n; r++)
        for (int i = 0; i < I; i++) {
            float g = gu[(size_t)r * 2 * I + i], u = gu[(size_t)r * 2 * I + I + i];
            g = g > limit ? limit : g;
            u = u > limit ? limit : u < -limit ? -limit : u;
            const float glu = g * (1.0f / (1.0f + expf(-(g * alpha))));
            act[(size_t)r * I + i] = (u + 1.0f) * glu;
        }
}

/* y[n,N] += bias[N] (bias may be NULL). */
static void add_bias(float *y, const float *bias, int n, int N) {
    for (int r = 0; bias && r < n; r++)
        for (int i = 0; i < N; i++) y[(size_t)r * N + i] += bias[i];
}

zp_status cpu_moe(zp_backend *be, void *out, const void *x, const zp_moe_weights *w, const zp_moe_dims *m, int T) {
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
    if (s == ZP_OK) s = cpu_matmul(be, logits, ZP_ACT_F32, x, w->router, w->router_bias, T, E, H);
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
        const float *bgu = w->gate_up_bias ? (const float *)w->gate_up_bias + (size_t)e * 2 * I : NULL;
        const float *bd = w->down_bias ? (const float *)w->down_bias + (size_t)e * H : NULL;
        s = cpu_matmul(be, gu, ZP_ACT_F32, xs, (const float *)w->gate_up + (size_t)e * 2 * I * H, NULL, n, 2 * I, H);
        add_bias(gu, bgu, n, 2 * I); /* x @ W + b, as transformers adds it after the product */
        if (s == ZP_OK && m->clamped_swiglu) clamped_swiglu(act, gu, n, I, m->alpha, m->limit);
        else if (s == ZP_OK) s = cpu_silu_mul(be, act, gu, n, I);
        if (s == ZP_OK) s = cpu_matmul(be, y, ZP_ACT_F32, act, (const float *)w->down + (size_t)e * H * I, NULL, n, H, I);
        add_bias(y, bd, n, H);
        for (int i = 0; s == ZP_OK && i < n; i++) {
            float *orow = o + (size_t)rows[i] * H;
            const float *yrow = y + (size_t)i * H;
            for (int h = 0; h < H; h++) orow[h] += yrow[h] * rw[i];
        }
    }
    free(logits), free(prob), free(wt), free(xs), free(gu), free(act), free(y), free(idx), free(rows), free(rw);
    return s;
}
