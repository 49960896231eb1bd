/* head_budget.c - AdaKV's allocation of one layer's budget across its KV heads (the head-wise
 * budgets of docs/budgets.md): how many of its candidates each head keeps when the layer's
 * total is fixed. The rule, as the authors' AdaptiveSnapKVCluster computes it (see
 * scorer_head_budgets in scorers.h): the top H x B of every head's candidate scores taken
 * together, counted per head, blended with a floor. It selects no token (each head then keeps
 * its top count, scorer_keep_topk_recent) and compacts nothing.
 * Complexity O(N log N) for N = the candidates of all heads (one sort). */
#include <math.h>
#include <stdlib.h>

#include "scorers.h"

typedef struct {
    float s;
    int h, t;
} head_scored;

/* descending score, NaN lowest; on equal scores the lower head, then the earlier token (the
 * flattened [head][rank] order of the authors' top-k with ties to the lower index) */
static int by_score_head(const void *a, const void *b) {
    const head_scored *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? 1 : -1;
    if (x->h != y->h) return x->h - y->h;
    return x->t - y->t;
}

int scorer_head_floor(int B, double alpha) { return (int)((double)B * alpha); }

zp_status scorer_head_budgets(const float *scores, const int *n, int stride, int H, int B, double alpha, int *counts) {
    if (H <= 0 || B < 0 || !(alpha >= 0.0 && alpha <= 1.0))
        return zp_fail(ZP_ERR_INVALID, "head budgets: %d heads, budget %d, floor share %g (needs heads > 0, budget >= 0, share in [0, 1])", H, B,
                       alpha);
    size_t N = 0;
    for (int h = 0; h < H; h++) {
        if (n[h] < 0 || n[h] > stride) return zp_fail(ZP_ERR_INVALID, "head budgets: head %d has %d candidates (stride %d)", h, n[h], stride);
        N += (size_t)n[h];
        counts[h] = 0;
    }
    const size_t total = (size_t)H * (size_t)B;
    if (N == 0) return ZP_OK;
    head_scored *v = malloc(sizeof *v * N);
    if (!v) return zp_fail(ZP_ERR_OOM, "head budgets: no memory to rank %zu candidates", N);
    size_t i = 0;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < n[h]; t++) {
            const float s = scores[(size_t)h * stride + t];
            v[i++] = (head_scored){s != s ? -INFINITY : s, h, t};
        }
    qsort(v, N, sizeof *v, by_score_head);
    for (i = 0; i < total && i < N; i++) counts[v[i].h]++;
    free(v);
    /* the floor blend in float32, rounded half to even, as the authors' tensor arithmetic */
    const float keep_share = (float)(1.0 - alpha), floor_c = (float)scorer_head_floor(B, alpha);
    long sum = 0;
    for (int h = 0; h < H; h++) {
        int c = (int)rintf((float)counts[h] * keep_share + floor_c);
        counts[h] = c < 0 ? 0 : c > n[h] ? n[h] : c; /* a head cannot keep more than it has (their slice clamps) */
        sum += counts[h];
    }
    /* the layer's cells hold H x B: the rounding's excess (at most H / 2) comes off the largest
     * counts, the later head first on equal counts (the engine's rule; theirs has no fixed size) */
    while (sum > (long)total) {
        int big = 0;
        for (int h = 1; h < H; h++)
            if (counts[h] >= counts[big]) big = h;
        counts[big]--;
        sum--;
    }
    return ZP_OK;
}

zp_status scorer_head_keep(const zp_score_plan *p, const float *C, const int *m, int stride, int H, int budget, int *cand, int *kept,
                           uint8_t *keep, int *order) {
    const int rec = scorer_plan_recent(p, budget, budget);
    for (int h = 0; h < H; h++) cand[h] = m[h] > rec ? m[h] - rec : 0;
    ZP_TRY(scorer_head_budgets(C, cand, stride, H, budget - rec, p->head_floor, kept));
    for (int h = 0; h < H; h++) {
        uint8_t *k = keep + (size_t)h * stride;
        ZP_TRY(scorer_plan_keep(p, C + (size_t)h * stride, m[h], kept[h] + rec, rec, k, order ? order + (size_t)h * stride : NULL));
        kept[h] = 0;
        for (int t = 0; t < m[h]; t++) kept[h] += k[t] != 0;
    }
    return ZP_OK;
}
