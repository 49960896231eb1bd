/* zipage.c - the Zipage score (docs/algorithm.md §3), each stage switchable for ablations:
 *   A  window attention: softmax over all keys, causal in the window, max over the GQA group,
 *      mean over the window;
 *   S  global score (use_global): max(A, decay * H) on tokens with history, stored as the new H;
 *   P  max pooling k=5 (use_pooling) on a request's first compression (or always with
 *      continues_pooling);
 *   R  redundancy (use_redundancy): lightning (block-local, default) or raw, with the
 *      "last above 0.5 is protected" rule, R = softmax(r / (temperature * span));
 *   C  = lambda * P - (1 - lambda) * R; optional sinks; the w window tokens always kept;
 *      top budget per KV head.
 * max_norm divides A and R by their maxima (only with use_global, as the reference).
 * Defaults are the paper's script (scripts/mathbench.sh). Prefix-compatible: the engine writes
 * the compacted tokens into fresh blocks when blocks are shared.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

typedef struct {
    int use_global, global_sum, max_norm, use_pooling, continues_pooling, pool_kernel;
    int use_redundancy, lightning, use_sink, sink_len;
    float decay, lambda, temperature, theta;
} zipage_state;

static zp_status zipage_parse(const cJSON *p, zipage_state *s) {
    static const char *const known[] = {"use_global", "global_mode", "decay", "max_norm", "use_pooling", "continues_pooling",
                                        "pool_kernel", "use_redundancy", "lightning", "lambda", "temperature", "theta",
                                        "use_sink", "sink_len", NULL};
    static const char *const modes[] = {"max", "sum", NULL};
    const char *P = "zipage";
    ZP_TRY(policy_check_keys(p, P, known));
    ZP_TRY(policy_param_bool(p, P, "use_global", &s->use_global));
    ZP_TRY(policy_param_choice(p, P, "global_mode", modes, &s->global_sum));
    ZP_TRY(policy_param_float(p, P, "decay", 0.f, 1.f, &s->decay));
    ZP_TRY(policy_param_bool(p, P, "max_norm", &s->max_norm));
    ZP_TRY(policy_param_bool(p, P, "use_pooling", &s->use_pooling));
    ZP_TRY(policy_param_bool(p, P, "continues_pooling", &s->continues_pooling));
    ZP_TRY(policy_param_pool_kernel(p, P, "pool_kernel", &s->pool_kernel));
    ZP_TRY(policy_param_bool(p, P, "use_redundancy", &s->use_redundancy));
    ZP_TRY(policy_param_bool(p, P, "lightning", &s->lightning));
    ZP_TRY(policy_param_float(p, P, "lambda", 0.f, 1.f, &s->lambda));
    ZP_TRY(policy_param_float(p, P, "temperature", 1e-6f, 1e6f, &s->temperature));
    ZP_TRY(policy_param_float(p, P, "theta", -1.f, 1.f, &s->theta));
    ZP_TRY(policy_param_bool(p, P, "use_sink", &s->use_sink));
    ZP_TRY(policy_param_int(p, P, "sink_len", 0, 1 << 20, &s->sink_len));
    return ZP_OK;
}

static zp_status zipage_init(const cJSON *params, void **state) {
    zipage_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    *s = (zipage_state){.use_global = 1, .decay = 0.8f, .use_pooling = 1, .pool_kernel = 5, .use_redundancy = 1,
                        .lightning = 1, .lambda = 0.2f, .temperature = 0.4f, .theta = 0.5f, .sink_len = 4};
    zp_status st = zipage_parse(params, s);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

static void zipage_plan(const void *state, int budget, int window, zp_score_plan *p) {
    const zipage_state *s = state;
    p->attention = 1;
    p->attn = (zp_attn_opts){ZP_GQA_MAX_PROB, ZP_QRED_MEAN, 0, 0};
    p->max_norm = s->use_global && s->max_norm;
    p->global = !s->use_global ? ZP_GLOBAL_NONE : s->global_sum ? ZP_GLOBAL_SUM : ZP_GLOBAL_MAX;
    p->gamma = s->decay;
    p->pool_kernel = s->use_pooling ? s->pool_kernel : 0;
    p->pool_first_only = !s->continues_pooling;
    p->redundancy = !s->use_redundancy ? ZP_RED_NONE : s->lightning ? ZP_RED_LIGHTNING : ZP_RED_RAW;
    p->theta = s->theta;
    p->temperature = s->temperature;
    p->lambda = s->lambda;
    p->sink = s->use_sink ? s->sink_len : 0;
    p->recent = window;
}

static void zipage_describe(const void *state, char *buf, size_t len) {
    const zipage_state *s = state;
    snprintf(buf, len,
             "{\"use_global\": %s, \"global_mode\": \"%s\", \"decay\": %g, \"max_norm\": %s, \"use_pooling\": %s, "
             "\"continues_pooling\": %s, \"pool_kernel\": %d, \"use_redundancy\": %s, \"lightning\": %s, \"lambda\": %g, "
             "\"temperature\": %g, \"theta\": %g, \"use_sink\": %s, \"sink_len\": %d}",
             s->use_global ? "true" : "false", s->global_sum ? "sum" : "max", s->decay, s->max_norm ? "true" : "false",
             s->use_pooling ? "true" : "false", s->continues_pooling ? "true" : "false", s->pool_kernel,
             s->use_redundancy ? "true" : "false", s->lightning ? "true" : "false", s->lambda, s->temperature, s->theta,
             s->use_sink ? "true" : "false", s->sink_len);
}

const zp_policy_ops policy_zipage_ops = {
    .name = "zipage",
    .label = "Zipage",
    .summary = "global window attention + pooling - lightning redundancy (Zipage)",
    .evicts = 1,
    .needs_history = 1,
    .prefix_compatible = 1,
    .prompt_only = 0,
    .default_window = 16,
    .init = zipage_init,
    .destroy = free,
    .plan = zipage_plan,
    .describe = zipage_describe,
};
