/* plan.c - runs a zp_score_plan (scorers.h) on the host: the CPU reference of every
 * score-based policy, stage by stage through the scorers of this directory, and the
 * keep-recent top-k they all end with. The CUDA twin is model/cuda/plan_cuda.cu; both must
 * follow the stage order documented in scorers.h. This file parses nothing (policies/ do).
 * Complexity: that of the stages used (attention O(w G n D), raw redundancy O(n^2 D)).
 */
#include <math.h>

#include "scorers.h"

void scorer_keep_topk_recent(const float *score, int n, int budget, int recent, uint8_t *keep) {
    if (recent > budget) recent = budget;
    if (recent > n) recent = n;
    if (recent < 0) recent = 0;
    scorer_topk(score, n - recent, budget - recent, keep); /* writes keep[0, n-recent) */
    for (int t = n - recent; t < n; t++) keep[t] = 1;
}

/* P from S: pooled over all tokens, over the candidates t < n - w only, or copied. */
static void plan_pool(const zp_score_plan *p, const float *S, int n, int w, int n_hist, float *P) {
    const int pool = p->pool_kernel > 1 && (!p->pool_first_only || n_hist == 0);
    const int m = p->pool_candidates ? n - w : n;
    if (pool) scorer_max_pool(S, m, p->pool_kernel, P);
    else for (int t = 0; t < m; t++) P[t] = S[t];
    for (int t = m; t < n; t++) P[t] = 0.f;
}

zp_status scorer_plan_score(const zp_score_plan *p, const zp_score_view *v, const float *history, int n_hist, int block_size,
                            float *scratch, float *new_history, const float **score) {
    const int n = v->n;
    float *A = scratch, *S = A + n, *P = A + 2 * n, *r = A + 3 * n, *tmp = A + 4 * n, *knorm = A + 6 * n;
    if (p->attention) ZP_TRY(scorer_window_attention(v, &p->attn, A, tmp));
    else if (p->key_score == ZP_KEYS_TRIG &&
             p->trig_mode != ZP_TRIG_PER_LAYER_PERHEAD) { /* scored across layers beforehand */
        if (!v->trig_agg)
            return zp_fail(ZP_ERR_INVALID, "TriAttention's score across layers: none for layer %d", v->layer);
        for (int t = 0; t < n; t++) A[t] = v->trig_agg[t];
    } else if (p->key_score == ZP_KEYS_TRIG) {
        if (!v->trig_stats || !v->trig_C || !v->trig_S)
            return zp_fail(ZP_ERR_INVALID, "TriAttention's score: no statistics for layer %d", v->layer);
        ZP_TRY(scorer_trig_group(v->keys, n, v->head_dim, v->group, v->trig_stats, v->trig_C, v->trig_S, v->protect, A,
                                 tmp));
    } else if (p->key_score != ZP_KEYS_NONE)
        scorer_key_score(p->key_score, p->seed, v->layer, v->head, v->keys, n, v->head_dim, A, knorm);
    else for (int t = 0; t < n; t++) A[t] = 0.f;
    const int norm_m = p->norm_candidates ? n - v->window : n;
    if (p->max_norm) scorer_max_normalize(A, n, norm_m);
    const int hist_m = !p->history_excludes_window ? n_hist : n_hist > v->window ? n_hist - v->window : 0;
    if (p->global != ZP_GLOBAL_NONE) scorer_global(A, history, n, hist_m, p->gamma, p->global == ZP_GLOBAL_SUM, S);
    else for (int t = 0; t < n; t++) S[t] = A[t];
    if (new_history)
        for (int t = 0; t < n; t++) new_history[t] = S[t];
    plan_pool(p, S, n, v->window, n_hist, P);
    float *C = P;
    if (p->redundancy != ZP_RED_NONE) {
        const int lightning = p->redundancy == ZP_RED_LIGHTNING;
        if (lightning) scorer_redundancy_lightning(v->keys, n, v->head_dim, block_size, p->theta, r, knorm);
        else scorer_redundancy_raw(v->keys, n, v->head_dim, p->theta, p->rkv_quirk, r, knorm);
        scorer_softmax(r, n, p->temperature * (float)(lightning ? block_size : n), tmp);
        if (p->max_norm) scorer_max_normalize(tmp, n, norm_m);
        C = S; /* S is no longer needed: reuse it for the mix */
        scorer_mix(P, tmp, n, p->lambda, C);
    }
    for (int t = 0; t < p->sink && t < n; t++) C[t] = INFINITY;
    *score = C;
    return ZP_OK;
}

int scorer_plan_recent(const zp_score_plan *p, int n, int budget) {
    const int r = p->recent < budget ? p->recent : budget;
    return r < 0 ? 0 : r < n ? r : n;
}

zp_status scorer_plan_keep(const zp_score_plan *p, const float *C, int n, int budget, int recent, uint8_t *keep, int *order) {
    scorer_keep_topk_recent(C, n, budget, recent, keep);
    if (!order) return ZP_OK;
    if (recent > budget) recent = budget;
    if (recent > n) recent = n;
    return scorer_rank_order(C, keep, p->order_score ? n - (recent > 0 ? recent : 0) : 0, n, order);
}

zp_status scorer_plan_run(const zp_score_plan *p, const zp_score_view *v, const float *history, int n_hist, int block_size,
                          int budget, float *scratch, uint8_t *keep, float *new_history, int *order) {
    const float *C;
    ZP_TRY(scorer_plan_score(p, v, history, n_hist, block_size, scratch, new_history, &C));
    return scorer_plan_keep(p, C, v->n, budget, p->recent, keep, order);
}
