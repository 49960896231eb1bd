/* streaming.c - StreamingLLM (arXiv 2309.17453): keep the first `sink` tokens and the most
 * recent budget - sink. No scores. By default the keys keep their original RoPE positions;
 * `position_shift: true` is the authors' mode (mit-han-lab/streaming-llm, pos_shift/): every
 * token takes its cache index as position, done by re-rotating the kept keys at compaction
 * (scorers.h shift_positions). Prefix-compatible. */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int sink, shift;
} streaming_state;

static zp_status streaming_init(const cJSON *params, void **state) {
    static const char *const known[] = {"sink", "position_shift", NULL};
    streaming_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->sink = 4;
    zp_status st = policy_check_keys(params, "streaming", known);
    if (st == ZP_OK) st = policy_param_int(params, "streaming", "sink", 0, 1 << 20, &s->sink);
    if (st == ZP_OK) st = policy_param_bool(params, "streaming", "position_shift", &s->shift);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void streaming_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const streaming_state *s = state;
    const int sink = s->sink < budget ? s->sink : budget;
    p->sink = sink; /* all scores 0, sinks +inf: the top `sink` are the sinks */
    p->recent = budget - sink;
    p->shift_positions = s->shift;
}

static void streaming_describe(const void *state, char *buf, size_t len) {
    const streaming_state *s = state;
    snprintf(buf, len, "{\"sink\": %d, \"position_shift\": %s}", s->sink, s->shift ? "true" : "false");
}

static const char *streaming_label(const void *state) {
    return ((const streaming_state *)state)->shift ? "StreamingLLM (position shift)" : "StreamingLLM (no position shift)";
}

const zp_policy_ops policy_streaming_ops = {
    .name = "streaming",
    .label = "StreamingLLM (no position shift)",
    .summary = "attention sinks + recent window (StreamingLLM)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 16,
    .init = streaming_init,
    .destroy = free,
    .plan = streaming_plan,
    .describe = streaming_describe,
    .label_of = streaming_label,
};
