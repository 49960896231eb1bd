/* engine.c - the step loop: schedule, build the batch, forward, sample, append, finish. */
#include "engine_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "settings.h" /* the defaults' schema */
#include "clock.h"
#include "kv_scales.h" /* zp_kv_scales_parse */

const char *zp_finish_name(zp_finish_reason r) {
    static const char *n[ZP_FINISH_COUNT] = {"none", "eos", "stop", "length", "max_position", "abort"};
    return (r >= 0 && r < ZP_FINISH_COUNT) ? n[r] : "?";
}

static zp_backend_options default_backend; /* zero until set: then zp_backend_options_default() */
static int default_backend_set;

void zp_engine_set_default_backend_options(const zp_backend_options *o) {
    default_backend = *o;
    default_backend_set = 1;
}

zp_engine_config zp_engine_config_default(void) {
    zp_engine_config c;
    memset(&c, 0, sizeof c);
    c.backend = default_backend_set ? default_backend : zp_backend_options_default();
    zp_settings_defaults(zp_engine_settings, zp_engine_n_settings, &c); /* the schema's rows (settings.h) */
    c.max_compress_blocks = 600;
    c.cuda_graphs = -1;
    return c;
}

/* Default CPU pool: 32768 tokens, capped at 2 GiB of K/V (fp32, or fp8 bytes). */
static int default_num_blocks(const zp_model_config *mc, const zp_engine_config *c, int fp8) {
    size_t per_block = zp_model_kv_block_bytes(mc, c->block_size, fp8 ? 1 : 4);
    int64_t tokens = c->kv_pool_tokens > 0 ? c->kv_pool_tokens : 32768;
    int64_t nb = (tokens + c->block_size - 1) / c->block_size;
    if (c->kv_pool_tokens <= 0 && (size_t)nb * per_block > (2ull << 30)) nb = (int64_t)((2ull << 30) / per_block);
    return nb < 1 ? 1 : (int)nb;
}

/* Sliding-window layers (gpt-oss's) are never scored nor compressed (their ring of blocks:
 * scheduler.h); the live history (attn_history), the position shift and the CUDA compress stage
 * do not know them. */
static zp_status check_sliding(const zp_engine *e) {
    const zp_model_config *mc = &e->model->cfg;
    const char *pol = e->plan.ops->name;
    if (!zp_config_has_sliding(mc) && !mc->attn_sinks) return ZP_OK;
    if (e->plan.history_live)
        return zp_fail(ZP_ERR_UNSUPPORTED, "policy %s on %s: a live history over sliding-window layers or attention sinks is not built", pol,
                       mc->arch_name);
    if (!zp_config_has_sliding(mc)) return ZP_OK;
    if (e->plan.shift_positions)
        return zp_fail(ZP_ERR_UNSUPPORTED, "policy %s on %s: position_shift with sliding-window layers is not built", pol, mc->arch_name);
    if (e->comp.device && e->be->compress)
        return zp_fail(ZP_ERR_UNSUPPORTED, "policy %s on %s: the CUDA compress stage does not know sliding-window layers", pol,
                       mc->arch_name);
    return ZP_OK;
}

/* The adaptive budget (the plan's budget adaptive) where it runs: the CPU backend, one rank, no
 * sliding layers (their ring is outside the count), and query slots whose requests can all grow
 * back to the cap at once (a compressed request is never preempted: with more, they could wait
 * on each other's blocks). */
static zp_status init_adaptive(zp_engine *e, int n_qslots, int num_blocks) {
    const engine_plan *p = &e->plan;
    if (!p->budget_adaptive) return ZP_OK;
    const zp_model_config *mc = &e->model->cfg;
    if (e->tp > 1 || (e->comp.device && e->be->compress))
        return zp_fail(ZP_ERR_UNSUPPORTED, "budget adaptive: the %s backend%s has no measuring pass yet (the CPU backend has)", e->be->name,
                       e->tp > 1 ? " with tensor parallelism" : "");
    for (int l = 0; l < mc->n_layers; l++)
        if (zp_config_layer_window(mc, l) > 0)
            return zp_fail(ZP_ERR_UNSUPPORTED, "budget adaptive: not with %s's sliding-window layers yet", mc->arch_name);
    if ((int64_t)n_qslots * p->geo.cap_blocks > num_blocks)
        return zp_fail(ZP_ERR_INVALID,
                       "budget adaptive: %d query slots of requests that regrow to %d blocks need %lld blocks, the pool has %d "
                       "(max_concurrency at most %d)",
                       n_qslots, p->geo.cap_blocks, (long long)n_qslots * p->geo.cap_blocks, num_blocks, num_blocks / p->geo.cap_blocks);
    e->comp.adaptive = 1;
    e->comp.tau = p->budget_tau;
    e->comp.floor = p->budget_floor;
    return ZP_OK;
}

/* An evicting policy caps requests at nmax + 1 blocks and gives them query slots; a prompt-only
 * policy (SnapKV) runs the full scheduler, with query slots for the prefills of long prompts,
 * each compressed to nmax x block_size tokens right after it. */
static zp_status init_compression(zp_engine *e, int num_blocks) {
    const zp_engine_config *c = &e->cfg;
    const engine_plan *p = &e->plan;
    if (!p->ops->evicts) return policy_init_ops(p->ops, c->policy_params, &e->comp.policy);
    const int m = engine_query_slots(e, num_blocks);
    ZP_TRY(compressor_init(&e->comp, p->ops, c->policy_params, &p->geo, p->history_live));
    const zp_model_config *mc = &e->model->cfg;
    uint8_t sliding[mc->n_layers > 0 ? mc->n_layers : 1]; /* never compressed: out of the layers' schedule */
    for (int l = 0; l < mc->n_layers; l++) sliding[l] = zp_config_layer_window(mc, l) > 0;
    ZP_TRY(zp_layer_plan_resolve_some(c->layer_budget, c->pyramid_beta, &p->geo, mc->n_layers, sliding, &e->layers));
    e->comp.layers = &e->layers;
    e->comp.device = !c->host_only;
    ZP_TRY(compressor_load_trig(&e->comp, &e->model_cfg));
    if (e->comp.trig_across && e->layers.n_views > 1)
        return zp_fail(
            ZP_ERR_INVALID,
            "policy %s: a mode across layers needs layer_budget uniform (one kept set for layers of different budgets)",
            p->ops->name);
    ZP_TRY(check_sliding(e));
    e->comp.head_adakv = p->head_adakv;
    e->comp.head_floor = p->head_floor;
    if (p->head_adakv && (!e->be->head_runs || e->tp > 1 || (e->comp.device && e->be->compress)))
        return zp_fail(ZP_ERR_UNSUPPORTED, "head_budget adakv: the %s backend%s does not hold head runs yet (the CPU backend does)",
                       e->be->name, e->tp > 1 ? " with tensor parallelism" : "");
    ZP_TRY(init_adaptive(e, m, num_blocks));
    if (e->comp.trig_stats && e->tp > 1)
        return zp_fail(ZP_ERR_UNSUPPORTED, "policy %s: not with tensor parallelism yet (tp %d)", p->ops->name, e->tp);
    if (p->shift_positions && e->layers.n_views > 1)
        return zp_fail(ZP_ERR_INVALID, "policy %s: position_shift needs layer_budget uniform (per-layer budgets give each layer its own cache indices)",
                       p->ops->name);
    if (p->ops->prompt_only) ZP_TRY(sched_enable_prompt_compression(&e->sched, &p->geo, m));
    else ZP_TRY(sched_enable_compression(&e->sched, p->sched, &p->geo, m));
    ZP_TRY(engine_tp_compression(e, m, p->stores_history, p->history_live));
    if (p->history_live && !e->kv.score) return zp_fail(ZP_ERR_INVALID, "policy %s: a live history needs a score cache", p->ops->name);
    e->ctask = calloc((size_t)c->max_num_seqs, sizeof *e->ctask);
    ZP_CHECK_ALLOC(e->ctask);
    e->compressing_enabled = !p->ops->prompt_only;
    e->prompt_compress = p->ops->prompt_only;
    e->stats.n_qslots = m;
    return ZP_OK;
}

int engine_kv_elem_bytes(const zp_engine *e) { return e->plan.kv_fp8 ? 1 : e->be->cache_elem_bytes; }

/* The backend's switches of cfg (CUDA graphs; none with tensor parallelism, whose sums leave
 * the stream). */
static zp_status engine_backend_flags(zp_engine *e, const zp_engine_config *cfg) {
    if (cfg->cuda_graphs > 0 && !e->be->graph_begin)
        return zp_fail(ZP_ERR_INVALID, "cuda_graphs needs the CUDA backend (device is %s)", e->be->name);
    if (cfg->cuda_graphs > 0 && e->tp > 1) return zp_fail(ZP_ERR_INVALID, "cuda_graphs: not with tensor parallelism (tp %d)", e->tp);
    e->be->use_graphs = e->tp == 1 && (cfg->cuda_graphs > 0 || (cfg->cuda_graphs < 0 && e->be->graph_begin));
    e->be->graph_records = e->be->graph_replays = 0; /* this engine's counts */
    return ZP_OK;
}

/* The step's views (after init_compression resolved the layer plan's): each layer's, and with a
 * ring its view in KV group 1 for every sliding layer. */
static zp_status init_views(zp_engine *e) {
    const zp_model_config *mc = &e->model->cfg;
    const int base = e->layers.n_views > 1 ? e->layers.n_views : 1;
    e->ring_view = e->sched.ring_window ? base : 0;
    e->n_views = base + (e->ring_view > 0);
    if (e->n_views == 1) return ZP_OK;
    e->layer_view = malloc(sizeof(int) * (size_t)mc->n_layers);
    e->view_group = calloc((size_t)e->n_views, sizeof(int));
    if (!e->layer_view || !e->view_group) return zp_fail(ZP_ERR_OOM, "engine: no memory for %d layers' views", mc->n_layers);
    for (int l = 0; l < mc->n_layers; l++)
        e->layer_view[l] = e->ring_view && zp_config_layer_window(mc, l) > 0 ? e->ring_view : base > 1 ? e->layers.view[l] : 0;
    if (e->ring_view) e->view_group[e->ring_view] = 1;
    else { free(e->view_group); e->view_group = NULL; }
    return ZP_OK;
}

/* Everything of an engine after its backend and weights: the KV pool (sized from free device
 * memory, a token count or the default; kv_pool_bytes is the group's, split over its ranks),
 * scheduler, compression, batch. */
static zp_status engine_setup(zp_engine *e) {
    const zp_engine_config *cfg = &e->cfg;
    int nb = 0;
    zp_status s = ZP_OK;
    if (cfg->kv_pool_bytes > 0 && (cfg->kv_pool_tokens > 0 || cfg->num_blocks > 0))
        return zp_fail(ZP_ERR_INVALID, "kv_pool_bytes excludes kv_pool_tokens and num_blocks");
    if (cfg->num_blocks > 0) nb = cfg->num_blocks;
    else if (cfg->kv_pool_bytes > 0) s = engine_bytes_num_blocks(e, cfg->kv_pool_bytes / e->tp, &nb);
    else if (cfg->kv_pool_tokens <= 0 && e->be->mem_info) s = engine_device_num_blocks(e, &nb);
    else nb = default_num_blocks(&e->model_cfg, cfg, e->plan.kv_fp8);
    if (s == ZP_OK) s = engine_tp_kv_alloc(e, nb, cfg->block_size);
    if (s == ZP_OK && e->be->op_seconds) s = e->be->op_seconds(e->be, NULL);
    if (s == ZP_OK) s = kv_pool_init(&e->pool, nb, cfg->block_size);
    /* a model with sliding layers gives them a ring of their own blocks */
    const zp_model_config *mc = &e->model->cfg;
    const int ring = zp_config_has_sliding(mc) ? mc->sliding_window : 0;
    if (s == ZP_OK) s = sched_init(&e->sched, &e->pool, cfg->max_num_seqs, cfg->max_num_batched_tokens, e->plan.prefix_cache);
    if (s == ZP_OK && ring) s = sched_enable_ring(&e->sched, ring);
    if (s == ZP_OK) e->sched.admission_reserve = cfg->admission_reserve;
    if (s == ZP_OK) s = init_compression(e, nb);
    if (s == ZP_OK) s = init_views(e);
    if (s == ZP_OK) {
        e->batch.seqs = calloc((size_t)cfg->max_num_seqs, sizeof *e->batch.seqs);
        if (!e->batch.seqs) s = zp_fail(ZP_ERR_OOM, "engine: no memory for the batch");
    }
    e->stats.num_blocks = nb;
    e->stats.block_size = cfg->block_size;
    e->stats.prefix_cache = e->sched.enable_prefix_cache;
    e->stats.kv_state_bytes = s == ZP_OK ? engine_kv_state_bytes(e, nb) * e->tp : 0;
    return s;
}

zp_status zp_engine_config_check(const zp_engine_config *cfg) {
    engine_plan plan;
    int base;
    ZP_TRY(engine_plan_resolve(cfg, &plan));
    return engine_device_base(cfg->device, &base);
}

zp_status zp_engine_init(const zp_engine_config *cfg, zp_engine **out) {
    engine_plan plan;
    ZP_TRY(engine_plan_resolve(cfg, &plan));
    zp_engine *e = calloc(1, sizeof *e);
    ZP_CHECK_ALLOC(e);
    e->cfg = *cfg;
    e->plan = plan;
    e->tp = 1;
    zp_status s = engine_tp_open(e);
    if (s == ZP_OK) s = engine_backend_flags(e, cfg);
    if (s == ZP_OK) s = engine_setup(e);
    if (s != ZP_OK) { zp_engine_free(e); return s; }
    *out = e;
    return ZP_OK;
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

zp_status zp_engine_reinit(zp_engine **ep, const zp_engine_config *cfg) {
    zp_engine *old = *ep;
    const zp_engine_config *oc = &old->cfg;
    engine_plan plan;
    ZP_TRY(engine_plan_resolve(cfg, &plan));
    if (!old->abandoned && zp_engine_has_unfinished(old))
        return zp_fail(ZP_ERR_INVALID, "engine reinit: requests are still unfinished");
    if (atomic_load(&old->tp_stopped))
        return zp_fail(ZP_ERR_INVALID, "engine reinit: its tensor-parallel group was stopped after an error: create a new engine");
    if (!same_str(cfg->model_dir, oc->model_dir) || cfg->random_weights != oc->random_weights ||
        (cfg->random_weights && cfg->weight_seed != oc->weight_seed) || !same_str(cfg->device, oc->device) ||
        !same_str(cfg->precision, oc->precision) || cfg->n_threads != oc->n_threads || memcmp(&cfg->backend, &oc->backend, sizeof cfg->backend) ||
        cfg->tp != oc->tp || cfg->tp_local != oc->tp_local)
        return zp_fail(ZP_ERR_INVALID, "engine reinit: the model, weights, device, precision, threads, tensor parallelism and backend options "
                       "must stay the same");
    zp_engine *e = calloc(1, sizeof *e);
    ZP_CHECK_ALLOC(e);
    e->cfg = *cfg;
    e->plan = plan;
    engine_tp_move(e, old); /* take the backends and the weights; the old KV pools go */
    zp_engine_free(old);
    *ep = NULL;
    zp_status s = engine_backend_flags(e, cfg);
    if (s == ZP_OK) s = engine_setup(e);
    if (s != ZP_OK) { zp_engine_free(e); return s; }
    *ep = e;
    return ZP_OK;
}

static void seq_destroy(zp_seq *q) {
    if (!q) return;
    free(q->tokens);
    free(q->blocks);
    free(q->ring);
    free(q->target);
    free(q->release);
    free(q->runs);
    free(q->new_runs);
    free(q);
}

void zp_engine_abandon(zp_engine *e) {
    if (!e) return;
    if (e->worker_running) pthread_join(e->worker, NULL); /* its compactions are complete; the results go */
    e->worker_running = 0;
    e->abandoned = 1;
}

void zp_engine_free(zp_engine *e) {
    if (!e) return;
    zp_engine_abandon(e); /* a compression in flight finishes first */
    engine_tp_close(e);
    compressor_free(&e->comp);
    zp_layer_plan_free(&e->layers);
    free(e->layer_view);
    free(e->view_group);
    free(e->ctask);
    free(e->step.qstore_rows); free(e->step.qstore_slots);
    for (int i = 0; i < e->all.n; i++) seq_destroy(e->all.v[i]);
    for (int i = 0; i < e->finished.n; i++) seq_destroy(e->finished.v[i]);
    free(e->all.v);
    free(e->finished.v);
    free(e->batch.seqs);
    free(e->step.token_ids); free(e->step.positions); free(e->step.slots); free(e->step.out_rows);
    free(e->step.q_start); free(e->step.q_len); free(e->step.kv_len); free(e->step.block_tables);
    free(e->step.logits); free(e->step.scratch); free(e->step.srows); free(e->step.sids);
    free(e->step.head_base); free(e->step.head_run);
    sched_free(&e->sched);
    kv_pool_free(&e->pool);
    if (e->model) { zp_model_kv_free(e->model, &e->kv); zp_model_free(e->model); }
    if (e->be) e->be->destroy(e->be);
    engine_tp_free_comms(e);
    free(e);
}

const zp_model_config *zp_engine_model_config(const zp_engine *e) { return &e->model_cfg; }
int zp_engine_cache_elem_bytes(const zp_engine *e) { return e->be->cache_elem_bytes; }
int zp_engine_kv_elem_bytes(const zp_engine *e) { return engine_kv_elem_bytes(e); }
int zp_engine_uses_graphs(const zp_engine *e) { return e->be->use_graphs; }
zp_status zp_engine_device_memory(zp_engine *e, size_t *used, size_t *total) {
    size_t fr = 0;
    if (!e->be->mem_info) return zp_fail(ZP_ERR_UNSUPPORTED, "device %s reports no memory use", e->be->name);
    ZP_TRY(e->be->mem_info(e->be, &fr, total));
    *used = *total - fr;
    return ZP_OK;
}
zp_status zp_engine_copy_bandwidth(zp_engine *e, double *bytes_per_s) {
    if (!e->be->copy_bandwidth) return zp_fail(ZP_ERR_UNSUPPORTED, "device %s measures no copy bandwidth", e->be->name);
    return e->be->copy_bandwidth(e->be, bytes_per_s);
}
zp_status zp_engine_matmul_rate(zp_engine *e, double *flops_per_s) {
    if (!e->be->matmul_rate) return zp_fail(ZP_ERR_UNSUPPORTED, "device %s measures no matmul rate", e->be->name);
    return e->be->matmul_rate(e->be, flops_per_s);
}
void zp_engine_last_step(const zp_engine *e, int *decode_rows, int64_t *kv_tokens) {
    *decode_rows = e->last_decode_rows;
    *kv_tokens = e->last_decode_kv;
}
size_t zp_engine_weight_bytes(const zp_engine *e) { return e->model->n_params * (size_t)e->be->cache_elem_bytes; }
size_t zp_engine_step_weight_bytes(const zp_engine *e) {
    const zp_model_config *c = &e->model->cfg;
    const size_t table = c->tie_embeddings ? 0 : (size_t)c->vocab * (size_t)c->hidden;
    return (e->model->n_params - table) * (size_t)e->be->cache_elem_bytes;
}
size_t zp_engine_block_bytes(const zp_engine *e) {
    const int elem = engine_kv_elem_bytes(e);
    return zp_model_kv_block_bytes(&e->model_cfg, e->cfg.block_size, elem); /* the group's: every rank's heads */
}
int zp_engine_num_running(const zp_engine *e) { return e->sched.running.n; }
int zp_engine_num_waiting(const zp_engine *e) { return e->sched.waiting.n; }
int zp_engine_blocks_used(const zp_engine *e) { return e->pool.num_blocks - e->pool.n_free; }
/* The tokens of a request's n_kv that its layers' attention reads, their mean over the layers
 * (a request's layers leave their dead blocks out once a compression installed its target; a
 * sliding layer reads at most its window of the logical tokens). */
static double seq_attended(const zp_engine *e, const zp_seq *q, int n_kv) {
    const zp_model_config *mc = &e->model->cfg;
    if (!e->ring_view) {
        if (!q->views || e->layers.n_layers == 0) return n_kv;
        return n_kv - (double)e->layers.dead_sum * e->cfg.block_size / e->layers.n_layers;
    }
    const int logical = q->n_done + (n_kv - q->n_kv);
    double sum = 0;
    for (int l = 0; l < mc->n_layers; l++) {
        const int w = zp_config_layer_window(mc, l);
        const int dead = q->views && e->layers.n_layers ? e->layers.dead[e->layers.view[l]] : 0;
        sum += w > 0 ? (logical < w ? logical : w) : n_kv - dead * e->cfg.block_size;
    }
    return sum / mc->n_layers;
}

double zp_engine_kv_share(const zp_engine *e) {
    double s = 0;
    int n = 0;
    for (int i = 0; i < e->sched.running.n; i++) {
        const zp_seq *q = e->sched.running.v[i];
        if (q->n_done > 0) { s += seq_attended(e, q, q->n_kv) / q->n_done; n++; }
    }
    return n ? s / n : 1.0;
}

void zp_engine_set_logits_hook(zp_engine *e, zp_logits_hook fn, void *ctx) {
    e->logits_hook = fn;
    e->logits_hook_ctx = ctx;
}
void zp_engine_set_token_hook(zp_engine *e, zp_token_hook fn, void *ctx) {
    e->token_hook = fn;
    e->token_hook_ctx = ctx;
}
int zp_engine_has_unfinished(const zp_engine *e) { return e->sched.waiting.n + e->sched.running.n > 0 || e->worker_running; }

zp_status zp_engine_add_request(zp_engine *e, const int *prompt, int n_prompt, const zp_sampling_params *sp,
                                int64_t request_id, int sample_index, uint64_t seed) {
    const zp_model_config *mc = &e->model->cfg;
    if (n_prompt <= 0) return zp_fail(ZP_ERR_INVALID, "request %lld: empty prompt", (long long)request_id);
    if (sp->max_tokens <= 0) return zp_fail(ZP_ERR_INVALID, "request %lld: max_tokens %d must be > 0", (long long)request_id, sp->max_tokens);
    if (sp->temperature < 0 || !(sp->top_p > 0 && sp->top_p <= 1) || sp->top_k < 0 || !(sp->repetition_penalty > 0))
        return zp_fail(ZP_ERR_INVALID, "request %lld: sampling parameters out of range (temperature %g >= 0, 0 < top_p %g <= 1, "
                       "top_k %d >= 0, repetition_penalty %g > 0)", (long long)request_id, sp->temperature, sp->top_p, sp->top_k,
                       sp->repetition_penalty);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= mc->vocab)
            return zp_fail(ZP_ERR_INVALID, "request %lld: prompt token %d at index %d is outside the vocabulary [0,%d)",
                           (long long)request_id, prompt[i], i, mc->vocab);
    for (int i = 0; i < sp->n_forced; i++)
        if (sp->forced[i] < 0 || sp->forced[i] >= mc->vocab)
            return zp_fail(ZP_ERR_INVALID, "request %lld: forced token %d at index %d is outside the vocabulary", (long long)request_id, sp->forced[i], i);
    if (n_prompt >= mc->max_pos)
        return zp_fail(ZP_ERR_CAPACITY, "request %lld: prompt of %d tokens reaches max_position_embeddings %d",
                       (long long)request_id, n_prompt, mc->max_pos);
    zp_seq *q = calloc(1, sizeof *q);
    ZP_CHECK_ALLOC(q);
    q->cap = n_prompt + sp->max_tokens + 1;
    q->tokens = malloc(sizeof(int) * (size_t)q->cap);
    if (!q->tokens) {
        int cap = q->cap;
        free(q);
        return zp_fail(ZP_ERR_OOM, "request %lld: no memory for %d tokens", (long long)request_id, cap);
    }
    if (e->plan.head_adakv) { /* its head runs, [L][Hkv] twice */
        const size_t n_runs = (size_t)mc->n_layers * (size_t)e->model->cfg.n_kv_heads;
        q->runs = malloc(sizeof(int) * n_runs);
        q->new_runs = malloc(sizeof(int) * n_runs);
        if (!q->runs || !q->new_runs) {
            seq_destroy(q);
            return zp_fail(ZP_ERR_OOM, "request %lld: no memory for its head runs", (long long)request_id);
        }
    }
    memcpy(q->tokens, prompt, sizeof(int) * (size_t)n_prompt);
    q->n_tokens = q->n_prompt = n_prompt;
    q->request_id = request_id;
    q->sample_index = sample_index;
    q->seed = seed;
    q->sp = *sp;
    q->order = e->next_order++;
    q->qid = -1;
    zp_status s = sched_add(&e->sched, q);
    if (s == ZP_OK) s = seq_list_push_back(&e->all, q);
    if (s != ZP_OK) { seq_list_remove(&e->sched.waiting, q); seq_destroy(q); }
    return s;
}

/* ---------------------------------------------------------------- batch building */

static zp_status grow_int(int **p, int *cap, int need) {
    if (need <= *cap) return ZP_OK;
    int *n = realloc(*p, sizeof(int) * (size_t)need);
    ZP_CHECK_ALLOC(n);
    *p = n;
    *cap = need;
    return ZP_OK;
}

/* n arrays of one capacity *cap grown together to need. */
static zp_status grow_ints(int **const *arrs, int n, int *cap, int need) {
    for (int i = 0; i < n; i++) {
        int c = *cap;
        ZP_TRY(grow_int(arrs[i], &c, need));
    }
    if (need > *cap) *cap = need;
    return ZP_OK;
}

static zp_status reserve_step(zp_engine *e, int rows, int seqs, int max_blocks) {
    int **by_row[] = {&e->step.token_ids, &e->step.positions};
    int **by_seq[] = {&e->step.q_start, &e->step.q_len, &e->step.out_rows};
    ZP_TRY(grow_ints(by_row, 2, &e->step.rows_cap, rows));
    ZP_TRY(grow_int(&e->step.slots, &e->step.slots_cap, rows * (e->ring_view ? 2 : 1))); /* a row per KV group */
    ZP_TRY(grow_ints(by_seq, 3, &e->step.seq_cap, seqs));
    const int V = e->n_views;
    ZP_TRY(grow_int(&e->step.kv_len, &e->step.kvl_cap, seqs * V));
    ZP_TRY(grow_int(&e->step.block_tables, &e->step.bt_cap, seqs * max_blocks * V));
    if (seqs > e->step.logits_rows) {
        free(e->step.logits);
        free(e->step.srows); free(e->step.sids);
        e->step.logits = malloc(sizeof(float) * (size_t)seqs * (size_t)e->model->cfg.vocab);
        e->step.srows = malloc(sizeof *e->step.srows * (size_t)seqs);
        e->step.sids = malloc(sizeof(int) * (size_t)seqs);
        if (!e->step.logits || !e->step.srows || !e->step.sids) { e->step.logits_rows = 0; return zp_fail(ZP_ERR_OOM, "engine: no memory for %d logits rows", seqs); }
        e->step.logits_rows = seqs;
    }
    if (!e->step.scratch) {
        e->step.scratch = malloc(sizeof(float) * 3 * (size_t)e->model->cfg.vocab); /* the sampler's 2 V, a logits row for logprobs */
        ZP_CHECK_ALLOC(e->step.scratch);
    }
    return ZP_OK;
}

/* Window rows of q this step: tokens landing in window offsets of the block that will be the
 * last one after the step (§1.3), for requests holding a query slot. */
static zp_status add_query_stores(zp_engine *e, const zp_seq *q, int row0, int n_new, int *n_qs) {
    const int bs = e->plan.geo.block_size, w = e->plan.geo.window;
    if ((!e->compressing_enabled && !e->prompt_compress) || q->qid < 0) return ZP_OK;
    const int last_start = (q->n_kv + n_new - 1) / bs * bs;
    for (int j = 0; j < n_new; j++) {
        int p = q->n_kv + j, off = p % bs;
        if (e->prompt_compress) off = p - (q->n_prompt - w) + (bs - w); /* the prompt's last w queries, in order */
        else if (p < last_start) continue;
        if (off < bs - w || off >= bs) continue;
        if (*n_qs >= e->step.qstore_cap) {
            int cap = e->step.qstore_cap ? 2 * e->step.qstore_cap : 64, c1 = e->step.qstore_cap, c2 = e->step.qstore_cap;
            ZP_TRY(grow_int(&e->step.qstore_rows, &c1, cap));
            ZP_TRY(grow_int(&e->step.qstore_slots, &c2, cap));
            e->step.qstore_cap = cap;
        }
        e->step.qstore_rows[*n_qs] = row0 + j;
        e->step.qstore_slots[*n_qs] = q->qid * w + (off - (bs - w));
        (*n_qs)++;
    }
    return ZP_OK;
}

/* Views 1.. of kv_len and block_tables (view 0 is the batch's own): the table of a request whose
 * compression installed its target (decode's or its prompt's) without the view's dead blocks, and
 * as many fewer tokens; a request not yet compressed reads its whole table in every view. */
static void build_layer_views(zp_engine *e, zp_seq *const *seqs, int n_seqs, int max_blocks) {
    const int bs = e->cfg.block_size;
    for (int v = 1; v < e->layers.n_views; v++)
        for (int i = 0; i < n_seqs; i++) {
            const zp_seq *q = seqs[i];
            const int dead = q->views ? e->layers.dead[v] : 0;
            int *bt = e->step.block_tables + ((size_t)v * n_seqs + i) * max_blocks;
            const int k = zp_layer_view_table(q->blocks, q->n_blocks, e->plan.geo.nmax, dead, bt);
            for (int j = k; j < max_blocks; j++) bt[j] = -1;
            e->step.kv_len[(size_t)v * n_seqs + i] = e->step.kv_len[i] - dead * bs;
        }
}

/* The ring's view: each request's sliding-layer blocks by logical block (-1 where freed: no
 * query of the step sees them), its logical length. */
static void build_ring_view(zp_engine *e, zp_seq *const *seqs, int n_seqs, int max_blocks) {
    const int v = e->ring_view;
    for (int i = 0; i < n_seqs; i++) {
        const zp_seq *q = seqs[i];
        int *bt = e->step.block_tables + ((size_t)v * n_seqs + i) * max_blocks;
        for (int k = 0; k < max_blocks; k++) bt[k] = k < q->n_ring ? q->ring[k] : -1;
        e->step.kv_len[(size_t)v * n_seqs + i] = q->n_tokens;
    }
}

/* Head-wise budgets: each request's base and its runs of every layer (the scheduler's, copied:
 * a compression installs new ones between steps). */
static zp_status build_head_runs(zp_engine *e, zp_seq *const *seqs, int n_seqs) {
    const size_t per = (size_t)e->model->cfg.n_layers * (size_t)e->model->cfg.n_kv_heads;
    ZP_TRY(grow_int(&e->step.head_base, &e->step.hb_cap, n_seqs));
    ZP_TRY(grow_int(&e->step.head_run, &e->step.hr_cap, (int)(per * (size_t)n_seqs)));
    for (int i = 0; i < n_seqs; i++) {
        e->step.head_base[i] = seqs[i]->run_base;
        if (seqs[i]->run_base > 0) memcpy(e->step.head_run + per * i, seqs[i]->runs, sizeof(int) * per);
    }
    return ZP_OK;
}

/* A decode step's block tables are padded (-1) to a multiple of this many blocks: the table
 * width is part of a decode graph's shape (model.c graph_key), and a growing context would
 * otherwise make a new shape every block (the share of decode steps replayed is bench's
 * graph_replay_share column). Prefill steps, never recorded, keep their width. */
#define DECODE_TABLE_ROUND 8

/* Rows of request q this step: logical tokens [n_done, n_tokens) at positions n_done.. (with a
 * position shift: at their cache indices n_kv..); their K/V go to physical slots n_kv..
 * (positions and slots coincide until a compression). */
static zp_status build_batch(zp_engine *e, zp_seq *const *seqs, int n_seqs, int is_prefill, zp_batch *b) {
    const int bs = e->cfg.block_size;
    int max_blocks = 1, rows = 0, n_qs = 0;
    for (int i = 0; i < n_seqs; i++) {
        max_blocks = seqs[i]->n_blocks > max_blocks ? seqs[i]->n_blocks : max_blocks;
        max_blocks = seqs[i]->n_ring > max_blocks ? seqs[i]->n_ring : max_blocks;
        rows += seqs[i]->n_tokens - seqs[i]->n_done;
    }
    if (!is_prefill) max_blocks = (max_blocks + DECODE_TABLE_ROUND - 1) / DECODE_TABLE_ROUND * DECODE_TABLE_ROUND;
    ZP_TRY(reserve_step(e, rows, n_seqs, max_blocks));
    int row = 0;
    for (int i = 0; i < n_seqs; i++) {
        const zp_seq *q = seqs[i];
        int n_new = q->n_tokens - q->n_done;
        e->step.q_start[i] = row;
        e->step.q_len[i] = n_new;
        e->step.kv_len[i] = q->n_kv + n_new;
        ZP_TRY(add_query_stores(e, q, row, n_new, &n_qs));
        for (int j = 0; j < n_new; j++, row++) {
            int phys = q->n_kv + j;
            e->step.token_ids[row] = q->tokens[q->n_done + j];
            e->step.positions[row] = (e->plan.shift_positions ? q->n_kv : q->n_done) + j;
            e->step.slots[row] = q->blocks[phys / bs] * bs + phys % bs;
            if (e->ring_view) e->step.slots[rows + row] = q->ring[(q->n_done + j) / bs] * bs + (q->n_done + j) % bs;
        }
        e->step.out_rows[i] = row - 1;
        int *bt = e->step.block_tables + (size_t)i * max_blocks;
        for (int k = 0; k < max_blocks; k++) bt[k] = k < q->n_blocks ? q->blocks[k] : -1;
    }
    build_layer_views(e, seqs, n_seqs, max_blocks);
    if (e->ring_view) build_ring_view(e, seqs, n_seqs, max_blocks);
    if (e->plan.head_adakv) ZP_TRY(build_head_runs(e, seqs, n_seqs));
    *b = (zp_batch){.n_tokens = row,
                    .n_seqs = n_seqs,
                    .token_ids = e->step.token_ids,
                    .positions = e->step.positions,
                    .slot_mapping = e->step.slots,
                    .seq_q_start = e->step.q_start,
                    .seq_q_len = e->step.q_len,
                    .seq_kv_len = e->step.kv_len,
                    .block_tables = e->step.block_tables,
                    .max_blocks = max_blocks,
                    .n_out = n_seqs,
                    .out_rows = e->step.out_rows,
                    .is_prefill = is_prefill,
                    .n_qstore = n_qs,
                    .qstore_rows = e->step.qstore_rows,
                    .qstore_slots = e->step.qstore_slots,
                    .n_views = e->n_views,
                    .layer_view = e->layer_view,
                    .view_group = e->view_group,
                    .head_base = e->plan.head_adakv ? e->step.head_base : NULL,
                    .head_run = e->plan.head_adakv ? e->step.head_run : NULL};
    return ZP_OK;
}

/* ---------------------------------------------------------------- sampling and finishing */

static zp_finish_reason check_finish(const zp_engine *e, const zp_seq *q, int tok) {
    const zp_model_config *mc = &e->model->cfg;
    if (!q->sp.ignore_eos && zp_config_is_eos(mc, tok)) return ZP_FINISH_EOS;
    for (int i = 0; i < q->sp.n_stop; i++)
        if (q->sp.stop_ids[i] == tok) return ZP_FINISH_STOP;
    if (q->n_tokens - q->n_prompt >= q->sp.max_tokens) return ZP_FINISH_LENGTH;
    if (q->n_tokens >= mc->max_pos) return ZP_FINISH_MAX_POS;
    return ZP_FINISH_NONE;
}

/* Device sampling, called when the backend has it and no logits hook is set: unless a row
 * needs the host (forced tokens, repetition penalty; then *used stays 0), fills e->step.sids,
 * -1 where the host must sample after all. */
static zp_status sample_on_device(zp_engine *e, zp_seq *const *seqs, int n, int *used) {
    *used = 0;
    for (int i = 0; i < n; i++) {
        const zp_seq *q = seqs[i];
        const int step = q->n_tokens - q->n_prompt;
        if (step < q->sp.n_forced || q->sp.repetition_penalty != 1.0f) return ZP_OK;
        e->step.srows[i] = (zp_sample_row){.temperature = q->sp.temperature,
                                      .top_p = q->sp.top_p,
                                      .top_k = q->sp.top_k,
                                      .sample_index = (uint32_t)q->sample_index,
                                      .step = (uint32_t)step,
                                      .seed = q->seed,
                                      .request_id = q->sp.has_rng_key ? q->sp.rng_key : (uint64_t)q->request_id};
    }
    *used = 1;
    return e->be->sample(e->be, e->model->logits, n, e->model->cfg.vocab, e->step.srows, e->step.sids);
}

/* ids: tokens sampled on the device (-1: sample this row on the host), or NULL: all on the
 * host from e->step.logits. */
static zp_status sample_and_append(zp_engine *e, zp_seq *const *seqs, int n, const int *ids) {
    const int V = e->model->cfg.vocab;
    for (int i = 0; i < n; i++) {
        zp_seq *q = seqs[i];
        sched_mark_computed(&e->sched, q);
        if (q->n_kv > e->stats.peak_request_tokens) e->stats.peak_request_tokens = q->n_kv;
        int step = q->n_tokens - q->n_prompt;
        float *row = e->step.logits + (size_t)i * V;
        if (ids && (ids[i] < 0 || q->sp.want_logprobs)) ZP_TRY(e->be->to_host(e->be, row, e->model->logits, ZP_ACT_F32, (size_t)i * V, (size_t)V));
        if (e->logits_hook) e->logits_hook(e->logits_hook_ctx, q->request_id, q->sample_index, step, row, V);
        float *raw = e->step.scratch + 2 * (size_t)V; /* the host sampler changes row: logprobs read the model's logits */
        if (q->sp.want_logprobs) memcpy(raw, row, sizeof(float) * (size_t)V);
        float u = zp_rng_uniform(q->seed, q->sp.has_rng_key ? q->sp.rng_key : (uint64_t)q->request_id, (uint32_t)q->sample_index, (uint32_t)step);
        int tok = step < q->sp.n_forced ? q->sp.forced[step]
                  : ids && ids[i] >= 0 ? ids[i]
                                       : zp_sample_token(row, V, &q->sp, q->tokens, q->n_tokens, u, e->step.scratch);
        q->tokens[q->n_tokens++] = tok;
        e->stats.generated_tokens++;
        q->finish = check_finish(e, q, tok);
        zp_token_logprobs lp;
        if (q->sp.want_logprobs) zp_logprobs_compute(raw, V, tok, q->sp.top_logprobs, &lp);
        if (e->token_hook) e->token_hook(e->token_hook_ctx, q->request_id, q->sample_index, tok, q->finish, q->sp.want_logprobs ? &lp : NULL);
        if (q->finish != ZP_FINISH_NONE) {
            sched_finish(&e->sched, q);
            seq_list_remove(&e->all, q);
            ZP_TRY(seq_list_push_back(&e->finished, q));
        }
    }
    return ZP_OK;
}

/* ---------------------------------------------------------------- compression */

static void *worker_main(void *arg) {
    zp_engine *e = arg;
    e->worker_status = engine_tp_compress(e, e->ctask, e->n_ctask);
    if (e->worker_status != ZP_OK) snprintf(e->worker_error, sizeof e->worker_error, "%s", zp_last_error());
    atomic_store(&e->worker_done, 1);
    return NULL;
}

/* Bookkeeping of a finished compression batch happens here, on the engine thread. */
static zp_status finish_compressions(zp_engine *e) {
    for (int i = 0; i < e->n_ctask; i++) sched_compress_done(&e->sched, e->ctask[i]);
    e->n_ctask = 0;
    return ZP_OK;
}

/* Joins the worker when it is done (or always when `wait`). */
static zp_status collect_worker(zp_engine *e, int wait) {
    if (!e->worker_running || (!wait && !atomic_load(&e->worker_done))) return ZP_OK;
    pthread_join(e->worker, NULL);
    e->worker_running = 0;
    if (e->worker_status != ZP_OK) return zp_fail(e->worker_status, "%s", e->worker_error);
    return finish_compressions(e);
}

/* Splits the decode batch: requests marked for compression leave it. Sync: they are compacted
 * now and rejoin the batch. Async: the first ones go to the worker if it is idle; the rest
 * wait for a later step. Returns the number of requests left to run in e->batch.seqs. */
static zp_status route_compressions(zp_engine *e, int *n_run) {
    zp_sched_batch *sb = &e->batch;
    int n = 0, n_new = 0, longest = e->plan.geo.cap_blocks;
    for (int i = 0; i < sb->n; i++) /* a first compression of a long prompt has more blocks than nmax + 1 */
        if (sb->seqs[i]->compressing == ZP_COMPRESS_PLANNED && sb->seqs[i]->n_blocks > longest) longest = sb->seqs[i]->n_blocks;
    const int cap = e->cfg.max_compress_blocks / longest > 0 ? e->cfg.max_compress_blocks / longest : 1; /* as the reference: by the longest table */
    for (int i = 0; i < sb->n; i++) {
        zp_seq *q = sb->seqs[i];
        if (q->compressing == ZP_COMPRESS_NONE) { sb->seqs[n++] = q; continue; }
        if (q->compressing == ZP_COMPRESS_IN_FLIGHT) { e->stats.compress_wait_steps++; continue; }
        if (!e->cfg.async_compress) { e->ctask[e->n_ctask++] = q; sb->seqs[n++] = q; continue; }
        if (!e->worker_running && n_new < cap) { e->ctask[n_new++] = q; q->compressing = ZP_COMPRESS_IN_FLIGHT; }
        e->stats.compress_wait_steps++;
    }
    if (!e->cfg.async_compress && e->n_ctask) {
        ZP_TRY(engine_tp_compress(e, e->ctask, e->n_ctask));
        ZP_TRY(finish_compressions(e));
    } else if (n_new) {
        e->n_ctask = n_new;
        atomic_store(&e->worker_done, 0);
        if (pthread_create(&e->worker, NULL, worker_main, e) != 0) return zp_fail(ZP_ERR_BACKEND, "cannot start the compression thread");
        e->worker_running = 1;
    }
    *n_run = n;
    return ZP_OK;
}

/* After a prefill step of a prompt-only policy: the prompts longer than the budget (their
 * requests hold a slot and are still running) are compressed now, before any decode step. */
static zp_status compress_prompts(zp_engine *e, zp_seq *const *seqs, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        zp_seq *q = seqs[i];
        if (q->status != ZP_SEQ_RUNNING || q->qid < 0) continue;
        if (!sched_plan_prompt_compression(&e->sched, q)) return zp_fail(ZP_ERR_OOM, "request %lld: no memory to plan its compression", (long long)q->request_id);
        e->ctask[k++] = q;
    }
    if (!k) return ZP_OK;
    ZP_TRY(engine_tp_compress(e, e->ctask, k));
    for (int i = 0; i < k; i++) sched_prompt_compress_done(&e->sched, e->ctask[i]);
    return ZP_OK;
}

/* Nothing to run this step: wait for a compression, or break a stall by preempting. */
static zp_status idle_step(zp_engine *e) {
    if (e->worker_running) return collect_worker(e, 1);
    if (!zp_engine_has_unfinished(e)) return ZP_OK;
    if (sched_break_stall(&e->sched)) return ZP_OK;
    return zp_fail(ZP_ERR_CAPACITY, "engine: no request can make progress (%d waiting, %d running, pool of %d blocks)",
                   e->sched.waiting.n, e->sched.running.n, e->pool.num_blocks);
}

/* A step's clocks: host seconds around the forward (device sampling included: device work is
 * asynchronous) and, where the backend profiles, its per-op seconds before the forward. */
typedef struct {
    double t0, t1;
    int prof;
    double ops0[ZP_OP_COUNT];
} step_clock;

static void step_clock_start(zp_engine *e, const zp_batch *b, step_clock *c) {
    c->prof = !b->is_prefill && e->be->op_seconds && e->be->op_seconds(e->be, c->ops0) == ZP_OK;
    c->t0 = zp_now();
}

/* The forward pass over the batch's n_run requests, then, where the backend samples and no
 * logits hook needs the rows, the device sampler (*used 1: e->step.sids holds its tokens; 0: the
 * logits are on the host for sample_and_append). */
static zp_status forward_and_sample(zp_engine *e, const zp_batch *b, int n_run, int *used) {
    const int device_sampling = e->be->sample && !e->cfg.host_only && !e->logits_hook;
    *used = 0;
    ZP_TRY(engine_tp_forward(e, b, device_sampling ? NULL : e->step.logits));
    if (!device_sampling) return ZP_OK;
    ZP_TRY(sample_on_device(e, e->batch.seqs, n_run, used));
    if (!*used) ZP_TRY(e->be->to_host(e->be, e->step.logits, e->model->logits, ZP_ACT_F32, 0, (size_t)n_run * e->model->cfg.vocab));
    return ZP_OK;
}

/* The step's statistics, recorded once after its forward: running requests, then the prefill
 * or decode counters (a decode step's attended K/V tokens and, when profiled, its op times). */
static void step_record(zp_engine *e, const zp_batch *b, step_clock *c) {
    c->t1 = zp_now();
    e->last_batch = *b;
    if (e->sched.running.n > e->stats.peak_running) e->stats.peak_running = e->sched.running.n;
    e->stats.running_sum += e->sched.running.n;
    if (b->is_prefill) {
        e->stats.prefill_seconds += c->t1 - c->t0;
        e->stats.prefill_steps++;
        e->stats.prefill_tokens += b->n_tokens;
        return;
    }
    e->stats.decode_seconds += c->t1 - c->t0;
    e->stats.decode_steps++;
    e->stats.decode_tokens += b->n_tokens;
    int64_t kv = 0;
    for (int s = 0; s < b->n_seqs; s++) kv += (int64_t)seq_attended(e, e->batch.seqs[s], b->seq_kv_len[s]);
    e->stats.decode_kv_tokens += kv;
    e->last_decode_rows = b->n_tokens;
    e->last_decode_kv = kv;
    double ops1[ZP_OP_COUNT];
    if (c->prof && e->be->op_seconds(e->be, ops1) == ZP_OK) /* profiling waits for the step's events here */
        for (int k = 0; k < ZP_OP_COUNT; k++) e->stats.decode_op_seconds[k] += ops1[k] - c->ops0[k];
}

/* One step: join last step's compression, schedule, route compressions, build the batch, run
 * the forward and sample, record, append the tokens (and compress prompts that outgrew a
 * prompt-only policy's budget). A compression started in step s overlaps step s's forward and
 * is joined at the start of step s + 1, done or not: the schedule never depends on how fast the
 * worker was, so async runs repeat token for token. */
static zp_status engine_step(zp_engine *e) {
    e->last_decode_rows = 0;
    e->last_decode_kv = 0;
    ZP_TRY(collect_worker(e, 1));
    ZP_TRY(sched_schedule(&e->sched, &e->batch));
    int n_run = e->batch.n, used = 0;
    if (e->compressing_enabled && !e->batch.is_prefill) ZP_TRY(route_compressions(e, &n_run));
    if (n_run == 0) return idle_step(e);
    zp_batch b;
    ZP_TRY(build_batch(e, e->batch.seqs, n_run, e->batch.is_prefill, &b));
    step_clock clock;
    step_clock_start(e, &b, &clock);
    ZP_TRY(forward_and_sample(e, &b, n_run, &used));
    step_record(e, &b, &clock);
    zp_status s = sample_and_append(e, e->batch.seqs, n_run, used ? e->step.sids : NULL);
    e->stats.sample_seconds += zp_now() - clock.t1;
    if (s == ZP_OK && e->prompt_compress && b.is_prefill) s = compress_prompts(e, e->batch.seqs, n_run);
    return s;
}

zp_status zp_engine_step(zp_engine *e) {
    if (e->abandoned) return zp_fail(ZP_ERR_INVALID, "engine: stepped after zp_engine_abandon");
    const int saturated = e->sched.waiting.n > 0;
    const int64_t g0 = e->stats.generated_tokens;
    const double t0 = saturated ? zp_now() : 0;
    zp_status s = engine_step(e);
    if (saturated) {
        e->stats.saturated_seconds += zp_now() - t0;
        e->stats.saturated_tokens += e->stats.generated_tokens - g0;
    }
    return s;
}

zp_status zp_engine_finish_request(zp_engine *e, int64_t request_id, int sample_index, zp_finish_reason why) {
    if (why != ZP_FINISH_ABORT && why != ZP_FINISH_STOP)
        return zp_fail(ZP_ERR_INVALID, "engine finish_request: reason \"%s\" is not the caller's to give (abort or stop)", zp_finish_name(why));
    if (e->abandoned) return zp_fail(ZP_ERR_INVALID, "engine finish_request: the engine was abandoned");
    zp_seq *q = NULL;
    for (int i = 0; i < e->all.n && !q; i++)
        if (e->all.v[i]->request_id == request_id && e->all.v[i]->sample_index == sample_index) q = e->all.v[i];
    if (!q) return zp_fail(ZP_ERR_INVALID, "engine finish_request: no unfinished request %lld, sample %d", (long long)request_id, sample_index);
    if (q->compressing == ZP_COMPRESS_IN_FLIGHT) ZP_TRY(collect_worker(e, 1)); /* the next step would join it first anyway */
    sched_drop(&e->sched, q);
    q->finish = why;
    seq_list_remove(&e->all, q);
    return seq_list_push_back(&e->finished, q);
}

int zp_engine_poll(zp_engine *e, zp_output *out, int max) {
    int n = 0;
    while (n < max && e->finished.n) {
        zp_seq *q = seq_list_pop_front(&e->finished);
        zp_output *o = &out[n++];
        o->request_id = q->request_id;
        o->sample_index = q->sample_index;
        o->n_prompt = q->n_prompt;
        o->n_tokens = q->n_tokens - q->n_prompt;
        o->tokens = malloc(sizeof(int) * (size_t)(o->n_tokens ? o->n_tokens : 1));
        if (o->tokens) memcpy(o->tokens, q->tokens + q->n_prompt, sizeof(int) * (size_t)o->n_tokens);
        else o->n_tokens = 0;
        o->finish = q->finish;
        o->n_preemptions = q->n_preemptions;
        o->n_compressions = q->n_compressions;
        seq_destroy(q);
    }
    return n;
}

void zp_output_free(zp_output *o) {
    free(o->tokens);
    o->tokens = NULL;
}

zp_status zp_engine_reset_stats(zp_engine *e) {
    if (zp_engine_has_unfinished(e)) return zp_fail(ZP_ERR_INVALID, "engine reset_stats: requests are still unfinished");
    const zp_engine_stats keep = e->stats;
    memset(&e->stats, 0, sizeof e->stats);
    e->stats.num_blocks = keep.num_blocks;
    e->stats.block_size = keep.block_size;
    e->stats.kv_state_bytes = keep.kv_state_bytes;
    e->stats.n_qslots = keep.n_qslots;
    e->stats.prefix_cache = keep.prefix_cache;
    engine_tp_reset_compress_stats(e);
    e->sched.n_preemptions = e->sched.n_suspensions = e->sched.prefix_hit_tokens = 0;
    e->be->graph_records = e->be->graph_replays = 0; /* the graphs stay cached: replays count from here, as decode_steps do */
    e->pool.peak_used = e->pool.num_blocks - e->pool.n_free;
    return ZP_OK;
}

void zp_engine_get_stats(const zp_engine *e, zp_engine_stats *st) {
    *st = e->stats;
    if (!e->be->op_seconds || e->be->op_seconds(e->be, st->op_seconds) != ZP_OK)
        for (int k = 0; k < ZP_OP_COUNT; k++) st->op_seconds[k] = 0.0;
    st->graph_records = e->be->graph_records;
    st->graph_replays = e->be->graph_replays;
    st->prefix_hit_tokens = e->sched.prefix_hit_tokens;
    st->preemptions = e->sched.n_preemptions;
    st->peak_blocks = e->pool.peak_used;
    st->suspensions = e->sched.n_suspensions;
    zp_compress_stats group;
    engine_tp_compress_stats(e, &group);
    const zp_compress_stats *cs = &group;
    st->compressions = cs->compressions;
    st->tokens_evicted = cs->tokens_evicted;
    st->compress_seconds = cs->score_seconds;
    st->mean_retained = cs->compressions ? (double)cs->retained_sum / (double)cs->compressions : 0.0;
}
