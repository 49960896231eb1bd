/* morphkv.c - MorphKV (arXiv 2503.00979) with the query-cache design: the w window queries'
 * logits against the distant keys (recomputed from post-RoPE keys, which equals the stored
 * logit history for surviving keys), summed over the GQA group, softmax over the distant
 * (non-window) keys, fused over the window rows by max ("max_fused") or sum ("sum_fused").
 * Keep the top budget - w with the w window tokens. Block-granular (evicts at block overflow)
 * instead of per step. No history. Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int max_fusion;
} morphkv_state;

static zp_status morphkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"fusion", NULL}, *const fusions[] = {"sum", "max", NULL};
    morphkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->max_fusion = 1;
    zp_status st = policy_check_keys(params, "morphkv", known);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "fusion", fusions, &s->max_fusion);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void morphkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    p->attention = 1; /* scorer_morph_history: group-summed logits, distant keys, fused rows */
    p->attn = (zp_attn_opts){ZP_GQA_SUM_LOGIT, ((const morphkv_state *)state)->max_fusion ? ZP_QRED_MAX : ZP_QRED_SUM, 1};
    p->recent = window;
}

static void morphkv_describe(const void *state, char *buf, size_t len) {
    snprintf(buf, len, "{\"fusion\": \"%s\"}", ((const morphkv_state *)state)->max_fusion ? "max" : "sum");
}

const zp_policy_ops policy_morphkv_ops = {"morphkv", "recent-window attention history (MorphKV)", 1, 0, 1,
                                          morphkv_init, free, morphkv_plan, morphkv_describe, 32};
