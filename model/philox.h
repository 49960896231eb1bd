/* philox.h - Philox4x32-10 (Salmon et al., SC'11) as one inline function compiled for the
 * host (sampler.c) and the device (model/cuda/sample_cuda.cu), so both draw bit-identical
 * numbers for the same (seed, request id, sample index, step). Nothing else lives here. */
#ifndef ZP_PHILOX_H
#define ZP_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define ZP_HOST_DEVICE __host__ __device__
#else
#define ZP_HOST_DEVICE
#endif

/* out = philox(counter, key), 10 rounds. */
ZP_HOST_DEVICE static inline void zp_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)M0 * c0, p1 = (uint64_t)M1 * c2;
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += W0;
        k1 += W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Uniform in [0,1) with 24 random bits for (seed, request id, sample index, step). */
ZP_HOST_DEVICE static inline float zp_philox_uniform(uint64_t seed, uint64_t request_id, uint32_t sample_index, uint32_t step) {
    const uint32_t ctr[4] = {(uint32_t)request_id, (uint32_t)(request_id >> 32), sample_index, step};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    zp_philox4x32_10(ctr, key, out);
    return (float)(out[0] >> 8) * (1.0f / 16777216.0f);
}

#endif
