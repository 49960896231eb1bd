/* policy.c - the policy registry, creation from JSON, and helpers shared by policies. */
#include "policy.h"

#include <cjson/cJSON.h> /* parameter objects */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

extern const zp_policy_ops policy_full_ops, policy_streaming_ops, policy_h2o_ops, policy_snapkv_d_ops, policy_rkv_ops,
    policy_morphkv_ops, policy_zipage_ops, policy_gkv_ops, policy_snapkv_ops, policy_tova_ops, policy_keynorm_ops,
    policy_keydiff_ops, policy_random_ops, policy_triattention_ops;

static const zp_policy_ops *const registry[] = {
    &policy_full_ops,    &policy_streaming_ops, &policy_h2o_ops,    &policy_snapkv_d_ops,     &policy_rkv_ops,
    &policy_morphkv_ops, &policy_zipage_ops,    &policy_gkv_ops,    &policy_snapkv_ops,       &policy_tova_ops,
    &policy_keynorm_ops, &policy_keydiff_ops,   &policy_random_ops, &policy_triattention_ops, NULL};

const zp_policy_ops *const *policy_registry(void) { return registry; }

const zp_policy_ops *policy_find(const char *name) {
    for (int i = 0; registry[i]; i++)
        if (!strcmp(registry[i]->name, name)) return registry[i];
    return NULL;
}

const char *policy_label(const zp_policy *p) { return p->ops->label_of ? p->ops->label_of(p->state) : p->ops->label; }

int policy_window(const zp_policy_ops *ops, int window) { return window > 0 ? window : ops->default_window; }

int policy_stores_history(const zp_policy *p, int budget, int window) {
    zp_score_plan pl;
    return p->ops->needs_history && policy_plan(p, budget, window, &pl) == ZP_OK && pl.global != ZP_GLOBAL_NONE;
}

void policy_names(char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; registry[i] && n < len; i++) n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", registry[i]->name);
}

zp_status policy_unknown(const char *name) {
    char names[256];
    policy_names(names, sizeof names);
    return zp_fail(ZP_ERR_INVALID, "unknown policy \"%s\" (known: %s)", name, names);
}

zp_status policy_init_ops(const zp_policy_ops *ops, const char *params_json, zp_policy *out) {
    memset(out, 0, sizeof *out);
    cJSON *params = NULL;
    if (params_json && *params_json) {
        params = cJSON_Parse(params_json);
        if (!cJSON_IsObject(params)) {
            cJSON_Delete(params);
            return zp_fail(ZP_ERR_INVALID, "policy %s: parameters are not a JSON object: %s", ops->name, params_json);
        }
    }
    zp_status s = ops->init(params, &out->state);
    cJSON_Delete(params);
    if (s == ZP_OK) out->ops = ops;
    return s;
}

zp_status policy_create(const char *name, const char *params_json, zp_policy *out) {
    memset(out, 0, sizeof *out);
    const zp_policy_ops *ops = policy_find(name);
    return ops ? policy_init_ops(ops, params_json, out) : policy_unknown(name);
}

void policy_destroy(zp_policy *p) {
    if (p->ops && p->ops->destroy) p->ops->destroy(p->state);
    memset(p, 0, sizeof *p);
}

zp_status policy_plan(const zp_policy *p, int budget, int window, zp_score_plan *out) {
    if (!p->ops->plan) return zp_fail(ZP_ERR_INVALID, "policy %s never evicts: it has no score plan", p->ops->name);
    memset(out, 0, sizeof *out);
    p->ops->plan(p->state, budget, window, out);
    return ZP_OK;
}

zp_status policy_select(const zp_policy *p, const zp_select_input *in, uint8_t *keep, float *new_history, int *order) {
    if (!p->ops->evicts) {
        if (in->view.n > in->budget)
            return zp_fail(ZP_ERR_INVALID, "policy %s: asked to evict (%d tokens over a budget of %d)", p->ops->name, in->view.n, in->budget);
        for (int t = 0; t < in->view.n; t++) keep[t] = 1;
        for (int t = 0; order && t < in->view.n; t++) order[t] = t;
        return ZP_OK;
    }
    zp_score_plan plan;
    ZP_TRY(policy_plan(p, in->budget, in->view.window, &plan));
    return scorer_plan_run(&plan, &in->view, in->history, in->n_hist, in->block_size, in->budget, in->scratch, keep,
                           p->ops->needs_history ? new_history : NULL, order);
}

zp_status policy_check_keys(const cJSON *params, const char *policy, const char *const *known) {
    const cJSON *e;
    cJSON_ArrayForEach(e, params) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(e->string, known[i]);
        if (!ok) return zp_fail(ZP_ERR_INVALID, "policy %s: unknown parameter \"%s\"", policy, e->string);
    }
    return ZP_OK;
}

zp_status policy_param_float(const cJSON *params, const char *policy, const char *key, float lo, float hi, float *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) return ZP_OK;
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= lo && it->valuedouble <= hi))
        return zp_fail(ZP_ERR_INVALID, "policy %s: parameter \"%s\" must be a number in [%g, %g]", policy, key, lo, hi);
    *v = (float)it->valuedouble;
    return ZP_OK;
}

zp_status policy_param_int(const cJSON *params, const char *policy, const char *key, int lo, int hi, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) return ZP_OK;
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= lo && it->valuedouble <= hi) || it->valuedouble != (double)(int)it->valuedouble)
        return zp_fail(ZP_ERR_INVALID, "policy %s: parameter \"%s\" must be an integer in [%d, %d]", policy, key, lo, hi);
    *v = (int)it->valuedouble;
    return ZP_OK;
}

zp_status policy_param_pool_kernel(const cJSON *params, const char *policy, const char *key, int *v) {
    ZP_TRY(policy_param_int(params, policy, key, 1, 63, v));
    if (*v % 2 == 0) return zp_fail(ZP_ERR_INVALID, "policy %s: parameter \"%s\" must be odd", policy, key);
    return ZP_OK;
}

zp_status policy_param_bool(const cJSON *params, const char *policy, const char *key, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) return ZP_OK;
    if (!cJSON_IsBool(it)) return zp_fail(ZP_ERR_INVALID, "policy %s: parameter \"%s\" must be true or false", policy, key);
    *v = cJSON_IsTrue(it);
    return ZP_OK;
}

zp_status policy_param_choice(const cJSON *params, const char *policy, const char *key, const char *const *choices, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, key);
    if (!it) return ZP_OK;
    for (int i = 0; cJSON_IsString(it) && choices[i]; i++)
        if (!strcmp(it->valuestring, choices[i])) { *v = i; return ZP_OK; }
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; choices[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", choices[i]);
    return zp_fail(ZP_ERR_INVALID, "policy %s: parameter \"%s\" must be one of %s", policy, key, list);
}

typedef struct {
    int seed;
} key_state;

zp_status policy_key_init(const cJSON *params, const char *policy, int with_seed, void **state) {
    static const char *const none[] = {NULL}, *const seed[] = {"seed", NULL};
    key_state *s = calloc(1, sizeof *s);
    ZP_CHECK_ALLOC(s);
    zp_status st = policy_check_keys(params, policy, with_seed ? seed : none);
    if (st == ZP_OK && with_seed) st = policy_param_int(params, policy, "seed", 0, 2147483647, &s->seed);
    if (st != ZP_OK) { free(s); return st; }
    *state = s;
    return ZP_OK;
}

void policy_key_plan(const void *state, zp_key_score kind, zp_score_plan *p) {
    p->attention = 0;
    p->key_score = kind;
    p->seed = (uint32_t)((const key_state *)state)->seed;
}

void policy_key_describe(const void *state, int with_seed, char *buf, size_t len) {
    if (with_seed) snprintf(buf, len, "{\"seed\": %d}", ((const key_state *)state)->seed);
    else snprintf(buf, len, "{}");
}
