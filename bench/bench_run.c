/* bench_run.c - the benchmark of one engine configuration (bench_run.h). */
#include "bench_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_clock.h"
#include "bench_timeline.h"
#include "bench_workload.h"
#include "mkmodel.h" /* zp_preset_dir */

/* Peak resident memory of this process in MiB. */
static double bench_peak_rss_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_maxrss / 1024.0;
}

void bench_set_pool(bench_config *b, int i) {
    b->ec.kv_pool_tokens = b->pool_bytes ? 0 : (int64_t)b->pools[i];
    b->ec.kv_pool_bytes = b->pool_bytes ? b->pools[i] : 0;
}

/* The folder holding the tokenizer: the checkpoint, or the preset's folder. */
static zp_status tokenizer_dir(const bench_config *b, char *out, size_t n) {
    if (!b->ec.random_weights) { snprintf(out, n, "%s", b->ec.model_dir); return ZP_OK; }
    return zp_preset_dir(b->ec.model_dir, out, n);
}

typedef struct {
    double wall, copy_bw, mem_gib;
    double matmul_rate;        /* the backend's dense matmul flops/s (the compute roof; 0: not measured) */
    double gemm_flops_row;     /* matmul flops of one decode row: 2 x the weights a step reads, in elements */
    double attn_flops_kv;      /* attention flops per attended K/V token: QK^T and PV of every query head, every layer */
    double ideal_gemm, ideal_attn; /* the decode steps' roof times (step_roof): weights phase, attention phase */
    zp_engine_stats st;
    size_t kv_token_bytes;
    size_t step_weight_bytes;  /* read by every step: all weights but an untied embedding table */
    size_t embed_row_bytes;    /* one token's embedding row */
    const char *pool;          /* the --pools entry of this row, or "" */
    int finished;              /* requests finished (all of them unless --max-seconds cut the run) */
    double tps_steady;         /* generated tokens/s after --warmup-seconds (0: the run ended before) */
    int unservable;            /* a request was refused: it can never fit this pool */
    double *latency;           /* [finished] seconds from the workload's start to each request's end */
} bench_result;

volatile sig_atomic_t bench_stop_signal;

/* Frees the outputs finished so far, each request's end-to-end latency (every request arrives
 * at t0) recorded after the res->finished already there; returns how many there were. */
static int drain_finished(zp_engine *e, bench_result *res, double latency) {
    zp_output o[64];
    int done = 0;
    for (int n; (n = zp_engine_poll(e, o, 64)) > 0;)
        for (int i = 0; i < n; i++, done++) {
            if (res->latency) res->latency[res->finished + done] = latency;
            zp_output_free(&o[i]);
        }
    return done;
}

/* A decode step's least time on this device (its roof), in two phases run one after the other:
 * the weights phase reads the weights and its rows' embeddings and does the matmuls of its rows
 * (max of the bytes at the copy bandwidth and the flops at the matmul rate: past the ridge, rows
 * x gemm_flops_row / matmul_rate > weights / bandwidth, a step is compute-bound), the attention
 * phase reads the K/V its rows attend (and its flops). Added to res's sums. */
static void step_roof(bench_result *res, int rows, int64_t kv) {
    if (rows <= 0 || res->copy_bw <= 0) return;
    const double F = res->matmul_rate > 0 ? res->matmul_rate : INFINITY;
    const double wb = (double)res->step_weight_bytes + (double)rows * (double)res->embed_row_bytes;
    res->ideal_gemm += fmax(wb / res->copy_bw, (double)rows * res->gemm_flops_row / F);
    res->ideal_attn += fmax((double)kv * (double)res->kv_token_bytes / res->copy_bw, (double)kv * res->attn_flops_kv / F);
}

static zp_status run_workload(const bench_config *b, zp_engine *e, const bench_workload *w, bench_timeline *tl, bench_result *res) {
    zp_sampling_params sp = zp_sampling_default();
    const int reasoning = !strcmp(b->workload, "reasoning");
    sp.temperature = b->temperature >= 0 ? b->temperature : reasoning ? 0.6f : 0.f;
    if (reasoning && b->temperature < 0) { sp.top_p = 0.95f; sp.top_k = 20; }
    sp.ignore_eos = 1;
    zp_status s = ZP_OK;
    for (int r = 0; s == ZP_OK && r < w->n; r++) {
        sp.max_tokens = w->gen[r];
        s = zp_engine_add_request(e, w->prompt[r], w->prompt_len[r], &sp, r, 0, (uint64_t)b->seed);
    }
    res->unservable = s == ZP_ERR_CAPACITY;
    const double t0 = zp_now();
    double tw = b->warmup_seconds > 0 ? -1.0 : t0; /* when the steady window began (-1: not yet) */
    int64_t gw = 0;
    zp_engine_stats st;
    zp_engine_get_stats(e, &st);
    bench_timeline_begin(tl, b->label, res->pool, t0, &st);
    int cut = 0;
    res->finished = 0;
    res->ideal_gemm = res->ideal_attn = 0;
    while (s == ZP_OK && zp_engine_has_unfinished(e) && !cut) {
        s = zp_engine_step(e);
        const double now = zp_now();
        int rows;
        int64_t kv;
        zp_engine_last_step(e, &rows, &kv);
        step_roof(res, rows, kv);
        if (s == ZP_OK) res->finished += drain_finished(e, res, now - t0);
        if (tw < 0 && now - t0 >= b->warmup_seconds) {
            zp_engine_get_stats(e, &st);
            tw = now;
            gw = st.generated_tokens;
        }
        if (s == ZP_OK && bench_timeline_due(tl, now)) {
            zp_engine_get_stats(e, &st);
            s = bench_timeline_row(tl, now, &st, res->finished);
        }
        cut = (b->max_seconds > 0 && now - t0 >= b->max_seconds) || bench_stop_signal;
    }
    res->wall = zp_now() - t0;
    zp_engine_get_stats(e, &st);
    res->tps_steady = tw >= 0 && res->wall > tw - t0 ? (double)(st.generated_tokens - gw) / (res->wall - (tw - t0)) : 0.0;
    if (s == ZP_OK && zp_engine_has_unfinished(e)) zp_engine_abandon(e); /* cut: the unfinished ones are dropped */
    res->finished += drain_finished(e, res, res->wall);
    if (s == ZP_OK) s = bench_timeline_row(tl, t0 + res->wall, &st, res->finished); /* the run's last interval */
    if (s == ZP_OK && res->finished < w->n)
        printf("# stopped after %.1f s (%s): %d of %d requests finished\n", res->wall,
               bench_stop_signal == SIGINT ? "SIGINT" : bench_stop_signal ? "SIGTERM" : "--max-seconds", res->finished, w->n);
    return s;
}

/* Reasoning workload: tokens/s over the steps that began with requests still waiting for
 * admission, i.e. the engine at capacity before the last requests drain (with few requests the
 * whole-run figure is bound by the longest one); 0 for the fixed workload. */
static double saturated_tps(const bench_config *b, const zp_engine_stats *st) {
    if (strcmp(b->workload, "reasoning") || st->saturated_seconds <= 0) return 0.0;
    return (double)st->saturated_tokens / st->saturated_seconds;
}

/* The nearest-rank p-quantile of sorted[0, n) (0 when n is 0). */
static double quantile(const double *sorted, int n, double p) {
    if (n <= 0) return 0.0;
    int k = (int)ceil(p * n) - 1;
    return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* The columns of a result row (bench/peer_hf.py writes the same). */
static const char BENCH_HEADER[] =
    "label,device,model,workload,requests,prompt_mean,gen_mean,policy,nmax,window,block_size,kv_blocks,async,prefix_cache,"
    "wall_s,tokens,tps,prefill_tok_s,decode_tok_s,req_per_s,mean_running,peak_running,decode_steps,decode_step_ms,share_gemm,share_attention,"
    "share_elementwise,share_sampling,share_compression,share_host,device_mem_gib,peak_rss_mib,copy_gbps,"
    "step_gbytes_mean,roofline_ratio,compressions,tps_saturated,pool,kv_state_gib,finished,tps_steady,tp,admission_reserve,"
    "length_scale,preemptions,completion_s,latency_p50_s,latency_p90_s,latency_p99_s,kv_dtype,matmul_tflops,roofline_compute_ratio,"
    "gemm_roof_share,attention_roof_share,graph_replay_share";

static void print_row(FILE *f, const bench_config *b, const bench_workload *w, const bench_result *r, int header) {
    const zp_engine_stats *st = &r->st;
    if (header) fprintf(f, "%s\n", BENCH_HEADER);
    double pl = 0, gl = 0, dev = 0;
    for (int i = 0; i < w->n; i++) { pl += w->prompt_len[i]; gl += w->gen[i]; }
    for (int k = 0; k < ZP_OP_COUNT; k++) dev += st->decode_op_seconds[k];
    const double DS = st->decode_seconds > 0 ? st->decode_seconds : 1; /* device shares are of the decode time */
    const double W = r->wall > 0 ? r->wall : 1, comp = st->compress_seconds;
    const double steps = st->decode_steps > 0 ? (double)st->decode_steps : 1;
    /* bytes a decode step must read: the weights (an untied embedding table only at its tokens'
     * rows) and the K/V its sequences attend */
    const double step_bytes = ((double)r->step_weight_bytes * steps + (double)st->decode_tokens * (double)r->embed_row_bytes +
                               (double)st->decode_kv_tokens * (double)r->kv_token_bytes) / steps;
    const double roof = r->copy_bw > 0 && st->decode_seconds > 0 ? step_bytes * steps / r->copy_bw / st->decode_seconds : 0;
    /* the same decode steps against their roofs with the compute roof too (step_roof), whole and
     * per phase (the GEMM and attention shares: only when profiled, else 0) */
    const double roof_c = st->decode_seconds > 0 && r->matmul_rate > 0 ? (r->ideal_gemm + r->ideal_attn) / st->decode_seconds : 0;
    const double og = st->decode_op_seconds[ZP_OP_GEMM], oa = st->decode_op_seconds[ZP_OP_ATTENTION];
    const double gemm_share = og > 0 && r->matmul_rate > 0 ? r->ideal_gemm / og : 0, attn_share = oa > 0 ? r->ideal_attn / oa : 0;
    const int all = st->prefill_steps + st->decode_steps > 0;
    /* the whole workload's completion time (blank when the run was cut), and the end-to-end
     * latencies of the requests that finished (all arrived at the start) */
    const int lat_n = r->latency ? r->finished : 0;
    char completion[32] = "";
    if (lat_n == w->n && lat_n > 0) snprintf(completion, sizeof completion, "%.3f", r->latency[lat_n - 1]);
    fprintf(f, "%s,%s,%s,%s,%d,%.1f,%.1f,%s,%d,%d,%d,%d,%d,%d,%.3f,%lld,%.1f,%.1f,%.1f,%.3f,%.1f,%d,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.0f,%.1f,"
               "%.6f,%.3f,%lld,%.1f,%s,%.6f,%d,%.1f,%d,%g,%d,%lld,%s,%.3f,%.3f,%.3f,%s,%.6f,%.4f,%.4f,%.4f,%.4f\n",
            b->label, b->ec.device ? b->ec.device : "cpu", b->model_name, b->workload, w->n, pl / w->n, gl / w->n,
            b->ec.policy ? b->ec.policy : "full", b->ec.nmax, b->ec.window, b->ec.block_size, st->num_blocks, b->ec.async_compress,
            b->ec.enable_prefix_cache, r->wall, (long long)(st->prefill_tokens + st->generated_tokens),
            (double)st->generated_tokens / W, st->prefill_seconds > 0 ? (double)st->prefill_tokens / st->prefill_seconds : 0.0,
            st->decode_seconds > 0 ? (double)st->decode_tokens / st->decode_seconds : 0.0, r->finished / W, all ? (double)st->running_sum / (double)(st->prefill_steps + st->decode_steps) : 0.0,
            st->peak_running, (long long)st->decode_steps, 1e3 * st->decode_seconds / steps, st->decode_op_seconds[ZP_OP_GEMM] / DS,
            st->decode_op_seconds[ZP_OP_ATTENTION] / DS, st->decode_op_seconds[ZP_OP_ELEMENTWISE] / DS, st->decode_op_seconds[ZP_OP_SAMPLING] / DS,
            comp / W, dev > 0 ? (DS - dev) / DS : 0.0, r->mem_gib, bench_peak_rss_mib(), r->copy_bw / 1e9, step_bytes / 1e9, roof,
            (long long)st->compressions, saturated_tps(b, st), r->pool ? r->pool : "", st->kv_state_bytes / 1073741824.0, r->finished, r->tps_steady,
            b->ec.tp > 1 ? b->ec.tp : 1, b->ec.admission_reserve, b->length_scale, (long long)st->preemptions, completion,
            quantile(r->latency, lat_n, 0.5), quantile(r->latency, lat_n, 0.9), quantile(r->latency, lat_n, 0.99),
            b->ec.kv_dtype ? b->ec.kv_dtype : "auto", r->matmul_rate / 1e12, roof_c, gemm_share, attn_share,
            st->decode_steps > 0 ? (double)st->graph_replays / (double)st->decode_steps : 0.0);
}

static size_t count_commas(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += *s == ',';
    return n;
}

/* --csv: a file that exists and is not empty must begin with this version's header (rows of
 * other columns appended under it would be misread); else it is refused before anything runs,
 * the file left as it is. */
static zp_status csv_header_check(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return ZP_OK; /* new: written with the header */
    char line[2048];
    const int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got) return ZP_OK; /* empty */
    line[strcspn(line, "\r\n")] = 0;
    if (strcmp(line, BENCH_HEADER))
        return zp_fail(ZP_ERR_INVALID, "--csv %s: its first line is not this zipage bench's header (%zu columns expected: an older version's "
                                       "file?); the row was not appended: name a new file",
                       path, 1 + count_commas(BENCH_HEADER));
    return ZP_OK;
}

/* Prints the row of one finished configuration, and appends it to --csv. */
static zp_status report(const bench_config *b, const bench_workload *w, zp_engine *e, bench_result *r) {
    const zp_model_config *mc = zp_engine_model_config(e);
    zp_engine_get_stats(e, &r->st);
    if (r->latency) qsort(r->latency, (size_t)r->finished, sizeof *r->latency, bench_cmp_double);
    size_t used = 0, tot = 0;
    if (zp_engine_device_memory(e, &used, &tot) == ZP_OK) r->mem_gib = (double)used / (1 << 30); /* CPU: none */
    printf("# zipage bench %s on %s (%s, %d layers, hidden %d, %.2f B parameters%s)\n", b->workload, b->model_name, mc->arch_name,
           mc->n_layers, mc->hidden, (double)zp_engine_weight_bytes(e) / zp_engine_cache_elem_bytes(e) / 1e9,
           b->ec.tp > 1 ? " on rank 0 of the tensor-parallel group" : "");
    print_row(stdout, b, w, r, 1);
    if (zp_engine_uses_graphs(e))
        printf("# CUDA graphs: %lld decode-step graphs recorded, %lld replays\n", (long long)r->st.graph_records,
               (long long)r->st.graph_replays);
    fflush(stdout);
    if (!b->csv) return ZP_OK;
    struct stat sb;
    const int header = stat(b->csv, &sb) != 0 || sb.st_size == 0;
    FILE *f = fopen(b->csv, "a");
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot append the result row", b->csv);
    print_row(f, b, w, r, header);
    return fclose(f) == 0 ? ZP_OK : zp_fail(ZP_ERR_IO, "%s: cannot write the result row", b->csv);
}

/* A pool too small for one request of the workload (the scheduler refused to add a request
 * that can never fit) is a finding of a pool sweep, not the end of it (--pools only; a single
 * pool fails as before): the requests already added are dropped, the row says 0 tok/s with 0
 * requests finished, the error is kept in `msg` (the command still fails once every pool has
 * run) and the next pool runs. */
static zp_status pool_unservable(zp_engine *e, const char *pool, char *msg, size_t n) {
    fprintf(stderr, "zipage bench: pool %s cannot serve the workload (%s): its row reports 0 tok/s\n", *pool ? pool : "(default)",
            zp_last_error());
    if (!msg[0]) snprintf(msg, n, "pool %s cannot serve the workload: %s", *pool ? pool : "(default)", zp_last_error());
    zp_engine_abandon(e);
    return ZP_OK;
}

/* The fixed workload once, untimed and unreported (graphs recorded, buffers grown, lazy
 * initialisations done), then the engine's counters zeroed for the timed run into r. A pool
 * that cannot serve the workload fails here as in the timed run (r->unservable). */
static zp_status warmup_run(const bench_config *b, zp_engine *e, const bench_workload *w, bench_result *r) {
    bench_timeline off = {0}; /* no rows */
    const double t0 = zp_now();
    ZP_TRY(run_workload(b, e, w, &off, r));
    printf("# warm-up run: %.3f s untimed (--no-warmup-run times the first run)\n", zp_now() - t0);
    return zp_engine_reset_stats(e);
}

zp_status bench_run(bench_config *b) {
    bench_workload w;
    char tdir[4096];
    zp_engine *e;
    if (b->csv) ZP_TRY(csv_header_check(b->csv)); /* before any run: no finished result is refused */
    ZP_TRY(zp_engine_init(&b->ec, &e));
    const zp_model_config *mc = zp_engine_model_config(e);
    zp_status s = ZP_OK;
    if (!strcmp(b->workload, "fixed")) s = bench_workload_fixed(b->batch, b->prompt, b->gen, mc->vocab, (uint64_t)b->seed, &w);
    else if ((s = tokenizer_dir(b, tdir, sizeof tdir)) == ZP_OK)
        s = bench_workload_reasoning(tdir, b->datasets, b->requests, b->max_tokens, b->length_scale, (uint64_t)b->seed, &w);
    if (s != ZP_OK) { zp_engine_free(e); return s; }
    bench_result base;
    memset(&base, 0, sizeof base);
    const size_t es = (size_t)zp_engine_cache_elem_bytes(e);
    s = zp_engine_copy_bandwidth(e, &base.copy_bw);
    if (s == ZP_OK) s = zp_engine_matmul_rate(e, &base.matmul_rate);
    base.step_weight_bytes = zp_engine_step_weight_bytes(e);
    base.gemm_flops_row = 2.0 * (double)base.step_weight_bytes / (double)es;
    const int tp = b->ec.tp > 1 ? b->ec.tp : 1; /* one GPU's heads */
    base.attn_flops_kv = 4.0 * mc->n_layers * mc->n_heads * mc->head_dim / tp;
    base.embed_row_bytes = (size_t)mc->hidden * es;
    base.kv_token_bytes = 2 * (size_t)mc->n_layers * mc->n_kv_heads * mc->head_dim * (size_t)zp_engine_kv_elem_bytes(e) / (size_t)tp; /* in the K/V element type */
    const int runs = b->n_pools ? b->n_pools : 1;
    char unservable[512] = "";
    bench_timeline tl = {0};
    if (s == ZP_OK) s = bench_timeline_open(&tl, b->timeline, b->timeline_interval);
    for (int i = 0; s == ZP_OK && i < runs; i++) { /* one row per pool size; the weights stay */
        if (i > 0) {
            bench_set_pool(b, i);
            if ((s = zp_engine_reinit(&e, &b->ec)) != ZP_OK) break;
        }
        bench_result r = base;
        r.pool = b->n_pools ? b->pool_spec[i] : "";
        if (!(r.latency = malloc(sizeof(double) * (size_t)w.n))) { s = zp_fail(ZP_ERR_OOM, "bench: no memory for latencies"); break; }
        if (!strcmp(b->workload, "fixed") && !b->no_warmup_run && b->max_seconds <= 0) s = warmup_run(b, e, &w, &r); /* a cut run is not steady */
        if (bench_stop_signal) break; /* during the warm-up: nothing timed to report */
        if (s == ZP_OK) s = run_workload(b, e, &w, &tl, &r);
        if (s == ZP_ERR_CAPACITY && r.unservable && b->n_pools) s = pool_unservable(e, r.pool, unservable, sizeof unservable);
        if (s == ZP_OK) s = report(b, &w, e, &r);
        free(r.latency);
        if (bench_stop_signal) break;
    }
    const zp_status sc = bench_timeline_close(&tl);
    if (s == ZP_OK) s = sc;
    bench_workload_free(&w);
    zp_engine_free(e);
    if (s == ZP_OK && bench_stop_signal)
        return zp_fail(ZP_ERR_INTERRUPTED, "stopped by %s: the rows of the runs measured so far were written%s", bench_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                       runs > 1 ? ", the later pools were not run" : "");
    if (s == ZP_OK && unservable[0])
        return zp_fail(ZP_ERR_CAPACITY, "%s; the other rows were written", unservable);
    return s;
}

/* --dump-workload: the reasoning requests as JSON lines, no model loaded. A failed write
 * removes the file, so no truncated workload is left for a peer to read. */
zp_status bench_dump_workload(const bench_config *b) {
    char tdir[4096];
    bench_workload w;
    ZP_TRY(tokenizer_dir(b, tdir, sizeof tdir));
    ZP_TRY(bench_workload_reasoning(tdir, b->datasets, b->requests, b->max_tokens, b->length_scale, (uint64_t)b->seed, &w));
    FILE *f = fopen(b->dump, "w");
    if (!f) {
        bench_workload_free(&w);
        return zp_fail(ZP_ERR_IO, "--dump-workload: cannot open %s: %s", b->dump, strerror(errno));
    }
    int64_t gen = 0;
    for (int i = 0; i < w.n; i++) {
        fputs("{\"prompt\": [", f);
        for (int t = 0; t < w.prompt_len[i]; t++) fprintf(f, t ? ", %d" : "%d", w.prompt[i][t]);
        fprintf(f, "], \"gen\": %d}\n", w.gen[i]);
        gen += w.gen[i];
    }
    const int bad = ferror(f) != 0;
    const int n = w.n;
    bench_workload_free(&w);
    if (fclose(f) != 0 || bad) {
        remove(b->dump);
        return zp_fail(ZP_ERR_IO, "--dump-workload: writing %s failed: %s", b->dump, strerror(errno));
    }
    printf("# %d reasoning requests (%lld tokens to generate) written to %s\n", n, (long long)gen, b->dump);
    return ZP_OK;
}

