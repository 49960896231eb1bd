/* compress.c - the compression of one batch of requests: checks them, builds their requests
 * and hands them to the backend's `compress` op in layer groups and chunks that fit its work
 * area; counts. Scoring and compaction are the backend's (compress_host.c on the CPU). */
#include "compress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "rope.h"
#include "trig_stats.h"

zp_status compressor_init(zp_compressor *c, const zp_policy_ops *ops, const char *params_json,
                          const zp_kv_geometry *geo, int history_live) {
    memset(c, 0, sizeof *c);
    ZP_TRY(policy_init_ops(ops, params_json, &c->policy));
    c->geo = *geo;
    c->device = 1;
    c->history_live = history_live;
    return ZP_OK;
}

zp_status compressor_load_trig(zp_compressor *c, const zp_model_config *mc) {
    zp_score_plan plan;
    if (!c->policy.ops->evicts || policy_plan(&c->policy, c->geo.budget, c->geo.window, &plan) != ZP_OK ||
        plan.key_score != ZP_KEYS_TRIG)
        return ZP_OK;
    if (!plan.trig_stats_path) return zp_fail(ZP_ERR_INVALID, "policy %s: no statistics file", c->policy.ops->name);
    zp_trig_stats s;
    ZP_TRY(zp_trig_stats_load(plan.trig_stats_path, mc, &s));
    const size_t F = (size_t)s.half, rows = (size_t)s.n_layers * (size_t)s.n_heads;
    c->trig_stats = malloc(sizeof(float) * rows * 3 * F);
    c->trig_freqs = malloc(sizeof(float) * F);
    if (!c->trig_stats || !c->trig_freqs) {
        zp_trig_stats_free(&s);
        return zp_fail(ZP_ERR_OOM, "policy %s: no memory for its statistics", c->policy.ops->name);
    }
    for (size_t r = 0; r < rows;
         r++) { /* [L][Hq][F] x 3 -> [L][Hq][q_re | q_im | q_abs][F], scorer_trig_group's layout */
        memcpy(c->trig_stats + (r * 3 + 0) * F, s.mean_re + r * F, sizeof(float) * F);
        memcpy(c->trig_stats + (r * 3 + 1) * F, s.mean_im + r * F, sizeof(float) * F);
        memcpy(c->trig_stats + (r * 3 + 2) * F, s.abs_mean + r * F, sizeof(float) * F);
    }
    zp_trig_stats_free(&s);
    c->trig_across = plan.trig_mode != ZP_TRIG_PER_LAYER_PERHEAD;
    float attention_factor;
    zp_rope_frequencies(&mc->rope, mc->head_dim, c->trig_freqs, &attention_factor);
    return ZP_OK;
}

void compressor_free(zp_compressor *c) {
    free(c->trig_stats);
    free(c->trig_freqs);
    policy_destroy(&c->policy);
    memset(c, 0, sizeof *c);
}

/* A request to compress holds a query slot and more tokens than its budget, its last block in use. */
static zp_status check_request(const zp_compressor *c, const zp_compress_item *q) {
    const int budget = c->geo.budget, bs = c->geo.block_size;
    if (q->qid < 0 || !q->target || q->n_kv > q->n_blocks * bs || q->n_kv <= (q->n_blocks - 1) * bs ||
        q->n_kv <= budget)
        return zp_fail(ZP_ERR_INVALID, "compression of request %lld: inconsistent state (slot %d, %d tokens in %d blocks, budget %d)",
                       (long long)q->request_id, q->qid, q->n_kv, q->n_blocks, budget);
    return ZP_OK;
}

/* Layer l's budget and the blocks its view leaves out (uniform: the budget, none). */
static int layer_budget(const zp_compressor *c, int l) { return c->layers ? c->layers->budget[l] : c->geo.budget; }
static int layer_dead(const zp_compressor *c, int l) { return c->layers ? c->layers->dead[c->layers->view[l]] : 0; }
static int view_of(const zp_compressor *c, int l) { return c->layers ? c->layers->view[l] : 0; }
/* The first layer of view v, -1 when no layer reads it (view 0 when every layer has dead blocks). */
static int first_layer_of_view(const zp_compressor *c, int n_layers, int v) {
    for (int l = 0; l < n_layers; l++)
        if (view_of(c, l) == v) return l;
    return -1;
}

/* Counters of one finished request compression of n_kv tokens over the layers it compresses
 * (every full-attention layer; a sliding one keeps its window in its own blocks) (was_compressed:
 * their views left their dead blocks out), each keeping `budget` tokens (0: its layer budget). */
static void count_compression(zp_compressor *c, const zp_model_config *mc, int n_kv, int was_compressed, int budget) {
    int64_t L = 0, kept = 0, live = 0;
    for (int l = 0; l < mc->n_layers; l++) {
        if (zp_config_layer_window(mc, l) > 0) continue;
        L++;
        kept += budget > 0 ? budget : layer_budget(c, l);
        live += n_kv - (was_compressed ? (int64_t)layer_dead(c, l) * c->geo.block_size : 0);
    }
    c->stats.compressions++;
    c->stats.tokens_evicted += (live - kept) * mc->n_kv_heads;
    if (L > 0) c->stats.retained_sum += (double)kept / (double)L;
}

/* Layers per `compress` call: all of them when the longest request's score rows fit the work
 * area (one device launch of n_layers x Hkv jobs per request instead of small ones that leave
 * most SMs idle), fewer for very long requests. */
static int device_layer_group(const zp_model_config *mc, const zp_compress_item *items, int n) {
    int max_n = 1;
    for (int i = 0; i < n; i++) max_n = items[i].n_kv > max_n ? items[i].n_kv : max_n;
    const size_t per_layer = (size_t)max_n * (size_t)mc->n_kv_heads, fit = ZP_COMPRESS_DEVICE_ROWS / per_layer;
    return fit < 1 ? 1 : fit > (size_t)mc->n_layers ? mc->n_layers : (int)fit;
}

/* The requests of layer l keeping `keep` tokens (0: the layer's budget): a compressed request
 * reads its blocks without the layer's dead ones (its view, written into tabs [n][max_blocks]);
 * every one writes the first budget / bs target blocks. Its stored history covers the tokens its
 * last compression kept. */
static void layer_requests(const zp_compressor *c, const zp_compress_item *items, int n, int l, int keep, int use_hist, int *tabs,
                           int max_blocks, zp_compress_req *reqs) {
    const int bs = c->geo.block_size, budget = keep > 0 ? keep : layer_budget(c, l), dead = layer_dead(c, l);
    for (int i = 0; i < n; i++) {
        const zp_compress_item *q = items + i;
        const int *src = q->blocks;
        int live = q->n_kv;
        if (q->compressed && dead > 0) {
            int *t = tabs + (size_t)i * max_blocks;
            zp_layer_view_table(q->blocks, q->n_blocks, c->geo.nmax, dead, t);
            src = t;
            live -= dead * bs;
        }
        const int kept = q->kept_blocks > 0 ? q->kept_blocks * bs : layer_budget(c, l);
        const int n_hist = c->history_live ? live : q->compressed ? kept : 0;
        reqs[i] = (zp_compress_req){.src = src,
                                    .dst = q->target,
                                    .n = live,
                                    .n_hist = use_hist ? n_hist : 0,
                                    .qid = q->qid,
                                    .next_pos = q->next_pos,
                                    .protect = q->n_prompt < budget ? q->n_prompt : budget,
                                    .run_base = q->run_base,
                                    .runs = q->runs,
                                    .new_runs = q->new_runs};
    }
}

/* The plan at `budget` with the engine's parts (TriAttention's statistics, head-wise budgets). */
static zp_status compressor_plan(const zp_compressor *c, int budget, zp_score_plan *plan) {
    ZP_TRY(policy_plan(&c->policy, budget, c->geo.window, plan));
    plan->trig_stats = c->trig_stats; /* TriAttention's: the engine's (NULL for every other policy) */
    plan->trig_freqs = c->trig_freqs;
    plan->head_adakv = c->head_adakv;
    plan->head_floor = c->head_floor;
    return ZP_OK;
}

/* Layers [l0, l1) of one budget (keep tokens, 0: the layers'), all requests: the backend's `compress` (zp_compress_host when
 * `device` is 0 or the backend has none, as the CPU's) in chunks within ZP_COMPRESS_DEVICE_ROWS score rows. */
static zp_status compress_layers(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_compress_req *reqs, int n, int l0, int l1,
                                 int keep, int use_hist) {
    zp_backend *be = m->be;
    const int budget = keep > 0 ? keep : layer_budget(c, l0);
    zp_score_plan plan;
    ZP_TRY(compressor_plan(c, budget, &plan));
    zp_status st = ZP_OK;
    for (int r0 = 0, r1; r0 < n && st == ZP_OK; r0 = r1) {
        size_t rows = 0;
        for (r1 = r0; r1 < n; r1++) {
            const size_t add = (size_t)reqs[r1].n * (size_t)(l1 - l0) * (size_t)m->cfg.n_kv_heads;
            if (r1 > r0 && rows + add > ZP_COMPRESS_DEVICE_ROWS) break;
            rows += add;
        }
        st = (c->device && be->compress ? be->compress : zp_compress_host)(
            be, &kv->dims, &plan, budget, l0, l1, reqs + r0, r1 - r0, kv->k, kv->v, kv->q, use_hist ? kv->score : NULL);
    }
    return st;
}

/* The backend's `compress` runs the policy's plan and compacts, all requests of a layer group
 * in one call, every one keeping `keep` tokens (0: each layer's budget); the wall time to
 * completion is counted as scoring. The request tables (one per layer view) and their block
 * tables stay alive until the last call has completed. */
static zp_status compress_group(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_compress_item *items, int n, int keep) {
    const zp_model_config *mc = &m->cfg;
    const int use_hist = c->policy.ops->needs_history && kv->score != NULL, n_views = c->layers ? c->layers->n_views : 1;
    int max_blocks = 1;
    for (int i = 0; i < n; i++) max_blocks = items[i].n_blocks > max_blocks ? items[i].n_blocks : max_blocks;
    zp_compress_req *reqs = malloc(sizeof *reqs * (size_t)(n > 0 ? n : 1) * (size_t)n_views);
    int *tabs = n_views > 1 ? malloc(sizeof(int) * (size_t)(n > 0 ? n : 1) * (size_t)max_blocks * (size_t)n_views) : NULL;
    if (!reqs || (n_views > 1 && !tabs)) {
        free(reqs);
        free(tabs);
        return zp_fail(ZP_ERR_OOM, "compression: no memory for the requests of %d layer views", n_views);
    }
    for (int v = 0; v < n_views; v++) { /* a view's layers share its budget and dead blocks: its tables are built once */
        const int l = first_layer_of_view(c, mc->n_layers, v);
        if (l >= 0)
            layer_requests(c, items, n, l, keep, use_hist, tabs ? tabs + (size_t)v * n * max_blocks : NULL, max_blocks,
                           reqs + (size_t)v * n);
    }
    const double t0 = zp_now();
    /* TriAttention across layers: every layer in one call (it scores them all before it selects) */
    const int group = c->trig_across ? mc->n_layers : device_layer_group(mc, items, n);
    zp_status st = ZP_OK;
    for (int l0 = 0, l1; l0 < mc->n_layers && st == ZP_OK; l0 = l1) {
        for (l1 = l0 + 1; l1 < mc->n_layers && l1 - l0 < group && view_of(c, l1) == view_of(c, l0); l1++) {}
        st = compress_layers(c, m, kv, reqs + (size_t)view_of(c, l0) * n, n, l0, l1, keep, use_hist);
    }
    zp_status ws = m->be->compress_wait(m->be); /* always: nothing may stay in flight on an error */
    if (st == ZP_OK) st = ws;
    free(reqs);
    free(tabs);
    if (st != ZP_OK) return st;
    c->stats.score_seconds += zp_now() - t0;
    for (int i = 0; i < n; i++) count_compression(c, mc, items[i].n_kv, items[i].compressed, keep);
    return ZP_OK;
}

/* The adaptive budget's blocks for item q: the measuring pass with the cap's plan, its count of
 * candidates and the budget's recent tokens in whole blocks, from floor to N_max. */
static zp_status adaptive_blocks(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_score_plan *cap_plan, const zp_compress_item *q,
                                 int *blocks) {
    const int bs = c->geo.block_size, budget = c->geo.budget;
    const int use_hist = c->policy.ops->needs_history && kv->score != NULL;
    zp_compress_req r;
    layer_requests(c, q, 1, 0, 0, use_hist, NULL, 0, &r);
    int count;
    ZP_TRY(zp_compress_measure(m->be, &kv->dims, cap_plan, budget, &r, kv->k, kv->q, use_hist ? kv->score : NULL, c->tau, &count));
    int k = (scorer_plan_recent(cap_plan, r.n, budget) + count + bs - 1) / bs;
    *blocks = k < c->floor ? c->floor : k > c->geo.nmax ? c->geo.nmax : k;
    return ZP_OK;
}

/* Adaptive: each request measured, then compacted with the requests of its count of blocks. */
static zp_status compress_adaptive(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_compress_item *items, int n) {
    if (c->layers && c->layers->n_views > 1) return zp_fail(ZP_ERR_UNSUPPORTED, "adaptive budget: one budget for every layer");
    int *kb = malloc(sizeof *kb * (size_t)(n > 0 ? n : 1));
    zp_compress_item *group = malloc(sizeof *group * (size_t)(n > 0 ? n : 1));
    zp_status st = kb && group ? ZP_OK : zp_fail(ZP_ERR_OOM, "adaptive budget: no memory for %d requests", n);
    zp_score_plan cap_plan; /* one plan at the cap for every request's measuring pass */
    if (st == ZP_OK) st = compressor_plan(c, c->geo.budget, &cap_plan);
    const double t0 = zp_now();
    for (int i = 0; i < n && st == ZP_OK; i++) {
        st = items[i].new_kept_blocks ? adaptive_blocks(c, m, kv, &cap_plan, items + i, kb + i)
                                      : zp_fail(ZP_ERR_INVALID, "adaptive budget: request %lld has no place for its blocks",
                                                (long long)items[i].request_id);
    }
    c->stats.score_seconds += zp_now() - t0; /* the measuring pass is scoring too */
    for (int b = c->geo.nmax; b >= 1 && st == ZP_OK; b--) {
        int g = 0;
        for (int i = 0; i < n; i++)
            if (kb[i] == b) group[g++] = items[i];
        if (g) st = compress_group(c, m, kv, group, g, b * c->geo.block_size);
    }
    for (int i = 0; i < n && st == ZP_OK; i++) *items[i].new_kept_blocks = kb[i];
    free(kb);
    free(group);
    return st;
}

zp_status compressor_run(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_compress_item *items, int n) {
    for (int i = 0; i < n; i++) ZP_TRY(check_request(c, items + i));
    return c->adaptive ? compress_adaptive(c, m, kv, items, n) : compress_group(c, m, kv, items, n, 0);
}
