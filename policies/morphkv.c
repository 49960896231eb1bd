/* morphkv.c - MorphKV (arXiv 2503.00979) with the query-cache design: window queries' logits
 * against the distant keys (recomputed from post-RoPE keys, which equals the stored logit
 * history for surviving keys), softmax over the distant keys, fused over the rows by max
 * ("max_fused") or sum ("sum_fused"). rows "previous" (default), as its patches
 * (patch_qwen2.py:228,237): the w - 1 queries before the newest vote, against t < n - w - 1, and
 * the last w + 1 tokens are kept; rows "window": all w queries against t < n - w, w kept. GQA:
 * "max_prob" (default) takes a softmax per query head and the max over the group, as MorphKV's
 * patch_qwen2.py, patch_mistral.py and patch_phi3.py (the Qwen3 / R1-Distill family);
 * "sum_logit" sums the group's logits before the softmax, as its patch_llama.py after a revert.
 * Keep the top of the rest up to the budget. Block-granular (evicts at block overflow, one vote
 * of the query cache) instead of every step: a measured approximation (tests/reference/
 * cadence.py, NOTES.md). Window 32 by default (its README runs 30-200). No history.
 * Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int max_fusion, sum_logit, all_rows;
} morphkv_state;

static zp_status morphkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"fusion", "gqa", "rows", NULL}, *const fusions[] = {"sum", "max", NULL};
    static const char *const gqas[] = {"max_prob", "sum_logit", NULL}, *const rows[] = {"previous", "window", NULL};
    morphkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->max_fusion = 1;
    zp_status st = policy_check_keys(params, "morphkv", known);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "fusion", fusions, &s->max_fusion);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "gqa", gqas, &s->sum_logit);
    if (st == ZP_OK) st = policy_param_choice(params, "morphkv", "rows", rows, &s->all_rows);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void morphkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const morphkv_state *s = state;
    p->attention = 1; /* distant keys only (window excluded), rows fused */
    p->attn = (zp_attn_opts){s->sum_logit ? ZP_GQA_SUM_LOGIT : ZP_GQA_MAX_PROB, s->max_fusion ? ZP_QRED_MAX : ZP_QRED_SUM, 1, !s->all_rows};
    p->recent = s->all_rows ? window : window + 1; /* previous rows: the W previous tokens and the newest */
}

static void morphkv_describe(const void *state, char *buf, size_t len) {
    const morphkv_state *s = state;
    snprintf(buf, len, "{\"fusion\": \"%s\", \"gqa\": \"%s\", \"rows\": \"%s\"}", s->max_fusion ? "max" : "sum",
             s->sum_logit ? "sum_logit" : "max_prob", s->all_rows ? "window" : "previous");
}

const zp_policy_ops policy_morphkv_ops = {
    .name = "morphkv",
    .label = "MorphKV (block-granular)",
    .summary = "recent-window attention history (MorphKV)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 32,
    .init = morphkv_init,
    .destroy = free,
    .plan = morphkv_plan,
    .describe = morphkv_describe,
};
