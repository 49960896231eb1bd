/* gkv.c - G-KV (microsoft/G-KV, the "score" method of its scripts/inference.sh recipe, which the
 * Zipage paper compares against): per KV head,
 *   A  window attention: softmax over all keys, causal in the window, max over the GQA group of
 *      probabilities, mean over the window, divided by its maximum over the candidates t < n - w;
 *   S  max(decay * H, A) ("max", the recipe) or decay * H + A ("sum") where the token has a
 *      stored score, A elsewhere; only the kept candidates store one (not the w window tokens,
 *      clip_history), as G-KV's score cache;
 *   P  S, or its max pool (kernel 5) over the candidates with pooling;
 *   R  raw redundancy (every key pair, the "last above theta" rule), softmax(r / n), divided by
 *      its maximum over the candidates;
 *   C  = lambda * P - (1 - lambda) * R; keep the w window tokens and the top budget - w.
 * Defaults are the recipe's: w 16, lambda 0.5, decay 0.8, "max", pooling off, redundancy on.
 * With block_size 128 and N_max = budget / 128 the engine compresses when G-KV does (every 128
 * tokens, back to the budget). Not as G-KV: scores in fp32 (G-KV rounds them to bf16), key norms
 * max(||k||, 1e-6) (G-KV adds 1e-6), and G-KV's compression of an over-long prompt at the first
 * decode step is the engine's first block overflow here. Oracle: tests/reference/ref_gkv.py.
 * Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    float lambda, decay, theta;
    int smooth_sum, pooling, redundancy, clip_history, norm;
} gkv_state;

static zp_status gkv_parse(const cJSON *p, gkv_state *s) {
    static const char *const known[] = {"lambda", "decay", "smooth", "pooling", "redundancy", "clip_history", "norm", "theta", NULL};
    static const char *const smooth[] = {"max", "sum", NULL};
    const char *P = "gkv";
    ZP_TRY(policy_check_keys(p, P, known));
    ZP_TRY(policy_param_float(p, P, "lambda", 0.f, 1.f, &s->lambda));
    ZP_TRY(policy_param_float(p, P, "decay", 0.f, 1.f, &s->decay));
    ZP_TRY(policy_param_choice(p, P, "smooth", smooth, &s->smooth_sum));
    ZP_TRY(policy_param_bool(p, P, "pooling", &s->pooling));
    ZP_TRY(policy_param_bool(p, P, "redundancy", &s->redundancy));
    ZP_TRY(policy_param_bool(p, P, "clip_history", &s->clip_history));
    ZP_TRY(policy_param_bool(p, P, "norm", &s->norm));
    ZP_TRY(policy_param_float(p, P, "theta", -1.f, 1.f, &s->theta));
    return ZP_OK;
}

static zp_status gkv_init(const cJSON *params, void **state) {
    gkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    *s = (gkv_state){.lambda = 0.5f, .decay = 0.8f, .redundancy = 1, .clip_history = 1, .norm = 1, .theta = 0.5f};
    zp_status st = gkv_parse(params, s);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void gkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const gkv_state *s = state;
    (void)budget;
    p->attention = 1;
    p->attn = (zp_attn_opts){ZP_GQA_MAX_PROB, ZP_QRED_MEAN, 0, 0};
    p->max_norm = s->norm;
    p->norm_candidates = 1;
    p->global = s->decay > 0.f ? (s->smooth_sum ? ZP_GLOBAL_SUM : ZP_GLOBAL_MAX) : ZP_GLOBAL_NONE;
    p->gamma = s->decay;
    p->history_excludes_window = s->clip_history;
    p->pool_kernel = s->pooling ? 5 : 0;
    p->pool_candidates = 1;
    p->redundancy = s->redundancy ? ZP_RED_RAW : ZP_RED_NONE;
    p->theta = s->theta;
    p->temperature = 1.0f; /* softmax(r / n) */
    p->lambda = s->lambda;
    p->recent = window;
}

static void gkv_describe(const void *state, char *buf, size_t len) {
    const gkv_state *s = state;
    snprintf(buf, len,
             "{\"lambda\": %g, \"decay\": %g, \"smooth\": \"%s\", \"pooling\": %s, \"redundancy\": %s, \"clip_history\": %s, "
             "\"norm\": %s, \"theta\": %g}",
             s->lambda, s->decay, s->smooth_sum ? "sum" : "max", s->pooling ? "true" : "false", s->redundancy ? "true" : "false",
             s->clip_history ? "true" : "false", s->norm ? "true" : "false", s->theta);
}

const zp_policy_ops policy_gkv_ops = {
    .name = "gkv",
    .label = "G-KV",
    .summary = "global attention score with decay - raw redundancy (G-KV)",
    .evicts = 1,
    .needs_history = 1,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 16,
    .init = gkv_init,
    .destroy = free,
    .plan = gkv_plan,
    .describe = gkv_describe,
};
