/* keydiff.c - KeyDiff (kvpress KeyDiffPress; Park et al., arXiv 2504.15364): at every block
 * overflow each KV head keeps the budget tokens whose keys have the lowest cosine similarity to
 * the anchor, the mean of the head's unit keys over the cache and its growth block (the
 * block-wise form of the paper, kvpress BlockPress: the kept set plus the new block scored
 * together). Nothing protected, no queries read. No history. Prefix-compatible.
 * Oracle: tests/reference/ref_kvpress.py. */
#include <stdlib.h>

#include "policy.h"

static zp_status keydiff_init(const cJSON *params, void **state) { return policy_key_init(params, "keydiff", 0, state); }

static void keydiff_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)budget;
    (void)window;
    policy_key_plan(state, ZP_KEYS_DIFF, p);
}

static void keydiff_describe(const void *state, char *buf, size_t len) { policy_key_describe(state, 0, buf, len); }

const zp_policy_ops policy_keydiff_ops = {
    .name = "keydiff",
    .label = "KeyDiff",
    .summary = "keys least similar to the mean key kept (kvpress KeyDiffPress)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 1, /* no queries are read: the smallest query cache */
    .init = keydiff_init,
    .destroy = free,
    .plan = keydiff_plan,
    .describe = keydiff_describe,
};
