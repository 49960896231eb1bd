/* tova.c - TOVA (Oren et al., arXiv 2401.06104, "Transformers are Multi-State RNNs";
 * schwartz-lab-NLP/TOVA src/tova_cache.py): the newest query's attention over every cached
 * token (itself included, softmax over all of them) scores the tokens and the lowest go; nothing
 * is protected, so the newest token can be evicted too. Differences from the authors' code,
 * named: one selection per KV head from its group's mean attention (TOVA averages all query
 * heads of the layer and keeps one set for every KV head; the two agree where a layer has one KV
 * head), and the block cadence (TOVA drops one token per step; here a block's worth when the
 * growth block fills, as for H2O). Default window 1: the newest query alone (a wider window
 * averages the last w queries, which is no longer TOVA). No history. Prefix-compatible.
 * Oracle: tests/reference/ref_tova.py. */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

static zp_status tova_init(const cJSON *params, void **state) {
    static const char *const known[] = {NULL};
    *state = NULL;
    return policy_check_keys(params, "tova", known);
}

static void tova_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)state;
    (void)budget;
    (void)window;
    p->attention = 1; /* softmax per query head over all keys (causal in the window), mean over the group and rows */
    p->attn = (zp_attn_opts){ZP_GQA_MEAN_PROB, ZP_QRED_MEAN, 0, 0};
}

static void tova_describe(const void *state, char *buf, size_t len) {
    (void)state;
    snprintf(buf, len, "{}");
}

const zp_policy_ops policy_tova_ops = {
    .name = "tova",
    .label = "TOVA (per KV head)",
    .summary = "the newest query's attention, lowest evicted (TOVA)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 1,
    .init = tova_init,
    .destroy = NULL,
    .plan = tova_plan,
    .describe = tova_describe,
};
