/* h2o.c - H2O heavy hitters (arXiv 2306.14048) on a block-capped paged cache.
 *
 * Score: cumulative attention mass per token and KV head, S = H + A, where A is the window
 * attention of the cached queries (softmax over all keys, causal in the window, mean over
 * the GQA group, summed over the window) and H the stored cumulative score. This is the
 * block-granular form (attention accumulated at compression time over the last w queries,
 * G-KV's "sum" mode with decay 1); exact per-step accumulation needs the decode kernel to
 * emit probabilities and is not implemented. Keep: the most recent `recent` tokens
 * (recent_ratio of the budget, at least w) plus the heavy hitters among the rest.
 * Prefix-compatible (the engine compacts into fresh blocks).
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    float recent_ratio;
} h2o_state;

static zp_status h2o_init(const cJSON *params, void **state) {
    static const char *const known[] = {"recent_ratio", NULL};
    h2o_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->recent_ratio = 0.5f;
    zp_status st = policy_check_keys(params, "h2o", known);
    if (st == ZP_OK) st = policy_param_float(params, "h2o", "recent_ratio", 0.f, 1.f, &s->recent_ratio);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void h2o_plan(const void *state, int budget, int window, zp_score_plan *p) {
    int recent = (int)(((const h2o_state *)state)->recent_ratio * (float)budget + 0.5f);
    p->attention = 1;
    p->attn = (zp_attn_opts){ZP_GQA_MEAN_PROB, ZP_QRED_SUM, 0};
    p->global = ZP_GLOBAL_SUM; /* cumulative: S = H + A */
    p->gamma = 1.0f;
    p->recent = recent < window ? window : recent;
}

static void h2o_describe(const void *state, char *buf, size_t len) {
    snprintf(buf, len, "{\"recent_ratio\": %g}", ((const h2o_state *)state)->recent_ratio);
}

const zp_policy_ops policy_h2o_ops = {"h2o", "heavy hitters by cumulative attention + recent tokens (H2O)", 1, 1, 1,
                                      h2o_init, free, h2o_plan, h2o_describe, 16};
