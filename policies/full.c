/* full.c - no eviction: the full-KV baseline. The engine never caps a request under this
 * policy, so it has no score plan (policy_select keeps everything or fails). Prefix-compatible, no state. */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

static zp_status full_init(const cJSON *params, void **state) {
    static const char *const known[] = {NULL};
    *state = NULL;
    return policy_check_keys(params, "full", known);
}

static void full_describe(const void *state, char *buf, size_t len) { snprintf(buf, len, "{}"); }

const zp_policy_ops policy_full_ops = {
    .name = "full",
    .label = "full KV",
    .summary = "no eviction (full KV baseline)",
    .evicts = 0,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 0,
    .init = full_init,
    .destroy = NULL,
    .plan = NULL,
    .describe = full_describe,
};
