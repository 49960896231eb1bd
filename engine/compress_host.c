/* compress_host.c - the `compress` op computed on the host for any backend, through that
 * backend's gather and compaction ops: for each request, layer and KV head, the request's keys
 * (key_gather), its window queries (query_read) and stored history (score_read) come to the
 * host, the plan runs there (scorer_plan_run, the CPU reference of every policy), and kv_compact
 * writes the kept tokens (position or score order) and their new history into the target
 * table. It is the CPU backend's `compress`, and the reference the CUDA device path is tested
 * against (test_cuda_scoring). Synchronous; it allocates its buffers per call. */
#include "compress.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    float *keys, *queries, *qhead, *hist, *new_hist, *scratch;
    uint8_t *keep;
    int *order;
    double *trig_C, *trig_S; /* [D/2] TriAttention's phases at the request's next position */
} host_bufs;

static void bufs_free(host_bufs *b) {
    free(b->keys); free(b->queries); free(b->qhead); free(b->hist); free(b->new_hist); free(b->scratch); free(b->keep); free(b->order);
    free(b->trig_C);
    free(b->trig_S);
}

/* Buffers for one layer of a request of up to n tokens. */
static zp_status bufs_alloc(host_bufs *b, const zp_attn_dims *d, int n) {
    const size_t D = (size_t)d->head_dim, Hkv = (size_t)d->n_kv_heads, N = (size_t)n, w = (size_t)d->window;
    memset(b, 0, sizeof *b);
    b->keys = malloc(sizeof(float) * Hkv * N * D);
    b->queries = malloc(sizeof(float) * w * (size_t)d->n_heads * D);
    b->qhead = malloc(sizeof(float) * w * (size_t)(d->n_heads / d->n_kv_heads) * D);
    b->hist = malloc(sizeof(float) * Hkv * N);
    b->new_hist = malloc(sizeof(float) * Hkv * N);
    b->scratch = malloc(sizeof(float) * (6 * N + N * D));
    b->keep = malloc(Hkv * N);
    b->order = malloc(sizeof(int) * Hkv * N);
    b->trig_C = malloc(sizeof(double) * (D / 2 + 1));
    b->trig_S = malloc(sizeof(double) * (D / 2 + 1));
    if (b->keys && b->queries && b->qhead && b->hist && b->new_hist && b->scratch && b->keep && b->order && b->trig_C &&
        b->trig_S)
        return ZP_OK;
    bufs_free(b);
    return zp_fail(ZP_ERR_OOM, "compression: no host memory for %d tokens", n);
}

/* One layer of one request: every KV head scored on the host, then compacted. */
static zp_status host_layer(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer,
                            const zp_compress_req *r, void *k_cache, void *v_cache, const void *q_cache, void *score_cache, host_bufs *b) {
    const int n = r->n, D = d->head_dim, G = d->n_heads / d->n_kv_heads, w = d->window, Hkv = d->n_kv_heads;
    ZP_TRY(be->key_gather(be, d, k_cache, layer, r->src, n, b->keys));
    ZP_TRY(be->query_read(be, d, q_cache, layer, r->qid, b->queries));
    if (score_cache) ZP_TRY(be->score_read(be, d, score_cache, layer, r->src, n, b->hist));
    const int trig = plan->key_score == ZP_KEYS_TRIG && plan->trig_stats && plan->trig_freqs, F = D / 2;
    if (trig) scorer_trig_phase(plan->trig_freqs, F, r->next_pos, b->trig_C, b->trig_S);
    for (int g = 0; g < Hkv; g++) {
        for (int j = 0; j < w; j++) /* [w][Hq][D] -> this KV head's group [w][G][D] */
            memcpy(b->qhead + (size_t)j * G * D, b->queries + ((size_t)j * d->n_heads + (size_t)g * G) * D, sizeof(float) * (size_t)G * D);
        const zp_score_view v = {
            .n = n,
            .head_dim = D,
            .group = G,
            .window = w,
            .scale = d->scale,
            .keys = b->keys + (size_t)g * n * D,
            .queries = b->qhead,
            .layer = layer,
            .head = d->kv_head0 + g,
            /* this KV head's G query heads of the layer's [Hq][3][F] statistics (one rank: the engine refuses
               TriAttention under tensor parallelism) */
            .trig_stats = trig ? plan->trig_stats + ((size_t)layer * d->n_heads + (size_t)g * G) * 3 * F : NULL,
            .trig_C = trig ? b->trig_C : NULL,
            .trig_S = trig ? b->trig_S : NULL,
            .protect = r->protect};
        ZP_TRY(scorer_plan_run(plan, &v, score_cache ? b->hist + (size_t)g * n : NULL, score_cache ? r->n_hist : 0, d->block_size, budget,
                               b->scratch, b->keep + (size_t)g * n, score_cache ? b->new_hist + (size_t)g * n : NULL,
                               plan->order_score ? b->order + (size_t)g * n : NULL));
    }
    return be->kv_compact(be, d, k_cache, v_cache, score_cache, layer, r->src, n, r->dst, b->keep, b->new_hist,
                          plan->order_score ? b->order : NULL, plan->shift_positions);
}

zp_status zp_compress_host(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                           const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache, void *score_cache) {
    int max_n = 0;
    for (int i = 0; i < n_req; i++) {
        if (reqs[i].n <= budget) return zp_fail(ZP_ERR_INVALID, "compression: request %d has %d tokens for a budget of %d", i, reqs[i].n, budget);
        max_n = reqs[i].n > max_n ? reqs[i].n : max_n;
    }
    if (n_req <= 0) return ZP_OK;
    host_bufs b;
    ZP_TRY(bufs_alloc(&b, d, max_n));
    zp_status st = ZP_OK;
    for (int i = 0; i < n_req && st == ZP_OK; i++)
        for (int l = layer0; l < layer1 && st == ZP_OK; l++) st = host_layer(be, d, plan, budget, l, &reqs[i], k_cache, v_cache, q_cache, score_cache, &b);
    bufs_free(&b);
    return st;
}
