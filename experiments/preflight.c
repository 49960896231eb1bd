/* preflight.c - every run of an experiment checked before the first one starts (runner.h,
 * runner_preflight): its model folder, dataset, code sandbox, device name, engine settings
 * (policy, block size, N_max, window, layer budget), a policy's statistics file (readable, and of
 * the model where config.json says its shape) and the results folder. A sweep that would
 * fail at its tenth run fails before its first. It opens no engine and loads no weights: a
 * device that does not exist and a model that does not split over tp ranks are found when the
 * run opens them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access */

#include <cjson/cJSON.h>

#include "files.h"
#include "mkmodel.h"    /* zp_preset_dir */
#include "policy.h"     /* policy_find: which policies need statistics */
#include "runner.h"
#include "trig_stats.h" /* TriAttention's statistics, checked against the model's config */

/* The datasets (and statistics files) already checked (a sweep has few distinct ones); a name
 * too long to keep is checked again each time. */
typedef struct {
    char names[16][1300];
    int n;
} seen_set;

static int seen(seen_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return 1;
    if (s->n < 16 && strlen(name) < sizeof s->names[0]) memcpy(s->names[s->n++], name, strlen(name) + 1);
    return 0;
}

static zp_status check_dataset(const exp_run *r, const runner_opts *o) {
    ds_dataset d;
    int *sel, n;
    ZP_TRY(runner_open_dataset(r, o, &d, &sel, &n));
    free(sel);
    ds_free(&d);
    return ZP_OK;
}

/* A policy's statistics file (TriAttention's "stats"): readable and, for a Hugging Face folder,
 * of this model (its layers, query heads and head dim: config.json alone, no weights). */
static zp_status check_stats(const exp_run *r) {
    const zp_policy_ops *ops = policy_find(r->policy);
    if (!ops || !ops->needs_stats || !strncmp(r->model, "preset:", 7) || !r->policy_params[0]) return ZP_OK;
    cJSON *p = cJSON_Parse(r->policy_params);
    const cJSON *st = p ? cJSON_GetObjectItemCaseSensitive(p, "stats") : NULL;
    zp_status s = ZP_OK;
    if (cJSON_IsString(st)) {
        char cfg[4400];
        snprintf(cfg, sizeof cfg, "%s/config.json", r->model);
        zp_model_config mc;
        zp_trig_stats ts;
        if (access(st->valuestring, R_OK) != 0)
            s = zp_fail(ZP_ERR_IO, "policy %s: its statistics file %s cannot be read (zipage calibrate writes one)", r->policy, st->valuestring);
        else if (access(cfg, R_OK) == 0 && (s = zp_config_load(r->model, &mc)) == ZP_OK && (s = zp_trig_stats_load(st->valuestring, &mc, &ts)) == ZP_OK)
            zp_trig_stats_free(&ts);
    }
    cJSON_Delete(p);
    return s;
}

static zp_status check_run(const exp_run *r, const runner_opts *o, seen_set *datasets, seen_set *stats) {
    char dir[4400];
    zp_status s = strncmp(r->model, "preset:", 7) ? zp_model_dir_check(r->model, 1) : zp_preset_dir(r->model + 7, dir, sizeof dir);
    if (s != ZP_OK) { zp_error_prefix("\"model\""); return s; }
    char key[1300];
    snprintf(key, sizeof key, "%s|%s|%d", r->dataset, r->ids, r->limit);
    if (!seen(datasets, key)) ZP_TRY(check_dataset(r, o));
    zp_engine_config ec = zp_engine_config_default();
    runner_model_config(r, r->model, &ec);
    exp_engine_config(r, &ec);
    if ((s = zp_engine_config_check(&ec)) != ZP_OK) zp_error_prefix("engine settings");
    else {
        char skey[sizeof r->model + sizeof r->policy_params + 64]; /* whole: a truncated key could skip a check */
        snprintf(skey, sizeof skey, "%s|%s|%s", r->policy, r->model, r->policy_params);
        if (!seen(stats, skey) && (s = check_stats(r)) != ZP_OK) /* once per model and statistics file: a sweep repeats them */
            zp_error_prefix("\"policy_params\"");
    }
    return s;
}

zp_status runner_preflight(const experiment *x, const runner_opts *o, const char *exp_dir) {
    if (access(exp_dir, W_OK) != 0) return zp_fail(ZP_ERR_IO, "%s: the results folder is not writable", exp_dir);
    seen_set datasets = {.n = 0}, stats = {.n = 0};
    for (int i = 0; i < x->n_runs; i++) {
        const exp_run *r = &x->runs[i];
        zp_status s = check_run(r, o, &datasets, &stats);
        if (s != ZP_OK) {
            zp_error_prefix("%s: run %d of %d (policy %s, nmax %d, dataset %s), before any run started", x->path, i + 1, x->n_runs, r->policy,
                            r->nmax, r->dataset);
            return s;
        }
    }
    return ZP_OK;
}
