/* full.c - no eviction: the full-KV baseline. The engine never caps a request under this
 * policy, so select is only reached by misuse. Prefix-compatible, no state. */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

static zp_status full_init(const cJSON *params, void **state) {
    static const char *const known[] = {NULL};
    *state = NULL;
    return policy_check_keys(params, "full", known);
}

static zp_status full_select(void *state, const zp_select_input *in, uint8_t *keep, float *new_history) {
    if (in->view.n > in->budget)
        return zp_fail(ZP_ERR_INVALID, "policy full: asked to evict (%d tokens over a budget of %d)", in->view.n, in->budget);
    for (int t = 0; t < in->view.n; t++) keep[t] = 1;
    return ZP_OK;
}

static void full_describe(const void *state, char *buf, size_t len) { snprintf(buf, len, "{}"); }

const zp_policy_ops policy_full_ops = {"full", "no eviction (full KV baseline)", 0, 0, 1, full_init, NULL, full_select, full_describe};
