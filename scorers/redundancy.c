/* redundancy.c - key-similarity redundancy with the "last above threshold is protected" rule.
 *
 * c(x,y) = cosine of keys x and y (keys normalised by max(||k||, 1e-6)), c(x,x) = 0.
 * last(y) = the latest x != y in y's comparison set with c(x,y) > theta.
 * r[x] = sum_{y in set(x), y != x} c(x,y) - sum_{y : last(y) = x} c(x,y).
 * The newest member of a group of near-duplicates earns nothing from the older ones, so older
 * copies look redundant and are evicted first.
 * Raw (R-KV, Zipage raw): the set is the whole request, O(n^2 D) time.
 * Lightning (Zipage): the set is the token's own block of `block` tokens, O(n block D) time.
 * R-KV's reference quirk (optional): a token y with no partner above theta erases c(0,y)
 * from token 0's sum (its "last index" of an all-false mask is 0).
 */
#include <math.h>

#include "scorers.h"

static void normalise(const float *keys, int n, int D, float *kn) {
    for (int t = 0; t < n; t++) {
        float s = 0.f;
        for (int i = 0; i < D; i++) s += keys[(size_t)t * D + i] * keys[(size_t)t * D + i];
        float inv = 1.0f / fmaxf(sqrtf(s), 1e-6f);
        for (int i = 0; i < D; i++) kn[(size_t)t * D + i] = keys[(size_t)t * D + i] * inv;
    }
}

static float cosine(const float *kn, int D, int x, int y) {
    float s = 0.f;
    for (int i = 0; i < D; i++) s += kn[(size_t)x * D + i] * kn[(size_t)y * D + i];
    return s;
}

/* Tokens [lo, hi) form one comparison set. */
static void redundancy_set(const float *kn, int D, int lo, int hi, float theta, int rkv_quirk, float *r) {
    for (int x = lo; x < hi; x++) {
        float s = 0.f;
        for (int y = lo; y < hi; y++)
            if (y != x) s += cosine(kn, D, x, y);
        r[x] = s;
    }
    for (int y = lo; y < hi; y++) { /* subtract c(last(y), y) from r[last(y)] */
        int last = -1;
        for (int x = hi - 1; x >= lo && last < 0; x--)
            if (x != y && cosine(kn, D, x, y) > theta) last = x;
        if (last >= 0) r[last] -= cosine(kn, D, last, y);
        else if (rkv_quirk && y != lo) r[lo] -= cosine(kn, D, lo, y);
    }
}

void scorer_redundancy_raw(const float *keys, int n, int D, float theta, int rkv_quirk, float *r, float *knorm) {
    normalise(keys, n, D, knorm);
    redundancy_set(knorm, D, 0, n, theta, rkv_quirk, r);
}

void scorer_redundancy_lightning(const float *keys, int n, int D, int block, float theta, float *r, float *knorm) {
    normalise(keys, n, D, knorm);
    for (int lo = 0; lo < n; lo += block) redundancy_set(knorm, D, lo, lo + block < n ? lo + block : n, theta, 0, r);
}
