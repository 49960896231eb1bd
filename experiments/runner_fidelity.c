/* runner_fidelity.c - experiments of kind "fidelity": each run (policy, N_max, window) is
 * teacher-forced against full KV on the selected prompts (fidelity.c); the full-KV side of a
 * prompt is computed once per (model, dataset, gen, block size) and reused by every run. Rows
 * go to results/<exp>/fidelity.csv (CSV, one per run with its policy parameters, durable when the run
 * ends). */
#include <csv.h> /* csv_fwrite: quoting of the policy_params field */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "dataset.h"
#include "fidelity.h"
#include "item_prompt.h"
#include "results_io.h"
#include "runner.h"
#include "tokenizer.h"
#include "paths.h"

static struct {
    char key[2048];
    fidelity_ref *refs;
    int n;
    char (*ids)[128];
} cache;

static void cache_clear(void) {
    for (int i = 0; i < cache.n; i++) fidelity_ref_free(&cache.refs[i]);
    free(cache.refs);
    free(cache.ids);
    memset(&cache, 0, sizeof cache);
}

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
    snprintf(key, sizeof key, "%s|%s|%s|%d|%d|%d|%s", model_dir, r->dataset, r->ids, r->limit, r->gen, r->block_size, r->device);
    if (!strcmp(key, cache.key)) return ZP_OK;
    cache_clear();
    ds_dataset d;
    char err[ZP_DS_ERR];
    int *sel = NULL, n = 0;
    if (ds_open(r->dataset, zp_path(ZP_PATH_DATASETS), &d, err) || ds_select(&d, r->ids[0] ? r->ids : NULL, r->limit, d.is_code, &sel, &n, err))
        return zp_fail(ZP_ERR_INVALID, "%s", err);
    zp_tokenizer *t = NULL;
    zp_chat_opts co = {ZP_CHAT_QWEN3, r->thinking, NULL};
    zp_status s = zp_tokenizer_load(model_dir, &t);
    if (s == ZP_OK) s = zp_chat_detect(model_dir, &co.family);
    cache.refs = calloc((size_t)(n ? n : 1), sizeof *cache.refs);
    cache.ids = calloc((size_t)(n ? n : 1), sizeof *cache.ids);
    zp_engine_config full = base_config(r, model_dir);
    for (int i = 0; s == ZP_OK && i < n; i++) {
        const ds_item *it = &d.items[sel[i]];
        int *ids = NULL, m = 0;
        s = item_prompt(t, co, &d, it, r->math_system, NULL, &ids, &m);
        if (s == ZP_OK) s = fidelity_reference(&full, ids, m, r->gen, &cache.refs[i]);
        if (s == ZP_OK) { snprintf(cache.ids[i], 128, "%s", it->id); cache.n++; }
        free(ids);
    }
    if (s == ZP_OK) snprintf(cache.key, sizeof cache.key, "%s", key);
    else cache_clear();
    if (t) zp_tokenizer_free(t);
    free(sel);
    ds_free(&d);
    return s;
}

zp_status runner_fidelity_run(const exp_run *r, const char *exp_dir, const char *model_dir) {
    ZP_TRY(build_refs(r, model_dir));
    zp_engine_config cmp = base_config(r, model_dir);
    cmp.policy = r->policy;
    cmp.policy_params = r->policy_params[0] ? r->policy_params : NULL;
    cmp.nmax = r->nmax ? r->nmax : 8;
    cmp.window = r->window; /* resolved at expansion: the axis, or the policy's default */
    cmp.scheduler = r->scheduler;
    double sum[5] = {0};
    for (int i = 0; i < cache.n; i++) {
        fidelity_result fr;
        ZP_TRY(fidelity_compare(&cache.refs[i], &cmp, r->kl_window, &fr));
        sum[0] += fr.mean_kl; sum[1] += fr.worst_window_kl; sum[2] += fr.agreement;
        sum[3] += fr.first_disagreement < 0 ? fr.steps : fr.first_disagreement; sum[4] += fr.retained_share;
    }
    const int n = cache.n ? cache.n : 1;
    char path[4400];
    snprintf(path, sizeof path, "%s/fidelity.csv", exp_dir);
    char *row = NULL;
    size_t k = 0;
    FILE *m = open_memstream(&row, &k);
    if (!m) return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id);
    fprintf(m, "%s,%s,%d,%d,%d,%s,%d,%d,%.6g,%.6g,%.4f,%.1f,%.4f,", r->run_id, r->policy, r->nmax, r->window, r->block_size, r->dataset,
            cache.n, r->gen, sum[0] / n, sum[1] / n, sum[2] / n, sum[3] / n, sum[4] / n);
    const char *params = r->policy_params[0] ? r->policy_params : "{}";
    csv_fwrite(m, params, strlen(params)); /* quoted: a JSON object has commas */
    fputc('\n', m);
    if (ferror(m) | fclose(m)) { free(row); return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id); }
    zp_status st = rio_append_lines(path, "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                          "first_disagreement,retained_share,policy_params\n", row, k);
    free(row);
    ZP_TRY(st);
    fprintf(stderr, "run %s: %s N=%d: mean KL %.4f nats, top-1 agreement %.3f, retained share %.3f\n", r->run_id, r->policy, r->nmax,
            sum[0] / n, sum[2] / n, sum[4] / n);
    return ZP_OK;
}
