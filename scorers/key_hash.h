/* key_hash.h - the hash behind the random policy's draws (scorer_key_draw), written once for the
 * host (scorers/keys.c) and the device (scorers/cuda/plan_cuda.cu): MurmurHash3's 64-bit
 * finaliser, folded over a seed and the bits of a key. */
#ifndef ZP_KEY_HASH_H
#define ZP_KEY_HASH_H

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

/* The draw of a hash state: its top 24 bits as a float in [0, 1), exact. */
static inline ZP_HOST_DEVICE float zp_hash_unit(uint64_t h) { return (float)(h >> 40) * (1.0f / 16777216.0f); }

#endif
