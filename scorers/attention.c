/* attention.c - window attention scores of cached queries against a request's keys.
 *
 * Zipage (§3.1): logits of the w window queries against all n keys, causal inside the window
 * (query j at token n-w+j sees t <= n-w+j), softmax over t per query head, max over the GQA
 * group, mean over the window. R-KV / SnapKV-D: max over the group of logits, softmax over
 * the non-window keys only, mean. MorphKV: sum over the group of logits, softmax over the
 * distant keys, sum or max over the window rows (with skip_newest, as its patches: the w-1 rows
 * before the newest against t < n-w-1).
 * Complexity O(w * G * n * D) time, 2n floats of scratch. No top-k here.
 */
#include <math.h>
#include <string.h>

#include "scorers.h"

static float dot(const float *a, const float *b, int n) {
    float s = 0.f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* In-place softmax of x[0..m); entries past m are left alone. */
static void softmax_prefix(float *x, int m) {
    float mx = -INFINITY, z = 0.f;
    for (int t = 0; t < m; t++) mx = x[t] > mx ? x[t] : mx;
    for (int t = 0; t < m; t++) z += x[t] = expf(x[t] - mx);
    for (int t = 0; t < m; t++) x[t] /= z;
}

/* row[t] for one window query j: group-reduced probabilities over the visible keys. */
static void query_row(const zp_score_view *v, const zp_attn_opts *o, int j, float *row, float *logit) {
    const int n = v->n, G = v->group, D = v->head_dim;
    const int visible = o->exclude_window ? n - v->window - o->skip_newest : n - v->window + j + 1;
    const float *q = v->queries + (size_t)j * G * D;
    for (int t = 0; t < n; t++) row[t] = 0.f;
    if (visible <= 0) return;
    if (o->gqa == ZP_GQA_MAX_LOGIT || o->gqa == ZP_GQA_SUM_LOGIT) {
        for (int t = 0; t < visible; t++) {
            float acc = o->gqa == ZP_GQA_MAX_LOGIT ? -INFINITY : 0.f;
            for (int g = 0; g < G; g++) {
                float z = dot(q + (size_t)g * D, v->keys + (size_t)t * D, D) * v->scale;
                acc = o->gqa == ZP_GQA_MAX_LOGIT ? fmaxf(acc, z) : acc + z;
            }
            row[t] = acc;
        }
        softmax_prefix(row, visible);
        return;
    }
    for (int g = 0; g < G; g++) { /* probabilities per head, then max or mean */
        for (int t = 0; t < visible; t++) logit[t] = dot(q + (size_t)g * D, v->keys + (size_t)t * D, D) * v->scale;
        softmax_prefix(logit, visible);
        for (int t = 0; t < visible; t++)
            row[t] = o->gqa == ZP_GQA_MAX_PROB ? fmaxf(row[t], logit[t]) : row[t] + logit[t] / (float)G;
    }
}

zp_status scorer_window_attention(const zp_score_view *v, const zp_attn_opts *o, float *out, float *scratch) {
    if (v->window <= 0 || v->window > v->n)
        return zp_fail(ZP_ERR_INVALID, "window attention: window %d must be in [1, n=%d]", v->window, v->n);
    const int n = v->n;
    float *row = scratch, *logit = scratch + n; /* reduced row [n], one head's logits [n] */
    const int rows = v->window - (o->skip_newest != 0);
    if (rows <= 0) return zp_fail(ZP_ERR_INVALID, "window attention: skipping the newest of %d window queries leaves none", v->window);
    for (int t = 0; t < n; t++) out[t] = 0.f;
    for (int j = 0; j < rows; j++) {
        query_row(v, o, j, row, logit);
        for (int t = 0; t < n; t++) {
            if (o->qred == ZP_QRED_MAX) out[t] = fmaxf(out[t], row[t]);
            else out[t] += row[t];
        }
    }
    if (o->qred == ZP_QRED_MEAN)
        for (int t = 0; t < n; t++) out[t] /= (float)rows;
    return ZP_OK;
}

zp_status scorer_morph_history(const zp_score_view *v, int max_fusion, float *out, float *scratch) {
    zp_attn_opts o = {ZP_GQA_SUM_LOGIT, max_fusion ? ZP_QRED_MAX : ZP_QRED_SUM, 1, 0};
    return scorer_window_attention(v, &o, out, scratch);
}
