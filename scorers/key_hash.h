/* key_hash.h - what the key scores compute identically on the host (scorers/keys.c) and the device
 * (model/cuda/plan_cuda.cu), written once: the random policy's draw (MurmurHash3's 64-bit
 * finaliser folded over the seed, the layer, the KV head, n and t) and key-norm's rounding. */
#ifndef ZP_KEY_HASH_H
#define ZP_KEY_HASH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define ZP_HOST_DEVICE __host__ __device__
#else
#define ZP_HOST_DEVICE
#endif

#define ZP_KEY_HASH_INIT 0x9e3779b97f4a7c15ull

static inline ZP_HOST_DEVICE uint64_t zp_mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

/* The draw of (seed, layer, head, n, t): the top 24 bits of the hash, as a float in [0, 1), exact. */
static inline ZP_HOST_DEVICE float zp_key_draw(uint32_t seed, int layer, int head, int n, int t) {
    uint64_t h = zp_mix64(ZP_KEY_HASH_INIT ^ seed);
    h = zp_mix64(h ^ (uint32_t)layer);
    h = zp_mix64(h ^ (uint32_t)head);
    h = zp_mix64(h ^ (uint32_t)n);
    h = zp_mix64(h ^ (uint32_t)t);
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* x rounded to `bits` significant bits (to nearest, ties to even): exact and the same everywhere. */
static inline ZP_HOST_DEVICE float zp_round_bits(float x, int bits) {
    int e;
    const float m = frexpf(x, &e); /* x = m 2^e, 0.5 <= |m| < 1 */
    return ldexpf(rintf(ldexpf(m, bits)), e - bits);
}

#endif
