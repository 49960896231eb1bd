/* dtype.h - element types of checkpoint tensors and scalar conversions to/from fp32.
 * Conversions are exact for bf16/f16 -> f32; f32 -> bf16 rounds to nearest even (as torch).
 */
#ifndef ZP_DTYPE_H
#define ZP_DTYPE_H

#include <stdint.h>
#include <string.h>

typedef enum { ZP_DTYPE_F32, ZP_DTYPE_F16, ZP_DTYPE_BF16, ZP_DTYPE_COUNT } zp_dtype;

static inline int zp_dtype_size(zp_dtype t) { return t == ZP_DTYPE_F32 ? 4 : 2; }
static inline const char *zp_dtype_name(zp_dtype t) {
    return t == ZP_DTYPE_F32 ? "F32" : t == ZP_DTYPE_F16 ? "F16" : t == ZP_DTYPE_BF16 ? "BF16" : "?";
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

/* Converts n elements of type t at src to fp32. */
static inline void zp_convert_to_f32(float *dst, const void *src, zp_dtype t, size_t n) {
    if (t == ZP_DTYPE_F32) { memcpy(dst, src, n * 4); return; }
    const uint16_t *s = (const uint16_t *)src;
    if (t == ZP_DTYPE_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = zp_bf16_to_f32(s[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = zp_f16_to_f32(s[i]);
}

#endif
