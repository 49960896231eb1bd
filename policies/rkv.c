/* rkv.c - R-KV (arXiv 2505.24133): importance as SnapKV-D (max-of-logits GQA, softmax over
 * the non-window keys, mean over the window, max pool 7) minus redundancy: cosine similarity
 * of keys over the whole request with the "last above 0.5 is protected" rule, column mean
 * m = r / n, R = softmax(m). Score f = lambda * a - (1 - lambda) * R; keep the top budget - w
 * with the w window tokens. `parity: true` reproduces the reference code's column-0 quirk.
 * Redundancy is O(n^2 D) per (layer, KV head). No history. Prefix-compatible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

zp_status policy_snapkv_importance(const zp_score_view *v, int kernel, float *out, float *scratch);

typedef struct {
    float lambda, theta;
    int kernel, parity;
} rkv_state;

static zp_status rkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"lambda", "kernel", "theta", "parity", NULL};
    rkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->lambda = 0.1f;
    s->theta = 0.5f;
    s->kernel = 7;
    zp_status st = policy_check_keys(params, "rkv", known);
    if (st == ZP_OK) st = policy_param_float(params, "rkv", "lambda", 0.f, 1.f, &s->lambda);
    if (st == ZP_OK) st = policy_param_float(params, "rkv", "theta", -1.f, 1.f, &s->theta);
    if (st == ZP_OK) st = policy_param_int(params, "rkv", "kernel", 1, 63, &s->kernel);
    if (st == ZP_OK) st = policy_param_bool(params, "rkv", "parity", &s->parity);
    if (st == ZP_OK && s->kernel % 2 == 0) st = zp_fail(ZP_ERR_INVALID, "policy rkv: parameter \"kernel\" must be odd");
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static zp_status rkv_select(void *state, const zp_select_input *in, uint8_t *keep, float *new_history) {
    const rkv_state *s = state;
    const int n = in->view.n;
    float *a = in->scratch, *r = a + n, *R = a + 2 * n, *f = a + 3 * n, *tmp = a + 4 * n, *knorm = a + 6 * n;
    ZP_TRY(policy_snapkv_importance(&in->view, s->kernel, a, tmp));
    scorer_redundancy_raw(in->view.keys, n, in->view.head_dim, s->theta, s->parity, r, knorm);
    scorer_softmax(r, n, (float)n, R);
    scorer_mix(a, R, n, s->lambda, f);
    policy_keep_topk_recent(f, n, in->budget, in->view.window, keep);
    return ZP_OK;
}

static void rkv_describe(const void *state, char *buf, size_t len) {
    const rkv_state *s = state;
    snprintf(buf, len, "{\"lambda\": %g, \"kernel\": %d, \"theta\": %g, \"parity\": %s}", s->lambda, s->kernel, s->theta,
             s->parity ? "true" : "false");
}

const zp_policy_ops policy_rkv_ops = {"rkv", "importance minus key redundancy (R-KV)", 1, 0, 1, rkv_init, free, rkv_select, rkv_describe};
