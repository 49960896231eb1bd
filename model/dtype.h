/* dtype.h - element types of checkpoint tensors and scalar conversions to/from fp32.
 * Conversions are exact for bf16/f16/fp8 -> f32; f32 -> bf16 rounds to nearest even (as torch);
 * f32 -> fp8 E4M3 (torch's float8_e4m3fn: bias 7, no infinities, S.1111.111 the only NaN, 448 the
 * largest) rounds to nearest even and saturates at +-448, as a KV cache quantizes (vLLM clamps
 * to the type's range before its cast; torch's bare cast would give NaN past 464).
 */
#ifndef ZP_DTYPE_H
#define ZP_DTYPE_H

#include <stdint.h>
#include <string.h>

/* The fp8 conversions compile for the device too (CUDA's reference of its hardware cvt:
 * test_cuda_fp8). */
#ifdef __CUDACC__
#define ZP_HOST_DEVICE __host__ __device__
#else
#define ZP_HOST_DEVICE
#endif

/* U8: raw bytes (MXFP4 blocks and scales), never converted as numbers (zp_dtype_is_float). */
typedef enum { ZP_DTYPE_F32, ZP_DTYPE_F16, ZP_DTYPE_BF16, ZP_DTYPE_U8, ZP_DTYPE_COUNT } zp_dtype;

static inline int zp_dtype_size(zp_dtype t) { return t == ZP_DTYPE_F32 ? 4 : t == ZP_DTYPE_U8 ? 1 : 2; }
static inline int zp_dtype_is_float(zp_dtype t) { return t == ZP_DTYPE_F32 || t == ZP_DTYPE_F16 || t == ZP_DTYPE_BF16; }
static inline const char *zp_dtype_name(zp_dtype t) {
    return t == ZP_DTYPE_F32 ? "F32" : t == ZP_DTYPE_F16 ? "F16" : t == ZP_DTYPE_BF16 ? "BF16" : t == ZP_DTYPE_U8 ? "U8" : "?";
}

static inline float zp_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t zp_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float zp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) { man <<= 1; exp--; }
            u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t zp_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = u & 0x7fffffu;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}

/* Converts n elements of float type t (zp_dtype_is_float) at src to fp32. */
static inline void zp_convert_to_f32(float *dst, const void *src, zp_dtype t, size_t n) {
    if (t == ZP_DTYPE_F32) { memcpy(dst, src, n * 4); return; }
    const uint16_t *s = (const uint16_t *)src;
    if (t == ZP_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = zp_bf16_to_f32(s[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = zp_f16_to_f32(s[i]);
}

/* fp8 E4M3 (float8_e4m3fn) -> f32, exact: subnormals m x 2^-9, normals (1 + m/8) x 2^(e-7). */
static inline ZP_HOST_DEVICE float zp_e4m3_to_f32(uint8_t b) {
    const uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
    float f;
    if (e == 15 && m == 7) {
        uint32_t nan = 0x7fc00000u | ((uint32_t)(b & 0x80u) << 24);
        memcpy(&f, &nan, 4);
        return f;
    }
    if (e == 0) f = (float)m * (1.0f / 512.0f);
    else {
        const uint32_t u = ((e + 120u) << 23) | (m << 20); /* rebias 7 -> 127 */
        memcpy(&f, &u, 4);
    }
    return (b & 0x80u) ? -f : f;
}

/* f32 -> fp8 E4M3, round to nearest even, saturating at +-448 (infinities too); NaN stays NaN. */
static inline ZP_HOST_DEVICE uint8_t zp_f32_to_e4m3(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    if (u >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448 (and infinity): the largest */
    if (u < 0x3c800000u) { /* below 2^-6, the smallest normal: a multiple of 2^-9, ties to even */
        float a;
        memcpy(&a, &u, 4);
        const float k = a * 512.0f; /* exact: a power-of-two scale, k < 8 */
        uint32_t n = (uint32_t)k;
        const float rest = k - (float)n;
        if (rest > 0.5f || (rest == 0.5f && (n & 1u))) n++;
        return (uint8_t)(sign | n); /* n == 8 is the smallest normal's encoding */
    }
    /* normal: keep 3 of the 23 mantissa bits, ties to even, then rebias the exponent 127 -> 7 */
    u += 0x7ffffu + ((u >> 20) & 1u);
    const uint32_t r = (u >> 20) - (120u << 3);
    return (uint8_t)(sign | (r > 0x7eu ? 0x7eu : r)); /* a round up from below 448 never passes it: 448 is even */
}

#endif
