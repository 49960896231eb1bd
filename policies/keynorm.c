/* keynorm.c - key-norm (kvpress KnormPress; Devoto et al., arXiv 2406.11430): at every block
 * overflow each KV head keeps its budget tokens of lowest key L2 norm (post-RoPE keys), nothing
 * protected, no queries read. kvpress compresses the prompt once; here every compression of a
 * request runs it on the cache and its growth block. No history. Prefix-compatible.
 * Oracle: tests/reference/ref_kvpress.py. */
#include <stdlib.h>

#include "policy.h"

static zp_status keynorm_init(const cJSON *params, void **state) { return policy_key_init(params, "keynorm", 0, state); }

static void keynorm_plan(const void *state, int budget, int window, zp_score_plan *p) {
    (void)budget;
    (void)window;
    policy_key_plan(state, ZP_KEYS_NORM, p);
}

static void keynorm_describe(const void *state, char *buf, size_t len) { policy_key_describe(state, 0, buf, len); }

const zp_policy_ops policy_keynorm_ops = {
    .name = "keynorm",
    .label = "key-norm",
    .summary = "lowest L2 key norms kept (kvpress KnormPress)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 1, /* no queries are read: the smallest query cache */
    .init = keynorm_init,
    .destroy = free,
    .plan = keynorm_plan,
    .describe = keynorm_describe,
};
