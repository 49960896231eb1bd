/* normalize.c - softmax with a divisor (temperature), max normalisation, the lambda mix, the
 * per-head top-k that every score-based policy ends with, and the score order of the kept
 * tokens (R-KV's cache order). Complexity O(n) except top-k and the order, O(n log n) (a sort
 * of indices; fine for the reference). */
#include <math.h>
#include <stdlib.h>

#include "scorers.h"

void scorer_softmax(const float *x, int n, float divisor, float *out) {
    float mx = -INFINITY, z = 0.f;
    for (int t = 0; t < n; t++) mx = x[t] / divisor > mx ? x[t] / divisor : mx;
    for (int t = 0; t < n; t++) z += out[t] = expf(x[t] / divisor - mx);
    for (int t = 0; t < n; t++) out[t] /= z;
}

void scorer_max_normalize(float *x, int n, int m) {
    float mx = 0.f;
    for (int t = 0; t < m; t++) mx = x[t] > mx ? x[t] : mx;
    if (mx > 0.f)
        for (int t = 0; t < n; t++) x[t] /= mx;
}

void scorer_mix(const float *P, const float *R, int n, float lambda, float *out) {
    for (int t = 0; t < n; t++) out[t] = lambda * P[t] - (1.0f - lambda) * R[t];
}

typedef struct {
    float s;
    int t;
} scored;

static int by_score_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? 1 : -1;
    return x->t - y->t;
}

void scorer_topk(const float *score, int n, int k, uint8_t *keep) {
    for (int t = 0; t < n; t++) keep[t] = k >= n;
    if (k >= n || k <= 0) return;
    scored *v = malloc(sizeof *v * (size_t)n);
    if (!v) { /* no memory: keep the most recent k (never a wrong count) */
        for (int t = n - k; t < n; t++) keep[t] = 1;
        return;
    }
    for (int t = 0; t < n; t++) { v[t].s = score[t] != score[t] ? -INFINITY : score[t]; v[t].t = t; }
    qsort(v, (size_t)n, sizeof *v, by_score_desc);
    for (int i = 0; i < k; i++) keep[v[i].t] = 1;
    free(v);
}

zp_status scorer_rank_order(const float *score, const uint8_t *keep, int m, int n, int *order) {
    int k = 0;
    for (int t = 0; t < m; t++) k += keep[t] != 0;
    scored *v = malloc(sizeof *v * (size_t)(k > 0 ? k : 1));
    if (!v) return zp_fail(ZP_ERR_OOM, "score order: no memory for %d tokens", k);
    for (int t = 0, i = 0; t < m; t++)
        if (keep[t]) { v[i].s = score[t] != score[t] ? -INFINITY : score[t]; v[i].t = t; i++; }
    qsort(v, (size_t)k, sizeof *v, by_score_desc);
    for (int i = 0; i < k; i++) order[i] = v[i].t;
    free(v);
    for (int t = m; t < n; t++)
        if (keep[t]) order[k++] = t;
    return ZP_OK;
}
