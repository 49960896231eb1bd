/* results_table.c - see results_table.h. */
#include "results_table.h"

#include <csv.h> /* csv_init, csv_parse, csv_fini */
#include <stdlib.h>
#include <string.h>

#include "policy.h" /* labels, and the plans of curves */
#include "files.h"

enum { MAX_FIELDS = 64 }; /* runs.csv has 40 columns */
typedef struct {
    char fields[MAX_FIELDS][600];
    int n_fields, header_done, col[64];
    result_row *rows;
    int n, cap;
    char dup[20]; /* the first run id seen twice */
} reader;

static const char *COLS[] = {"run_id", "dataset", "policy", "policy_params", "nmax", "window", "max_concurrency", "kv_pool_tokens",
                             "pass_at_1", "ci_low", "ci_high", "tps", "mean_running", "device", "model", "layer_budget", "kv_dtype", NULL};

static void on_field(void *s, size_t len, void *data) {
    reader *r = data;
    if (r->n_fields < MAX_FIELDS) snprintf(r->fields[r->n_fields], sizeof r->fields[0], "%.*s", (int)len, (const char *)s);
    r->n_fields++;
}

static const char *get(const reader *r, int k) {
    return r->col[k] >= 0 && r->col[k] < r->n_fields && r->col[k] < MAX_FIELDS ? r->fields[r->col[k]] : "";
}

static void on_row(int c, void *data) {
    reader *r = data;
    if (!r->header_done) {
        for (int k = 0; COLS[k]; k++) {
            r->col[k] = -1;
            for (int i = 0; i < r->n_fields && i < 40; i++)
                if (!strcmp(r->fields[i], COLS[k])) r->col[k] = i;
        }
        r->header_done = 1;
    } else if (r->n_fields > 1) {
        for (int i = 0; i < r->n; i++)
            if (!strcmp(r->rows[i].run_id, get(r, 0)) && !r->dup[0]) /* which row is the run's? refused below */
                snprintf(r->dup, sizeof r->dup, "%s", get(r, 0));
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->rows = realloc(r->rows, sizeof *r->rows * (size_t)r->cap);
        }
        result_row *w = &r->rows[r->n++];
        memset(w, 0, sizeof *w);
        snprintf(w->run_id, sizeof w->run_id, "%s", get(r, 0));
        snprintf(w->dataset, sizeof w->dataset, "%s", get(r, 1));
        snprintf(w->policy, sizeof w->policy, "%s", get(r, 2));
        snprintf(w->params, sizeof w->params, "%s", get(r, 3));
        w->nmax = atoi(get(r, 4));
        w->window = atoi(get(r, 5));
        w->max_concurrency = atoi(get(r, 6));
        w->kv_pool_tokens = atoll(get(r, 7));
        w->pass1 = atof(get(r, 8));
        w->lo = atof(get(r, 9));
        w->hi = atof(get(r, 10));
        w->tps = atof(get(r, 11));
        w->mean_running = atof(get(r, 12));
        snprintf(w->device, sizeof w->device, "%s", get(r, 13));
        snprintf(w->model, sizeof w->model, "%s", get(r, 14));
        snprintf(w->layer_budget, sizeof w->layer_budget, "%s", get(r, 15)[0] ? get(r, 15) : "uniform"); /* files before the column */
        snprintf(w->kv_dtype, sizeof w->kv_dtype, "%s", get(r, 16)[0] ? get(r, 16) : "auto");
    }
    (void)c;
    r->n_fields = 0;
}

zp_status results_read(const char *path, result_row **rows, int *n) {
    char *txt;
    size_t len;
    ZP_TRY(zp_read_file(path, &txt, &len));
    struct csv_parser p;
    reader *r = calloc(1, sizeof *r);
    if (!r || csv_init(&p, CSV_APPEND_NULL) != 0) { free(txt); free(r); return zp_fail(ZP_ERR_OOM, "csv: out of memory"); }
    size_t done = csv_parse(&p, txt, len, on_field, on_row, r);
    csv_fini(&p, on_field, on_row, r);
    csv_free(&p);
    free(txt);
    zp_status s = ZP_OK;
    if (done != len) s = zp_fail(ZP_ERR_FORMAT, "%s: CSV error: %s", path, csv_strerror(csv_error(&p)));
    else if (!r->header_done || r->col[0] < 0 || r->col[8] < 0) s = zp_fail(ZP_ERR_FORMAT, "%s: no run_id/pass_at_1 header", path);
    else if (r->dup[0])
        s = zp_fail(ZP_ERR_FORMAT, "%s: run %s has more than one row (a --force of an older version, or a CSV appended by hand): keep one "
                                   "(`zipage merge NEW.csv %s` keeps each run's first row)", path, r->dup, path);
    if (s == ZP_OK) { *rows = r->rows; *n = r->n; }
    else free(r->rows);
    free(r);
    return s;
}

/* What a table calls a policy with these parameters: its registry label (its paper's name, and
 * what it approximates where it does; StreamingLLM's says whether it shifts positions); an unknown
 * name or unusable parameters as written. */
static void policy_label_text(const char *policy, const char *params, char *out, size_t n) {
    zp_policy p;
    if (policy_create(policy, params, &p) != ZP_OK) {
        snprintf(out, n, "%s", policy);
        return;
    }
    snprintf(out, n, "%s", policy_label(&p));
    policy_destroy(&p);
}

static int pyramid(const result_row *w) { return !strcmp(w->layer_budget, "pyramid"); }
static int fp8(const result_row *w) { return !strcmp(w->kv_dtype, "fp8"); }

static void label(const result_row *w, char *out, size_t n) {
    char name[128];
    if (!strcmp(w->policy, "full")) {
        snprintf(out, n, "full KV%s", fp8(w) ? " (fp8 KV)" : "");
        return;
    }
    policy_label_text(w->policy, w->params, name, sizeof name);
    snprintf(out, n, "%s%s N=%d w=%d%s%s%s", name, pyramid(w) ? " + pyramid budgets" : "", w->nmax, w->window, strcmp(w->params, "{}") ? " " : "",
             strcmp(w->params, "{}") ? w->params : "", fp8(w) ? " (fp8 KV)" : "");
}

/* 1 when the row's policy with its parameters shifts positions (its plan says so). */
static int shifts(const result_row *w) {
    zp_policy p;
    zp_score_plan plan;
    if (policy_create(w->policy, w->params, &p) != ZP_OK) return 0;
    const int s = p.ops->evicts && policy_plan(&p, 1, 1, &plan) == ZP_OK && plan.shift_positions;
    policy_destroy(&p);
    return s;
}

void results_curve(const result_row *w, char *out, size_t n) {
    snprintf(out, n, "%s%s%s%s", w->policy, shifts(w) ? "+shift" : "", pyramid(w) ? "+pyramid" : "", fp8(w) ? "+fp8" : "");
}

void results_print_table(FILE *out, const result_row *rows, int n) {
    char ds[16][64];
    int nd = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < nd && strcmp(ds[k], rows[i].dataset)) k++;
        if (k == nd && nd < 16) snprintf(ds[nd++], 64, "%s", rows[i].dataset);
    }
    fprintf(out, "| configuration |");
    for (int k = 0; k < nd; k++) fprintf(out, " %s pass@1 (%%) |", ds[k]);
    fprintf(out, " tokens/s (mean) | speed-up vs full KV |\n|---|");
    for (int k = 0; k < nd; k++) fprintf(out, "---|");
    fprintf(out, "---|---|\n");
    char done[256][1024], (*labs)[1024] = malloc(sizeof *labs * (size_t)(n > 0 ? n : 1)); /* each row's label, once */
    if (!labs) {
        fprintf(out, "(no memory for the labels of %d rows)\n", n);
        return;
    }
    for (int i = 0; i < n; i++) label(&rows[i], labs[i], sizeof labs[i]);
    int nl = 0;
    for (int i = 0; i < n; i++) {
        const char *lab = labs[i];
        int seen = 0;
        for (int j = 0; j < nl && !seen; j++) seen = !strcmp(done[j], lab);
        if (seen || nl == 256) continue;
        snprintf(done[nl++], sizeof done[0], "%s", lab);
        double tps = 0, speed = 0;
        int nt = 0, ns = 0;
        fprintf(out, "| %s |", lab);
        for (int k = 0; k < nd; k++) {
            const result_row *hit = NULL, *full = NULL;
            for (int j = 0; j < n; j++) {
                if (!strcmp(rows[j].dataset, ds[k]) && !strcmp(labs[j], lab) && !hit) hit = &rows[j];
                if (!strcmp(rows[j].dataset, ds[k]) && !strcmp(rows[j].policy, "full") && !strcmp(rows[j].kv_dtype, rows[i].kv_dtype) &&
                    !full)
                    full = &rows[j]; /* the full KV row of the same cache type */
            }
            if (!hit) { fprintf(out, " – |"); continue; }
            fprintf(out, " %.1f [%.1f, %.1f] |", 100 * hit->pass1, 100 * hit->lo, 100 * hit->hi);
            tps += hit->tps;
            nt++;
            if (full && full->tps > 0) { speed += hit->tps / full->tps; ns++; }
        }
        fprintf(out, " %.1f |", nt ? tps / nt : 0.0);
        if (ns) fprintf(out, " %.2fx |\n", speed / ns);
        else fprintf(out, " – |\n");
    }
    free(labs);
}

/* Plot rows in the order a curve joins them: by curve, dataset, N_max, M, pool. */
typedef struct {
    char curve[64];
    const result_row *w;
} plot_row;

static int plot_row_cmp(const void *pa, const void *pb) {
    const plot_row *a = pa, *b = pb;
    int c = strcmp(a->curve, b->curve);
    if (!c) c = strcmp(a->w->dataset, b->w->dataset);
    if (!c) c = (a->w->nmax > b->w->nmax) - (a->w->nmax < b->w->nmax);
    if (!c) c = (a->w->max_concurrency > b->w->max_concurrency) - (a->w->max_concurrency < b->w->max_concurrency);
    if (!c) c = (a->w->kv_pool_tokens > b->w->kv_pool_tokens) - (a->w->kv_pool_tokens < b->w->kv_pool_tokens);
    return c;
}

void results_write_plot_data(FILE *out, const result_row *rows, int n) {
    fprintf(out, "# policy\tdataset\tnmax\twindow\tmax_concurrency\tkv_pool_tokens\tpass1\tci_low\tci_high\ttps\tmean_running\n");
    plot_row *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    if (!v) {
        fprintf(out, "# no memory to sort %d rows\n", n);
        return;
    }
    for (int i = 0; i < n; i++) {
        results_curve(&rows[i], v[i].curve, sizeof v[i].curve);
        v[i].w = &rows[i];
    }
    qsort(v, (size_t)n, sizeof *v, plot_row_cmp);
    for (int i = 0; i < n; i++) {
        const result_row *w = v[i].w;
        fprintf(out, "%s\t%s\t%d\t%d\t%d\t%lld\t%.6f\t%.6f\t%.6f\t%.3f\t%.3f\n", v[i].curve, w->dataset, w->nmax, w->window,
                w->max_concurrency, w->kv_pool_tokens, w->pass1, w->lo, w->hi, w->tps, w->mean_running);
    }
    free(v);
}
