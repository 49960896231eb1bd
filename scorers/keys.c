/* keys.c - token scores from the keys alone, no queries: the key-based baselines.
 *
 * key-norm (kvpress KnormPress): -||k_t||, so that the lowest-norm keys are kept.
 * KeyDiff (kvpress KeyDiffPress): -cos(k_t, a), a the mean of the unit keys of the head: the
 * keys least like the mean direction are kept.
 * random: a uniform draw in [0, 1) hashed from a seed, the (layer, KV head) and the token's place
 * in the compression (n, t): integers only, so every backend draws the same, and a request's
 * draws depend on its own lengths, never on the schedule; each compression draws afresh.
 * key-norm's scores are rounded to ZP_KEY_NORM_BITS significant bits (scorers.h: why).
 * Complexity O(n D) time; D floats of scratch (KeyDiff's anchor).
 */
#include <math.h>

#include "key_hash.h"
#include "scorers.h"

float scorer_key_draw(uint32_t seed, int layer, int head, int n, int t) { return zp_key_draw(seed, layer, head, n, t); }

void scorer_key_score(zp_key_score kind, uint32_t seed, int layer, int head, const float *keys, int n, int D, float *out, float *anchor) {
    if (kind == ZP_KEYS_RANDOM) {
        for (int t = 0; t < n; t++) out[t] = zp_key_draw(seed, layer, head, n, t);
        return;
    }
    scorer_key_norm(keys, n, D, out); /* ||k_t|| */
    if (kind == ZP_KEYS_NORM) {
        for (int t = 0; t < n; t++) out[t] = -zp_round_bits(out[t], ZP_KEY_NORM_BITS);
        return;
    }
    for (int i = 0; i < D; i++) anchor[i] = 0.f; /* a = mean_t k_t / max(||k_t||, eps) */
    for (int t = 0; t < n; t++) {
        const float inv = 1.0f / fmaxf(out[t], ZP_KEY_NORM_EPS);
        for (int i = 0; i < D; i++) anchor[i] += keys[(size_t)t * D + i] * inv;
    }
    float an = 0.f;
    for (int i = 0; i < D; i++) {
        anchor[i] /= (float)n;
        an += anchor[i] * anchor[i];
    }
    an = sqrtf(an);
    for (int t = 0; t < n; t++) {
        float dot = 0.f;
        for (int i = 0; i < D; i++) dot += keys[(size_t)t * D + i] * anchor[i];
        out[t] = -dot / (fmaxf(out[t], ZP_COS_EPS) * fmaxf(an, ZP_COS_EPS));
    }
}
