/* h2o.c - H2O heavy hitters (arXiv 2306.14048) on a block-capped paged cache.
 *
 * Score: the cumulative attention mass of each token per KV head, as H2O's running hh_score
 * (FMInference/H2O h2o_hf/utils_real_drop/modify_llama.py:317-326): with history "all" (the
 * default) the model forward adds the softmax attention of EVERY query it processes, prompt
 * rows included, over the keys that query sees (backend op attn_history, fp32 score cache);
 * compression ranks by that sum alone. The GQA group's heads are averaged (H2O supports MHA
 * only; the mean ranks as its per-head sum would). history "window" is the earlier
 * block-granular estimate: S = H + A, A the attention of the last w cached queries summed at
 * compression time (G-KV's "sum" mode with decay 1, no normalisation), so the other queries
 * between compressions and the prompt's never count. Keep: the most recent `recent` tokens
 * (recent_ratio of the budget, at least w) plus the heavy hitters among the rest.
 * What differs from the original: eviction runs once per full block (b tokens), not every
 * step (measured in tests/reference/cadence.py), and a live history turns the prefix cache
 * off (each request's sums are its own). Prefix-compatible (the engine compacts into fresh
 * blocks).
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    float recent_ratio;
    int live; /* history "all" */
} h2o_state;

static zp_status h2o_init(const cJSON *params, void **state) {
    static const char *const known[] = {"recent_ratio", "history", NULL}, *const histories[] = {"window", "all", NULL};
    h2o_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->recent_ratio = 0.5f;
    s->live = 1;
    zp_status st = policy_check_keys(params, "h2o", known);
    if (st == ZP_OK) st = policy_param_float(params, "h2o", "recent_ratio", 0.f, 1.f, &s->recent_ratio);
    if (st == ZP_OK) st = policy_param_choice(params, "h2o", "history", histories, &s->live);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void h2o_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const h2o_state *s = state;
    int recent = (int)(s->recent_ratio * (float)budget + 0.5f);
    p->attention = !s->live; /* live: every query is already in the history */
    p->attn = (zp_attn_opts){ZP_GQA_MEAN_PROB, ZP_QRED_SUM, 0, 0};
    p->history_live = s->live;
    p->global = ZP_GLOBAL_SUM; /* S = H (+ A) */
    p->gamma = 1.0f;
    p->recent = recent < window ? window : recent;
}

static void h2o_describe(const void *state, char *buf, size_t len) {
    const h2o_state *s = state;
    snprintf(buf, len, "{\"recent_ratio\": %g, \"history\": \"%s\"}", s->recent_ratio, s->live ? "all" : "window");
}

const zp_policy_ops policy_h2o_ops = {
    .name = "h2o",
    .label = "H2O (block-granular)",
    .summary = "heavy hitters by cumulative attention of every query + recent tokens (H2O)",
    .evicts = 1,
    .needs_history = 1,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 16,
    .init = h2o_init,
    .destroy = free,
    .plan = h2o_plan,
    .describe = h2o_describe,
};
