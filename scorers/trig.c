/* trig.c - TriAttention's key score (docs/triattention.md), from the keys alone and one query
 * head's calibrated statistics: no query window, no attention weights.
 *
 * With "half" RoPE pairing (pair f: dims f and f + D/2 as one complex number k_f), the calibrated
 * mean pre-RoPE query E q_f and mean modulus E|q_f|, and R the next query's position, the score of
 * a post-RoPE key is
 *   sum_f [A_f C_f - B_f S_f] + sum_f (E|q_f| - |E q_f|) |k_f|,
 *   A_f = Re(E q_f conj(k_f)), B_f = Im(E q_f conj(k_f)),
 *   C_f, S_f = the means over o = 1, 2, 4, ..., 65536 of cos((R + o) w_f) and sin((R + o) w_f):
 * the expected RoPE logit of the mean query at 17 future positions, averaged, plus the magnitude
 * term (tests/reference/ref_triattention.py cites the authors' code it follows; this is the form
 * on post-RoPE keys, which needs no key positions). C_f and S_f are made once per compression
 * (scorer_trig_phase) in double precision; each key's sum is accumulated in double.
 * Complexity: O(F) per compression for the phases, O(n D) per query head for the scores.
 * scorer_trig_group is one (layer, KV head) of the per_layer_perhead mode: each query head's scores
 * of the decode tokens z-normalised, the group's max, the protected prompt at +inf.
 * Deliberately not here: the statistics' file (the engine loads it), the reduction across layers
 * of the per_head and union modes, and the top-k (the plan's). */
#include <math.h>

#include "scorers.h"

void scorer_trig_phase(const float *w, int F, int64_t R, double *C, double *S) {
    for (int f = 0; f < F; f++) {
        double c = 0, s = 0;
        for (int j = 0; j < ZP_TRIG_OFFSETS; j++) {
            const double a = ((double)R + (double)(1 << j)) * (double)w[f];
            c += cos(a);
            s += sin(a);
        }
        C[f] = c / ZP_TRIG_OFFSETS;
        S[f] = s / ZP_TRIG_OFFSETS;
    }
}

void scorer_trig_score(const float *keys, int n, int D, const float *q_re, const float *q_im, const float *q_abs, const double *C,
                       const double *S, float *out) {
    const int F = D / 2;
    for (int t = 0; t < n; t++) {
        const float *k = keys + (size_t)t * D;
        double acc = 0;
        for (int f = 0; f < F; f++) {
            const double kr = k[f], ki = k[f + F], qr = q_re[f], qi = q_im[f];
            const double A = qr * kr + qi * ki, B = qi * kr - qr * ki;
            acc += A * C[f] - B * S[f] + ((double)q_abs[f] - sqrt(qr * qr + qi * qi)) * sqrt(kr * kr + ki * ki);
        }
        out[t] = (float)acc;
    }
}

void scorer_znorm(float *x, int n, float eps) {
    if (n <= 0) return;
    double m = 0, v = 0;
    for (int t = 0; t < n; t++) m += x[t];
    m /= n;
    for (int t = 0; t < n; t++) v += (x[t] - m) * (x[t] - m);
    const double sd = sqrt(v / n) > eps ? sqrt(v / n) : eps;
    for (int t = 0; t < n; t++) x[t] = (float)((x[t] - m) / sd);
}

zp_status scorer_trig_across(zp_trig_mode mode, const float *keys, int n, int D, int Hkv, int G, const float *stats,
                             const double *C, const double *S, int protect, int n_layers, int first, float *agg,
                             float *scratch) {
    if (protect < 0 || protect > n || n_layers < 1)
        return zp_fail(ZP_ERR_INVALID, "trig scores: %d protected tokens of %d", protect, n);
    const int F = D / 2, m = n - protect;
    float *row = scratch, *gmax = scratch + n;
    for (int h = 0; h < Hkv; h++) {
        float *a = agg + (size_t)h * n;
        if (first)
            for (int t = 0; t < n; t++) a[t] = t < protect ? INFINITY : mode == ZP_TRIG_UNION ? -INFINITY : 0.f;
        for (int t = 0; t < m; t++) gmax[t] = -INFINITY;
        for (int g = 0; g < G; g++) {
            const float *q = stats + ((size_t)h * G + (size_t)g) * 3 * F;
            scorer_trig_score(keys + ((size_t)h * n + (size_t)protect) * D, m, D, q, q + F, q + 2 * F, C, S, row);
            scorer_znorm(row, m, ZP_TRIG_STD_EPS);
            for (int t = 0; t < m; t++) gmax[t] = row[t] > gmax[t] ? row[t] : gmax[t];
        }
        for (int t = 0; t < m; t++) {
            if (mode == ZP_TRIG_PER_HEAD)
                a[protect + t] += gmax[t] / (float)n_layers;
            else if (gmax[t] > a[protect + t])
                a[protect + t] = gmax[t];
        }
    }
    if (mode == ZP_TRIG_UNION) /* one set: every KV head's row becomes the max over all of them */
        for (int h = 1; h < Hkv; h++)
            for (int t = protect; t < n; t++) {
                float *a0 = agg + t, *ah = agg + (size_t)h * n + t;
                if (*ah > *a0) *a0 = *ah;
            }
    if (mode == ZP_TRIG_UNION)
        for (int h = 1; h < Hkv; h++)
            for (int t = protect; t < n; t++) agg[(size_t)h * n + t] = agg[t];
    return ZP_OK;
}

zp_status scorer_trig_group(const float *keys, int n, int D, int G, const float *stats, const double *C, const double *S, int protect,
                            float *out, float *scratch) {
    if (protect < 0 || protect > n) return zp_fail(ZP_ERR_INVALID, "trig scores: %d protected tokens of %d", protect, n);
    const int F = D / 2, m = n - protect;
    for (int t = 0; t < protect; t++) out[t] = INFINITY;
    for (int t = protect; t < n; t++) out[t] = -INFINITY;
    for (int g = 0; g < G; g++) {
        const float *q = stats + (size_t)g * 3 * F;
        scorer_trig_score(keys + (size_t)protect * D, m, D, q, q + F, q + 2 * F, C, S, scratch);
        scorer_znorm(scratch, m, ZP_TRIG_STD_EPS);
        for (int t = 0; t < m; t++) out[protect + t] = scratch[t] > out[protect + t] ? scratch[t] : out[protect + t];
    }
    return ZP_OK;
}
