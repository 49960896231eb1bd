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

const zp_policy_ops policy_full_ops = {"full", "no eviction (full KV baseline)", 0, 0, 1, full_init, NULL, NULL, full_describe, 0, 0};
