/* rkv.c - R-KV (arXiv 2505.24133): importance as SnapKV-D (max-of-logits GQA, softmax over
 * the non-window keys, mean over the window, max pool 7) minus redundancy: cosine similarity
 * of keys over the whole request with the "last above 0.5 is protected" rule, column mean
 * m = r / n, R = softmax(m). Score f = lambda * a - (1 - lambda) * R; keep the top budget - w
 * with the w window tokens. `parity: true` (the default, as R-KV's code runs) keeps its code's
 * column-0 quirk: a row with no partner above theta zeroes its similarity with cache slot 0;
 * `parity: false` drops it.
 * gqa max_prob, keys all and kernel 5 at window 16, with order position and parity false,
 * give the R-KV of G-KV's scripts (ref_rkv.keep_gkv_recipe; G-KV's redundancy has no quirk,
 * and G-KV sorts its survivors). Survivors go to the cache in score order, then the window, as R-KV's code
 * gathers them (r1_kv.py:82,168-179): the next compression's pooling and its "latest duplicate"
 * rule then act on cache neighbours, as the authors'; "order": "position" keeps position order.
 * Redundancy is O(n^2 D) per (layer, KV head). No history. Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    float lambda, theta;
    int parity;
    snapkv_d_opts imp;
} rkv_state;

static zp_status rkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"lambda", "kernel", "gqa", "keys", "order", "theta", "parity", NULL};
    rkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->lambda = 0.1f;
    s->theta = 0.5f;
    s->parity = 1;
    s->imp.kernel = 7;
    zp_status st = policy_check_keys(params, "rkv", known);
    if (st == ZP_OK) st = policy_param_float(params, "rkv", "lambda", 0.f, 1.f, &s->lambda);
    if (st == ZP_OK) st = policy_param_float(params, "rkv", "theta", -1.f, 1.f, &s->theta);
    if (st == ZP_OK) st = policy_snapkv_d_parse(params, "rkv", &s->imp);
    if (st == ZP_OK) st = policy_param_bool(params, "rkv", "parity", &s->parity);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void rkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const rkv_state *s = state;
    (void)budget;
    policy_snapkv_d_plan(&s->imp, window, p);
    p->redundancy = ZP_RED_RAW;
    p->theta = s->theta;
    p->rkv_quirk = s->parity;
    p->temperature = 1.0f; /* softmax(r / n) */
    p->lambda = s->lambda;
}

static void rkv_describe(const void *state, char *buf, size_t len) {
    const rkv_state *s = state;
    char imp[128];
    policy_snapkv_d_describe(&s->imp, imp, sizeof imp);
    snprintf(buf, len, "{\"lambda\": %g, %s, \"theta\": %g, \"parity\": %s}", s->lambda, imp, s->theta, s->parity ? "true" : "false");
}

const zp_policy_ops policy_rkv_ops = {
    .name = "rkv",
    .label = "R-KV",
    .summary = "importance minus key redundancy (R-KV)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 8,
    .init = rkv_init,
    .destroy = free,
    .plan = rkv_plan,
    .describe = rkv_describe,
};
