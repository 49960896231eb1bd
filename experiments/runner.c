/* runner.c - see runner.h. */
#include "runner.h"

#include <cjson/cJSON.h>  /* string escaping in samples.jsonl */
#include <csv.h>          /* csv_fwrite: quoting of the CSV fields */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>       /* model checksum */

#include "chat.h"         /* zp_chat_detect */
#include "code_grade.h"   /* code_opts, code_sandbox_available */
#include "dataset.h"      /* ds_open, ds_select */
#include "grader.h"       /* the math graders */
#include "engine.h"       /* zp_engine_* */
#include "math_grade.h"   /* math_grade */
#include "metrics.h"      /* metrics_pass_at_k, metrics_bootstrap_ci */
#include "mkmodel.h"      /* zp_preset_dir for preset: models */
#include "item_prompt.h"  /* item_prompt: system, template, ids */
#include "results_io.h"   /* rio_*: checked, durable file operations */
#include "tokenizer.h"
#include "sample_grade.h" /* each sample's verdict and the grader column */
#include "paths.h"        /* zp_path: the datasets and the grader's environment */
#include "clock.h"
#include "files.h"

/* runs.csv, one row per run: each column's name, printf format and value, in order. The
 * header and the rows are both made from this one table (write_row names the values). */
#define RUN_COLUMNS(X)                                                                                                      \
    X("run_id", "%s", r->run_id)                                                                                            \
    X("time", "%s", stamp)                                                                                                  \
    X("git_commit", "%s", git)                                                                                              \
    X("model", "%s", model)                                                                                                 \
    X("dataset", "%s", c->ds.name)                                                                                          \
    X("n_problems", "%d", c->n_sel)                                                                                         \
    X("n_samples", "%d", r->samples)                                                                                        \
    X("policy", "%s", r->policy)                                                                                            \
    X("policy_params", "%s", r->policy_params[0] ? r->policy_params : "{}")                                                 \
    X("nmax", "%d", r->nmax)                                                                                                \
    X("window", "%d", r->window)                                                                                            \
    X("layer_budget", "%s", r->layer_budget[0] ? r->layer_budget : "uniform")                                            \
    X("max_concurrency", "%d", st->n_qslots)                                                                                \
    X("block_size", "%d", r->block_size)                                                                                    \
    X("kv_pool_tokens", "%lld", (long long)st->num_blocks * r->block_size)                                                  \
    X("scheduler", "%s", r->scheduler)                                                                                      \
    X("async", "%d", r->async)                                                                                              \
    X("prefix_cache", "%d", st->prefix_cache) /* the engine's: exact H2O and SnapKV turn it off */                          \
    X("temperature", "%g", r->temperature)                                                                                  \
    X("top_p", "%g", r->top_p)                                                                                              \
    X("max_tokens", "%d", r->max_tokens)                                                                                    \
    X("seed", "%llu", (unsigned long long)r->seed)                                                                          \
    X("pass_at_1", "%.6f", pass1)                                                                                           \
    X("ci_low", "%.6f", lo)                                                                                                 \
    X("ci_high", "%.6f", hi)                                                                                                \
    X("mean_output_tokens", "%.2f", mean_out)                                                                               \
    X("truncated_share", "%.4f", trunc)                                                                                     \
    X("generated_tokens", "%lld", (long long)st->generated_tokens)                                                          \
    X("wall_seconds", "%.3f", wall)                                                                                         \
    X("tps", "%.2f", wall > 0 ? st->generated_tokens / wall : 0.0)                                                          \
    X("requests_per_s", "%.4f", wall > 0 ? c->total / wall : 0.0)                                                           \
    X("peak_running", "%d", st->peak_running)                                                                               \
    X("mean_running", "%.2f", steps ? (double)st->running_sum / steps : 0.0)                                                \
    X("peak_kv_bytes", "%lld", (long long)st->peak_blocks * (long long)block_bytes)                                         \
    X("compressions", "%lld", (long long)st->compressions)                                                                  \
    X("compression_seconds", "%.3f", st->compress_seconds)                                                                  \
    X("device", "%s", r->device)                                                                                            \
    X("grader", "%s", sample_grader_label(&c->ds, r->grader)) /* code: the tests run, in the sandbox */                               \
    X("admission_reserve", "%g", r->admission_reserve) /* columns added later come last: zipage grade appends them */ \
    X("kv_dtype", "%s", r->kv_dtype[0] ? r->kv_dtype : "auto")                                                             \
    X("head_budget", "%s", r->head_budget[0] ? r->head_budget : "uniform")                                                  \
    X("head_floor", "%g", r->head_floor)                                                                                    \
    X("budget", "%s", r->budget[0] ? r->budget : "fixed")                                                                   \
    X("budget_tau", "%g", r->budget_tau)                                                                                    \
    X("budget_floor", "%d", r->budget_floor)                                                                                \
    X("mean_retained", "%.1f", st->mean_retained)

#define RUN_COLUMN_NAME(name, fmt, value) name,
static const char *CSV_HEADER[] = {RUN_COLUMNS(RUN_COLUMN_NAME) NULL};
#define RUN_N_COLUMNS (sizeof CSV_HEADER / sizeof *CSV_HEADER - 1)

static uint64_t model_checksum(const char *dir) {
    char path[8400], *txt;
    uint64_t h = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (zp_read_file(path, &txt, NULL) == ZP_OK) { h ^= XXH64(txt, strlen(txt), 0); free(txt); }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "rb");
    if (f) {
        char buf[65536];
        size_t got = fread(buf, 1, sizeof buf, f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        h ^= XXH64(buf, got, (uint64_t)size);
    }
    return h;
}

/* "preset:NAME" -> the preset's folder (config and tokenizer; the weights are built in
 * memory, see runner_model_config); anything else is a checkpoint folder. */
static zp_status resolve_model(const char *spec, char *out, size_t n) {
    if (strncmp(spec, "preset:", 7)) { snprintf(out, n, "%s", spec); return ZP_OK; }
    return zp_preset_dir(spec + 7, out, n);
}

void runner_model_config(const exp_run *r, const char *model_dir, zp_engine_config *ec) {
    ec->model_dir = model_dir;
    ec->random_weights = !strncmp(r->model, "preset:", 7);
    ec->weight_seed = 1;
}

/* Whether runs.csv (or fidelity.csv) has a row of run_id; read under the folder's lock, so
 * that another worker's append is seen whole or not at all. */
static int run_done(const char *csv_path, const char *run_id) {
    int lock;
    if (rio_lock(csv_path, &lock) != ZP_OK) return 0; /* the append that follows reports the folder's error */
    FILE *f = fopen(csv_path, "r");
    if (!f) { rio_unlock(lock); return 0; }
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) /* the first field, quoted by libcsv or not */
        found = (!strncmp(line, run_id, 16) && line[16] == ',') || (line[0] == '"' && !strncmp(line + 1, run_id, 16) && line[17] == '"');
    fclose(f);
    rio_unlock(lock);
    return found;
}

typedef struct {
    zp_engine *e;
    zp_tokenizer *tok;
    ds_dataset ds;
    int *sel, n_sel;
    int total;
    int64_t prompt_tokens; /* of every request: the prefill's progress */
    int tty, run_k, run_n; /* progress display */
} run_ctx;

static zp_status add_requests(run_ctx *c, const exp_run *r, const char *model_dir) {
    zp_chat_opts co = {ZP_CHAT_QWEN3, r->thinking, NULL};
    ZP_TRY(zp_chat_detect(model_dir, &co.family));
    zp_sampling_params sp = zp_sampling_default();
    sp.temperature = r->temperature;
    sp.top_p = r->top_p;
    sp.top_k = r->top_k;
    sp.max_tokens = r->max_tokens;
    for (int i = 0; i < c->n_sel; i++) {
        const ds_item *it = &c->ds.items[c->sel[i]];
        int *ids, n;
        zp_status s = item_prompt(c->tok, co, &c->ds, it, r->math_system, NULL, &ids, &n);
        ZP_TRY(s);
        for (int k = 0; s == ZP_OK && k < r->samples; k++) s = zp_engine_add_request(c->e, ids, n, &sp, i, k, r->seed);
        free(ids);
        ZP_TRY(s);
        c->total += r->samples;
        c->prompt_tokens += (int64_t)n * r->samples;
    }
    return ZP_OK;
}

static zp_status generate(run_ctx *c, zp_output *outs, double *wall) {
    double t0 = zp_now(), last = t0;
    int done = 0;
    zp_engine_stats st;
    while (zp_engine_has_unfinished(c->e)) {
        ZP_TRY(zp_engine_step(c->e));
        done += zp_engine_poll(c->e, outs + done, c->total - done);
        double t = zp_now();
        if (t - last >= (c->tty ? 0.5 : 5.0)) { /* one live line on a terminal, periodic lines otherwise */
            zp_engine_get_stats(c->e, &st);
            const int64_t prefilled = st.prefill_tokens + st.prefix_hit_tokens;
            char eta[32] = "";
            if (done) snprintf(eta, sizeof eta, ", ETA %.0f s", (t - t0) * (c->total - done) / done);
            fprintf(stderr, "%s  run %d/%d: %d/%d requests done, prefill %lld/%lld tokens, %lld generated (%.1f tokens/s), %d running, peak KV %d/%d blocks%s%s",
                    c->tty ? "\r" : "", c->run_k, c->run_n, done, c->total, (long long)(prefilled < c->prompt_tokens ? prefilled : c->prompt_tokens),
                    (long long)c->prompt_tokens, (long long)st.generated_tokens, st.generated_tokens / (t - t0), zp_engine_num_running(c->e),
                    st.peak_blocks, st.num_blocks, eta, c->tty ? "   " : "\n");
            last = t;
        }
    }
    if (c->tty && last > t0) fputc('\n', stderr);
    done += zp_engine_poll(c->e, outs + done, c->total - done);
    *wall = zp_now() - t0;
    if (done != c->total) return zp_fail(ZP_ERR_BACKEND, "run: %d of %d requests finished", done, c->total);
    return ZP_OK;
}

/* A JSON string literal of s (cJSON does the escaping). */
static char *json_quote(const char *s) {
    cJSON *str = cJSON_CreateString(s ? s : "");
    char *out = cJSON_PrintUnformatted(str);
    cJSON_Delete(str);
    return out;
}

/* One JSON line of samples.jsonl. */
static void write_sample(FILE *f, const exp_run *r, const ds_item *it, const zp_output *o, const char *text, const char *extracted,
                         int correct, const char *grader_label) {
    fprintf(f, "{\"run_id\":\"%s\",\"problem_id\":", r->run_id);
    char *q = json_quote(it->id);
    fprintf(f, "%s,\"sample\":%d,\"output\":", q, o->sample_index);
    free(q);
    q = json_quote(text);
    fprintf(f, "%s,\"extracted\":", q);
    free(q);
    if (extracted) { q = json_quote(extracted); fprintf(f, "%s", q); free(q); }
    else fprintf(f, "null");
    fprintf(f, ",\"correct\":%s,\"tokens\":%d,\"finish\":\"%s\",\"compressions\":%d,\"grader\":\"%s\"}\n", correct ? "true" : "false",
            o->n_tokens, zp_finish_name(o->finish), o->n_compressions, grader_label);
}

/* Prints a run's first sample (up to 600 bytes, cut at a UTF-8 boundary) so that a run shows
 * what the model wrote, not only its score; samples.jsonl holds every sample whole. */
static void show_sample(const char *problem, const char *text, const char *extracted, int correct) {
    size_t n = strlen(text), m = n > 600 ? 600 : n;
    while (m < n && m > 0 && ((unsigned char)text[m] & 0xc0) == 0x80) m--;
    fprintf(stderr, "sample 0 of %s (answer %s, %s):\n  %.*s%s\n", problem, extracted ? extracted : "none", correct ? "correct" : "wrong",
            (int)m, text, m < n ? " [...]" : "");
}

/* Grades every output, writes the samples, fills per-problem counts. */
static zp_status grade_all(run_ctx *c, const exp_run *r, zp_output *outs, const runner_opts *o, FILE *samples, int *n_correct,
                           int *truncated, int64_t *out_tokens) {
    code_opts copts = code_opts_default();
    copts.unsafe_no_sandbox = o->unsafe_no_sandbox;
    grader g;
    grader_kind gk = GRADER_BUILTIN;
    char gerr[GRADER_ERR];
    grader_parse(r->grader, &gk);
    const int math = !c->ds.is_code && !c->ds.context_tokens; /* passkey: RULER's string match, no math grader */
    if (math && grader_open(&g, gk, zp_path(ZP_PATH_GRADE_PYTHON), zp_path(ZP_PATH_GRADE_SCRIPT), gerr) != 0) return zp_fail(ZP_ERR_INVALID, "%s", gerr);
    zp_status s = ZP_OK;
    for (int i = 0; i < c->total; i++) {
        const zp_output *out = &outs[i];
        const ds_item *it = &c->ds.items[c->sel[out->request_id]];
        char *text;
        size_t len;
        /* the text leaves out the token that ended the sample (EOS or a stop id); tokens counts it */
        int n_text = out->n_tokens - ((out->finish == ZP_FINISH_EOS || out->finish == ZP_FINISH_STOP) && out->n_tokens > 0);
        if ((s = zp_tokenizer_decode(c->tok, out->tokens, n_text, &text, &len)) != ZP_OK) break;
        int correct = 0;
        char *extracted = NULL;
        const sample_grade_status gs = sample_grade(&c->ds, it, text, &g, &copts, &correct, &extracted, gerr);
        if (gs != SAMPLE_GRADE_OK) {
            free(text);
            s = zp_fail(gs == SAMPLE_GRADE_CODE_FAILED ? ZP_ERR_INVALID : ZP_ERR_BACKEND, "%s", gerr);
            break;
        }
        write_sample(samples, r, it, out, text, extracted, correct, sample_grader_label(&c->ds, r->grader));
        if (i == 0) show_sample(it->id, text, extracted, correct);
        n_correct[out->request_id] += correct;
        *truncated += out->finish == ZP_FINISH_LENGTH;
        *out_tokens += out->n_tokens;
        free(extracted);
        free(text);
    }
    if (math) grader_close(&g);
    return s;
}

static void csv_field(FILE *f, const char *s, int last) {
    csv_fwrite(f, s, strlen(s));
    fputc(last ? '\n' : ',', f);
}

/* The runs.csv header line as the rows are written (malloc'ed), or NULL without memory. */
static char *csv_header_line(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    for (int i = 0; CSV_HEADER[i]; i++) csv_field(m, CSV_HEADER[i], !CSV_HEADER[i + 1]);
    if (ferror(m) | fclose(m)) { free(buf); return NULL; }
    return buf;
}

static void write_row(FILE *f, const exp_run *r, const char *git, const char *model, const run_ctx *c, const zp_engine_stats *st,
                      double pass1, double lo, double hi, double mean_out, double trunc, double wall, size_t block_bytes) {
    char v[RUN_N_COLUMNS][1100], stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const int64_t steps = st->prefill_steps + st->decode_steps;
    int k = 0;
#define RUN_COLUMN_VALUE(name, fmt, value) snprintf(v[k++], sizeof v[0], fmt, value);
    RUN_COLUMNS(RUN_COLUMN_VALUE)
#undef RUN_COLUMN_VALUE
    for (int i = 0; i < k; i++) csv_field(f, v[i], i == k - 1);
    fflush(f);
}

zp_status runner_open_dataset(const exp_run *r, const runner_opts *o, ds_dataset *d, int **sel, int *n) {
    char err[ZP_DS_ERR];
    *sel = NULL;
    *n = 0;
    if (ds_open(r->dataset, zp_path(ZP_PATH_DATASETS), d, err)) return zp_fail(ZP_ERR_INVALID, "\"dataset\": %s", err);
    zp_status s = ZP_OK;
    if (ds_select(d, r->ids[0] ? r->ids : NULL, r->limit, d->is_code, sel, n, err)) s = zp_fail(ZP_ERR_INVALID, "\"ids\": %s", err);
    else if (d->is_code && !o->unsafe_no_sandbox && !code_sandbox_available())
        s = zp_fail(ZP_ERR_INVALID, "\"dataset\": %s needs the code sandbox: install bubblewrap (make deps) or pass --unsafe-no-sandbox", d->name);
    if (s != ZP_OK) {
        free(*sel);
        *sel = NULL;
        *n = 0;
        ds_free(d);
    }
    return s;
}

static zp_status open_run(run_ctx *c, const exp_run *r, const char *model_dir, const runner_opts *o) {
    ZP_TRY(runner_open_dataset(r, o, &c->ds, &c->sel, &c->n_sel));
    zp_engine_config ec = zp_engine_config_default();
    runner_model_config(r, model_dir, &ec);
    exp_engine_config(r, &ec);
    ZP_TRY(zp_engine_init(&ec, &c->e));
    ZP_TRY(zp_tokenizer_load(model_dir, &c->tok));
    return add_requests(c, r, model_dir);
}

static void close_run(run_ctx *c) {
    if (c->e) zp_engine_free(c->e);
    if (c->tok) zp_tokenizer_free(c->tok);
    ds_free(&c->ds);
    free(c->sel);
    memset(c, 0, sizeof *c);
}

static zp_status execute(const exp_run *r, const char *exp_dir, const char *git, const char *model_dir, const runner_opts *o, int k,
                         int n) {
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.tty = isatty(2);
    c.run_k = k;
    c.run_n = n;
    zp_status s = open_run(&c, r, model_dir, o);
    zp_output *outs = s == ZP_OK ? calloc((size_t)c.total, sizeof *outs) : NULL;
    double wall = 0;
    if (s == ZP_OK && !outs) s = zp_fail(ZP_ERR_OOM, "run: no memory for %d outputs", c.total);
    if (s == ZP_OK) s = generate(&c, outs, &wall);
    int *n_correct = calloc((size_t)(c.n_sel ? c.n_sel : 1), sizeof(int)), *n_samples = calloc((size_t)(c.n_sel ? c.n_sel : 1), sizeof(int));
    char path[4400];
    char *sbuf = NULL;
    size_t slen = 0;
    FILE *sf = s == ZP_OK ? open_memstream(&sbuf, &slen) : NULL;
    if (s == ZP_OK && !sf) s = zp_fail(ZP_ERR_OOM, "run: no memory for the samples");
    int truncated = 0;
    int64_t out_tokens = 0;
    if (s == ZP_OK) s = grade_all(&c, r, outs, o, sf, n_correct, &truncated, &out_tokens);
    if (sf && (ferror(sf) | fclose(sf)) && s == ZP_OK) s = zp_fail(ZP_ERR_OOM, "run: no memory for the samples");
    snprintf(path, sizeof path, "%s/samples.jsonl", exp_dir);
    if (s == ZP_OK) s = rio_append_lines(path, NULL, sbuf, slen); /* durable before the row: a run is finished once its row exists */
    free(sbuf);
    if (s == ZP_OK) {
        for (int i = 0; i < c.n_sel; i++) n_samples[i] = r->samples;
        metrics_counts m = {c.n_sel, n_samples, n_correct};
        double lo, hi, p1 = metrics_pass_at_k(&m, 1);
        metrics_bootstrap_ci(&m, 1000, 0.95, r->seed + 1, &lo, &hi);
        zp_engine_stats st;
        zp_engine_get_stats(c.e, &st);
        snprintf(path, sizeof path, "%s/runs.csv", exp_dir);
        char *row = NULL, *head = csv_header_line();
        size_t row_len = 0;
        FILE *rf = open_memstream(&row, &row_len);
        if (rf)
            write_row(rf, r, git, r->model, &c, &st, p1, lo, hi, (double)out_tokens / c.total, (double)truncated / c.total, wall,
                      zp_engine_block_bytes(c.e));
        int bad = !rf || !head;
        if (rf) bad |= ferror(rf) | fclose(rf);
        char prefix[32]; /* the row's first field as csv_fwrite quotes it: a forced rerun replaces its row */
        snprintf(prefix, sizeof prefix, "\"%s\",", r->run_id);
        s = bad ? zp_fail(ZP_ERR_OOM, "run: no memory for the row")
                : o->force ? rio_replace_lines(path, head, prefix, row, row_len) : rio_append_lines(path, head, row, row_len);
        free(row);
        free(head);
        if (s == ZP_OK && o->finished) (*o->finished)++; /* kept from now on: what an interrupt says (the runner sets the count again) */
        if (s == ZP_OK)
            fprintf(stderr, "run %s: %s pass@1 %.4f [%.4f, %.4f], %lld tokens in %.2f s (%.1f tokens/s), %lld compressions\n",
                    r->run_id, r->policy, p1, lo, hi, (long long)st.generated_tokens, wall, wall > 0 ? st.generated_tokens / wall : 0.0,
                    (long long)st.compressions);
    }
    for (int i = 0; outs && i < c.total; i++) zp_output_free(&outs[i]);
    free(outs);
    free(n_correct);
    free(n_samples);
    close_run(&c);
    return s;
}

/* Samples of a run killed between appending them and writing its row would be doubled by the
 * rerun: drop any line of this run id first. */
static zp_status drop_stale_samples(const char *exp_dir, const char *run_id) {
    char path[4400], needle[64];
    snprintf(path, sizeof path, "%s/samples.jsonl", exp_dir);
    snprintf(needle, sizeof needle, "\"run_id\":\"%s\"", run_id);
    return rio_drop_lines(path, needle);
}

static zp_status write_meta(const experiment *x, const char *exp_dir, const char *git, const runner_opts *o) {
    char path[4400], *buf = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/meta.json", exp_dir);
    FILE *f = open_memstream(&buf, &len);
    if (!f) return zp_fail(ZP_ERR_OOM, "%s: no memory", path);
    char *name = json_quote(x->name), *cmd = json_quote(o->command_line ? o->command_line : "");
    fprintf(f, "{\"experiment\": %s, \"git_commit\": \"%s\", \"command\": %s, \"runs\": [\n", name ? name : "\"\"", git,
            cmd ? cmd : "\"\"");
    free(name);
    free(cmd);
    for (int i = 0; i < x->n_runs; i++)
        fprintf(f, "  {\"run_id\": \"%s\", \"config\": %s}%s\n", x->runs[i].run_id, x->runs[i].resolved, i + 1 < x->n_runs ? "," : "");
    fprintf(f, "]}\n");
    int bad = ferror(f) | fclose(f);
    zp_status s = bad ? zp_fail(ZP_ERR_OOM, "%s: no memory", path) : rio_replace(path, buf, len);
    free(buf);
    return s;
}

zp_status runner_fidelity_run(const exp_run *r, const char *exp_dir, const char *model_dir, int force);

/* An existing runs.csv must have this version's columns: rows are never appended under
 * another header (zipage grade DIR upgrades an older file). */
static zp_status check_csv_header(const char *csv) {
    FILE *f = fopen(csv, "r");
    if (!f) return ZP_OK;
    char *line = NULL, *want = csv_header_line();
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    zp_status s = ZP_OK;
    if (n > 0 && want && strcmp(line, want))
        s = zp_fail(ZP_ERR_FORMAT, "%s: written with other columns (an older version?); `zipage grade %.*s` upgrades it, or use another --results folder",
                    csv, (int)(strrchr(csv, '/') ? strrchr(csv, '/') - csv : 1), strrchr(csv, '/') ? csv : ".");
    free(line);
    free(want);
    return s;
}

static void note_finished(const runner_opts *o, int n) {
    if (o->finished) *o->finished = n;
}

zp_status runner_run_experiment(experiment *x, const runner_opts *o) {
    char exp_dir[4200], git[64], model_dir[4400];
    snprintf(exp_dir, sizeof exp_dir, "%s/%s", o->results_dir ? o->results_dir : "results", x->name);
    ZP_TRY(rio_mkdir_p(exp_dir));
    ZP_TRY(runner_preflight(x, o, exp_dir));
    rio_git_commit(git, sizeof git);
    for (int i = 0; i < x->n_runs; i++) { /* checksums per distinct model (usually one) */
        ZP_TRY(resolve_model(x->runs[i].model, model_dir, sizeof model_dir));
        experiment one = {"", &x->runs[i], 1, ""};
        exp_assign_ids(&one, git, model_checksum(model_dir));
    }
    ZP_TRY(write_meta(x, exp_dir, git, o));
    char csv[4400];
    snprintf(csv, sizeof csv, "%s/runs.csv", exp_dir);
    ZP_TRY(check_csv_header(csv));
    int n_done = 0, n_skip = 0, n_taken = 0;
    for (int i = 0; i < x->n_runs; i++) {
        if (o->shard_count > 1 && i % o->shard_count != o->shard_index) continue;
        const exp_run *r = &x->runs[i];
        char fcsv[4400];
        snprintf(fcsv, sizeof fcsv, "%s/fidelity.csv", exp_dir);
        const char *done_csv = r->fidelity ? fcsv : csv;
        if (!o->force && run_done(done_csv, r->run_id)) { n_skip++; note_finished(o, n_done + n_skip); continue; }
        int claim; /* another process on this folder (a --gpus worker) may be running it */
        ZP_TRY(rio_claim(exp_dir, r->run_id, &claim));
        if (claim < 0) { n_taken++; continue; }
        if (!o->force && run_done(done_csv, r->run_id)) { /* finished before the claim */
            rio_unlock(claim);
            n_skip++;
            note_finished(o, n_done + n_skip);
            continue;
        }
        char budget[96];
        exp_budget_label(r, budget, sizeof budget);
        fprintf(stderr, "run %d/%d (%s): policy %s nmax %d window %d budget %s kv_pool_tokens %lld on %s\n", i + 1, x->n_runs, r->run_id,
                r->policy, r->nmax, r->window, budget, (long long)r->kv_pool_tokens, r->dataset);
        zp_status s = resolve_model(r->model, model_dir, sizeof model_dir);
        if (s == ZP_OK) s = drop_stale_samples(exp_dir, r->run_id);
        if (s == ZP_OK) s = r->fidelity ? runner_fidelity_run(r, exp_dir, model_dir, o->force) : execute(r, exp_dir, git, model_dir, o, i + 1, x->n_runs);
        rio_unlock(claim);
        if (s != ZP_OK) { zp_error_prefix("run %s", r->run_id); return s; }
        n_done++;
        note_finished(o, n_done + n_skip);
    }
    int fidelity = 0;
    for (int i = 0; i < x->n_runs; i++) fidelity |= x->runs[i].fidelity;
    fprintf(stderr, "experiment %s: %d runs done, %d already finished, %d running in other processes (in %s/%s)\n", x->name, n_done, n_skip,
            n_taken, exp_dir, fidelity ? "fidelity.csv" : "runs.csv");
    return ZP_OK;
}
