/* keys.c - token scores from the keys alone, no queries: the key-based baselines.
 *
 * key-norm (kvpress KnormPress): -||k_t||, so that the lowest-norm keys are kept.
 * KeyDiff (kvpress KeyDiffPress): -cos(k_t, a), a the mean of the unit keys of the head: the
 * keys least like the mean direction are kept.
 * random: a uniform draw in [0, 1) hashed from a seed and the key's bits, so a token has the same
 * draw at every compression and on every backend (the CPU's fp32 keys and the device's bf16
 * keys read as floats hash alike), and no draw depends on the schedule.
 * Complexity O(n D) time; D floats of scratch (KeyDiff's anchor).
 */
#include <math.h>
#include <string.h>

#include "key_hash.h"
#include "scorers.h"

float scorer_key_draw(uint32_t seed, const float *key, int D) {
    uint64_t h = zp_mix64(ZP_KEY_HASH_INIT ^ seed);
    for (int i = 0; i < D; i++) {
        uint32_t bits;
        memcpy(&bits, &key[i], sizeof bits);
        h = zp_mix64(h ^ bits);
    }
    return zp_hash_unit(h);
}

void scorer_key_score(zp_key_score kind, uint32_t seed, const float *keys, int n, int D, float *out, float *anchor) {
    if (kind == ZP_KEYS_RANDOM) {
        for (int t = 0; t < n; t++) out[t] = scorer_key_draw(seed, keys + (size_t)t * D, D);
        return;
    }
    scorer_key_norm(keys, n, D, out); /* ||k_t|| */
    if (kind == ZP_KEYS_NORM) {
        for (int t = 0; t < n; t++) out[t] = -out[t];
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
