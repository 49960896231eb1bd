/* morphkv.c - MorphKV (arXiv 2503.00979) with the query-cache design: the w window queries'
 * logits against the distant keys (recomputed from post-RoPE keys, which equals the stored
 * logit history for surviving keys), softmax over the distant (non-window) keys, fused over
 * the window rows by max ("max_fused") or sum ("sum_fused"). GQA: "max_prob" (default) takes a
 * softmax per query head and the max over the group, as MorphKV's patch_qwen2.py,
 * patch_mistral.py and patch_phi3.py (the Qwen3 / R1-Distill family); "sum_logit" sums the
 * group's logits before the softmax, as its patch_llama.py after a revert. Keep the top
 * budget - w with the w window tokens. Block-granular (evicts at block overflow, one vote of
 * the last w queries) instead of every step: an approximation (tests/reference/NOTES.md). Window
 * 32 by default (its README runs 30-200). No history. Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int max_fusion, sum_logit;
} morphkv_state;

static zp_status morphkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"fusion", "gqa", NULL}, *const fusions[] = {"sum", "max", NULL};
    static const char *const gqas[] = {"max_prob", "sum_logit", NULL};
    morphkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->max_fusion = 1;
    zp_status st = policy_check_keys(params, "morphkv", known);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "fusion", fusions, &s->max_fusion);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "gqa", gqas, &s->sum_logit);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void morphkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const morphkv_state *s = state;
    p->attention = 1; /* distant keys only (window excluded), rows fused */
    p->attn = (zp_attn_opts){s->sum_logit ? ZP_GQA_SUM_LOGIT : ZP_GQA_MAX_PROB, s->max_fusion ? ZP_QRED_MAX : ZP_QRED_SUM, 1};
    p->recent = window;
}

static void morphkv_describe(const void *state, char *buf, size_t len) {
    const morphkv_state *s = state;
    snprintf(buf, len, "{\"fusion\": \"%s\", \"gqa\": \"%s\"}", s->max_fusion ? "max" : "sum", s->sum_logit ? "sum_logit" : "max_prob");
}

const zp_policy_ops policy_morphkv_ops = {"morphkv", "recent-window attention history (MorphKV)", 1, 0, 1,
                                          morphkv_init, free, morphkv_plan, morphkv_describe, 32};
