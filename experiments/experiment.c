/* experiment.c - parsing, validation and grid expansion of experiment definitions. */
#include "experiment.h"

#include <cjson/cJSON.h> /* definitions */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h> /* run ids */

#include "config.h" /* zp_read_file, zp_read_json_object */
#include "policy.h" /* policy_find: each policy's default window */

static const char *const KNOWN[] = {"model", "device", "precision", "dataset", "ids", "limit", "samples", "temperature", "top_p",
                                    "top_k", "max_tokens", "thinking", "system", "seed", "block_size", "max_num_seqs",
                                    "max_num_batched_tokens", "prefix_cache", "async", "kv_pool_tokens", "gpu_memory_utilization", "scheduler", "policy",
                                    "policy_params", "nmax", "window", "max_concurrency", "baseline", "description", "kind", "gen",
                                    "kl_window", "grader", NULL};

static zp_status check_keys(const cJSON *root, const char *src) {
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        int ok = 0;
        for (int i = 0; KNOWN[i] && !ok; i++) ok = !strcmp(KNOWN[i], e->string);
        if (!ok) return zp_fail(ZP_ERR_INVALID, "%s: unknown key \"%s\"", src, e->string);
    }
    return ZP_OK;
}

static zp_status get_num(const cJSON *root, const char *key, const char *src, double lo, double hi, double *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it) return ZP_OK;
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= lo && it->valuedouble <= hi))
        return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" must be a number in [%g, %g]", src, key, lo, hi);
    *v = it->valuedouble;
    return ZP_OK;
}

/* A count: a whole number in [lo, hi] (0.5 or 2.7 are refused, not truncated). */
static zp_status get_int(const cJSON *root, const char *key, const char *src, double lo, double hi, double *v) {
    ZP_TRY(get_num(root, key, src, lo, hi, v));
    if (*v != (double)(int64_t)*v) return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" must be a whole number (got %g)", src, key, *v);
    return ZP_OK;
}

static zp_status get_str(const cJSON *root, const char *key, const char *src, char *dst, size_t n) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it || cJSON_IsNull(it)) return ZP_OK;
    if (!cJSON_IsString(it)) return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" must be a string", src, key);
    snprintf(dst, n, "%s", it->valuestring);
    return ZP_OK;
}

static int get_bool(const cJSON *root, const char *key, int def) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    return cJSON_IsBool(it) ? cJSON_IsTrue(it) : def;
}

static zp_status parse_base(const cJSON *r, const char *src, exp_run *b) {
    memset(b, 0, sizeof *b);
    snprintf(b->device, sizeof b->device, "cpu");
    snprintf(b->precision, sizeof b->precision, "bf16");
    snprintf(b->scheduler, sizeof b->scheduler, "hybrid");
    double v;
    ZP_TRY(get_str(r, "model", src, b->model, sizeof b->model));
    ZP_TRY(get_str(r, "device", src, b->device, sizeof b->device));
    ZP_TRY(get_str(r, "precision", src, b->precision, sizeof b->precision));
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(r, "dataset");
    if (cJSON_IsArray(ds) && cJSON_IsString(cJSON_GetArrayItem(ds, 0))) /* an axis: the first names the base */
        snprintf(b->dataset, sizeof b->dataset, "%s", cJSON_GetArrayItem(ds, 0)->valuestring);
    else ZP_TRY(get_str(r, "dataset", src, b->dataset, sizeof b->dataset));
    ZP_TRY(get_str(r, "ids", src, b->ids, sizeof b->ids));
    ZP_TRY(get_str(r, "scheduler", src, b->scheduler, sizeof b->scheduler));
    snprintf(b->grader, sizeof b->grader, "builtin");
    ZP_TRY(get_str(r, "grader", src, b->grader, sizeof b->grader));
    if (strcmp(b->grader, "builtin") && strcmp(b->grader, "math-verify"))
        return zp_fail(ZP_ERR_INVALID, "%s: \"grader\" must be \"builtin\" or \"math-verify\"", src);
    if (!b->model[0] || !b->dataset[0]) return zp_fail(ZP_ERR_INVALID, "%s: \"model\" and \"dataset\" are required", src);
    v = 0; ZP_TRY(get_int(r, "limit", src, 1, 1e7, &v)); b->limit = (int)v; /* absent: every problem */
    v = 1; ZP_TRY(get_int(r, "samples", src, 1, 1e5, &v)); b->samples = (int)v;
    v = 0.6; ZP_TRY(get_num(r, "temperature", src, 0, 10, &v)); b->temperature = (float)v;
    v = 1.0; ZP_TRY(get_num(r, "top_p", src, 1e-6, 1, &v)); b->top_p = (float)v;
    v = 0; ZP_TRY(get_int(r, "top_k", src, 0, 1e7, &v)); b->top_k = (int)v;
    v = 32768; ZP_TRY(get_int(r, "max_tokens", src, 1, 1e7, &v)); b->max_tokens = (int)v;
    v = 0; ZP_TRY(get_int(r, "seed", src, 0, 1e15, &v)); b->seed = (uint64_t)v;
    v = 256; ZP_TRY(get_int(r, "block_size", src, 1, 65536, &v)); b->block_size = (int)v;
    v = 256; ZP_TRY(get_int(r, "max_num_seqs", src, 1, 1e6, &v)); b->max_num_seqs = (int)v;
    v = 8192; ZP_TRY(get_int(r, "max_num_batched_tokens", src, 1, 1e8, &v)); b->max_num_batched_tokens = (int)v;
    v = 0.9; ZP_TRY(get_num(r, "gpu_memory_utilization", src, 0.01, 1, &v)); b->gpu_memory_utilization = (float)v;
    char kind[32] = "generate";
    ZP_TRY(get_str(r, "kind", src, kind, sizeof kind));
    if (strcmp(kind, "generate") && strcmp(kind, "fidelity"))
        return zp_fail(ZP_ERR_INVALID, "%s: \"kind\" must be \"generate\" or \"fidelity\"", src);
    b->fidelity = !strcmp(kind, "fidelity");
    v = 512; ZP_TRY(get_int(r, "gen", src, 1, 1e6, &v)); b->gen = (int)v;
    v = 64; ZP_TRY(get_int(r, "kl_window", src, 1, 1e6, &v)); b->kl_window = (int)v;
    b->prefix_cache = get_bool(r, "prefix_cache", 1);
    b->async = get_bool(r, "async", 0);
    b->thinking = get_bool(r, "thinking", 1);
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

static void resolve_json(exp_run *r) {
    snprintf(r->resolved, sizeof r->resolved,
             "{\"model\":\"%s\",\"device\":\"%s\",\"precision\":\"%s\",\"dataset\":\"%s\",\"ids\":\"%s\",\"limit\":%d,\"samples\":%d,"
             "\"temperature\":%g,\"top_p\":%g,\"top_k\":%d,\"max_tokens\":%d,\"thinking\":%s,\"system\":%s,\"seed\":%llu,"
             "\"block_size\":%d,\"max_num_seqs\":%d,\"max_num_batched_tokens\":%d,\"prefix_cache\":%s,\"async\":%s,"
             "\"kv_pool_tokens\":%lld,\"scheduler\":\"%s\",\"policy\":\"%s\",\"policy_params\":%s,\"nmax\":%d,\"window\":%d,"
             "\"max_concurrency\":%d,\"kind\":\"%s\",\"gen\":%d,\"kl_window\":%d}",
             r->model, r->device, r->precision, r->dataset, r->ids, r->limit, r->samples, r->temperature, r->top_p, r->top_k,
             r->max_tokens, r->thinking ? "true" : "false", r->math_system ? "\"math\"" : "null", (unsigned long long)r->seed,
             r->block_size, r->max_num_seqs, r->max_num_batched_tokens, r->prefix_cache ? "true" : "false",
             r->async ? "true" : "false", (long long)r->kv_pool_tokens, r->scheduler, r->policy,
             r->policy_params[0] ? r->policy_params : "{}", r->nmax, r->window, r->max_concurrency, r->fidelity ? "fidelity" : "generate",
             r->fidelity ? r->gen : 0, r->fidelity ? r->kl_window : 0);
    if (r->gpu_memory_utilization != 0.9f) { /* only when set: older run ids stay valid */
        size_t n = strlen(r->resolved);
        snprintf(r->resolved + n - 1, sizeof r->resolved - (n - 1), ",\"gpu_memory_utilization\":%g}", r->gpu_memory_utilization);
    }
    if (strcmp(r->grader, "builtin")) { /* likewise */
        size_t n = strlen(r->resolved);
        snprintf(r->resolved + n - 1, sizeof r->resolved - (n - 1), ",\"grader\":\"%s\"}", r->grader);
    }
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

static zp_status expand(const cJSON *r, const exp_run *base0, const char *src, experiment *x) {
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(r, "policy"), *nm = cJSON_GetObjectItemCaseSensitive(r, "nmax");
    const cJSON *win = cJSON_GetObjectItemCaseSensitive(r, "window"), *mc = cJSON_GetObjectItemCaseSensitive(r, "max_concurrency");
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(r, "kv_pool_tokens"), *pp = cJSON_GetObjectItemCaseSensitive(r, "policy_params");
    if (pp && !cJSON_IsObject(pp)) return zp_fail(ZP_ERR_INVALID, "%s: \"policy_params\" must be an object", src);
    const int baseline = get_bool(r, "baseline", 0);
    const cJSON *axes[6] = {pol, nm, win, mc, kv, cJSON_GetObjectItemCaseSensitive(r, "dataset")};
    const char *axis_names[6] = {"policy", "nmax", "window", "max_concurrency", "kv_pool_tokens", "dataset"};
    for (int i = 0; i < 6; i++)
        if (cJSON_IsArray(axes[i]) && cJSON_GetArraySize(axes[i]) == 0)
            return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" is an empty list (no runs)", src, axis_names[i]);
    const cJSON *e;
    cJSON_ArrayForEach(e, pp)
        if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 0)
            return zp_fail(ZP_ERR_INVALID, "%s: policy_params \"%s\" is an empty list (no runs)", src, e->string);
    double combos = 1; /* before any loop: a cross product too large to run is refused, not walked */
    for (int i = 0; i < 6; i++) combos *= axes[i] ? axis_len(axes[i]) : 1;
    cJSON_ArrayForEach(e, pp) combos *= axis_len(e) ? axis_len(e) : 1;
    if (combos > EXP_MAX_RUNS)
        return zp_fail(ZP_ERR_INVALID, "%s: the axes multiply to %.0f runs, more than %d: split the experiment", src, combos, EXP_MAX_RUNS);
    const cJSON *dsa = cJSON_GetObjectItemCaseSensitive(r, "dataset");
    for (int di = 0; di < axis_len(dsa); di++) {
    const cJSON *dv = axis_at(dsa, di);
    if (!cJSON_IsString(dv)) return zp_fail(ZP_ERR_INVALID, "%s: \"dataset\" values must be strings", src);
    exp_run base_d = *base0;
    snprintf(base_d.dataset, sizeof base_d.dataset, "%s", dv->valuestring);
    const exp_run *base = &base_d;
    int np = pol ? axis_len(pol) : 1, nn = nm ? axis_len(nm) : 1, nw = win ? axis_len(win) : 1, nc = mc ? axis_len(mc) : 1, nk = kv ? axis_len(kv) : 1;
    for (int a = 0; a < np; a++)
        for (int b = 0; b < nn; b++)
            for (int c = 0; c < nw; c++)
                for (int d = 0; d < nc; d++)
                    for (int k = 0; k < nk; k++) {
                        exp_run run = *base;
                        const cJSON *p = pol ? axis_at(pol, a) : NULL;
                        const cJSON *vals[4] = {nm ? axis_at(nm, b) : NULL, win ? axis_at(win, c) : NULL, mc ? axis_at(mc, d) : NULL, kv ? axis_at(kv, k) : NULL};
                        const char *names[4] = {"nmax", "window", "max_concurrency", "kv_pool_tokens"};
                        const double lo[4] = {1, 1, 0, 0}, hi[4] = {1e6, 1e6, 1e6, 1e12};
                        for (int i = 0; i < 4; i++)
                            if (vals[i] && (!cJSON_IsNumber(vals[i]) || !(vals[i]->valuedouble >= lo[i] && vals[i]->valuedouble <= hi[i]) ||
                                            vals[i]->valuedouble != (double)(int64_t)vals[i]->valuedouble))
                                return zp_fail(ZP_ERR_INVALID, "%s: \"%s\" values must be whole numbers in [%g, %g]", src, names[i], lo[i], hi[i]);
                        if (p && !cJSON_IsString(p)) return zp_fail(ZP_ERR_INVALID, "%s: \"policy\" values must be strings", src);
                        snprintf(run.policy, sizeof run.policy, "%s", p ? p->valuestring : "full");
                        const zp_policy_ops *ops = policy_find(run.policy);
                        if (!ops) {
                            char names[256];
                            policy_names(names, sizeof names);
                            return zp_fail(ZP_ERR_INVALID, "%s: unknown policy \"%s\" (known: %s)", src, run.policy, names);
                        }
                        run.nmax = vals[0] ? vals[0]->valueint : 8;
                        run.window = policy_window(ops, vals[1] ? vals[1]->valueint : 0); /* its authors' window unless set */
                        run.max_concurrency = vals[2] ? vals[2]->valueint : 0;
                        run.kv_pool_tokens = vals[3] ? (int64_t)vals[3]->valuedouble : 0;
                        int full = !strcmp(run.policy, "full"), count = 1;
                        if (full) { run.nmax = run.window = run.max_concurrency = 0; snprintf(run.scheduler, sizeof run.scheduler, "full"); }
                        if (ops->prompt_only) snprintf(run.scheduler, sizeof run.scheduler, "full"); /* SnapKV: no cap, no slots to share */
                        for (int q = 0; q < count; q++) {
                            ZP_TRY(expand_params(full ? NULL : pp, q, run.policy_params, sizeof run.policy_params, &count));
                            resolve_json(&run);
                            ZP_TRY(add_run(x, &run, src));
                        }
                        if (baseline && !full) {
                            exp_run bl = run;
                            snprintf(bl.policy, sizeof bl.policy, "full");
                            snprintf(bl.scheduler, sizeof bl.scheduler, "full");
                            bl.nmax = bl.window = bl.max_concurrency = 0;
                            bl.policy_params[0] = 0;
                            resolve_json(&bl);
                            ZP_TRY(add_run(x, &bl, src));
                        }
                    }
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
