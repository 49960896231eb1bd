/* streaming.c - StreamingLLM (arXiv 2309.17453): keep the first `sink` tokens and the most
 * recent budget - sink. No scores, no state; keys keep their original RoPE positions (the
 * position-shift mode needs pre-RoPE keys and is not implemented). Prefix-compatible. */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int sink;
} streaming_state;

static zp_status streaming_init(const cJSON *params, void **state) {
    static const char *const known[] = {"sink", NULL};
    streaming_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->sink = 4;
    zp_status st = policy_check_keys(params, "streaming", known);
    if (st == ZP_OK) st = policy_param_int(params, "streaming", "sink", 0, 1 << 20, &s->sink);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static zp_status streaming_select(void *state, const zp_select_input *in, uint8_t *keep, float *new_history) {
    const streaming_state *s = state;
    const int n = in->view.n, sink = s->sink < in->budget ? s->sink : in->budget;
    for (int t = 0; t < n; t++) keep[t] = t < sink || t >= n - (in->budget - sink);
    return ZP_OK;
}

static void streaming_describe(const void *state, char *buf, size_t len) {
    snprintf(buf, len, "{\"sink\": %d}", ((const streaming_state *)state)->sink);
}

const zp_policy_ops policy_streaming_ops = {"streaming", "attention sinks + recent window (StreamingLLM)", 1, 0, 1,
                                            streaming_init, free, streaming_select, streaming_describe};
