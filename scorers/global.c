/* global.c - history scores carried across compressions, and key norms.
 *
 * Decayed global score (Zipage/G-KV, §3.3): S = max(A, gamma*H) ("max") or A + gamma*H
 * ("sum") for tokens that have a history (retained tokens of an already compressed request,
 * outside the growth block); S = A elsewhere. H2O's cumulative attention is the sum form with
 * gamma 1. Key norm: ||k||_2 per token.
 * Complexity O(n) (global, cumulative), O(n D) (key norm).
 */
#include <math.h>

#include "scorers.h"

void scorer_global(const float *A, const float *H, int n, int n_hist, float gamma, int sum, float *S) {
    for (int t = 0; t < n; t++) {
        if (t < n_hist && H) S[t] = sum ? A[t] + gamma * H[t] : fmaxf(A[t], gamma * H[t]);
        else S[t] = A[t];
    }
}

void scorer_cumulative(const float *A, const float *H, int n, int n_hist, float *S) { scorer_global(A, H, n, n_hist, 1.0f, 1, S); }

void scorer_key_norm(const float *keys, int n, int D, float *out) {
    for (int t = 0; t < n; t++) {
        float s = 0.f;
        for (int i = 0; i < D; i++) s += keys[(size_t)t * D + i] * keys[(size_t)t * D + i];
        out[t] = sqrtf(s);
    }
}
