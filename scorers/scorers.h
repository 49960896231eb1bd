/* scorers.h - token-importance primitives, C references (the CUDA twins come later).
 *
 * Every scorer works on one (request, layer, KV head) in physical token order, which is the
 * original order because compaction preserves it. Window queries belong to the last w tokens.
 * Shapes are in the comments; complexities are in each .c file's header. These functions
 * allocate nothing: callers pass scratch. They do not select or compact (policies/, compress/).
 */
#ifndef ZP_SCORERS_H
#define ZP_SCORERS_H

#include <stdint.h>

#include "status.h"

/* One (request, layer, KV head) as seen by the scorers. */
typedef struct {
    int n;                /* tokens, physical order */
    int head_dim;         /* D */
    int group;            /* G = H_q / H_kv query heads sharing this KV head */
    int window;           /* w window queries; query j belongs to token n-w+j */
    float scale;          /* softmax scale, 1/sqrt(D) */
    const float *keys;    /* [n][D] post-RoPE keys of this KV head */
    const float *queries; /* [w][G][D] window queries (post-RoPE, post q-norm) */
    int layer, head;      /* where it sits (layer, KV head): the random draw's coordinates */
    /* ZP_KEYS_TRIG (TriAttention) only: */
    const float *trig_stats;       /* [G][q_re | q_im | q_abs][D/2] this KV head's query heads' statistics */
    const double *trig_C, *trig_S; /* [D/2] scorer_trig_phase at the request's next position */
    int protect;                   /* leading tokens kept and never scored (the prompt, up to the budget) */
    const float *trig_agg;         /* [n] a mode across layers: this KV head's aggregated scores (scorer_trig_across) */
} zp_score_view;

typedef enum {
    ZP_GQA_MAX_PROB,  /* softmax per query head, then max over the group (Zipage) */
    ZP_GQA_MEAN_PROB, /* softmax per query head, then mean over the group (kvpress) */
    ZP_GQA_MAX_LOGIT, /* max over the group of logits, then softmax (R-KV, SnapKV-D) */
    ZP_GQA_SUM_LOGIT, /* sum over the group of logits, then softmax (MorphKV) */
    ZP_GQA_COUNT
} zp_gqa_reduce;

typedef enum { ZP_QRED_MEAN, ZP_QRED_SUM, ZP_QRED_MAX, ZP_QRED_COUNT } zp_query_reduce;

typedef struct {
    zp_gqa_reduce gqa;
    zp_query_reduce qred;
    int exclude_window; /* 1: softmax over t < n-w only, window scores 0 (R-KV, MorphKV);
                           0: over all t, causal inside the window (Zipage) */
    int skip_newest;    /* 1 (with exclude_window): rows are the w-1 queries before the newest, keys
                           t < n-w-1 (MorphKV's patches: the previous queries vote, W+1 protected) */
} zp_attn_opts;

/* out[n]: window attention score. scratch: [2n] floats. */
zp_status scorer_window_attention(const zp_score_view *v, const zp_attn_opts *o, float *out, float *scratch);
/* out[n]: MorphKV recent-window history (group-summed logits, softmax over distant tokens,
 * sum or max fusion over the window rows). scratch [2n]. */
zp_status scorer_morph_history(const zp_score_view *v, int max_fusion, float *out, float *scratch);

/* S[n] = max(A, gamma*H) (or A + gamma*H when sum) for t < n_hist, A elsewhere. */
void scorer_global(const float *A, const float *H, int n, int n_hist, float gamma, int sum, float *S);
/* H2O cumulative attention: S = H + A for t < n_hist, A elsewhere (global, sum, gamma 1). */
void scorer_cumulative(const float *A, const float *H, int n, int n_hist, float *S);
/* out[n] = max of x over [t-k/2, t+k/2] clipped to [0,n). k odd. */
void scorer_max_pool(const float *x, int n, int k, float *out);
/* out[n] = ||k_t||_2. */
void scorer_key_norm(const float *keys, int n, int D, float *out);

/* Scores of one (layer, KV head) from its keys alone (keys.c): ZP_KEYS_NORM -||k_t|| rounded to
 * ZP_KEY_NORM_BITS significant bits (kvpress KnormPress: low-norm keys kept; RoPE keeps a norm, so
 * a token repeated at another position has the same norm up to float rounding: rounded, the two
 * tie exactly and the earlier wins on every backend); ZP_KEYS_DIFF -cos(k_t, a) with a the mean
 * of the unit keys k / max(||k||, 1e-12), the cosine x.y / (max(||x||, 1e-8) max(||y||, 1e-8))
 * (kvpress KeyDiffPress: the keys least like the mean kept); ZP_KEYS_RANDOM scorer_key_draw of
 * (layer, head, n, t) (a uniform floor). anchor: scratch [D]. */
typedef enum { ZP_KEYS_NONE, ZP_KEYS_NORM, ZP_KEYS_DIFF, ZP_KEYS_RANDOM, ZP_KEYS_TRIG } zp_key_score;
#define ZP_KEY_NORM_EPS 1e-12f
#define ZP_COS_EPS 1e-8f
#define ZP_KEY_NORM_BITS 12
void scorer_key_score(zp_key_score kind, uint32_t seed, int layer, int head, const float *keys, int n, int D, float *out, float *anchor);
/* A uniform draw in [0, 1) (24 bits) hashed from the seed and token t of a compression of n
 * tokens at (layer, KV head): no float enters it, so every backend draws the same, and a
 * request's draws follow its own lengths, not the schedule. */
float scorer_key_draw(uint32_t seed, int layer, int head, int n, int t);

/* TriAttention's key score (trig.c): one query head's calibrated statistics (q_re, q_im: the mean
 * pre-RoPE query; q_abs: the mean modulus; F = D/2 pairs, "half" pairing) against n post-RoPE keys
 * [n][D] at next position R: out[t] = sum_f A_f C_f - B_f S_f + (q_abs_f - |q_f|) |k_f|, with
 * C, S [F] the means of cos and sin of (R + o) w_f over the ZP_TRIG_OFFSETS offsets o = 2^j
 * (scorer_trig_phase, w the model's RoPE frequencies). */
#define ZP_TRIG_OFFSETS 17
void scorer_trig_phase(const float *w, int F, int64_t R, double *C, double *S);
void scorer_trig_score(const float *keys, int n, int D, const float *q_re, const float *q_im, const float *q_abs, const double *C,
                       const double *S, float *out);
/* x[n] z-normalised in place: (x - mean) / max(population std, eps). */
void scorer_znorm(float *x, int n, float eps);
/* One (layer, KV head) of TriAttention's per_layer_perhead mode: out[t] = +inf for the first
 * `protect` tokens (the prompt, kept and never scored), else the max over the G query heads of
 * their scores of tokens [protect, n) z-normalised over those tokens (floor ZP_TRIG_STD_EPS).
 * stats: [G][q_re | q_im | q_abs][F]; C, S from scorer_trig_phase. scratch: [n] floats. */
#define ZP_TRIG_STD_EPS 1e-6f
/* TriAttention's modes: one kept set per (layer, KV head); per KV head across layers (the
 * paper's: the mean over layers of the group's max); one set for every layer and head (the max). */
typedef enum { ZP_TRIG_PER_LAYER_PERHEAD, ZP_TRIG_PER_HEAD, ZP_TRIG_UNION } zp_trig_mode;
/* One layer's part of a mode across layers, into agg[Hkv][n] (first: the first layer, which
 * sets it; keys [Hkv][n][D] of the layer, stats [Hkv * G][3][F] its query heads'): each query
 * head's scores of tokens [protect, n) z-normalised, then per_head: agg += the group's max /
 * n_layers; union: agg = max(agg, every row of every head), the same for every KV head. The
 * prompt [0, protect) at +inf. scratch: [2n]. */
zp_status scorer_trig_across(zp_trig_mode mode, const float *keys, int n, int D, int Hkv, int G, const float *stats,
                             const double *C, const double *S, int protect, int n_layers, int first, float *agg,
                             float *scratch);
zp_status scorer_trig_group(const float *keys, int n, int D, int G, const float *stats, const double *C, const double *S, int protect,
                            float *out, float *scratch);

/* Redundancy logits r[n] from keys, with the "last above threshold is protected" rule:
 * r[x] = sum_{y != x} c(x,y) - sum_{y : last(y) = x} c(x,y), c the cosine similarity,
 * last(y) the latest x != y with c(x,y) > theta. Raw: all pairs, O(n^2 D). Lightning: pairs
 * inside the same block of `block` tokens, O(n block D). rkv_quirk: a token with no partner
 * above theta erases its similarity with token 0 (R-KV's reference code). knorm: scratch [n*D]. */
void scorer_redundancy_raw(const float *keys, int n, int D, float theta, int rkv_quirk, float *r, float *knorm);
void scorer_redundancy_lightning(const float *keys, int n, int D, int block, float theta, float *r, float *knorm);

/* out[n] = softmax(x / divisor). */
void scorer_softmax(const float *x, int n, float divisor, float *out);
/* x[0, n) /= max of x[0, m) when that max > 0 (m <= n: the maximum over the first m). */
void scorer_max_normalize(float *x, int n, int m);
/* out[n] = lambda * P - (1 - lambda) * R. */
void scorer_mix(const float *P, const float *R, int n, float lambda, float *out);
/* keep[n] = 1 for exactly k tokens of highest score (ties: the earlier token wins). */
void scorer_topk(const float *score, int n, int k, uint8_t *keep);
/* Keeps the last `recent` tokens and the top (budget - recent) of the others by score. */
void scorer_keep_topk_recent(const float *score, int n, int budget, int recent, uint8_t *keep);
/* order[]: the kept tokens t < m by descending score (on equal scores the earlier first, NaN
 * last), then the kept tokens of [m, n) in position order: the cache order R-KV's code leaves. */
zp_status scorer_rank_order(const float *score, const uint8_t *keep, int m, int n, int *order);
/* The adaptive budget's count (adaptive_budget.c): scorer_mass_curve_add adds one head's curve
 * m_h(k), k = 0..m, to curve [m + 1]: the share of its attention mass S [m] that its top-k
 * candidates by the final score C [m] hold (1 for a head of no mass); order [m] and all [m] are
 * scratch. scorer_mass_count: the smallest k at which the mean of `heads` such curves reaches
 * tau (m if none). */
zp_status scorer_mass_curve_add(const float *S, const float *C, int m, int *order, uint8_t *all, double *curve);
int scorer_mass_count(const double *curve, int m, int heads, double tau);

/* AdaKV's head-wise budgets for one layer of H KV heads (head_budget.c), the rule of the authors'
 * AdaptiveSnapKVCluster.update_kv_gqa (FFY0/AdaKV, adaptive_snapkv/monkeypatch/snapkv_utils.py):
 * scores [H][stride], head h's n[h] candidate scores (its window/recent tokens excluded); the
 * H x B highest of all heads together (ties: the lower head, then the earlier token) counted per
 * head as c[h]; counts[h] = round_half_even(c[h] (1 - alpha) + floor(B alpha)) in float32,
 * clamped to [0, n[h]]; then the engine's own step: while the sum exceeds H x B (the layer's
 * cells), the largest count (the later head on ties) loses one. alpha in [0, 1] (the authors'
 * floor_alpha, default 0.2). Their `normalize` and `skip` options are not built. */
zp_status scorer_head_budgets(const float *scores, const int *n, int stride, int H, int B, double alpha, int *counts);
/* The floor every head keeps, int(B alpha) as the authors compute it. */
int scorer_head_floor(int B, double alpha);

/* A policy's score as a fixed pipeline of the scorers above (plan.c runs it on the host,
 * model/cuda/plan_cuda.cu on the device; policies/ fill it from their parameters):
 *   A = attention ? window attention (attn) : key_score ? the key score : 0;      if max_norm: A /= max A (over t < n - w
 *       with norm_candidates, else over all n)
 *   S = global ? (max(A, gamma H) | A + gamma H on t < n_hist, or t < n_hist - w with
 *       history_excludes_window) : A;   new history = S
 *   P = pool_kernel > 1 (and n_hist == 0 when pool_first_only) ? max pool of S : S
 *       (pool_candidates: pool t < n - w only, window scores 0)
 *   C = redundancy ? lambda P - (1 - lambda) R : P, R = softmax(r / (temperature * span)),
 *       r raw (span n) or lightning (span block_size); if max_norm: R /= max R
 *   C[t < sink] = +inf; keep the last `recent` tokens and the top budget - recent of the rest;
 *   the kept tokens go to the cache in position order, or (order_score) by descending C and then
 *   the recent ones, so that the next compression sees them in that physical order. */
typedef enum { ZP_RED_NONE, ZP_RED_RAW, ZP_RED_LIGHTNING } zp_redundancy_kind;
typedef enum { ZP_GLOBAL_NONE, ZP_GLOBAL_MAX, ZP_GLOBAL_SUM } zp_global_kind;
typedef struct {
    int attention;                /* 0: A = the key score, or 0 (StreamingLLM) */
    zp_key_score key_score;       /* without attention: a score from the keys alone (key-norm, KeyDiff, random) */
    uint32_t seed;                /* ZP_KEYS_RANDOM's */
    zp_attn_opts attn;
    int max_norm;
    int norm_candidates;          /* max_norm's maxima over t < n - w only (G-KV), else over all n */
    int history_excludes_window;  /* the history holds for t < n_hist - w only (G-KV stores none for
                                     the window tokens it kept) */
    int history_live;             /* the model adds every query's attention to the history as it runs
                                     (backend op attn_history): it is valid for all n tokens */
    zp_global_kind global;
    float gamma;
    int pool_kernel, pool_first_only, pool_candidates;
    zp_redundancy_kind redundancy;
    float theta, temperature, lambda;
    int rkv_quirk;
    int sink, recent;
    int order_score;              /* survivors in descending C order, then the recent tokens (the order
                                     R-KV's code gathers them in); 0: position order */
    int shift_positions;          /* StreamingLLM's position shift: a kept key moved from cache index t
                                     to i is re-rotated from position t to i, and new tokens take their
                                     cache index as position (position order only) */
    /* key_score ZP_KEYS_TRIG (TriAttention's per_layer_perhead score, scorer_trig_group on the view's
     * trig fields): the policy names its statistics file, the engine loads it (compress/trig_stats.h)
     * and fills the rest before the plan runs */
    const char *trig_stats_path;
    zp_trig_mode trig_mode;  /* per_layer_perhead (scorer_trig_group), or one set across layers (scorer_trig_across) */
    const float *trig_stats; /* [n_layers][Hq][q_re | q_im | q_abs][D/2] */
    const float *trig_freqs; /* [D/2] the model's RoPE frequencies */
    /* Head-wise budgets (the engine's head_budget setting, set by the compressor): 1: AdaKV's
     * allocation across a layer's KV heads (scorer_head_budgets with floor share head_floor)
     * between the score stages and the selection; 0: every head keeps the budget */
    int head_adakv;
    double head_floor;
} zp_score_plan;

/* Runs a plan on one (request, layer, KV head): keep[n] (exactly budget ones when n >
 * budget), new_history[n] = S when not NULL, order[] (when not NULL) the kept tokens in the
 * order compaction writes them: position order, or with order_score the kept candidates by
 * descending C then the recent tokens. history[n] may be NULL (then S = A).
 * scratch: [6n + n D] floats. */
zp_status scorer_plan_run(const zp_score_plan *p, const zp_score_view *v, const float *history, int n_hist, int block_size,
                          int budget, float *scratch, uint8_t *keep, float *new_history, int *order);
/* scorer_plan_run in its two halves, for a selection between them (head-wise budgets): the
 * score stages, *score = C[n] (inside scratch, until the next call); then the keep-recent top-k
 * of `budget` tokens with `recent` of them the last ones (and the order). scorer_plan_recent:
 * the recent tokens a budget keeps (min of the plan's, the budget and n). */
zp_status scorer_plan_score(const zp_score_plan *p, const zp_score_view *v, const float *history, int n_hist, int block_size,
                            float *scratch, float *new_history, const float **score);
int scorer_plan_recent(const zp_score_plan *p, int n, int budget);
zp_status scorer_plan_keep(const zp_score_plan *p, const float *C, int n, int budget, int recent, uint8_t *keep, int *order);
/* One layer's selection with head-wise budgets (head_budget.c): C [H][stride] each head's final
 * scores (scorer_plan_score) over its m[h] tokens; the plan's recent tokens of the budget kept by
 * every head, the rest of the layer's H x budget shared by scorer_head_budgets (floor share
 * p->head_floor) over each head's candidates (its tokens before the recent ones), each head's
 * top count kept (scorer_plan_keep). Out: keep and order [H][stride] (order may be NULL), kept[h]
 * the tokens head h keeps; cand [H] scratch. */
zp_status scorer_head_keep(const zp_score_plan *p, const float *C, const int *m, int stride, int H, int budget, int *cand, int *kept,
                           uint8_t *keep, int *order);

#endif
