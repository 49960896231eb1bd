/* kv_elem.cuh - the K/V cache's element types on the device: the storage type T (bf16, or fp32
 * in the parity mode) or FP8 E4M3 bytes (e4m3, kv_dtype fp8) with a scale per (layer, KV head),
 * as the CPU reference (model/cpu/cpu_ops.h): a write stores e4m3(x / scale), a read gives the
 * byte's value x scale, in fp32. The scales are zp_attn_dims.dev_scales ([2][L][Hkv] in device
 * memory, NULL: 1.0). ZP_DISPATCH_KV instantiates a launch for T and the cache type KT.
 * Deliberately not here: the conversions themselves (fp8_cuda.cuh) and any kernel. */
#ifndef ZP_KV_ELEM_CUH
#define ZP_KV_ELEM_CUH

#include "cuda_common.cuh"
#include "fp8_cuda.cuh"

struct e4m3 { /* one E4M3 byte of an fp8 K/V cache */
    uint8_t b;
};

__device__ __forceinline__ float kv_ld(bf16 x, float) { return __bfloat162float(x); }
__device__ __forceinline__ float kv_ld(float x, float) { return x; }
__device__ __forceinline__ float kv_ld(e4m3 x, float s) { return zp_e4m3_decode(x.b) * s; }
__device__ __forceinline__ void kv_st(bf16 *p, float v, float) { *p = __float2bfloat16(v); }
__device__ __forceinline__ void kv_st(float *p, float v, float) { *p = v; }
__device__ __forceinline__ void kv_st(e4m3 *p, float v, float s) { p->b = zp_e4m3_encode(v / s); }

/* The K (side 0) or V (side 1) scale of KV head g of `layer` (1.0 without dev_scales). */
__device__ __forceinline__ float kv_scale(const zp_attn_dims &d, int side, int layer, int g) {
    return d.dev_scales ? d.dev_scales[((size_t)side * d.n_layers + layer) * d.n_kv_heads + g] : 1.0f;
}
/* The layer's K (side 0) or V scales [Hkv] as a device pointer (NULL: 1.0), for kernels that do
 * not take the dims. */
static inline const float *kv_layer_scales(const zp_attn_dims *d, int side, int layer) {
    return d->dev_scales ? d->dev_scales + ((size_t)side * d->n_layers + layer) * d->n_kv_heads : NULL;
}
__device__ __forceinline__ float kv_head_scale(const float *s, int g) { return s ? s[g] : 1.0f; }

/* An fp8 cache needs its scales on the device. */
static inline zp_status kv_check(const zp_attn_dims *d, const char *op) {
    if (d->kv_fp8 && !d->dev_scales) return zp_fail(ZP_ERR_INVALID, "cuda %s: an fp8 K/V cache without device scales (dims.dev_scales)", op);
    return ZP_OK;
}

/* Runs `call` templated on the storage type T and the K/V cache type KT (T, or e4m3). */
#define ZP_DISPATCH_KV(fp32, fp8, ...)                \
    do {                                              \
        if (fp8) {                                    \
            typedef e4m3 KT;                          \
            ZP_DISPATCH_STORAGE(fp32, __VA_ARGS__);   \
        } else if (fp32) {                            \
            typedef float T;                          \
            typedef float KT;                         \
            __VA_ARGS__;                              \
        } else {                                      \
            typedef bf16 T;                           \
            typedef bf16 KT;                          \
            __VA_ARGS__;                              \
        }                                             \
    } while (0)

#endif
