/* experiment.c - parsing, validation and grid expansion of experiment definitions. */
#include "experiment.h"

#include <cjson/cJSON.h> /* definitions */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h> /* run ids */

#include "policy.h" /* policy_find: each policy's default window */
#include "files.h"

#define EXP_SETTING_ROW(name, type, field, def, def_str, lo, hi, flags, help) \
    {#name, type, offsetof(exp_run, name), sizeof(((exp_run *)0)->name), (double)(def), (double)(lo), (double)(hi), def_str, flags, help},
const zp_setting exp_settings[] = {EXP_RUN_SETTINGS(EXP_SETTING_ROW) ZP_ENGINE_SETTINGS(EXP_SETTING_ROW)};
const int exp_n_settings = (int)(sizeof exp_settings / sizeof *exp_settings);

/* The keys of their own syntax, beside the schemas' */
static const char *const OWN_KEYS[] = {"policy_params", "system", "kind", "baseline", "description", NULL};

/* Keys whose null means something ("system": null, no system prompt); any other null is refused:
 * it would silently mean the default ("limit": null ran every problem). */
static const char *const NULL_OK[] = {"system", NULL};

static zp_status check_keys(const cJSON *root, const char *src) {
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        int ok = zp_setting_find(exp_settings, exp_n_settings, e->string) != NULL;
        for (int i = 0; OWN_KEYS[i] && !ok; i++) ok = !strcmp(OWN_KEYS[i], e->string);
        if (!ok) return zp_fail(ZP_ERR_INVALID, "%s: unknown key \"%s\"", src, e->string);
        int null_ok = 0;
        for (int i = 0; NULL_OK[i]; i++) null_ok |= !strcmp(NULL_OK[i], e->string);
        if (cJSON_IsNull(e) && !null_ok)
            return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is null: leave the key out for its default, or give a value", src, e->string);
    }
    return ZP_OK;
}

/* Sets row s of *run from a JSON value (of an axis: one of its values, and the axis's wording). */
static zp_status set_from_json(const zp_setting *s, const cJSON *it, const char *src, int axis, exp_run *run) {
    char what[320];
    snprintf(what, sizeof what, "%s: \"%s\"", src, s->name);
    if (s->type == ZP_SET_STR) {
        if (!cJSON_IsString(it)) return zp_fail(ZP_ERR_INVALID, "%s %s", what, axis ? "values must be strings" : "must be a string");
        return zp_setting_parse(s, what, it->valuestring, run);
    }
    if (s->type == ZP_SET_BOOL) {
        if (!cJSON_IsBool(it)) return zp_fail(ZP_ERR_INVALID, "%s must be true or false", what);
        *(int *)((char *)run + s->offset) = cJSON_IsTrue(it);
        return ZP_OK;
    }
    if (axis && (!cJSON_IsNumber(it) || !(it->valuedouble >= s->lo && it->valuedouble <= s->hi) ||
                 (s->type != ZP_SET_FLOAT && it->valuedouble != (double)(int64_t)it->valuedouble)))
        return zp_fail(ZP_ERR_INVALID, "%s values must be %s in [%g, %g]", what, s->type == ZP_SET_FLOAT ? "numbers" : "whole numbers", s->lo,
                       s->hi);
    if (!cJSON_IsNumber(it)) return zp_fail(ZP_ERR_INVALID, "%s must be a number in [%g, %g]", what, s->lo, s->hi);
    return zp_setting_set_number(s, what, it->valuedouble, run);
}

/* A boolean key of its own syntax: absent (def), or true or false (anything else is refused). */
static zp_status get_bool(const cJSON *root, const char *key, const char *src, int def, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (it && !cJSON_IsBool(it)) return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" must be true or false", src, key);
    *v = it ? cJSON_IsTrue(it) : def;
    return ZP_OK;
}

/* The base run: every schema default, then the definition's scalar settings (the axes are set
 * per run by expand). */
static zp_status parse_base(const cJSON *r, const char *src, exp_run *b) {
    memset(b, 0, sizeof *b);
    zp_settings_defaults(exp_settings, exp_n_settings, b);
    for (int i = 0; i < exp_n_settings; i++) {
        const zp_setting *s = &exp_settings[i];
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(r, s->name);
        if (it && !cJSON_IsNull(it) && !(s->flags & ZP_SETTING_AXIS)) ZP_TRY(set_from_json(s, it, src, 0, b));
    }
    if (!b->scheduler[0]) snprintf(b->scheduler, sizeof b->scheduler, "hybrid"); /* full KV runs get "full" at expansion */
    if (strcmp(b->grader, "builtin") && strcmp(b->grader, "math-verify"))
        return zp_fail(ZP_ERR_INVALID, "%s: \"grader\" must be \"builtin\" or \"math-verify\"", src);
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(r, "dataset");
    if (!b->model[0] || !ds || cJSON_IsNull(ds) || (cJSON_IsString(ds) && !ds->valuestring[0]))
        return zp_fail(ZP_ERR_INVALID, "%s: \"model\" and \"dataset\" are required", src);
    char kind[32] = "generate";
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind");
    if (k && cJSON_IsString(k)) snprintf(kind, sizeof kind, "%s", k->valuestring);
    if ((k && !cJSON_IsString(k)) || (strcmp(kind, "generate") && strcmp(kind, "fidelity")))
        return zp_fail(ZP_ERR_INVALID, "%s: \"kind\" must be \"generate\" or \"fidelity\"", src);
    b->fidelity = !strcmp(kind, "fidelity");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(r, "system");
    b->math_system = !sys || (cJSON_IsString(sys) && !strcmp(sys->valuestring, "math"));
    if (sys && !cJSON_IsNull(sys) && !(cJSON_IsString(sys) && !strcmp(sys->valuestring, "math")))
        return zp_fail(ZP_ERR_INVALID, "%s: \"system\" must be \"math\" or null", src);
    return ZP_OK;
}

/* An axis: a scalar or a list; returns its items (a scalar counts as one). */
static int axis_len(const cJSON *v) { return cJSON_IsArray(v) ? cJSON_GetArraySize(v) : (v ? 1 : 0); }
static const cJSON *axis_at(const cJSON *v, int i) { return cJSON_IsArray(v) ? cJSON_GetArrayItem(v, i) : v; }

static zp_status add_run(experiment *x, const exp_run *r, const char *src) {
    for (int i = 0; i < x->n_runs; i++)
        if (!strcmp(x->runs[i].resolved, r->resolved)) return ZP_OK; /* duplicate (e.g. baselines) */
    if (x->n_runs == EXP_MAX_RUNS)
        return zp_fail(ZP_ERR_INVALID, "%s: the axes expand to more than %d runs: split the experiment", src, EXP_MAX_RUNS);
    if ((x->n_runs & (x->n_runs - 1)) == 0) { /* capacity doubles at each power of two */
        exp_run *g = realloc(x->runs, sizeof *g * (size_t)(x->n_runs ? 2 * x->n_runs : 1));
        ZP_CHECK_ALLOC(g);
        x->runs = g;
    }
    x->runs[x->n_runs++] = *r;
    return ZP_OK;
}

/* The run's configuration as JSON: every setting in schema order, then the keys of their own
 * syntax. Fails when it does not fit (a run id must hash all of it). */
static zp_status resolve_json(exp_run *r, const char *src) {
    size_t at = 0, n = sizeof r->resolved;
    char v[2200];
    for (int i = 0; i < exp_n_settings && at < n; i++) {
        if (!zp_setting_json(&exp_settings[i], r, v, sizeof v)) at = n; /* a value that does not fit: refused below */
        at += (size_t)snprintf(r->resolved + at, n - at, "%s\"%s\":%s", i ? "," : "{", exp_settings[i].name, v);
    }
    if (at < n)
        at += (size_t)snprintf(r->resolved + at, n - at, ",\"system\":%s,\"kind\":\"%s\",\"policy_params\":%s}", r->math_system ? "\"math\"" : "null",
                               r->fidelity ? "fidelity" : "generate", r->policy_params[0] ? r->policy_params : "{}");
    if (at >= n) return zp_fail(ZP_ERR_INVALID, "%s: a run's configuration is longer than %zu characters", src, n - 1);
    return ZP_OK;
}

/* Expands policy_params (values may be lists) for one policy into params JSON strings. */
static zp_status expand_params(const cJSON *pp, int index, char *out, size_t n, int *count) {
    int total = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, pp) total *= axis_len(e) ? axis_len(e) : 1;
    *count = total;
    if (!pp || !cJSON_GetArraySize(pp)) { out[0] = 0; return ZP_OK; }
    cJSON *o = cJSON_CreateObject();
    int rest = index;
    cJSON_ArrayForEach(e, pp) {
        int len = axis_len(e);
        cJSON_AddItemToObject(o, e->string, cJSON_Duplicate(axis_at(e, rest % len), 1));
        rest /= len;
    }
    char *s = cJSON_PrintUnformatted(o);
    snprintf(out, n, "%s", s);
    free(s);
    cJSON_Delete(o);
    return ZP_OK;
}

/* tau and floor are the adaptive budget's: a fixed-budget run has their defaults (one run, not
 * one per value of their axes). */
static void budget_settings(exp_run *run) {
    if (!strcmp(run->budget, "adaptive")) return;
    const zp_engine_config d = zp_engine_config_default();
    run->budget_tau = d.budget_tau;
    run->budget_floor = d.budget_floor;
}

/* Full KV's run: no cap, window, query slots, head or request budgets; the full scheduler. */
static void full_kv_settings(exp_run *run) {
    run->nmax = run->window = run->max_concurrency = 0;
    snprintf(run->scheduler, sizeof run->scheduler, "full");
    snprintf(run->head_budget, sizeof run->head_budget, "uniform");
    snprintf(run->budget, sizeof run->budget, "fixed");
    budget_settings(run);
}

/* The engine settings of one run after its axes are set: its policy's window unless set, full
 * KV's and a prompt-only policy's scheduler, full KV's budget; the adaptive budget's tau and floor
 * at their defaults for a fixed budget. */
static zp_status finish_run(exp_run *run, const char *src, const zp_policy_ops **ops) {
    if (!(*ops = policy_find(run->policy))) {
        char why[512]; /* policy_unknown's line names the known ones; copied: zp_fail rewrites it */
        const zp_status s = policy_unknown(run->policy);
        snprintf(why, sizeof why, "%s", zp_last_error());
        return zp_fail(s, "%s: %s", src, why);
    }
    run->window = policy_window(*ops, run->window); /* its authors' window unless set */
    if (!strcmp(run->policy, "full")) full_kv_settings(run);
    if ((*ops)->prompt_only) snprintf(run->scheduler, sizeof run->scheduler, "full"); /* SnapKV: no cap, no slots to share */
    budget_settings(run);
    if (!run->fidelity) run->gen = run->kl_window = 0;
    return ZP_OK;
}

/* policy_params applies to every policy of the spec, unless its keys name policies
 * ({"streaming": {"position_shift": [false, true]}}): then each names that policy's own
 * parameters and the others run at their defaults. *per_policy: which form; mixing is refused. */
static zp_status params_form(const cJSON *pp, const char *src, int *per_policy) {
    int named = 0, other = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, pp) {
        const int is_policy = policy_find(e->string) != NULL;
        if (is_policy && !cJSON_IsObject(e))
            return zp_fail(ZP_ERR_INVALID, "%s: policy_params \"%s\" names a policy: its value must be an object of its parameters", src, e->string);
        named += is_policy;
        other += !is_policy;
    }
    if (named && other) return zp_fail(ZP_ERR_INVALID, "%s: policy_params mixes policy names and parameter names", src);
    *per_policy = named > 0;
    return ZP_OK;
}

/* The policy_params of one policy (params_form): NULL for its defaults. */
static const cJSON *params_of(const cJSON *pp, int per_policy, const char *policy) {
    return per_policy ? cJSON_GetObjectItemCaseSensitive(pp, policy) : pp;
}

/* Adds run with each combination of its policy_params lists, and its full-KV baseline. */
static zp_status add_combinations(experiment *x, exp_run *run, const cJSON *pp, int baseline, const char *src) {
    const int full = !strcmp(run->policy, "full");
    for (int q = 0, count = 1; q < count; q++) {
        ZP_TRY(expand_params(full ? NULL : pp, q, run->policy_params, sizeof run->policy_params, &count));
        ZP_TRY(resolve_json(run, src));
        ZP_TRY(add_run(x, run, src));
    }
    if (!baseline || full) return ZP_OK;
    exp_run bl = *run;
    snprintf(bl.policy, sizeof bl.policy, "full");
    full_kv_settings(&bl);
    bl.policy_params[0] = 0;
    ZP_TRY(resolve_json(&bl, src));
    return add_run(x, &bl, src);
}

#define EXP_MAX_AXES 16

/* The cross product of the axis settings (schema order, the last fastest) and policy_params. */
static zp_status expand(const cJSON *r, const exp_run *base, const char *src, experiment *x) {
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(r, "policy_params");
    if (pp && !cJSON_IsObject(pp)) return zp_fail(ZP_ERR_INVALID, "%s: \"policy_params\" must be an object", src);
    const zp_setting *axis[EXP_MAX_AXES];
    const cJSON *val[EXP_MAX_AXES];
    int len[EXP_MAX_AXES], n_axes = 0;
    double combos = 1; /* before any loop: a cross product too large to run is refused, not walked */
    for (int i = 0; i < exp_n_settings; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(r, exp_settings[i].name);
        if (!(exp_settings[i].flags & ZP_SETTING_AXIS) || !it || cJSON_IsNull(it)) continue;
        if (n_axes == EXP_MAX_AXES) return zp_fail(ZP_ERR_INVALID, "%s: more than %d axis settings", src, EXP_MAX_AXES);
        if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 0)
            return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is an empty list (no runs)", src, exp_settings[i].name);
        axis[n_axes] = &exp_settings[i];
        val[n_axes] = it;
        len[n_axes] = axis_len(it);
        combos *= len[n_axes++];
    }
    int per_policy = 0;
    ZP_TRY(params_form(pp, src, &per_policy));
    const cJSON *e, *f;
    cJSON_ArrayForEach(e, pp) { /* per policy: each policy's product bounds the total from above */
        const cJSON *own = per_policy ? e : NULL;
        cJSON_ArrayForEach(f, own) {
            if (cJSON_IsArray(f) && cJSON_GetArraySize(f) == 0)
                return zp_fail(ZP_ERR_INVALID, "%s: policy_params \"%s\" \"%s\" is an empty list (no runs)", src, e->string, f->string);
            combos *= axis_len(f) ? axis_len(f) : 1;
        }
        if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 0)
            return zp_fail(ZP_ERR_INVALID, "%s: policy_params \"%s\" is an empty list (no runs)", src, e->string);
        if (!per_policy) combos *= axis_len(e) ? axis_len(e) : 1;
    }
    if (combos > EXP_MAX_RUNS)
        return zp_fail(ZP_ERR_INVALID, "%s: the axes multiply to %.0f runs, more than %d: split the experiment", src, combos, EXP_MAX_RUNS);
    int baseline = 0;
    ZP_TRY(get_bool(r, "baseline", src, 0, &baseline));
    int total = 1;
    for (int a = 0; a < n_axes; a++) total *= len[a];
    for (int c = 0; c < total; c++) {
        exp_run run = *base;
        for (int a = n_axes - 1, rest = c; a >= 0; a--) { /* mixed radix: the last axis fastest */
            ZP_TRY(set_from_json(axis[a], axis_at(val[a], rest % len[a]), src, 1, &run));
            rest /= len[a];
        }
        const zp_policy_ops *ops;
        ZP_TRY(finish_run(&run, src, &ops));
        ZP_TRY(add_combinations(x, &run, params_of(pp, per_policy, run.policy), baseline, src));
    }
    return ZP_OK;
}

zp_status exp_load(const char *name, const char *dir, experiment *x) {
    memset(x, 0, sizeof *x);
    char path[4096];
    if (strstr(name, ".json")) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s.json", dir, name);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(x->name, sizeof x->name, "%.*s", (int)(strlen(base) - 5), base);
    snprintf(x->path, sizeof x->path, "%s", path);
    cJSON *root;
    ZP_TRY(zp_read_json_object(path, &root));
    exp_run b;
    zp_status s = check_keys(root, path);
    if (s == ZP_OK) s = parse_base(root, path, &b);
    if (s == ZP_OK) s = expand(root, &b, path, x);
    cJSON_Delete(root);
    if (s != ZP_OK) exp_free(x);
    return s;
}

void exp_engine_config(const exp_run *r, zp_engine_config *ec) {
#define EXP_TO_ENGINE(name, type, field, def, def_str, lo, hi, flags, help) ec->field = r->name;
    ZP_ENGINE_SETTINGS(EXP_TO_ENGINE)
#undef EXP_TO_ENGINE
    ec->policy_params = r->policy_params[0] ? r->policy_params : NULL; /* full KV's nmax 0: the plan reads none */
}

void exp_free(experiment *x) {
    free(x->runs);
    x->runs = NULL;
    x->n_runs = 0;
}

void exp_assign_ids(experiment *x, const char *git_commit, uint64_t model_checksum) {
    for (int i = 0; i < x->n_runs; i++) {
        XXH64_state_t *st = XXH64_createState();
        XXH64_reset(st, 0);
        XXH64_update(st, x->runs[i].resolved, strlen(x->runs[i].resolved));
        XXH64_update(st, git_commit, strlen(git_commit));
        XXH64_update(st, &model_checksum, sizeof model_checksum);
        snprintf(x->runs[i].run_id, sizeof x->runs[i].run_id, "%016llx", (unsigned long long)XXH64_digest(st));
        XXH64_freeState(st);
    }
}

void exp_budget_label(const exp_run *r, char *out, size_t n) {
    if (strcmp(r->budget, "adaptive")) snprintf(out, n, "fixed");
    else snprintf(out, n, "adaptive tau %g floor %d", r->budget_tau, r->budget_floor);
}
