/* runner_fidelity.c - experiments of kind "fidelity": each run (policy, N_max, window, K/V cache
 * type) is teacher-forced against full KV on the selected prompts (fidelity.c); the full-KV side
 * of a prompt is computed once per (model, dataset, gen, block size) and reused by every run,
 * always with kv_dtype auto (the storage type), so an fp8 run measures its cache type and its
 * eviction together. Rows go to results/<exp>/fidelity.csv (CSV, one per run with its policy
 * parameters, durable when the run ends); a file of the layout before kv_dtype is upgraded in
 * place (its rows were all auto). */
#include <csv.h> /* csv_fwrite: quoting of the policy_params field */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access */

#include "files.h"
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

static const char *const fid_head = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                    "first_disagreement,retained_share,layer_budget,kv_dtype,head_budget,head_floor,budget,budget_tau,"
                                    "budget_floor,policy_params\n";
/* The headers before kv_dtype (column 15), then before head_budget and head_floor (16, 17), then
 * before budget, budget_tau and budget_floor (18 to 20) were added. */
static const char *const fid_head_v1 = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                       "first_disagreement,retained_share,layer_budget,policy_params\n";
static const char *const fid_head_v2 = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                       "first_disagreement,retained_share,layer_budget,kv_dtype,policy_params\n";
static const char *const fid_head_v3 = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,"
                                       "first_disagreement,retained_share,layer_budget,kv_dtype,head_budget,head_floor,policy_params\n";

/* txt with head_add after the first `after` fields of its header and row_add after those of
 * every row (the fields before policy_params hold no commas); *out malloc'ed. */
static zp_status add_columns(const char *path, const char *txt, int after, const char *head_add, const char *row_add, char **out, size_t *n) {
    size_t len = strlen(txt), lines = 1;
    for (size_t i = 0; i < len; i++) lines += txt[i] == '\n';
    const size_t more = strlen(head_add) > strlen(row_add) ? strlen(head_add) : strlen(row_add);
    char *o = malloc(len + more * lines + 1);
    if (!o) return zp_fail(ZP_ERR_OOM, "%s: no memory to add its %s column", path, head_add);
    size_t k = 0;
    for (const char *line = txt; *line;) {
        const char *end = strchr(line, '\n'), *p = line;
        end = end ? end + 1 : line + strlen(line);
        for (int commas = 0; p < end && commas < after; p++) commas += *p == ',';
        if (p >= end) { free(o); return zp_fail(ZP_ERR_FORMAT, "%s: a row with fewer than %d fields: %.60s", path, after + 1, line); }
        const char *add = line == txt ? head_add : row_add;
        memcpy(o + k, line, (size_t)(p - line)), k += (size_t)(p - line);
        memcpy(o + k, add, strlen(add)), k += strlen(add);
        memcpy(o + k, p, (size_t)(end - p)), k += (size_t)(end - p);
        line = end;
    }
    o[k] = 0;
    *out = o;
    *n = k;
    return ZP_OK;
}

/* An older fidelity.csv (fid_head_v1 to v3) gets the columns added since in every row: kv_dtype
 * auto after its 14th field, head_budget uniform and head_floor 0.2 after its 15th, budget fixed,
 * budget_tau 0.9 and budget_floor 1 after its 17th (the only cache type, budgets and floors
 * before them); any other first line than the four headers is refused. Under the folder's lock. */
static zp_status upgrade_csv(const char *path) {
    if (access(path, F_OK) != 0) return ZP_OK;
    int lock;
    ZP_TRY(rio_lock(path, &lock));
    char *txt = NULL, *out = NULL;
    size_t len = 0, n = 0;
    zp_status s = zp_read_file(path, &txt, &len);
    const int v1 = s == ZP_OK && len && !strncmp(txt, fid_head_v1, strlen(fid_head_v1));
    const int v2 = s == ZP_OK && len && !strncmp(txt, fid_head_v2, strlen(fid_head_v2));
    const int v3 = s == ZP_OK && len && !strncmp(txt, fid_head_v3, strlen(fid_head_v3));
    if (s == ZP_OK && len && strncmp(txt, fid_head, strlen(fid_head)) && !v1 && !v2 && !v3)
        s = zp_fail(ZP_ERR_FORMAT, "%s: its first line is not a fidelity.csv header (another file, or a newer version's?)", path);
    static const struct { int after; const char *head, *row; } added[] = {
        {14, "kv_dtype,", "auto,"}, {15, "head_budget,head_floor,", "uniform,0.2,"}, {17, "budget,budget_tau,budget_floor,", "fixed,0.9,1,"}};
    const int from = v1 ? 0 : v2 ? 1 : v3 ? 2 : 3; /* the first column set the file lacks */
    for (int a = from; s == ZP_OK && a < 3; a++) {
        s = add_columns(path, txt, added[a].after, added[a].head, added[a].row, &out, &n);
        if (s == ZP_OK) { free(txt); txt = out; out = NULL; len = n; }
    }
    if (s == ZP_OK && from < 3) s = rio_replace(path, txt, len);
    if (s == ZP_OK && from < 3)
        fprintf(stderr, "%s: upgraded to the columns added since (its earlier rows: %s)\n", path,
                from == 0 ? "kv_dtype auto, head budgets uniform 0.2, budget fixed 0.9 1" : from == 1 ? "head budgets uniform 0.2, budget fixed 0.9 1"
                                                                                                     : "budget fixed 0.9 1");
    free(txt);
    free(out);
    rio_unlock(lock);
    return s;
}

zp_status runner_fidelity_run(const exp_run *r, const char *exp_dir, const char *model_dir, int force) {
    const char *kv_dtype = r->kv_dtype[0] ? r->kv_dtype : "auto";
    char path[4400];
    snprintf(path, sizeof path, "%s/fidelity.csv", exp_dir);
    ZP_TRY(upgrade_csv(path));
    ZP_TRY(build_refs(r, model_dir));
    zp_engine_config cmp = zp_engine_config_default();
    exp_engine_config(r, &cmp); /* every engine setting of the run: policy, N_max, window (resolved at
                                   expansion), layer budget, kv_dtype, kv_scales, ...; the reference's
                                   cache stays auto (base_config) */
    runner_model_config(r, model_dir, &cmp);
    cmp.max_num_seqs = 1;
    fidelity_mean mean;
    ZP_TRY(fidelity_set_compare(&cache.set, &cmp, r->kl_window, NULL, &mean));
    char *row = NULL;
    size_t k = 0;
    FILE *m = open_memstream(&row, &k);
    if (!m) return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id);
    fprintf(m, "%s,%s,%d,%d,%d,%s,%d,%d,%.6g,%.6g,%.4f,%.1f,%.4f,%s,%s,%s,%g,%s,%g,%d,", r->run_id, r->policy, r->nmax, r->window,
            r->block_size, r->dataset, cache.set.n, r->gen, mean.mean_kl, mean.worst_window_kl, mean.agreement, mean.first_disagreement,
            mean.retained_share, r->layer_budget[0] ? r->layer_budget : "uniform", kv_dtype, r->head_budget[0] ? r->head_budget : "uniform",
            r->head_floor, r->budget[0] ? r->budget : "fixed", r->budget_tau, r->budget_floor);
    const char *params = r->policy_params[0] ? r->policy_params : "{}";
    csv_fwrite(m, params, strlen(params)); /* quoted, last: a JSON object has commas */
    fputc('\n', m);
    if (ferror(m) | fclose(m)) { free(row); return zp_fail(ZP_ERR_OOM, "%s: no memory for the row of run %s", path, r->run_id); }
    char prefix[32]; /* the row's first field: a forced rerun replaces its row */
    snprintf(prefix, sizeof prefix, "%s,", r->run_id);
    zp_status st = force ? rio_replace_lines(path, fid_head, prefix, row, k) : rio_append_lines(path, fid_head, row, k);
    free(row);
    ZP_TRY(st);
    char budget[96];
    exp_budget_label(r, budget, sizeof budget);
    fprintf(stderr, "run %s: %s N=%d (%s layer budgets, %s head budgets, budget %s, kv_dtype %s): mean KL %.4f nats, top-1 agreement %.3f, retained share %.3f\n",
            r->run_id, r->policy, r->nmax, r->layer_budget[0] ? r->layer_budget : "uniform", r->head_budget[0] ? r->head_budget : "uniform",
            budget, kv_dtype, mean.mean_kl, mean.agreement, mean.retained_share);
    return ZP_OK;
}
