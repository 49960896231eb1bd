/* compress_host.c - the `compress` op computed on the host for any backend, through that
 * backend's gather and compaction ops: for each request, layer and KV head, the request's keys
 * (key_gather), its window queries (query_read) and stored history (score_read) come to the
 * host, the plan runs there (scorer_plan_run, the CPU reference of every policy), and kv_compact
 * writes the kept tokens (position or score order) and their new history into the target
 * table. A sliding-window layer (gpt-oss's) is never scored nor compacted: its K/V live in blocks
 * of its own (the scheduler's ring, freed as the window slides), not in the table compressed
 * here. It is the CPU backend's `compress`, and the reference the CUDA
 * device path is tested against (test_cuda_scoring). Synchronous; it allocates its buffers per call. */
#include "compress.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    float *keys, *queries, *qhead, *hist, *new_hist, *scratch;
    uint8_t *keep;
    int *order;
    double *trig_C, *trig_S; /* [D/2] TriAttention's phases at the request's next position */
    float *trig_agg;         /* [Hkv][n] TriAttention's scores across layers (a mode other than per_layer_perhead) */
    float *head_scores;      /* [Hkv][n] head-wise budgets: each head's final scores, kept for the layer's allocation */
    int *cand, *counts;      /* [Hkv] head-wise budgets: each head's candidates, and how many of them it keeps */
} host_bufs;

static void bufs_free(host_bufs *b) {
    free(b->keys); free(b->queries); free(b->qhead); free(b->hist); free(b->new_hist); free(b->scratch); free(b->keep); free(b->order);
    free(b->trig_C);
    free(b->trig_S);
    free(b->trig_agg);
    free(b->head_scores);
    free(b->cand);
    free(b->counts);
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
    b->trig_agg = malloc(sizeof(float) * Hkv * N);
    b->head_scores = malloc(sizeof(float) * Hkv * N);
    b->cand = malloc(sizeof(int) * Hkv);
    b->counts = malloc(sizeof(int) * Hkv);
    if (b->keys && b->queries && b->qhead && b->hist && b->new_hist && b->scratch && b->keep && b->order && b->trig_C &&
        b->trig_S && b->trig_agg && b->head_scores && b->cand && b->counts)
        return ZP_OK;
    bufs_free(b);
    return zp_fail(ZP_ERR_OOM, "compression: no host memory for %d tokens", n);
}

/* Layer l's sliding window, 0 when it attends to every token. */
static int layer_window(const zp_attn_dims *d, int l) {
    const zp_attn_layer *a = zp_attn_layer_of(d, l);
    return a ? a->window : 0;
}

/* KV head g's view of n tokens (its keys at b->keys + g stride D), its window queries copied
 * out of b->queries into b->qhead. */
static zp_score_view head_view(const zp_attn_dims *d, const zp_score_plan *plan, int layer, int g, int n, int stride,
                               const zp_compress_req *r, host_bufs *b) {
    const int D = d->head_dim, G = d->n_heads / d->n_kv_heads, w = d->window, F = D / 2;
    const int trig = plan->key_score == ZP_KEYS_TRIG && plan->trig_stats && plan->trig_freqs;
    for (int j = 0; j < w; j++) /* [w][Hq][D] -> this KV head's group [w][G][D] */
        memcpy(b->qhead + (size_t)j * G * D, b->queries + ((size_t)j * d->n_heads + (size_t)g * G) * D, sizeof(float) * (size_t)G * D);
    return (zp_score_view){
        .n = n,
        .head_dim = D,
        .group = G,
        .window = w,
        .scale = d->scale,
        .keys = b->keys + (size_t)g * stride * D,
        .queries = b->qhead,
        .layer = layer,
        .head = d->kv_head0 + g,
        /* this KV head's G query heads of the layer's [Hq][3][F] statistics (one rank: the engine refuses
           TriAttention under tensor parallelism) */
        .trig_stats = trig ? plan->trig_stats + ((size_t)layer * d->n_heads + (size_t)g * G) * 3 * F : NULL,
        .trig_C = trig ? b->trig_C : NULL,
        .trig_S = trig ? b->trig_S : NULL,
        .trig_agg = trig && plan->trig_mode != ZP_TRIG_PER_LAYER_PERHEAD ? b->trig_agg + (size_t)g * stride : NULL,
        .protect = r->protect};
}

/* Request r's runs in layer l ({0, NULL}: uniform). */
static zp_head_runs req_runs(const zp_attn_dims *d, const zp_compress_req *r, int l) {
    const int *run = r->runs ? r->runs + (size_t)l * d->n_kv_heads : NULL;
    return r->run_base > 0 && run && run[0] >= 0 ? (zp_head_runs){r->run_base, run} : (zp_head_runs){0, NULL};
}

/* One layer of one request with AdaKV's head-wise budgets: each KV head's keys (through its
 * runs) scored on the host, the layer's budget allocated across the heads (scorer_head_budgets
 * over the candidates, the recent tokens apart), each head's top count and recent tokens kept,
 * and the heads compacted as runs (their lengths to r->new_runs). */
static zp_status host_layer_adakv(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer,
                                  const zp_compress_req *r, int stride, void *k_cache, void *v_cache, const void *q_cache,
                                  void *score_cache, host_bufs *b) {
    if (layer_window(d, layer) > 0) return ZP_OK;
    const int n = r->n, Hkv = d->n_kv_heads;
    const zp_head_runs hr = req_runs(d, r, layer);
    ZP_TRY(be->key_gather_runs(be, d, k_cache, layer, r->src, n, &hr, stride, b->keys));
    ZP_TRY(be->query_read(be, d, q_cache, layer, r->qid, b->queries));
    if (score_cache) ZP_TRY(be->score_read_runs(be, d, score_cache, layer, r->src, n, &hr, stride, b->hist));
    if (plan->key_score == ZP_KEYS_TRIG && plan->trig_stats && plan->trig_freqs)
        scorer_trig_phase(plan->trig_freqs, d->head_dim / 2, r->next_pos, b->trig_C, b->trig_S);
    for (int g = 0; g < Hkv; g++) {
        const int m = n + zp_head_delta(&hr, g), n_hist = score_cache && r->n_hist > 0 ? r->n_hist + zp_head_delta(&hr, g) : 0;
        const zp_score_view v = head_view(d, plan, layer, g, m, stride, r, b);
        const float *C;
        ZP_TRY(scorer_plan_score(plan, &v, score_cache ? b->hist + (size_t)g * stride : NULL, n_hist, d->block_size, b->scratch,
                                 score_cache ? b->new_hist + (size_t)g * stride : NULL, &C));
        memcpy(b->head_scores + (size_t)g * stride, C, sizeof(float) * (size_t)m);
        b->counts[g] = m; /* the head's tokens */
    }
    ZP_TRY(scorer_head_keep(plan, b->head_scores, b->counts, stride, Hkv, budget, b->cand, r->new_runs + (size_t)layer * Hkv, b->keep,
                            plan->order_score ? b->order : NULL));
    return be->kv_compact_runs(be, d, k_cache, v_cache, score_cache, layer, r->src, n, &hr, stride, r->dst, b->keep,
                               score_cache ? b->new_hist : NULL, plan->order_score ? b->order : NULL);
}

/* The stride of request r's heads: the most tokens a head of any layer holds. */
static int req_stride(const zp_attn_dims *d, const zp_compress_req *r) {
    int most = r->n;
    for (int l = 0; l < d->n_layers; l++) {
        const zp_head_runs hr = req_runs(d, r, l);
        for (int g = 0; hr.run && g < d->n_kv_heads; g++) most = r->n + zp_head_delta(&hr, g) > most ? r->n + zp_head_delta(&hr, g) : most;
    }
    return most;
}

/* One layer of one request: every KV head scored on the host, then compacted. */
static zp_status host_layer(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer,
                            const zp_compress_req *r, void *k_cache, void *v_cache, const void *q_cache, void *score_cache, host_bufs *b) {
    if (layer_window(d, layer) > 0) return ZP_OK; /* its blocks are its ring's (the scheduler's), not the request's table */
    const int n = r->n, D = d->head_dim, Hkv = d->n_kv_heads;
    ZP_TRY(be->key_gather(be, d, k_cache, layer, r->src, n, b->keys));
    ZP_TRY(be->query_read(be, d, q_cache, layer, r->qid, b->queries));
    if (score_cache) ZP_TRY(be->score_read(be, d, score_cache, layer, r->src, n, b->hist));
    const int trig = plan->key_score == ZP_KEYS_TRIG && plan->trig_stats && plan->trig_freqs, F = D / 2;
    if (trig && plan->trig_mode == ZP_TRIG_PER_LAYER_PERHEAD)
        scorer_trig_phase(plan->trig_freqs, F, r->next_pos, b->trig_C, b->trig_S);
    for (int g = 0; g < Hkv; g++) {
        const zp_score_view v = head_view(d, plan, layer, g, n, n, r, b);
        ZP_TRY(scorer_plan_run(plan, &v, score_cache ? b->hist + (size_t)g * n : NULL, score_cache ? r->n_hist : 0, d->block_size, budget,
                               b->scratch, b->keep + (size_t)g * n, score_cache ? b->new_hist + (size_t)g * n : NULL,
                               plan->order_score ? b->order + (size_t)g * n : NULL));
    }
    return be->kv_compact(be, d, k_cache, v_cache, score_cache, layer, r->src, n, r->dst, b->keep, b->new_hist,
                          plan->order_score ? b->order : NULL, plan->shift_positions);
}

/* TriAttention across layers (per_head, union): every full-attention layer's keys of request r
 * scored into b->trig_agg [Hkv][n], which each such layer's plan then ranks (the view's
 * trig_agg); sliding-window layers neither score nor are ranked. */
static zp_status trig_across(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, const zp_compress_req *r,
                             const void *k_cache, host_bufs *b) {
    if (!plan->trig_stats || !plan->trig_freqs)
        return zp_fail(ZP_ERR_INVALID, "compression: TriAttention without its statistics");
    const int n = r->n, D = d->head_dim, G = d->n_heads / d->n_kv_heads, F = D / 2;
    scorer_trig_phase(plan->trig_freqs, F, r->next_pos, b->trig_C, b->trig_S);
    int n_full = 0, done = 0;
    for (int l = 0; l < d->n_layers; l++) n_full += layer_window(d, l) == 0;
    for (int l = 0; l < d->n_layers; l++) {
        if (layer_window(d, l) > 0) continue;
        ZP_TRY(be->key_gather(be, d, k_cache, l, r->src, n, b->keys));
        ZP_TRY(scorer_trig_across(plan->trig_mode, b->keys, n, D, d->n_kv_heads, G,
                                  plan->trig_stats + (size_t)l * d->n_heads * 3 * F, b->trig_C, b->trig_S, r->protect,
                                  n_full, done++ == 0, b->trig_agg, b->scratch));
    }
    return ZP_OK;
}

/* The mass curves of one layer of request r into curve [m + 1] (m candidates per head): each KV
 * head's attention mass S (the plan's new history, before pooling) and final score C. */
static zp_status measure_layer(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int layer, const zp_compress_req *r,
                               int m, const void *k_cache, const void *q_cache, const void *score_cache, host_bufs *b, double *curve) {
    const int n = r->n;
    ZP_TRY(be->key_gather(be, d, k_cache, layer, r->src, n, b->keys));
    ZP_TRY(be->query_read(be, d, q_cache, layer, r->qid, b->queries));
    if (score_cache) ZP_TRY(be->score_read(be, d, score_cache, layer, r->src, n, b->hist));
    for (int g = 0; g < d->n_kv_heads; g++) {
        const zp_score_view v = head_view(d, plan, layer, g, n, n, r, b);
        const float *C;
        ZP_TRY(scorer_plan_score(plan, &v, score_cache ? b->hist + (size_t)g * n : NULL, score_cache ? r->n_hist : 0, d->block_size,
                                 b->scratch, b->new_hist, &C));
        ZP_TRY(scorer_mass_curve_add(b->new_hist, C, m, b->order, b->keep, curve));
    }
    return ZP_OK;
}

zp_status zp_compress_measure(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, const zp_compress_req *r,
                              const void *k_cache, const void *q_cache, const void *score_cache, double tau, int *count) {
    if (r->n <= budget) return zp_fail(ZP_ERR_INVALID, "adaptive budget: a request of %d tokens for a budget of %d", r->n, budget);
    if (plan->key_score == ZP_KEYS_TRIG || plan->head_adakv)
        return zp_fail(ZP_ERR_UNSUPPORTED, "adaptive budget: the measuring pass scores one layer and head at a time");
    const int m = r->n - scorer_plan_recent(plan, r->n, budget);
    host_bufs b;
    ZP_TRY(bufs_alloc(&b, d, r->n));
    double *curve = calloc((size_t)m + 1, sizeof *curve);
    zp_status st = curve ? ZP_OK : zp_fail(ZP_ERR_OOM, "adaptive budget: no memory for a curve of %d candidates", m);
    int heads = 0;
    for (int l = 0; l < d->n_layers && st == ZP_OK; l++) {
        if (layer_window(d, l) > 0) continue;
        st = measure_layer(be, d, plan, l, r, m, k_cache, q_cache, score_cache, &b, curve);
        heads += d->n_kv_heads;
    }
    if (st == ZP_OK) *count = scorer_mass_count(curve, m, heads, tau);
    free(curve);
    bufs_free(&b);
    return st;
}

zp_status zp_compress_host(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                           const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache, void *score_cache) {
    int max_n = 0;
    const int across = plan->key_score == ZP_KEYS_TRIG && plan->trig_mode != ZP_TRIG_PER_LAYER_PERHEAD;
    for (int i = 0; i < n_req; i++) {
        if (reqs[i].n <= budget) return zp_fail(ZP_ERR_INVALID, "compression: request %d has %d tokens for a budget of %d", i, reqs[i].n, budget);
        const int stride = plan->head_adakv ? req_stride(d, &reqs[i]) : reqs[i].n;
        max_n = stride > max_n ? stride : max_n;
    }
    if (n_req <= 0) return ZP_OK;
    if (plan->head_adakv && (across || !be->key_gather_runs || !be->score_read_runs || !be->kv_compact_runs))
        return zp_fail(ZP_ERR_UNSUPPORTED, "compression: head-wise budgets need %s",
                       across ? "a score per layer (TriAttention's per_layer_perhead)" : "a backend with head runs");
    for (int i = 0; plan->head_adakv && i < n_req; i++)
        if (!reqs[i].new_runs) return zp_fail(ZP_ERR_INVALID, "compression: request %d has no place for its head runs", i);
    if (across && (layer0 != 0 || layer1 != d->n_layers))
        return zp_fail(
            ZP_ERR_INVALID,
            "compression: TriAttention's modes across layers need every layer in one call (got %d to %d of %d)", layer0,
            layer1, d->n_layers);
    host_bufs b;
    ZP_TRY(bufs_alloc(&b, d, max_n));
    zp_status st = ZP_OK;
    for (int i = 0; i < n_req && st == ZP_OK; i++) {
        if (across)
            st = trig_across(be, d, plan, &reqs[i], k_cache,
                             &b); /* one set across layers, before any layer is compacted */
        const int stride = plan->head_adakv ? req_stride(d, &reqs[i]) : 0;
        for (int l = layer0; l < layer1 && st == ZP_OK; l++)
            st = plan->head_adakv ? host_layer_adakv(be, d, plan, budget, l, &reqs[i], stride, k_cache, v_cache, q_cache, score_cache, &b)
                                  : host_layer(be, d, plan, budget, l, &reqs[i], k_cache, v_cache, q_cache, score_cache, &b);
    }
    bufs_free(&b);
    return st;
}
