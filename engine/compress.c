/* compress.c - the compression of one batch of requests: checks them, builds their requests
 * and hands them to the backend's `compress` op in layer groups and chunks that fit its work
 * area; counts. Scoring and compaction are the backend's (compress_host.c on the CPU). */
#include "compress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

zp_status compressor_init(zp_compressor *c, const char *policy, const char *params_json, const zp_kv_geometry *geo) {
    memset(c, 0, sizeof *c);
    ZP_TRY(policy_create(policy, params_json, &c->policy));
    c->geo = *geo;
    c->device = 1;
    zp_score_plan plan;
    if (c->policy.ops->evicts && policy_plan(&c->policy, geo->budget, geo->window, &plan) == ZP_OK) c->history_live = plan.history_live;
    return ZP_OK;
}

void compressor_free(zp_compressor *c) {
    policy_destroy(&c->policy);
    memset(c, 0, sizeof *c);
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

/* Layers per `compress` call: all of them when the longest request's score rows fit the work
 * area (one device launch of n_layers x Hkv jobs per request instead of small ones that leave
 * most SMs idle), fewer for very long requests. */
static int device_layer_group(const zp_model_config *mc, zp_seq *const *seqs, int n) {
    int max_n = 1;
    for (int i = 0; i < n; i++) max_n = seqs[i]->n_kv > max_n ? seqs[i]->n_kv : max_n;
    const size_t per_layer = (size_t)max_n * (size_t)mc->n_kv_heads, fit = ZP_COMPRESS_DEVICE_ROWS / per_layer;
    return fit < 1 ? 1 : fit > (size_t)mc->n_layers ? mc->n_layers : (int)fit;
}

/* The backend's `compress` runs the policy's plan and compacts, all requests of a layer group
 * in one call (zp_compress_host instead when `device` is 0); the wall time to completion is
 * counted as scoring. */
zp_status compressor_run(zp_compressor *c, zp_model *m, zp_kv_storage *kv, zp_seq *const *seqs, int n) {
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
            st = (c->device ? be->compress : zp_compress_host)(be, &kv->dims, &plan, budget, l0, l1, reqs + r0, r1 - r0, kv->k, kv->v, kv->q,
                                                                use_hist ? kv->score : NULL);
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
