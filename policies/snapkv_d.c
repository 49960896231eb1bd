/* snapkv_d.c - SnapKV (arXiv 2404.14469), decode-time variant "SnapKV-D" as R-KV and G-KV use
 * it as a baseline: at every block overflow, the last w cached queries score the non-window
 * keys (GQA: max over the group of logits, softmax over the non-window keys, mean over the
 * window), the scores are max-pooled (kernel 7), and the top budget - w are kept with the w
 * window tokens. KV-head aggregation (one selection per KV head), not the official
 * per-query-head selection that multiplies the cache by G. No history. Prefix-compatible.
 * Default window 8 (R-KV's rkv/compression/snapkv.py). The original SnapKV, which compresses
 * once at prefill, is not this policy (and not implemented yet).
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int kernel;
} snapkv_state;

/* SnapKV-D importance, shared with R-KV: window attention over the non-window keys,
 * max-pooled over those candidates, window scores 0. */
void policy_snapkv_d_plan(int kernel, int window, zp_score_plan *p) {
    p->attention = 1;
    p->attn = (zp_attn_opts){ZP_GQA_MAX_LOGIT, ZP_QRED_MEAN, 1};
    p->pool_kernel = kernel;
    p->pool_candidates = 1;
    p->recent = window;
}

static zp_status snapkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"kernel", NULL};
    snapkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->kernel = 7;
    zp_status st = policy_check_keys(params, "snapkv-d", known);
    if (st == ZP_OK) st = policy_param_int(params, "snapkv-d", "kernel", 1, 63, &s->kernel);
    if (st == ZP_OK && s->kernel % 2 == 0) st = zp_fail(ZP_ERR_INVALID, "policy snapkv-d: parameter \"kernel\" must be odd");
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void snapkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    policy_snapkv_d_plan(((const snapkv_state *)state)->kernel, window, p);
}

static void snapkv_describe(const void *state, char *buf, size_t len) {
    snprintf(buf, len, "{\"kernel\": %d}", ((const snapkv_state *)state)->kernel);
}

const zp_policy_ops policy_snapkv_d_ops = {"snapkv-d", "window attention of recent queries, max-pooled (SnapKV, decode-time)", 1, 0, 1,
                                         snapkv_init, free, snapkv_plan, snapkv_describe, 8};
