/* fp8_cuda.cuh - FP8 E4M3 on the device, for the K/V cache of kv_dtype fp8 (issue 39): the
 * hardware conversions (cvt with satfinite: round to nearest even, saturating at +-448,
 * infinities too, NaN kept), which must equal dtype.h's zp_f32_to_e4m3 / zp_e4m3_to_f32 on
 * every input (test_cuda_fp8 checks all 2^32 fp32 patterns and the 256 bytes on the GPU).
 * Deliberately not here: the scales (the caller divides and multiplies) and the kernels. */
#ifndef ZP_FP8_CUDA_CUH
#define ZP_FP8_CUDA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

__device__ __forceinline__ uint8_t zp_e4m3_encode(float x) { return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
__device__ __forceinline__ float zp_e4m3_decode(uint8_t b) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3)));
}
/* Two E4M3 bytes (the first element in the low byte) as two fp16 values in one word (the first
 * in the low half), exactly, in one instruction (cvt.rn.f16x2.e4m3x2): every E4M3 value,
 * subnormals included, is an fp16 value (the tensor-core decode's K/V fragments of an fp8 cache). */
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t two) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)two, __NV_E4M3);
    return (uint32_t)h.x | (uint32_t)h.y << 16;
}

#endif
