/* cuda_common.cuh - shared by the CUDA backend files: the context, the one checking macro for
 * CUDA/cuBLAS calls and kernel launches (naming the call, file and line), ceil-div.
 * Precision: weights, K/V, query and score caches in bf16; activations fp32; GEMMs take bf16
 * operands and accumulate in fp32 (cuBLAS compute 32F). */
#ifndef ZP_CUDA_COMMON_CUH
#define ZP_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../backend.h"

typedef __nv_bfloat16 bf16;

/* Element access for the two storage types (bf16 default, fp32 for the parity mode). */
__device__ __forceinline__ float zp_ld(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float zp_ld(float x) { return x; }
__device__ __forceinline__ void zp_st(bf16 *p, float v) { *p = __float2bfloat16(v); }
__device__ __forceinline__ void zp_st(float *p, float v) { *p = v; }

/* Runs `call` templated on the storage type T of weights and caches. */
#define ZP_DISPATCH_STORAGE(fp32, ...)      \
    do {                                    \
        if (fp32) {                         \
            typedef float T;                \
            __VA_ARGS__;                    \
        } else {                            \
            typedef bf16 T;                 \
            __VA_ARGS__;                    \
        }                                   \
    } while (0)

#define ZP_CUDA_CHECK(call)                                                                                  \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess)                                                                               \
            return zp_fail(ZP_ERR_BACKEND, "cuda: %s failed at %s:%d: %s", #call, __FILE__, __LINE__,          \
                           cudaGetErrorString(e_));                                                          \
    } while (0)

#define ZP_CUBLAS_CHECK(call)                                                                                \
    do {                                                                                                     \
        cublasStatus_t s_ = (call);                                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                     \
            return zp_fail(ZP_ERR_BACKEND, "cublas: %s failed at %s:%d: status %d", #call, __FILE__, __LINE__, \
                           (int)s_);                                                                         \
    } while (0)

/* After every launch: the op name, and launch errors (not asynchronous faults) reported. */
#define ZP_LAUNCH_CHECK(op)                                                                                  \
    do {                                                                                                     \
        cudaError_t e_ = cudaGetLastError();                                                                 \
        if (e_ != cudaSuccess)                                                                               \
            return zp_fail(ZP_ERR_BACKEND, "cuda: launch of %s failed at %s:%d: %s", op, __FILE__, __LINE__,    \
                           cudaGetErrorString(e_));                                                          \
    } while (0)

static inline int zp_ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

/* Device copies of the step's batch arrays (one packed upload per set_batch). */
typedef struct {
    int *ids, *positions, *slots, *q_start, *q_len, *kv_len, *tables, *out_rows, *row_seq, *qstore_rows, *qstore_slots;
} cuda_batch_dev;

typedef struct {
    int device;
    int fp32;                   /* weights and caches in fp32, fp32 GEMMs (parity mode) */
    size_t elem;                /* bytes of one stored weight/cache element */
    cudaStream_t stream;        /* model ops */
    cublasHandle_t cublas;
    zp_batch b;                 /* host copy of the step's batch */
    int *packed;                /* device buffer holding all batch arrays */
    size_t packed_cap;          /* ints */
    cuda_batch_dev d;
    float *inv_freq;            /* [D/2] device */
    int half_dim;
    bf16 *xbf;                  /* GEMM operand conversion scratch */
    size_t xbf_cap;
    float *gather;              /* device scratch for host gathers */
    size_t gather_cap;
    uint8_t *keep;              /* device scratch for compaction masks */
    float *scores;
    size_t keep_cap;
} cuda_ctx;

#define CUDA_CTX(be) ((cuda_ctx *)(be)->ctx)

/* compress_cuda.cu */
zp_status cuda_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer);
zp_status cuda_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out);
zp_status cuda_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out);
zp_status cuda_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out);
zp_status cuda_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                          const int *src, int n, const int *dst, const uint8_t *keep, const float *scores);
zp_status cuda_scratch(cuda_ctx *c, size_t floats);

#endif
