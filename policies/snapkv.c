/* snapkv.c - SnapKV (arXiv 2404.14469) as its authors published it (FasterDecoding/SnapKV):
 * one compression, right after the prefill, of prompts longer than the budget C = N_max x
 * block_size; decoding never evicts (every generated token is kept, the request grows like
 * full KV). The first token is sampled from the uncompressed prompt, as in the original, where
 * the prefill attention still sees every key. Score: the last w prompt queries (32, its
 * LongBench configs) attend to all prompt keys with a causal mask inside the window, softmax
 * over all keys, SUM over the window rows, max pool (kernel 7, the LongBench configs; the
 * code's own default, an average pool of 5, is not implemented) over the non-window keys; the
 * top C - w of those are kept with the w window tokens.
 * Differs from the original: one selection per KV head, not per query head (the original
 * repeats K/V to the query heads first, so its cache is G times larger); the group's
 * probabilities are averaged ("gqa": "mean_prob", as kvpress does, but before the pooling) or
 * maxed ("max_prob"). With G = 1 the kept set is the authors' (tests/reference/ref_snapkv.py).
 * Kept tokens stay in position order (the original gathers them in score order; attention does
 * not depend on the order). A request preempted after its compression is recomputed with its
 * whole prompt (no second compression). Needs no history; the engine turns the prefix cache
 * off for it (a compressed prompt is its own).
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int kernel, max_prob;
} snapkv_state;

static zp_status snapkv_init(const cJSON *params, void **state) {
    static const char *const known[] = {"kernel", "gqa", NULL}, *const gqa[] = {"mean_prob", "max_prob", NULL};
    snapkv_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    s->kernel = 7;
    zp_status st = policy_check_keys(params, "snapkv", known);
    if (st == ZP_OK) st = policy_param_pool_kernel(params, "snapkv", "kernel", &s->kernel);
    if (st == ZP_OK) st = policy_param_choice(params, "snapkv", "gqa", gqa, &s->max_prob);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void snapkv_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const snapkv_state *s = state;
    (void)budget;
    p->attention = 1; /* all keys, causal inside the window; the sum over the window rows */
    p->attn = (zp_attn_opts){s->max_prob ? ZP_GQA_MAX_PROB : ZP_GQA_MEAN_PROB, ZP_QRED_SUM, 0, 0};
    p->pool_kernel = s->kernel;
    p->pool_candidates = 1;
    p->recent = window;
}

static void snapkv_describe(const void *state, char *buf, size_t len) {
    const snapkv_state *s = state;
    snprintf(buf, len, "{\"kernel\": %d, \"gqa\": \"%s\"}", s->kernel, s->max_prob ? "max_prob" : "mean_prob");
}

const zp_policy_ops policy_snapkv_ops = {
    .name = "snapkv",
    .label = "SnapKV (prompt only)",
    .summary = "prompt compressed once at prefill, decoding keeps everything (SnapKV)",
    .evicts = 1,
    .needs_history = 0,
    .prefix_compatible = 0,
    .prompt_only = 1,
    .default_window = 32,
    .init = snapkv_init,
    .destroy = free,
    .plan = snapkv_plan,
    .describe = snapkv_describe,
};
