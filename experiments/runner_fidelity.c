/* runner_fidelity.c - experiments of kind "fidelity": each run (policy, N_max, window) is
 * teacher-forced against full KV on the selected prompts (fidelity.c); the full-KV side of a
 * prompt is computed once per (model, dataset, gen, block size) and reused by every run. Rows
 * go to results/<exp>/fidelity.csv (CSV, one per run with its policy parameters, durable when the run
 * ends). */
#include <csv.h> /* csv_fwrite: quoting of the policy_params field */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity_set.h"
#include "results_io.h"
#include "runner.h"

/* The full-KV side of the last (model, dataset, items, gen, block size, device) asked for. */
static struct {
    char key[2048];
    fidelity_set set;
} cache;

static zp_engine_config base_config(const exp_run *r, const char *model_dir) {
    zp_engine_config c = zp_engine_config_default();
    runner_model_config(r, model_dir, &c);
    c.device = r->device;
    c.precision = r->precision;
    c.block_size = r->block_size;
    c.max_num_seqs = 1;
    return c;
}

static zp_status build_refs(const exp_run *r, const char *model_dir) {
    char key[2048];
    snprintf(key, sizeof key, "%s|%s|%s|%d|%d|%d|%s|%d|%d", model_dir, r->dataset, r->ids, r->limit, r->gen, r->block_size, r->device,
             r->thinking, r->math_system);
    if (!strcmp(key, cache.key)) return ZP_OK;
    fidelity_set_free(&cache.set);
    cache.key[0] = 0;
    zp_engine_config full = base_config(r, model_dir);
    ZP_TRY(fidelity_set_build(&full, r->dataset, r->ids, r->limit, r->gen, r->thinking, r->math_system, &cache.set));
    snprintf(cache.key, sizeof cache.key, "%s", key);
    return ZP_OK;
}

zp_status runner_fidelity_run(const exp_run *r, const char *exp_dir, const char *model_dir, int force) {
    if (r->kv_dtype[0] && strcmp(r->kv_dtype, "auto"))
        return zp_fail(ZP_ERR_INVALID, "run %s: the fidelity probe compares caches of kv_dtype auto only so far (kv_dtype %s refused)", r->run_id,
                       r->kv_dtype);
    ZP_TRY(build_refs(r, model_dir));
    zp_engine_config cmp = base_config(r, model_dir);
    cmp.policy = r->policy;
    cmp.policy_params = r->policy_params[0] ? r->policy_params : NULL;
    cmp.nmax = r->nmax ? r->nmax : 8;
    cmp.window = r->window; /* resolved at expansion: the axis, or the policy's default */
    cmp.scheduler = r->scheduler;
    cmp.layer_budget = r->layer_budget;
    cmp.pyramid_beta = r->pyramid_beta;
    fidelity_mean mean;
    ZP_TRY(fidelity_set_compare(&cache.set, &cmp, r->kl_window, NULL, &mean));
    char path[4400];
    snprintf(path, sizeof path, "%s/fidelity.csv", exp_dir);
    char *row = NULL;
    size_t k = 0;
    FILE *m = open_memstream(&row, &k);
    if (!m) return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id);
    fprintf(m, "%s,%s,%d,%d,%d,%s,%d,%d,%.6g,%.6g,%.4f,%.1f,%.4f,%s,", r->run_id, r->policy, r->nmax, r->window, r->block_size, r->dataset,
            cache.set.n, r->gen, mean.mean_kl, mean.worst_window_kl, mean.agreement, mean.first_disagreement, mean.retained_share,
            r->layer_budget[0] ? r->layer_budget : "uniform");
    const char *params = r->policy_params[0] ? r->policy_params : "{}";
    csv_fwrite(m, params, strlen(params)); /* quoted, last: a JSON object has commas */
    fputc('\n', m);
    if (ferror(m) | fclose(m)) { free(row); return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id); }
    static const char *const head = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                    "first_disagreement,retained_share,layer_budget,policy_params\n";
    char prefix[32]; /* the row's first field: a forced rerun replaces its row */
    snprintf(prefix, sizeof prefix, "%s,", r->run_id);
    zp_status st = force ? rio_replace_lines(path, head, prefix, row, k) : rio_append_lines(path, head, row, k);
    free(row);
    ZP_TRY(st);
    fprintf(stderr, "run %s: %s N=%d (%s budgets): mean KL %.4f nats, top-1 agreement %.3f, retained share %.3f\n", r->run_id, r->policy,
            r->nmax, r->layer_budget[0] ? r->layer_budget : "uniform", mean.mean_kl, mean.agreement, mean.retained_share);
    return ZP_OK;
}
