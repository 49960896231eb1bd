/* snapkv_d.c - SnapKV (arXiv 2404.14469), decode-time variant "SnapKV-D" as R-KV and G-KV use
 * it as a baseline: at every block overflow, the last w cached queries score the non-window
 * keys (GQA: max over the group of logits, softmax over the non-window keys, mean over the
 * window), the scores are max-pooled (kernel 7), and the top budget - w are kept with the w
 * window tokens. KV-head aggregation (one selection per KV head), not the official
 * per-query-head selection that multiplies the cache by G. No history. Prefix-compatible.
 * Default window 8 (R-KV's rkv/compression/snapkv.py). Parameters gqa (max_logit, R-KV's; max_prob)
 * and keys (non_window, R-KV's; all) give the SnapKV of G-KV's scripts (gqa max_prob, keys all,
 * kernel 5, window 16, order position; ref_snapkv_d.keep_gkv_recipe). Survivors go to the cache
 * in score order, then the window, as R-KV's code gathers them (snapkv.py:61,131-142), so the next
 * compression pools rank neighbours; "order": "position" keeps position order (G-KV sorts). The
 * original SnapKV, which compresses once at prefill, is policies/snapkv.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

/* SnapKV-D importance, shared with R-KV: window attention (GQA max of logits then one softmax
 * over the non-window keys, R-KV's code; or, with gqa max_prob and keys all, G-KV's scripts: a
 * softmax per query head over all keys, causal in the window, then the max over the group),
 * mean over the window, max-pooled over the candidates t < n - w, window scores 0. */
void policy_snapkv_d_plan(const snapkv_d_opts *o, int window, zp_score_plan *p) {
    p->attention = 1;
    p->attn = (zp_attn_opts){o->gqa_prob ? ZP_GQA_MAX_PROB : ZP_GQA_MAX_LOGIT, ZP_QRED_MEAN, !o->all_keys, 0};
    p->pool_kernel = o->kernel;
    p->pool_candidates = 1;
    p->recent = window;
    p->order_score = !o->position_order;
}

zp_status policy_snapkv_d_parse(const cJSON *params, const char *policy, snapkv_d_opts *o) {
    static const char *const gqa[] = {"max_logit", "max_prob", NULL}, *const keys[] = {"non_window", "all", NULL};
    static const char *const order[] = {"score", "position", NULL};
    ZP_TRY(policy_param_pool_kernel(params, policy, "kernel", &o->kernel));
    ZP_TRY(policy_param_choice(params, policy, "gqa", gqa, &o->gqa_prob));
    ZP_TRY(policy_param_choice(params, policy, "keys", keys, &o->all_keys));
    ZP_TRY(policy_param_choice(params, policy, "order", order, &o->position_order));
    return ZP_OK;
}

int policy_snapkv_d_describe(const snapkv_d_opts *o, char *buf, size_t len) {
    return snprintf(buf, len, "\"kernel\": %d, \"gqa\": \"%s\", \"keys\": \"%s\", \"order\": \"%s\"", o->kernel,
                    o->gqa_prob ? "max_prob" : "max_logit", o->all_keys ? "all" : "non_window", o->position_order ? "position" : "score");
}

static zp_status snapkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"kernel", "gqa", "keys", "order", NULL};
    snapkv_d_opts *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->kernel = 7;
    zp_status st = policy_check_keys(params, "snapkv-d", known);
    if (st == ZP_OK) st = policy_snapkv_d_parse(params, "snapkv-d", s);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void snapkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)budget;
    policy_snapkv_d_plan(state, window, p);
}

static void snapkv_describe(const void *state, char *buf, size_t len) {
    char imp[128];
    policy_snapkv_d_describe(state, imp, sizeof imp);
    snprintf(buf, len, "{%s}", imp);
}

const zp_policy_ops policy_snapkv_d_ops = {
    .name = "snapkv-d",
    .label = "SnapKV-D",
    .summary = "window attention of recent queries, max-pooled (SnapKV, decode-time)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 8,
    .init = snapkv_init,
    .destroy = free,
    .plan = snapkv_plan,
    .describe = snapkv_describe,
};
