/* regrade.c - see regrade.h. */
#define _GNU_SOURCE
#include "regrade.h"

#include <cjson/cJSON.h> /* samples, meta.json */
#include <csv.h>         /* runs.csv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_grade.h"
#include "sample_grade.h" /* each sample's verdict and the grader column */
#include "dataset.h"
#include "metrics.h"
#include "results_io.h"
#include "paths.h"
#include "files.h"

/* ---------------------------------------------------------------- one sample */

typedef struct {
    grader g;
    code_opts co;
    ds_dataset sets[8];
    char keys[8][256]; /* the names they were opened by */
    int n_sets;
} graders;

static zp_status dataset_named(graders *gs, const char *name, const ds_dataset **out) {
    for (int i = 0; i < gs->n_sets; i++)
        if (!strcmp(gs->keys[i], name)) { *out = &gs->sets[i]; return ZP_OK; }
    if (gs->n_sets == 8) return zp_fail(ZP_ERR_UNSUPPORTED, "grade: more than 8 datasets in one folder");
    char err[ZP_DS_ERR];
    if (ds_open(name, zp_path(ZP_PATH_DATASETS), &gs->sets[gs->n_sets], err)) return zp_fail(ZP_ERR_INVALID, "%s", err);
    snprintf(gs->keys[gs->n_sets], sizeof gs->keys[0], "%s", name);
    *out = &gs->sets[gs->n_sets++];
    return ZP_OK;
}

static const ds_item *item_by_id(const ds_dataset *ds, const char *id) {
    for (int i = 0; i < ds->n; i++)
        if (!strcmp(ds->items[i].id, id)) return &ds->items[i];
    return NULL;
}

/* The grader column's value for a dataset. */
static const char *grader_label(const graders *gs, const ds_dataset *ds) {
    return sample_grader_label(ds, grader_name(gs->g.kind));
}

/* Grades sample o (a cJSON object with problem_id and output) in place. */
static zp_status grade_sample(graders *gs, const ds_dataset *ds, cJSON *o, const char *where, int *correct, int *changed) {
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(o, "problem_id"), *out = cJSON_GetObjectItemCaseSensitive(o, "output");
    if (!cJSON_IsString(pid) || !cJSON_IsString(out)) return zp_fail(ZP_ERR_FORMAT, "%s: no string problem_id and output", where);
    const ds_item *it = item_by_id(ds, pid->valuestring);
    if (!it) return zp_fail(ZP_ERR_FORMAT, "%s: problem %s is not in dataset %s", where, pid->valuestring, ds->name);
    char *extracted = NULL, err[ZP_DS_ERR];
    const sample_grade_status st = sample_grade(ds, it, out->valuestring, &gs->g, &gs->co, correct, &extracted, err);
    if (st != SAMPLE_GRADE_OK) return zp_fail(st == SAMPLE_GRADE_CODE_FAILED ? ZP_ERR_INVALID : ZP_ERR_BACKEND, "%s", err);
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(o, "correct");
    *changed = !cJSON_IsBool(was) || cJSON_IsTrue(was) != (*correct != 0);
    if (!ds->is_code) {
        cJSON *x = extracted ? cJSON_CreateString(extracted) : cJSON_CreateNull();
        if (cJSON_GetObjectItemCaseSensitive(o, "extracted")) cJSON_ReplaceItemInObjectCaseSensitive(o, "extracted", x);
        else cJSON_AddItemToObject(o, "extracted", x);
    }
    free(extracted);
    cJSON *c = cJSON_CreateBool(*correct), *g = cJSON_CreateString(grader_label(gs, ds));
    if (cJSON_GetObjectItemCaseSensitive(o, "correct")) cJSON_ReplaceItemInObjectCaseSensitive(o, "correct", c);
    else cJSON_AddItemToObject(o, "correct", c);
    if (cJSON_GetObjectItemCaseSensitive(o, "grader")) cJSON_ReplaceItemInObjectCaseSensitive(o, "grader", g);
    else cJSON_AddItemToObject(o, "grader", g);
    return ZP_OK;
}

static zp_status graders_open(graders *gs, grader_kind k, int unsafe_no_sandbox) {
    memset(gs, 0, sizeof *gs);
    gs->co = code_opts_default();
    gs->co.unsafe_no_sandbox = unsafe_no_sandbox;
    char err[GRADER_ERR];
    if (grader_open(&gs->g, k, zp_path(ZP_PATH_GRADE_PYTHON), zp_path(ZP_PATH_GRADE_SCRIPT), err)) return zp_fail(ZP_ERR_INVALID, "%s", err);
    return ZP_OK;
}

static void graders_close(graders *gs) {
    grader_close(&gs->g);
    for (int i = 0; i < gs->n_sets; i++) ds_free(&gs->sets[i]);
}

/* ---------------------------------------------------------------- per-run tallies */

typedef struct {
    char run_id[20];
    const ds_dataset *ds;
    int *sel, n_sel;  /* the run's problems in the runner's order (its bootstrap resamples them) */
    int *n, *c;       /* [n_sel] samples and correct ones per problem */
    uint64_t seed;
    double p1, lo, hi;
} tally;

static zp_status tally_init(graders *gs, const cJSON *cfg, const char *run_id, tally *t) {
    memset(t, 0, sizeof *t);
    snprintf(t->run_id, sizeof t->run_id, "%s", run_id);
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(cfg, "dataset"), *ids = cJSON_GetObjectItemCaseSensitive(cfg, "ids");
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(cfg, "limit"), *seed = cJSON_GetObjectItemCaseSensitive(cfg, "seed");
    if (!cJSON_IsString(ds)) return zp_fail(ZP_ERR_FORMAT, "meta.json: run %s has no dataset", run_id);
    ZP_TRY(dataset_named(gs, ds->valuestring, &t->ds));
    char err[ZP_DS_ERR];
    const char *idl = cJSON_IsString(ids) && ids->valuestring[0] ? ids->valuestring : NULL;
    if (ds_select(t->ds, idl, cJSON_IsNumber(lim) ? lim->valueint : 0, t->ds->is_code, &t->sel, &t->n_sel, err))
        return zp_fail(ZP_ERR_INVALID, "%s", err);
    t->n = calloc((size_t)t->n_sel, sizeof(int));
    t->c = calloc((size_t)t->n_sel, sizeof(int));
    ZP_CHECK_ALLOC(t->n && t->c);
    t->seed = cJSON_IsNumber(seed) ? (uint64_t)seed->valuedouble : 0;
    return ZP_OK;
}

static void tally_add(tally *t, const char *problem_id, int correct) {
    for (int i = 0; i < t->n_sel; i++)
        if (!strcmp(t->ds->items[t->sel[i]].id, problem_id)) { t->n[i]++, t->c[i] += correct; return; }
}

static void tally_finish(tally *t) {
    metrics_counts m = {t->n_sel, t->n, t->c};
    t->p1 = metrics_pass_at_k(&m, 1);
    metrics_bootstrap_ci(&m, 1000, 0.95, t->seed + 1, &t->lo, &t->hi);
}

static void tally_free(tally *t) { free(t->sel), free(t->n), free(t->c); }

/* ---------------------------------------------------------------- runs.csv */

typedef struct {
    char ***rows; /* [n][n_fields[i]] */
    int *nf, n, cap, cur_cap;
    char **cur;
    int n_cur;
} csv_doc;

static void on_field(void *s, size_t len, void *data) {
    csv_doc *d = data;
    if (d->n_cur == d->cur_cap) {
        d->cur_cap = d->cur_cap ? 2 * d->cur_cap : 64;
        d->cur = realloc(d->cur, sizeof *d->cur * (size_t)d->cur_cap);
    }
    d->cur[d->n_cur++] = strndup(s ? (const char *)s : "", len);
}

static void on_row(int c, void *data) {
    csv_doc *d = data;
    (void)c;
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->rows = realloc(d->rows, sizeof *d->rows * (size_t)d->cap);
        d->nf = realloc(d->nf, sizeof *d->nf * (size_t)d->cap);
    }
    d->rows[d->n] = d->cur, d->nf[d->n++] = d->n_cur;
    d->cur = NULL, d->n_cur = d->cur_cap = 0;
}

static void csv_doc_free(csv_doc *d) {
    for (int i = 0; i < d->n; i++) {
        for (int j = 0; j < d->nf[i]; j++) free(d->rows[i][j]);
        free(d->rows[i]);
    }
    free(d->rows), free(d->nf), free(d->cur);
}

static zp_status csv_doc_read(const char *path, csv_doc *d) {
    memset(d, 0, sizeof *d);
    char *txt;
    size_t len;
    ZP_TRY(zp_read_file(path, &txt, &len));
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL) != 0) { free(txt); return zp_fail(ZP_ERR_OOM, "csv: out of memory"); }
    size_t done = csv_parse(&p, txt, len, on_field, on_row, d);
    csv_fini(&p, on_field, on_row, d);
    csv_free(&p);
    free(txt);
    if (done != len) return zp_fail(ZP_ERR_FORMAT, "%s: CSV error", path);
    if (d->n == 0) return zp_fail(ZP_ERR_FORMAT, "%s: empty", path);
    return ZP_OK;
}

static int column(const csv_doc *d, const char *name) {
    for (int j = 0; j < d->nf[0]; j++)
        if (!strcmp(d->rows[0][j], name)) return j;
    return -1;
}

static void set_field(csv_doc *d, int row, int col, const char *v) {
    if (col >= d->nf[row]) { /* a new column */
        d->rows[row] = realloc(d->rows[row], sizeof(char *) * (size_t)(col + 1));
        for (int j = d->nf[row]; j <= col; j++) d->rows[row][j] = strdup("");
        d->nf[row] = col + 1;
    }
    free(d->rows[row][col]);
    d->rows[row][col] = strdup(v);
}

/* Rewrites runs.csv's pass@1, CI and grader columns from the tallies; an older file gets the
 * columns added since at its end (grader; admission_reserve 0, the only admission before it;
 * kv_dtype auto, the only cache type before it; head_budget uniform and head_floor 0.2, the
 * only budgets and floor before them; budget fixed, budget_tau 0.9 and budget_floor 1, likewise;
 * mean_retained empty: not recorded then);
 * every field quoted, as the runner writes it. */
static zp_status rewrite_runs_csv(const char *path, tally *t, int n, graders *gs) {
    csv_doc d;
    zp_status s = csv_doc_read(path, &d);
    const int c_id = s == ZP_OK ? column(&d, "run_id") : -1, c_p = s == ZP_OK ? column(&d, "pass_at_1") : -1;
    const int c_lo = s == ZP_OK ? column(&d, "ci_low") : -1, c_hi = s == ZP_OK ? column(&d, "ci_high") : -1;
    int c_g = s == ZP_OK ? column(&d, "grader") : -1;
    if (s == ZP_OK && (c_id < 0 || c_p < 0 || c_lo < 0 || c_hi < 0)) s = zp_fail(ZP_ERR_FORMAT, "%s: no run_id/pass_at_1/ci columns", path);
    if (s == ZP_OK && c_g < 0) set_field(&d, 0, c_g = d.nf[0], "grader");
    if (s == ZP_OK && column(&d, "admission_reserve") < 0) {
        const int c_a = d.nf[0];
        set_field(&d, 0, c_a, "admission_reserve");
        for (int r = 1; r < d.n; r++) set_field(&d, r, c_a, "0");
    }
    static const char *const added[][2] = {{"kv_dtype", "auto"},  {"head_budget", "uniform"}, {"head_floor", "0.2"},
                                           {"budget", "fixed"}, {"budget_tau", "0.9"},       {"budget_floor", "1"},
                                           {"mean_retained", ""}};
    for (size_t a = 0; s == ZP_OK && a < sizeof added / sizeof *added; a++)
        if (column(&d, added[a][0]) < 0) {
            const int c_k = d.nf[0];
            set_field(&d, 0, c_k, added[a][0]);
            for (int r = 1; r < d.n; r++) set_field(&d, r, c_k, added[a][1]);
        }
    for (int r = 1; s == ZP_OK && r < d.n; r++) {
        const tally *tt = NULL;
        for (int k = 0; k < n && !tt; k++)
            if (c_id < d.nf[r] && !strcmp(t[k].run_id, d.rows[r][c_id])) tt = &t[k];
        if (!tt) continue; /* a run without samples here (fidelity, another shard) keeps its row */
        char v[64];
        snprintf(v, sizeof v, "%.6f", tt->p1), set_field(&d, r, c_p, v);
        snprintf(v, sizeof v, "%.6f", tt->lo), set_field(&d, r, c_lo, v);
        snprintf(v, sizeof v, "%.6f", tt->hi), set_field(&d, r, c_hi, v);
        set_field(&d, r, c_g, grader_label(gs, tt->ds));
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = s == ZP_OK ? open_memstream(&buf, &len) : NULL;
    for (int r = 0; f && r < d.n; r++)
        for (int j = 0; j < d.nf[r]; j++) {
            csv_fwrite(f, d.rows[r][j], strlen(d.rows[r][j]));
            fputc(j + 1 < d.nf[r] ? ',' : '\n', f);
        }
    if (f && (ferror(f) | fclose(f))) s = zp_fail(ZP_ERR_OOM, "%s: no memory", path);
    if (s == ZP_OK) s = rio_replace(path, buf, len);
    free(buf);
    csv_doc_free(&d);
    return s;
}

/* ---------------------------------------------------------------- the folder */

static zp_status write_json(const char *path, const cJSON *o) {
    char *txt = cJSON_Print(o);
    if (!txt) return zp_fail(ZP_ERR_OOM, "%s: no memory", path);
    size_t n = strlen(txt);
    char *nl = realloc(txt, n + 2);
    if (!nl) { free(txt); return zp_fail(ZP_ERR_OOM, "%s: no memory", path); }
    nl[n] = '\n', nl[n + 1] = 0;
    zp_status s = rio_replace(path, nl, n + 1);
    free(nl);
    return s;
}

/* Grades every sample line of text (samples.jsonl) into out; tallies per run. */
static zp_status grade_lines(graders *gs, char *text, const char *path, const cJSON *runs, tally *t, int n_t, FILE *out,
                             regrade_summary *sum) {
    int line_no = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        line_no++;
        char where[4400];
        snprintf(where, sizeof where, "%.4000s: line %d", path, line_no);
        cJSON *o = cJSON_Parse(line);
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(o, "run_id");
        tally *tt = NULL;
        for (int k = 0; cJSON_IsString(rid) && k < n_t && !tt; k++)
            if (!strcmp(t[k].run_id, rid->valuestring)) tt = &t[k];
        if (!tt) { cJSON_Delete(o); return zp_fail(ZP_ERR_FORMAT, "%s: no run_id of meta.json", where); }
        int correct = 0, changed = 0;
        zp_status s = grade_sample(gs, tt->ds, o, where, &correct, &changed);
        char *txt = s == ZP_OK ? cJSON_PrintUnformatted(o) : NULL;
        if (txt) fprintf(out, "%s\n", txt);
        free(txt);
        if (s == ZP_OK) tally_add(tt, cJSON_GetObjectItemCaseSensitive(o, "problem_id")->valuestring, correct);
        cJSON_Delete(o);
        ZP_TRY(s);
        sum->samples++, sum->changed += changed;
    }
    (void)runs;
    return ZP_OK;
}

zp_status regrade_results(const char *dir, grader_kind k, int unsafe_no_sandbox, regrade_summary *sum) {
    memset(sum, 0, sizeof *sum);
    char meta_p[4400], samples_p[4400], csv_p[4400];
    snprintf(meta_p, sizeof meta_p, "%s/meta.json", dir);
    snprintf(samples_p, sizeof samples_p, "%s/samples.jsonl", dir);
    snprintf(csv_p, sizeof csv_p, "%s/runs.csv", dir);
    /* the folder's lock from the first read to the last write: a live sweep's appends wait for
     * it, and none is lost to the rewrite (they take the same lock) */
    int lock;
    ZP_TRY(rio_lock(csv_p, &lock));
    cJSON *meta;
    zp_status s = zp_read_json_object(meta_p, &meta);
    if (s != ZP_OK) {
        rio_unlock(lock);
        return s;
    }
    graders gs;
    s = graders_open(&gs, k, unsafe_no_sandbox);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(meta, "runs"), *r;
    const int n_runs = cJSON_GetArraySize(runs);
    tally *t = calloc((size_t)(n_runs ? n_runs : 1), sizeof *t);
    int n_t = 0;
    if (s == ZP_OK && !t) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    cJSON_ArrayForEach(r, runs) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "run_id"), *cfg = cJSON_GetObjectItemCaseSensitive(r, "config");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(cfg, "kind");
        if (s != ZP_OK || !cJSON_IsString(id) || (cJSON_IsString(kind) && !strcmp(kind->valuestring, "fidelity"))) continue;
        s = tally_init(&gs, cfg, id->valuestring, &t[n_t]);
        n_t += s == ZP_OK;
    }
    char *text = NULL, *buf = NULL;
    size_t len = 0;
    FILE *out = NULL;
    if (s == ZP_OK) s = zp_read_file(samples_p, &text, NULL);
    if (s == ZP_OK && !(out = open_memstream(&buf, &len))) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    if (s == ZP_OK) s = grade_lines(&gs, text, samples_p, runs, t, n_t, out, sum);
    if (out && (ferror(out) | fclose(out)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    for (int i = 0; s == ZP_OK && i < n_t; i++) tally_finish(&t[i]);
    if (s == ZP_OK) s = rio_replace(samples_p, buf, len);
    if (s == ZP_OK) s = rewrite_runs_csv(csv_p, t, n_t, &gs);
    if (s == ZP_OK) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "grader");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "grader_version");
        cJSON_AddStringToObject(meta, "grader", grader_name(k));
        cJSON_AddStringToObject(meta, "grader_version", gs.g.version);
        s = write_json(meta_p, meta);
    }
    for (int i = 0; i < n_t; i++) {
        if (s == ZP_OK) printf("run %s (%s): pass@1 %.4f [%.4f, %.4f]\n", t[i].run_id, t[i].ds->name, t[i].p1, t[i].lo, t[i].hi);
        tally_free(&t[i]);
    }
    sum->runs = n_t;
    free(t), free(text), free(buf);
    graders_close(&gs);
    cJSON_Delete(meta);
    rio_unlock(lock);
    return s;
}

zp_status regrade_jsonl(const char *dataset, const char *in, const char *out_path, grader_kind k, int unsafe_no_sandbox,
                        regrade_summary *sum) {
    memset(sum, 0, sizeof *sum);
    graders gs;
    ZP_TRY(graders_open(&gs, k, unsafe_no_sandbox));
    const ds_dataset *ds = NULL;
    char *text = NULL, *buf = NULL;
    size_t len = 0;
    zp_status s = dataset_named(&gs, dataset, &ds);
    if (s == ZP_OK) s = zp_read_file(in, &text, NULL);
    FILE *out = s == ZP_OK ? open_memstream(&buf, &len) : NULL;
    if (s == ZP_OK && !out) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    int *n = calloc((size_t)(ds ? ds->n : 1), sizeof(int)), *c = calloc((size_t)(ds ? ds->n : 1), sizeof(int));
    int line_no = 0;
    for (char *line = s == ZP_OK ? strtok(text, "\n") : NULL; line && s == ZP_OK; line = strtok(NULL, "\n")) {
        char where[4400];
        snprintf(where, sizeof where, "%.4000s: line %d", in, ++line_no);
        cJSON *o = cJSON_Parse(line);
        int correct = 0, changed = 0;
        s = cJSON_IsObject(o) ? grade_sample(&gs, ds, o, where, &correct, &changed) : zp_fail(ZP_ERR_FORMAT, "%s: not a JSON object", where);
        if (s == ZP_OK) {
            char *txt = cJSON_PrintUnformatted(o);
            fprintf(out, "%s\n", txt ? txt : "");
            free(txt);
            const ds_item *it = item_by_id(ds, cJSON_GetObjectItemCaseSensitive(o, "problem_id")->valuestring);
            n[it - ds->items]++, c[it - ds->items] += correct;
            sum->samples++, sum->changed += changed;
        }
        cJSON_Delete(o);
    }
    if (out && (ferror(out) | fclose(out)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    if (s == ZP_OK) s = rio_replace(out_path, buf, len);
    if (s == ZP_OK) { /* pass@1 over the problems present, in dataset order */
        int m = 0;
        for (int i = 0; i < ds->n; i++)
            if (n[i]) n[m] = n[i], c[m] = c[i], m++;
        metrics_counts mc = {m, n, c};
        double lo, hi, p1 = metrics_pass_at_k(&mc, 1);
        metrics_bootstrap_ci(&mc, 1000, 0.95, 1, &lo, &hi);
        printf("%s: %d samples of %d problems, pass@1 %.4f [%.4f, %.4f] (%s)\n", out_path, sum->samples, m, p1, lo, hi, gs.g.version);
    }
    free(n), free(c), free(text), free(buf);
    graders_close(&gs);
    return s;
}

zp_status regrade_pairs(const char *in, const char *out_path, grader_kind k, regrade_summary *sum) {
    memset(sum, 0, sizeof *sum);
    graders gs;
    ZP_TRY(graders_open(&gs, k, 0));
    char *text = NULL, *buf = NULL;
    size_t len = 0;
    zp_status s = zp_read_file(in, &text, NULL);
    FILE *out = s == ZP_OK ? open_memstream(&buf, &len) : NULL;
    if (s == ZP_OK && !out) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    int line_no = 0, n_correct = 0;
    for (char *line = s == ZP_OK ? strtok(text, "\n") : NULL; line && s == ZP_OK; line = strtok(NULL, "\n")) {
        line_no++;
        cJSON *o = cJSON_Parse(line);
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "output"), *ref = cJSON_GetObjectItemCaseSensitive(o, "reference");
        int correct = 0;
        char *extracted = NULL, err[GRADER_ERR];
        if (!cJSON_IsString(op) || !cJSON_IsString(ref)) s = zp_fail(ZP_ERR_FORMAT, "%.4000s: line %d: no string output and reference", in, line_no);
        else if (grader_math(&gs.g, op->valuestring, ref->valuestring, &correct, &extracted, err)) s = zp_fail(ZP_ERR_BACKEND, "%s", err);
        if (s == ZP_OK) {
            cJSON_AddItemToObject(o, "extracted", extracted ? cJSON_CreateString(extracted) : cJSON_CreateNull());
            cJSON_AddBoolToObject(o, "correct", correct);
            char *txt = cJSON_PrintUnformatted(o);
            fprintf(out, "%s\n", txt ? txt : "");
            free(txt);
            sum->samples++, n_correct += correct;
        }
        free(extracted);
        cJSON_Delete(o);
    }
    if (out && (ferror(out) | fclose(out)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "grade: no memory");
    if (s == ZP_OK) s = rio_replace(out_path, buf, len);
    if (s == ZP_OK) printf("%s: %d pairs, %d correct (%s)\n", out_path, sum->samples, n_correct, gs.g.version);
    free(text), free(buf);
    graders_close(&gs);
    return s;
}
