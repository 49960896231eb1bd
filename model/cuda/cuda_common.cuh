/* cuda_common.cuh - shared by the CUDA backend files: the context, the one checking macro for
 * CUDA/cuBLAS calls and kernel launches (naming the call, file and line), ceil-div.
 * Precision: weights, K/V and query caches in bf16, the score cache in fp32; activations fp32; GEMMs take bf16
 * operands and accumulate in fp32 (cuBLAS compute 32F). */
#ifndef ZP_CUDA_COMMON_CUH
#define ZP_CUDA_COMMON_CUH

#include <pthread.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../backend.h"
#include "fp8_cuda.cuh" /* zp_e4m3_decode: raw_vec of E4M3 bytes */

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

/* N consecutive elements of T held as raw 32-bit words (bf16 stays packed: half the registers
 * of floats), loaded with the widest vector loads and widened to fp32 when used. */
template <typename T, int N>
struct raw_vec {
    static constexpr int W = N * (int)sizeof(T) / 4; /* 32-bit words */
    uint32_t w[W];
    __device__ __forceinline__ void zero() {
#pragma unroll
        for (int i = 0; i < W; i++) w[i] = 0u;
    }
    __device__ __forceinline__ void load(const T *p) { /* p aligned to N elements */
        if constexpr (W % 4 == 0) {
#pragma unroll
            for (int i = 0; i < W; i += 4) {
                const uint4 r = ((const uint4 *)p)[i / 4];
                w[i] = r.x; w[i + 1] = r.y; w[i + 2] = r.z; w[i + 3] = r.w;
            }
        } else if constexpr (W == 2) {
            const uint2 r = *(const uint2 *)p;
            w[0] = r.x; w[1] = r.y;
        } else {
            static_assert(W == 1, "raw_vec: 4, 8 or a multiple of 16 bytes");
            w[0] = *(const uint32_t *)p;
        }
    }
    __device__ __forceinline__ void to_float(float *o) const {
#pragma unroll
        for (int i = 0; i < W; i++) {
            if constexpr (sizeof(T) == 1) { /* E4M3 bytes (kv_elem.cuh): decoded, not yet scaled */
#pragma unroll
                for (int j = 0; j < 4; j++) o[4 * i + j] = zp_e4m3_decode((uint8_t)(w[i] >> (8 * j)));
            } else if constexpr (sizeof(T) == 2) {
                const float2 f = __bfloat1622float2(*(const __nv_bfloat162 *)&w[i]);
                o[2 * i] = f.x;
                o[2 * i + 1] = f.y;
            } else {
                o[i] = __uint_as_float(w[i]);
            }
        }
    }
    /* the same, each value times s when T is an E4M3 byte (an fp8 K/V cache's scale) */
    __device__ __forceinline__ void to_float(float *o, float s) const {
        to_float(o);
        if constexpr (sizeof(T) == 1) {
#pragma unroll
            for (int i = 0; i < N; i++) o[i] *= s;
        }
    }
};

/* Warp-wide sum (float or double) and max of one value per lane (every lane calls and gets the result). */
template <typename V>
__device__ __forceinline__ V zp_warp_sum(V v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float zp_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum (float or double) and max of one value per thread (blockDim a multiple of 32,
 * every thread calls; sh: 32 values of shared memory). Every thread gets the result. */
template <typename V>
__device__ __forceinline__ V zp_block_sum(V v, V *sh) {
    v = zp_warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = (blockDim.x + 31) / 32;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    V s = 0;
    for (int i = 0; i < nw; i++) s += sh[i];
    return s;
}
__device__ __forceinline__ float zp_block_max(float v, float *sh) {
    v = zp_warp_max(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = (blockDim.x + 31) / 32;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float s = sh[0];
    for (int i = 1; i < nw; i++) s = fmaxf(s, sh[i]);
    return s;
}

static inline int zp_ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

/* Device copies of the step's batch arrays (one packed upload per set_batch). kv_len and tables
 * are those of the layer view in use (cuda_use_layer_view), kv_len0 and tables0 all views. */
typedef struct {
    int *ids, *positions, *slots, *q_start, *q_len, *kv_len, *tables, *out_rows, *row_seq;
    int *row_qslot;            /* [T] the query-cache row each batch row's query goes to, or -1 (from qstore_rows/slots) */
    int *tile_seq, *tile_row0; /* [n_ptiles] prefill query tiles: sequence, first row within it */
    int *kv_len0, *tables0;    /* [n_views][S], [n_views][S][max_blocks] */
} cuda_batch_dev;

#define CUDA_PREFILL_TILE 16 /* query rows of one prefill attention tile */

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
    int n_ptiles;               /* prefill query tiles of this step (CUDA_PREFILL_TILE rows each) */
    float *inv_freq;            /* [D/2] device */
    int half_dim;
    float rope_scale;           /* the rope's attention factor: multiplies cos and sin */
    float *gather;              /* device scratch for host gathers */
    size_t gather_cap;          /* bytes, as every *_cap below */
    uint8_t *keep;              /* device scratch for host-path compaction masks */
    size_t keep_cap;
    float *scores;
    size_t scores_cap;
    int *tab;                   /* host-path block tables */
    size_t tab_cap;
    /* device-side compression: its own stream, ordered after the model stream by an event */
    cudaStream_t cstream;
    cudaEvent_t ev_model, ev_done;
    int done_pending;           /* ev_done recorded and not yet waited for */
    int *cpack;                 /* jobs, requests and tables of one compress call */
    size_t cpack_cap;
    int *hpack;                 /* host staging of cpack */
    size_t hpack_cap;
    void *cwork;                /* per-job score rows and keep masks */
    float *trig_stats;          /* TriAttention's statistics on the device, uploaded from trig_src */
    const float *trig_src;
    size_t cwork_cap;
    void *srows;                /* sampling rows and their token ids */
    size_t srows_cap;
    int prof;                   /* ZIPAGE_PROFILE=1: events around every op */
    cudaEvent_t *pev;           /* [2 * ZP_PROF_MAX] begin/end events of this step's ops */
    int *pcat;                  /* [ZP_PROF_MAX] their zp_op_kind */
    int pn;
    double psec[ZP_OP_COUNT];   /* accumulated device seconds */
    cudaEvent_t ev_upload;      /* the last batch upload (its pinned source may be reused after it) */
    int *hbatch;                /* pinned host staging of the batch arrays */
    size_t hbatch_cap;
    int n_sms;                  /* streaming multiprocessors (decode attention splits for them) */
    zp_backend_options knobs;   /* the tuning options of its creation (backend.h): the decode kernel's choice
                                   (decode_attn_cuda.cu), the GEMM tuner, profiling, priorities */
    void *dec_part;             /* split decode attention: partial outputs and softmax statistics */
    size_t dec_part_cap;
    unsigned *amax;             /* kv_amax's [2][Hkv] maxima as float bit patterns */
    size_t amax_cap;
    struct cuda_graph_entry *graphs; /* [CUDA_GRAPH_MAX] recorded decode forwards (graph_cuda.cu) */
    uint64_t graph_clock;       /* LRU clock of the graph table */
    int graph_slot;             /* the entry being recorded, or -1 */
    pthread_mutex_t record_lock; /* held while a graph records the model stream: the async
                                    compression thread's event record on that stream waits */
    struct cuda_gemm_tuner *gemm; /* ZIPAGE_GEMM_TUNE=1: measured cublasLt algorithms (gemm_cuda.cu) */
} cuda_ctx;

#define CUDA_CTX(be) ((cuda_ctx *)(be)->ctx)

#define ZP_PROF_MAX 8192
/* Every op on the model stream opens one: when profiling, it times the op with events at
 * construction and destruction. */
struct zp_prof_scope {
    cuda_ctx *c;
    int i;
    zp_prof_scope(cuda_ctx *ctx, int kind) : c(ctx), i(-1) {
        if (!c->prof || c->pn >= ZP_PROF_MAX) return;
        i = c->pn++;
        c->pcat[i] = kind;
        cudaEventRecord(c->pev[2 * i], c->stream);
    }
    ~zp_prof_scope() {
        if (i >= 0) cudaEventRecord(c->pev[2 * i + 1], c->stream);
    }
};
/* Four bf16 roundings stored as one 8-byte word. */
__device__ __forceinline__ void st_bf16x4(bf16 *p, float4 v) {
    const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
    uint2 w;
    w.x = *(const uint32_t *)&a;
    w.y = *(const uint32_t *)&b;
    *(uint2 *)p = w;
}
/* The MLP activation of one gate value g and its up value u. */
__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }
/* An activation buffer of the operand type (backend.h ZP_ACT_OPERAND: the storage type, bf16
 * or fp32 in the parity mode) as the (fp32, bf16) output pair the attention kernels take: the
 * other one is NULL. */
static inline float *cuda_operand_f32(const cuda_ctx *c, void *p) { return c->fp32 ? (float *)p : NULL; }
static inline bf16 *cuda_operand_bf16(const cuda_ctx *c, void *p) { return c->fp32 ? NULL : (bf16 *)p; }
/* out[i] = bf16(x[i]), i < n (weight uploads). */
__global__ void to_bf16_kernel(bf16 *out, const float *x, size_t n);
/* Adds the recorded ops' times to psec (waits for them). */
zp_status cuda_prof_flush(cuda_ctx *c);
/* Points d.kv_len and d.tables at layer `layer`'s view of the batch (zp_batch_layer on the
 * device); the attention and history ops call it first. */
static inline void cuda_use_layer_view(cuda_ctx *c, int layer) {
    const int view = zp_batch_view(&c->b, layer);
    c->d.kv_len = c->d.kv_len0 + (size_t)view * c->b.n_seqs;
    c->d.tables = c->d.tables0 + (size_t)view * c->b.n_seqs * c->b.max_blocks;
}

/* compress_cuda.cu */
zp_status cuda_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer);
zp_status cuda_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out);
zp_status cuda_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out);
zp_status cuda_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out);
zp_status cuda_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                          const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift);
zp_status cuda_scratch(cuda_ctx *c, size_t floats);
zp_status cuda_grow(cuda_ctx *c, void **buf, size_t *cap, size_t bytes);
/* 1 while this thread records a graph (graph_cuda.cu). */
int cuda_graph_recording_here(void);
zp_status cuda_compress(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                        const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache, void *score_cache);
zp_status cuda_compress_wait(zp_backend *be);
/* decode_attn_cuda.cu */
zp_status cuda_graph_begin(zp_backend *be, uint64_t key, int *hit, int *recording);
zp_status cuda_graph_end(zp_backend *be, int ok);
void cuda_graph_free(cuda_ctx *c);
/* Attention of every batch row by the exact row kernel (any even head size up to 512, any
 * group): prefill's fallback and decode's for shapes its tensor-core kernels do not take. */
zp_status cuda_attn_rows(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, const float *q, const void *k_cache,
                         const void *v_cache, int layer);
zp_status cuda_attn_prefill(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                            int layer);
/* history_cuda.cu */
zp_status cuda_attn_history(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache, void *stats,
                            int layer);
zp_status cuda_attn_decode(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                           int layer);
/* gemm_cuda.cu: row-major out[M,N] = x[M,K] . w[N,K]^T, fp32 sums; w and x in the storage's
 * type (bf16, or fp32 in the parity mode), out of out_type (CUDA_R_32F, or CUDA_R_16BF). With
 * the gemm_tune option and bf16 storage by the fastest measured cublasLt algorithm for the shape
 * and output type, else by cublasGemmEx's heuristic. */
zp_status cuda_gemm_tuner_create(cuda_ctx *c);
void cuda_gemm_tuner_free(cuda_ctx *c);
zp_status cuda_gemm(cuda_ctx *c, void *out, cudaDataType_t out_type, const void *w, const void *x, int M, int N, int K);
/* sample_cuda.cu */
zp_status cuda_sample(zp_backend *be, const void *logits, int n, int V, const zp_sample_row *rows, int *ids);

#endif
