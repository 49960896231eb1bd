/* compress.c - gather, select, compact: the compression pipeline of one batch of requests. */
#include "compress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

zp_status compressor_init(zp_compressor *c, const char *policy, const char *params_json, const zp_kv_geometry *geo, int layer_stride) {
    memset(c, 0, sizeof *c);
    if (layer_stride <= 0) return zp_fail(ZP_ERR_INVALID, "layer_stride %d must be positive", layer_stride);
    ZP_TRY(policy_create(policy, params_json, &c->policy));
    c->geo = *geo;
    c->layer_stride = layer_stride;
    c->device = 1;
    zp_score_plan plan;
    if (c->policy.ops->evicts && policy_plan(&c->policy, geo->budget, geo->window, &plan) == ZP_OK) {
        c->history_live = plan.history_live;
        c->order_score = plan.order_score;
    }
    return ZP_OK;
}

void compressor_free(zp_compressor *c) {
    policy_destroy(&c->policy);
    free(c->keys); free(c->queries); free(c->qhead); free(c->hist); free(c->new_hist); free(c->scratch); free(c->keep); free(c->order);
    memset(c, 0, sizeof *c);
}

static zp_status reserve(zp_compressor *c, const zp_model_config *mc, int n) {
    if (n <= c->cap_n) return ZP_OK;
    const size_t D = (size_t)mc->head_dim, Hkv = (size_t)mc->n_kv_heads, L = (size_t)c->layer_stride, N = (size_t)n;
    free(c->keys); free(c->queries); free(c->qhead); free(c->hist); free(c->new_hist); free(c->scratch); free(c->keep); free(c->order);
    c->order = NULL;
    c->keys = malloc(sizeof(float) * Hkv * N * D);
    c->queries = malloc(sizeof(float) * (size_t)c->geo.window * mc->n_heads * D);
    c->qhead = malloc(sizeof(float) * (size_t)c->geo.window * (mc->n_heads / mc->n_kv_heads) * D);
    c->hist = malloc(sizeof(float) * Hkv * N);
    c->new_hist = malloc(sizeof(float) * L * Hkv * N);
    c->scratch = malloc(sizeof(float) * (6 * N + N * D));
    c->keep = malloc(L * Hkv * N);
    if (c->order_score) c->order = malloc(sizeof(int) * L * Hkv * N);
    c->cap_n = n;
    if (!c->keys || !c->queries || !c->qhead || !c->hist || !c->new_hist || !c->scratch || !c->keep || (c->order_score && !c->order)) {
        c->cap_n = 0;
        return zp_fail(ZP_ERR_OOM, "compression: no host memory for %d tokens", n);
    }
    return ZP_OK;
}

/* keep/new_hist rows [Hkv][n] of one layer of request q. */
static zp_status select_layer(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_seq *q, int layer, uint8_t *keep,
                              float *new_hist, int *order) {
    zp_backend *be = m->be;
    const zp_model_config *mc = &m->cfg;
    const int n = q->n_kv, D = mc->head_dim, G = mc->n_heads / mc->n_kv_heads, w = c->geo.window;
    const int use_hist = c->policy.ops->needs_history && kv->score != NULL;
    const int n_hist = c->history_live ? n : q->compressed ? c->geo.budget : 0;
    double t0 = now_s();
    ZP_TRY(be->key_gather(be, &kv->dims, kv->k, layer, q->blocks, n, c->keys));
    ZP_TRY(be->query_read(be, &kv->dims, kv->q, layer, q->qid, c->queries));
    if (use_hist) ZP_TRY(be->score_read(be, &kv->dims, kv->score, layer, q->blocks, n, c->hist));
    double t1 = now_s();
    c->stats.gather_seconds += t1 - t0;
    for (int g = 0; g < mc->n_kv_heads; g++) {
        for (int j = 0; j < w; j++) /* [w][Hq][D] -> this KV head's group [w][G][D] */
            memcpy(c->qhead + (size_t)j * G * D, c->queries + ((size_t)j * mc->n_heads + (size_t)g * G) * D, sizeof(float) * (size_t)G * D);
        zp_select_input in = {{n, D, G, w, kv->dims.scale, c->keys + (size_t)g * n * D, c->qhead},
                              use_hist ? c->hist + (size_t)g * n : NULL,
                              use_hist ? n_hist : 0,
                              c->geo.block_size,
                              c->geo.budget,
                              c->scratch};
        ZP_TRY(policy_select(&c->policy, &in, keep + (size_t)g * n, new_hist + (size_t)g * n, order ? order + (size_t)g * n : NULL));
    }
    c->stats.score_seconds += now_s() - t1;
    return ZP_OK;
}

/* A request to compress holds a query slot and more tokens than its budget, its last block in use. */
static zp_status check_request(const zp_compressor *c, const zp_seq *q) {
    const int budget = c->geo.budget, bs = c->geo.block_size;
    if (q->qid < 0 || !q->compressing || q->n_kv > q->n_blocks * bs || q->n_kv <= (q->n_blocks - 1) * bs ||
        q->n_kv <= budget)
        return zp_fail(ZP_ERR_INVALID, "compression of request %lld: inconsistent state (slot %d, %d tokens in %d blocks, budget %d)",
                       (long long)q->request_id, q->qid, q->n_kv, q->n_blocks, budget);
    return ZP_OK;
}

/* Counters of one finished request compression of n_kv tokens. */
static void count_compression(zp_compressor *c, const zp_model_config *mc, int n_kv) {
    const int budget = c->geo.budget;
    c->stats.compressions++;
    c->stats.tokens_evicted += (int64_t)(n_kv - budget) * mc->n_layers * mc->n_kv_heads;
    c->stats.retained_sum += budget;
}

static zp_status compress_one(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_seq *q) {
    zp_backend *be = m->be;
    const zp_model_config *mc = &m->cfg;
    const int n = q->n_kv, Hkv = mc->n_kv_heads;
    ZP_TRY(check_request(c, q));
    ZP_TRY(reserve(c, mc, n));
    for (int l0 = 0; l0 < mc->n_layers; l0 += c->layer_stride) {
        int l1 = l0 + c->layer_stride < mc->n_layers ? l0 + c->layer_stride : mc->n_layers;
        for (int l = l0; l < l1; l++) {
            const size_t at = (size_t)(l - l0) * Hkv * n;
            ZP_TRY(select_layer(c, m, kv, q, l, c->keep + at, c->new_hist + at, c->order ? c->order + at : NULL));
        }
        double t1 = now_s();
        for (int l = l0; l < l1; l++) {
            const size_t at = (size_t)(l - l0) * Hkv * n;
            ZP_TRY(be->kv_compact(be, &kv->dims, kv->k, kv->v, c->policy.ops->needs_history ? kv->score : NULL, l, q->blocks, n,
                                  q->target, c->keep + at, c->new_hist + at, c->order ? c->order + at : NULL));
        }
        c->stats.compact_seconds += now_s() - t1;
    }
    count_compression(c, mc, n);
    return ZP_OK;
}

/* Layers per device launch: all of them when the longest request's score rows fit the work
 * area (one launch of n_layers x Hkv jobs per request instead of n_layers / layer_stride
 * small ones that leave most SMs idle), fewer for very long requests. layer_stride only sizes
 * the host path's buffers. */
static int device_layer_group(const zp_model_config *mc, zp_seq *const *seqs, int n) {
    int max_n = 1;
    for (int i = 0; i < n; i++) max_n = seqs[i]->n_kv > max_n ? seqs[i]->n_kv : max_n;
    const size_t per_layer = (size_t)max_n * (size_t)mc->n_kv_heads, fit = ZP_COMPRESS_DEVICE_ROWS / per_layer;
    return fit < 1 ? 1 : fit > (size_t)mc->n_layers ? mc->n_layers : (int)fit;
}

/* Device path: the backend runs the policy's plan and compacts, all requests of a layer
 * group in one call; the wall time to completion is counted as scoring. */
static zp_status compress_device(zp_compressor *c, zp_model *m, zp_kv_storage *kv, zp_seq *const *seqs, int n) {
    zp_backend *be = m->be;
    const zp_model_config *mc = &m->cfg;
    const int budget = c->geo.budget, use_hist = c->policy.ops->needs_history && kv->score != NULL;
    zp_score_plan plan;
    ZP_TRY(policy_plan(&c->policy, budget, c->geo.window, &plan));
    zp_compress_req *reqs = malloc(sizeof *reqs * (size_t)(n > 0 ? n : 1));
    ZP_CHECK_ALLOC(reqs);
    zp_status st = ZP_OK;
    for (int i = 0; i < n && st == ZP_OK; i++) {
        const zp_seq *q = seqs[i];
        st = check_request(c, q);
        const int n_hist = c->history_live ? q->n_kv : q->compressed ? budget : 0;
        reqs[i] = (zp_compress_req){q->blocks, q->target, q->n_kv, use_hist ? n_hist : 0, q->qid};
    }
    const double t0 = now_s();
    const int group = device_layer_group(mc, seqs, n);
    for (int l0 = 0; l0 < mc->n_layers && st == ZP_OK; l0 += group) {
        const int l1 = l0 + group < mc->n_layers ? l0 + group : mc->n_layers;
        for (int r0 = 0, r1; r0 < n && st == ZP_OK; r0 = r1) { /* chunks within ZP_COMPRESS_DEVICE_ROWS score rows */
            size_t rows = 0;
            for (r1 = r0; r1 < n; r1++) {
                const size_t add = (size_t)reqs[r1].n * (size_t)(l1 - l0) * (size_t)mc->n_kv_heads;
                if (r1 > r0 && rows + add > ZP_COMPRESS_DEVICE_ROWS) break;
                rows += add;
            }
            st = be->compress(be, &kv->dims, &plan, budget, l0, l1, reqs + r0, r1 - r0, kv->k, kv->v, kv->q, use_hist ? kv->score : NULL);
        }
    }
    zp_status ws = be->compress_wait(be); /* always: nothing may stay in flight on an error */
    if (st == ZP_OK) st = ws;
    free(reqs);
    if (st != ZP_OK) return st;
    c->stats.score_seconds += now_s() - t0;
    for (int i = 0; i < n; i++) count_compression(c, mc, seqs[i]->n_kv);
    return ZP_OK;
}

zp_status compressor_run(zp_compressor *c, zp_model *m, zp_kv_storage *kv, zp_seq *const *seqs, int n) {
    if (m->be->compress && c->device) return compress_device(c, m, kv, seqs, n);
    for (int i = 0; i < n; i++) ZP_TRY(compress_one(c, m, kv, seqs[i]));
    return ZP_OK;
}
