/* test_cuda_fp8.cu - the device's FP8 E4M3 conversions (model/cuda/fp8_cuda.cuh: the hardware
 * cvt) against dtype.h's zp_f32_to_e4m3 / zp_e4m3_to_f32 (which test_fp8 ties to ml_dtypes'
 * float8_e4m3fn and check_fp8_torch.py to torch's cast) run on the same device: every one of the
 * 2^32 fp32 bit patterns encoded (a NaN's sign not compared), every byte decoded (NaN for NaN),
 * and every pair of bytes widened to an fp16 pair (e4m3x2_to_f16x2, the tensor-core decode's).
 * Exits 77 without a GPU. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

#include "../model/cuda/fp8_cuda.cuh"
#include "../model/dtype.h"

__device__ __forceinline__ int same_byte(uint8_t got, uint8_t want) { return got == want || ((got & 0x7f) == 0x7f && (want & 0x7f) == 0x7f); }

/* bad[0]: fp32 patterns whose encodings differ; first[0]: the first such pattern */
__global__ void encode_all(unsigned long long *bad, unsigned *first) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    unsigned long long n = 0;
    for (uint64_t u = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < (1ull << 32); u += stride) {
        const float x = __uint_as_float((unsigned)u);
        if (!same_byte(zp_e4m3_encode(x), zp_f32_to_e4m3(x))) {
            if (!n) atomicMin(first, (unsigned)u);
            n++;
        }
    }
    if (n) atomicAdd(bad, n);
}

__global__ void decode_all(int *bad) {
    const int b = threadIdx.x;
    const float hw = zp_e4m3_decode((uint8_t)b), sw = zp_e4m3_to_f32((uint8_t)b);
    if (isnan(sw) ? !isnan(hw) : __float_as_uint(hw) != __float_as_uint(sw)) atomicAdd(bad, 1);
}

/* Every pair of bytes widened to two fp16 values (the tensor-core decode's fragments): each
 * exactly the byte's value, the first byte in the low half (NaN for NaN). */
__device__ __forceinline__ int same_value(float got, float want) {
    return isnan(want) ? isnan(got) : __float_as_uint(got) == __float_as_uint(want);
}
__global__ void widen_all(int *bad) {
    const unsigned u = blockIdx.x * blockDim.x + threadIdx.x; /* 65,536 pairs */
    const uint32_t w = e4m3x2_to_f16x2(u);
    const float lo = __half2float(__ushort_as_half((unsigned short)(w & 0xffffu))), hi = __half2float(__ushort_as_half((unsigned short)(w >> 16)));
    if (!same_value(lo, zp_e4m3_to_f32((uint8_t)(u & 0xff))) || !same_value(hi, zp_e4m3_to_f32((uint8_t)(u >> 8)))) atomicAdd(bad, 1);
}

#define CK(call)                                                                                         \
    do {                                                                                                 \
        cudaError_t e_ = (call);                                                                         \
        if (e_ != cudaSuccess) { fprintf(stderr, "%s failed at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } \
    } while (0)

int main(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) { printf("test_cuda_fp8: skipped (no GPU)\n"); return 77; }
    unsigned long long *bad, hbad = 0;
    unsigned *first, hfirst = 0xffffffffu;
    int *dbad, hdbad = 0;
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMalloc(&first, sizeof *first));
    CK(cudaMalloc(&dbad, sizeof *dbad));
    CK(cudaMemcpy(bad, &hbad, sizeof hbad, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(first, &hfirst, sizeof hfirst, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbad, &hdbad, sizeof hdbad, cudaMemcpyHostToDevice));
    encode_all<<<4096, 256>>>(bad, first);
    CK(cudaGetLastError());
    decode_all<<<1, 256>>>(dbad);
    CK(cudaGetLastError());
    int *wbad, hwbad = 0;
    CK(cudaMalloc(&wbad, sizeof *wbad));
    CK(cudaMemcpy(wbad, &hwbad, sizeof hwbad, cudaMemcpyHostToDevice));
    widen_all<<<256, 256>>>(wbad);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hfirst, first, sizeof hfirst, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hdbad, dbad, sizeof hdbad, cudaMemcpyDeviceToHost));
    printf("test_cuda_fp8: %llu of 2^32 fp32 patterns encode otherwise than zp_f32_to_e4m3%s", hbad, hbad ? " (first " : "");
    if (hbad) printf("0x%08x)", hfirst);
    CK(cudaMemcpy(&hwbad, wbad, sizeof hwbad, cudaMemcpyDeviceToHost));
    printf("; %d of 256 bytes decode otherwise than zp_e4m3_to_f32; %d of 65,536 byte pairs widen to fp16 otherwise\n", hdbad, hwbad);
    const int fail = hbad != 0 || hdbad != 0 || hwbad != 0;
    printf("test_cuda_fp8: %s\n", fail ? "FAILED" : "all checks passed");
    return fail;
}
