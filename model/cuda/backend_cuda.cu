/* backend_cuda.cu - the CUDA backend's model ops: embedding, RMSNorm, residual add, cuBLAS
 * GEMMs (operands in the storage type, fp32 accumulation), q/k-norm + RoPE + paged KV write,
 * SiLU-mul, row gather, the batch upload, profiling and the backend table. Activation buffers
 * are fp32 or of the operand type (backend.h zp_act_type), which is the storage type T: the
 * kernels below read and write operand rows as T (bf16, or fp32 in the parity mode).
 * Attention lives in prefill_attn_cuda.cu and decode_attn_cuda.cu, compression in
 * compress_cuda.cu. Not here: the GEMM entry and its tuner (gemm_cuda.cu), CUDA graphs
 * (graph_cuda.cu); its tuning options come from zp_backend_options (backend.h).
 * Build: nvcc -arch=sm_90 via CMake.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"
#include "kv_elem.cuh" /* the K/V cache's element types */
#include "../dtype.h" /* zp_bf16_to_f32, zp_f32_to_bf16 (host) */

/* ---------------------------------------------------------------- kernels */

template <typename T>
__global__ static void embed_kernel(float *out, const T *table, const int *ids, int H) {
    const int t = blockIdx.x;
    const T *row = table + (size_t)ids[t] * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) out[(size_t)t * H + i] = zp_ld(row[i]);
}

__device__ __forceinline__ float4 ld_w4(const float *w) { return *(const float4 *)w; }
__device__ __forceinline__ float4 ld_w4(const bf16 *w) {
    const uint2 r = *(const uint2 *)w;
    const float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&r.x), b = __bfloat1622float2(*(const __nv_bfloat162 *)&r.y);
    return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ void st_w4(float *p, float4 v) { *(float4 *)p = v; }
__device__ __forceinline__ void st_w4(bf16 *p, float4 v) { st_bf16x4(p, v); }

/* out[r,:] (T, the operand type) = x[r,:] / rms * w, after x += y when y is not NULL (each
 * thread rereads only the values it wrote); one block per row, 4 values per thread and access
 * (H % 4 == 0, as every supported model's hidden size). out may alias y. */
template <typename T>
__global__ static void rmsnorm_kernel(T *out, float *x, const T *y, const T *w, int H, float eps) {
    __shared__ float sh[32];
    float4 *xr = (float4 *)(x + (size_t)blockIdx.x * H);
    const T *yr = y ? y + (size_t)blockIdx.x * H : NULL;
    float ss = 0.f;
    for (int i = threadIdx.x; i < H / 4; i += blockDim.x) {
        float4 v = xr[i];
        if (yr) {
            const float4 a = ld_w4(yr + 4 * i);
            v.x += a.x; v.y += a.y; v.z += a.z; v.w += a.w;
            xr[i] = v;
        }
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    float inv = rsqrtf(zp_block_sum(ss, sh) / (float)H + eps);
    for (int i = threadIdx.x; i < H / 4; i += blockDim.x) {
        const float4 v = xr[i], g = ld_w4(w + 4 * i);
        st_w4(out + (size_t)blockIdx.x * H + 4 * i, make_float4(g.x * (v.x * inv), g.y * (v.y * inv), g.z * (v.z * inv), g.w * (v.w * inv)));
    }
}

/* x (fp32) += y (T) over n4 groups of 4 values. */
template <typename T>
__global__ static void add_kernel(float4 *x, const T *y, size_t n4) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 a = x[i];
    const float4 b = ld_w4(y + 4 * i);
    a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
    x[i] = a;
}

__global__ void to_bf16_kernel(bf16 *out, const float *x, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(x[i]);
}

/* out[M,N] (O: fp32, or the operand type) += bias[N] (T), rounded once to O. */
template <typename O, typename T>
__global__ static void bias_kernel(O *out, const T *bias, int M, int N) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)M * N) zp_st(&out[i], zp_ld(out[i]) + zp_ld(bias[i % N]));
}

/* out[T,I] = silu(g) * u of gu[T,2I] (the gate row, then the up row), both of the operand
 * type Y, 4 values per thread (I % 4 == 0). */
template <typename Y>
__global__ static void silu_mul_kernel(Y *out, const Y *gu, int T, int I) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= (size_t)T * I) return;
    const size_t t = i / I, j = i % I;
    const float4 g = ld_w4(gu + t * 2 * I + j), u = ld_w4(gu + t * 2 * I + I + j);
    st_w4(out + i, make_float4(silu_times(g.x, u.x), silu_times(g.y, u.y), silu_times(g.z, u.z), silu_times(g.w, u.w)));
}

__global__ static void gather_rows_kernel(float *out, const float *x, const int *rows, int H) {
    for (int i = threadIdx.x; i < H; i += blockDim.x) out[(size_t)blockIdx.x * H + i] = x[(size_t)rows[blockIdx.x] * H + i];
}

/* *dst = max(*dst, the warp's largest m) (lane 0 writes; every lane calls). */
__device__ __forceinline__ void warp_amax(unsigned *dst, unsigned m, int lane) {
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) atomicMax(dst, m);
}

/* Grid (T, ceil((Hq + 2 Hkv) / QKV_WARPS)), QKV_WARPS warps: warp w of block (t, b) takes head
 * h = b * QKV_WARPS + w of token t's Hq query, Hkv key and Hkv value heads. Query and key heads:
 * optional per-head RMSNorm, RoPE at positions[t] (cos/sin computed once per block, not per
 * head and lane), q heads to q_out [T,Hq,D] (fp32), k heads to the cache at slot_mapping[t];
 * value heads are copied there. x: the warp's head [D] in shared memory (RoPE pairs d with
 * d +- D/2, another lane's value). D even, D <= QKV_MAX_D.
 * With amax (kv_scales prompt's calibration) nothing is stored: each key head's largest |k| as
 * it would be stored and each value head's largest |v| over the rows that write a slot go to
 * amax[2][Hkv] as float bit patterns by atomicMax (of non-negative floats the pattern's order is
 * the value's; a NaN's pattern is above infinity's, so a NaN is kept, as the CPU's). */
#define QKV_WARPS 4
#define QKV_MAX_D ZP_MAX_HEAD_DIM
template <typename T, typename KT> /* qkv is of the operand type, T; the caches of KT (kv_elem.cuh), with the
                                      layer's scales ks, vs [Hkv] (NULL: 1.0) */
__global__ static void __launch_bounds__(QKV_WARPS * 32)
qkv_rope_kernel(const T *qkv, float *q_out, const T *q_norm, const T *k_norm, KT *kc, KT *vc, const float *ks, const float *vs,
                const int *positions, const int *slots, const float *inv_freq, float rope_scale, int Hq, int Hkv, int D, float eps,
                unsigned *amax) {
    __shared__ float cs[QKV_MAX_D / 2], sn[QKV_MAX_D / 2], xs[QKV_WARPS][QKV_MAX_D];
    const int t = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, half = D / 2;
    const int h = blockIdx.y * QKV_WARPS + warp, slot = slots[t];
    const float pos = (float)positions[t];
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, co;
        sincosf(pos * inv_freq[i], &s, &co);
        sn[i] = s * rope_scale; /* the rope's attention factor (yarn) scales cos and sin */
        cs[i] = co * rope_scale;
    }
    __syncthreads(); /* no barrier below: warps leave independently */
    if (h >= Hq + 2 * Hkv) return;
    const T *src = qkv + (size_t)t * (Hq + 2 * Hkv) * D + (size_t)h * D;
    if (h >= Hq + Hkv) { /* a value head */
        unsigned m = 0u;
        if (slot >= 0)
            for (int d = lane; d < D; d += 32) {
                if (amax) m = max(m, __float_as_uint(fabsf(zp_ld(src[d]))));
                else kv_st(&vc[((size_t)slot * Hkv + (h - Hq - Hkv)) * D + d], zp_ld(src[d]), kv_head_scale(vs, h - Hq - Hkv));
            }
        if (amax && slot >= 0) warp_amax(amax + (h - Hq), m, lane); /* Hkv + the value head's index */
        return;
    }
    const int is_q = h < Hq;
    if (!is_q && slot < 0) return;
    if (is_q && amax) return;
    const T *nw = is_q ? q_norm : k_norm;
    float *x = xs[warp], ss = 0.f;
    for (int d = lane; d < D; d += 32) {
        const float v = zp_ld(src[d]);
        x[d] = v;
        ss += v * v;
    }
    if (nw) {
        const float inv = rsqrtf(zp_warp_sum(ss) / (float)D + eps);
        for (int d = lane; d < D; d += 32) x[d] = zp_ld(nw[d]) * (x[d] * inv);
    }
    __syncwarp(); /* x complete: each lane reads its RoPE partners */
    unsigned m = 0u;
    for (int d = lane; d < D; d += 32) {
        const int i = d < half ? d : d - half;
        const float r = d < half ? x[d] * cs[i] - x[d + half] * sn[i] : x[d] * cs[i] + x[d - half] * sn[i];
        if (is_q) q_out[((size_t)t * Hq + h) * D + d] = r;
        else if (amax) m = max(m, __float_as_uint(fabsf(r)));
        else kv_st(&kc[((size_t)slot * Hkv + (h - Hq)) * D + d], r, kv_head_scale(ks, h - Hq));
    }
    if (amax) warp_amax(amax + (h - Hq), m, lane); /* a key head here (queries returned above) */
}

/* ---------------------------------------------------------------- memory */

/* Every memory operation goes through the model stream: the legacy default stream is not
 * ordered with our non-blocking streams (a pageable cudaMemcpy may return before its DMA is
 * done, a cudaMemset may run after a kernel that already wrote the buffer). */
/* Bytes of one element of an activation buffer of type `type` (0: not a zp_act_type). */
static size_t act_elem(const cuda_ctx *c, zp_act_type type) {
    return type == ZP_ACT_F32 ? sizeof(float) : type == ZP_ACT_OPERAND ? c->elem : 0;
}
static zp_status cu_alloc(zp_backend *be, size_t n, zp_act_type type, void **out) {
    const size_t es = act_elem(CUDA_CTX(be), type);
    if (!es) return zp_fail(ZP_ERR_INVALID, "cuda alloc: activation type %d is not a zp_act_type", (int)type);
    ZP_CUDA_CHECK(cudaMalloc(out, (n ? n : 1) * es));
    ZP_CUDA_CHECK(cudaMemsetAsync(*out, 0, (n ? n : 1) * es, CUDA_CTX(be)->stream));
    return ZP_OK;
}
static zp_status cu_alloc_cache(zp_backend *be, size_t n, void **out) {
    const size_t es = CUDA_CTX(be)->elem;
    ZP_CUDA_CHECK(cudaMalloc(out, (n ? n : 1) * es));
    ZP_CUDA_CHECK(cudaMemsetAsync(*out, 0, (n ? n : 1) * es, CUDA_CTX(be)->stream));
    return ZP_OK;
}
static void cu_release(zp_backend *be, void *buf) {
    cudaStreamSynchronize(CUDA_CTX(be)->stream); /* no kernel still reads it */
    cudaFree(buf);
}
static zp_status cu_mem_info(zp_backend *be, size_t *free_bytes, size_t *total_bytes) {
    ZP_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return ZP_OK;
}

/* bf16 storage: the fp32 values travel in chunks through a device staging buffer and are
 * rounded on the GPU (a host loop over 8 B values would take longer than the copy). */
static zp_status cu_weight_upload(zp_backend *be, float *host, size_t n, void **out) {
    cuda_ctx *c = CUDA_CTX(be);
    cudaStream_t st = c->stream;
    ZP_TRY(cu_alloc_cache(be, n, out));
    if (c->fp32) {
        ZP_CUDA_CHECK(cudaMemcpyAsync(*out, host, n * sizeof(float), cudaMemcpyHostToDevice, st));
    } else {
        const size_t chunk = (size_t)1 << 26; /* floats (256 MiB) */
        float *stage = NULL;
        ZP_CUDA_CHECK(cudaMalloc(&stage, (n < chunk ? n : chunk) * sizeof(float)));
        cudaError_t e = cudaSuccess;
        for (size_t i = 0; i < n && e == cudaSuccess; i += chunk) {
            const size_t m = n - i < chunk ? n - i : chunk;
            e = cudaMemcpyAsync(stage, host + i, m * sizeof(float), cudaMemcpyHostToDevice, st);
            if (e == cudaSuccess) to_bf16_kernel<<<zp_ceil_div((long)m, 256), 256, 0, st>>>((bf16 *)*out + i, stage, m);
            if (e == cudaSuccess) e = cudaGetLastError();
            if (e == cudaSuccess) e = cudaStreamSynchronize(st); /* the staging buffer is reused */
        }
        cudaFree(stage);
        if (e != cudaSuccess) {
            cudaFree(*out);
            *out = NULL;
            return zp_fail(ZP_ERR_BACKEND, "cuda weight upload: %zu values: %s", n, cudaGetErrorString(e));
        }
    }
    ZP_CUDA_CHECK(cudaStreamSynchronize(st));
    free(host); /* ownership taken */
    return ZP_OK;
}

/* to_host / from_host: fp32 rows are copied as they are; bf16 operand rows go through a host
 * staging array, converted on the host (dtype.h: round to nearest even). */
static zp_status cu_to_host(zp_backend *be, float *dst, const void *src, zp_act_type type, size_t off, size_t n) {
    cuda_ctx *c = CUDA_CTX(be);
    const size_t es = act_elem(c, type);
    if (!es) return zp_fail(ZP_ERR_INVALID, "cuda to_host: activation type %d is not a zp_act_type", (int)type);
    if (es == sizeof(float)) {
        ZP_CUDA_CHECK(cudaMemcpyAsync(dst, (const float *)src + off, n * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
        ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        return ZP_OK;
    }
    uint16_t *h = (uint16_t *)malloc((n ? n : 1) * sizeof(uint16_t));
    if (!h) return zp_fail(ZP_ERR_OOM, "cuda to_host: no host memory for %zu bf16 values", n);
    cudaError_t e = cudaMemcpyAsync(h, (const bf16 *)src + off, n * sizeof(uint16_t), cudaMemcpyDeviceToHost, c->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
    for (size_t i = 0; e == cudaSuccess && i < n; i++) dst[i] = zp_bf16_to_f32(h[i]);
    free(h);
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda to_host: %s", cudaGetErrorString(e));
    return ZP_OK;
}
static zp_status cu_from_host(zp_backend *be, void *dst, zp_act_type type, const float *src, size_t off, size_t n) {
    cuda_ctx *c = CUDA_CTX(be);
    const size_t es = act_elem(c, type);
    if (!es) return zp_fail(ZP_ERR_INVALID, "cuda from_host: activation type %d is not a zp_act_type", (int)type);
    if (es == sizeof(float)) {
        ZP_CUDA_CHECK(cudaMemcpyAsync((float *)dst + off, src, n * sizeof(float), cudaMemcpyHostToDevice, c->stream));
        ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream)); /* the caller may reuse src */
        return ZP_OK;
    }
    uint16_t *h = (uint16_t *)malloc((n ? n : 1) * sizeof(uint16_t));
    if (!h) return zp_fail(ZP_ERR_OOM, "cuda from_host: no host memory for %zu bf16 values", n);
    for (size_t i = 0; i < n; i++) h[i] = zp_f32_to_bf16(src[i]);
    cudaError_t e = cudaMemcpyAsync((bf16 *)dst + off, h, n * sizeof(uint16_t), cudaMemcpyHostToDevice, c->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
    free(h);
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda from_host: %s", cudaGetErrorString(e));
    return ZP_OK;
}

static zp_status cu_rope_init(zp_backend *be, const float *inv_freq, int half_dim, float attention_factor) {
    cuda_ctx *c = CUDA_CTX(be);
    c->rope_scale = attention_factor;
    if (half_dim * 2 > ZP_MAX_HEAD_DIM)
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda backend: head_dim %d > %d is not supported", half_dim * 2, ZP_MAX_HEAD_DIM);
    cudaFree(c->inv_freq);
    ZP_CUDA_CHECK(cudaMalloc(&c->inv_freq, sizeof(float) * half_dim));
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->inv_freq, inv_freq, sizeof(float) * half_dim, cudaMemcpyHostToDevice, c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    c->half_dim = half_dim;
    return ZP_OK;
}

/* Packs every batch array (and a row -> sequence map and the prefill query tiles) into one
 * upload from pinned staging, without waiting for it. */
static zp_status cu_set_batch(zp_backend *be, const zp_batch *b) {
    cuda_ctx *c = CUDA_CTX(be);
    const int T = b->n_tokens, S = b->n_seqs;
    for (int i = 0; i < b->n_qstore; i++) /* before anything of the batch is taken */
        if (b->qstore_rows[i] < 0 || b->qstore_rows[i] >= T || b->qstore_slots[i] < 0)
            return zp_fail(ZP_ERR_INVALID, "cuda set_batch: query store %d names row %d (slot %d) of a %d-row batch", i, b->qstore_rows[i],
                           b->qstore_slots[i], T);
    c->b = *b;
    int n_tiles = 0;
    for (int s = 0; s < S; s++) n_tiles += zp_ceil_div(b->seq_q_len[s], CUDA_PREFILL_TILE);
    enum { N_ARR = 12 };
    const size_t V = b->n_views > 1 ? (size_t)b->n_views : 1; /* layer views of kv_len and tables */
    /* the query stores as one array per row (9), so that the layout and every launch depend on
     * the batch shape alone, not on how many rows store a query this step (a graph key less) */
    const size_t sizes[N_ARR] = {(size_t)T, (size_t)T, (size_t)T, (size_t)S, (size_t)S, V * S, V * S * b->max_blocks,
                                 (size_t)b->n_out, (size_t)T, (size_t)T, (size_t)n_tiles, (size_t)n_tiles};
    size_t total = 0;
    for (int i = 0; i < N_ARR; i++) total += sizes[i];
    ZP_TRY(cuda_prof_flush(c));
    ZP_CUDA_CHECK(cudaEventSynchronize(c->ev_upload)); /* the previous upload has read the staging buffer */
    if (total + 1 > c->hbatch_cap) {
        cudaFreeHost(c->hbatch);
        c->hbatch = NULL;
        c->hbatch_cap = 0;
        ZP_CUDA_CHECK(cudaMallocHost(&c->hbatch, sizeof(int) * 2 * (total + 1)));
        c->hbatch_cap = 2 * (total + 1);
    }
    int *host = c->hbatch;
    const int *srcs[N_ARR] = {b->token_ids, b->positions, b->slot_mapping, b->seq_q_start, b->seq_q_len, b->seq_kv_len,
                              b->block_tables, b->out_rows, NULL, NULL, NULL, NULL};
    int **dsts[N_ARR] = {&c->d.ids, &c->d.positions, &c->d.slots, &c->d.q_start, &c->d.q_len, &c->d.kv_len0, &c->d.tables0,
                         &c->d.out_rows, &c->d.row_seq, &c->d.row_qslot, &c->d.tile_seq, &c->d.tile_row0};
    if (total + 1 > c->packed_cap) {
        ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
        cudaFree(c->packed);
        c->packed_cap = 2 * (total + 1);
        if (cudaMalloc(&c->packed, sizeof(int) * c->packed_cap) != cudaSuccess) {
            c->packed_cap = 0;
            return zp_fail(ZP_ERR_OOM, "cuda set_batch: cudaMalloc of %zu ints failed", 2 * (total + 1));
        }
    }
    size_t off = 0;
    for (int i = 0; i < N_ARR; i++) {
        if (i == 8) { /* row -> sequence */
            for (int s = 0; s < S; s++)
                for (int r = 0; r < b->seq_q_len[s]; r++) host[off + b->seq_q_start[s] + r] = s;
        } else if (i == 9) { /* row -> query-cache row, -1: none */
            for (int t = 0; t < T; t++) host[off + t] = -1;
            for (int k = 0; k < b->n_qstore; k++) host[off + b->qstore_rows[k]] = b->qstore_slots[k];
        } else if (i == 10) { /* prefill tiles: sequence, then (i == 11) first row */
            for (int s = 0, k = 0; s < S; s++)
                for (int r = 0; r < b->seq_q_len[s]; r += CUDA_PREFILL_TILE, k++) {
                    host[off + k] = s;
                    host[off + n_tiles + k] = r;
                }
        } else if (i == 11) { /* filled with i == 10 */
        } else if (sizes[i] && srcs[i]) {
            memcpy(host + off, srcs[i], sizeof(int) * sizes[i]);
        } else if (sizes[i]) { /* an array this step does not use */
            memset(host + off, 0xff, sizeof(int) * sizes[i]);
        }
        *dsts[i] = c->packed + off;
        off += sizes[i];
    }
    c->n_ptiles = n_tiles;
    c->d.kv_len = c->d.kv_len0; /* view 0 until an attention op picks its layer's */
    c->d.tables = c->d.tables0;
    cudaError_t e = cudaMemcpyAsync(c->packed, host, sizeof(int) * total, cudaMemcpyHostToDevice, c->stream);
    if (e == cudaSuccess) e = cudaEventRecord(c->ev_upload, c->stream); /* no wait: kernels follow in stream order */
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda set_batch: upload failed: %s", cudaGetErrorString(e));
    return ZP_OK;
}

/* ---------------------------------------------------------------- op launchers */

static zp_status cu_embed(zp_backend *be, void *out, const void *table, int H) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    if (c->b.n_tokens == 0) return ZP_OK;
    ZP_DISPATCH_STORAGE(c->fp32, embed_kernel<T><<<c->b.n_tokens, 256, 0, c->stream>>>((float *)out, (const T *)table, c->d.ids, H));
    ZP_LAUNCH_CHECK("embed");
    return ZP_OK;
}

/* rmsnorm (y NULL) or add_rmsnorm: out and y of the operand type, x fp32. */
static zp_status norm_launch(zp_backend *be, int add, void *out, void *x, const void *y, const void *w, int rows, int H, float eps) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    if (rows == 0) return ZP_OK;
    if (H % 4) return zp_fail(ZP_ERR_UNSUPPORTED, "cuda rmsnorm: row length %d is not a multiple of 4", H);
    ZP_DISPATCH_STORAGE(c->fp32, rmsnorm_kernel<T><<<rows, 256, 0, c->stream>>>((T *)out, (float *)x, (const T *)y, (const T *)w, H, eps));
    ZP_LAUNCH_CHECK(add ? "add_rmsnorm" : "rmsnorm");
    return ZP_OK;
}
static zp_status cu_add_rmsnorm(zp_backend *be, void *out, void *x, const void *y, const void *w, int rows, int H, float eps) {
    if (!y) return zp_fail(ZP_ERR_INVALID, "cuda add_rmsnorm: y is NULL");
    return norm_launch(be, 1, out, x, y, w, rows, H, eps);
}
static zp_status cu_rmsnorm(zp_backend *be, void *out, const void *x, const void *w, int rows, int H, float eps) {
    return norm_launch(be, 0, out, (void *)x, NULL, w, rows, H, eps); /* x is only read without y */
}

static zp_status cu_add(zp_backend *be, void *x, const void *y, size_t n) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    if (n == 0) return ZP_OK;
    if (n % 4) return zp_fail(ZP_ERR_UNSUPPORTED, "cuda add: %zu values, not a multiple of 4", n);
    ZP_DISPATCH_STORAGE(c->fp32, add_kernel<T><<<zp_ceil_div((long)(n / 4), 256), 256, 0, c->stream>>>((float4 *)x, (const T *)y, n / 4));
    ZP_LAUNCH_CHECK("add");
    return ZP_OK;
}

static zp_status cu_matmul(zp_backend *be, void *out, zp_act_type out_type, const void *x, const void *w, const void *bias, int M, int N,
                           int K) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_GEMM);
    const size_t oes = act_elem(c, out_type);
    if (!oes) return zp_fail(ZP_ERR_INVALID, "cuda matmul: output type %d is not a zp_act_type", (int)out_type);
    if (M == 0 || N == 0) return ZP_OK;
    const int out_bf = oes == sizeof(bf16);
    ZP_TRY(cuda_gemm(c, out, out_bf ? CUDA_R_16BF : CUDA_R_32F, w, x, M, N, K));
    if (bias) {
        const long grid = zp_ceil_div((long)M * N, 256);
        if (out_bf) bias_kernel<bf16, bf16><<<grid, 256, 0, c->stream>>>((bf16 *)out, (const bf16 *)bias, M, N);
        else ZP_DISPATCH_STORAGE(c->fp32, bias_kernel<float, T><<<grid, 256, 0, c->stream>>>((float *)out, (const T *)bias, M, N));
        ZP_LAUNCH_CHECK("matmul bias");
    }
    return ZP_OK;
}

/* The head sizes qkv_rope_kernel takes: even, at most QKV_MAX_D, that of the rope table. */
static zp_status qkv_dims_check(const cuda_ctx *c, const zp_attn_dims *d, const char *op) {
    if (d->head_dim > QKV_MAX_D || d->head_dim % 2 || d->head_dim / 2 != c->half_dim)
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda %s: head_dim %d (rope table %d) unsupported", op, d->head_dim, c->half_dim * 2);
    return ZP_OK;
}

static zp_status cu_qkv_rope_store(zp_backend *be, const zp_attn_dims *d, const void *qkv, void *q_out, const void *q_norm,
                                   const void *k_norm, void *k_cache, void *v_cache, int layer) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    ZP_TRY(qkv_dims_check(c, d, "qkv_rope_store"));
    if (c->b.n_tokens == 0) return ZP_OK;
    ZP_TRY(kv_check(d, "qkv_rope_store"));
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * d->head_dim;
    dim3 grid(c->b.n_tokens, zp_ceil_div(d->n_heads + 2 * d->n_kv_heads, QKV_WARPS));
    const float *ks = kv_layer_scales(d, 0, layer), *vs = kv_layer_scales(d, 1, layer);
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, qkv_rope_kernel<T, KT><<<grid, QKV_WARPS * 32, 0, c->stream>>>(
                                     (const T *)qkv, (float *)q_out, (const T *)q_norm, (const T *)k_norm, (KT *)k_cache + layer_off,
                                     (KT *)v_cache + layer_off, ks, vs, c->d.positions, c->d.slots, c->inv_freq, c->rope_scale, d->n_heads,
                                     d->n_kv_heads, d->head_dim, d->qk_norm_eps, NULL));
    ZP_LAUNCH_CHECK("qkv_rope_store");
    return ZP_OK;
}

/* amax[2][Hkv] (host) of the batch's keys as qkv_rope_store would store them and of its values
 * (backend.h kv_amax): the store kernel in its amax mode, then one copy back (calibration runs
 * once, on the first forward that writes the cache). */
static zp_status cu_kv_amax(zp_backend *be, const zp_attn_dims *d, const void *qkv, const void *k_norm, float *amax) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    ZP_TRY(qkv_dims_check(c, d, "kv_amax"));
    const int n = 2 * d->n_kv_heads;
    for (int i = 0; i < n; i++) amax[i] = 0.f;
    if (c->b.n_tokens == 0) return ZP_OK;
    ZP_TRY(cuda_grow(c, (void **)&c->amax, &c->amax_cap, sizeof(unsigned) * (size_t)n));
    ZP_CUDA_CHECK(cudaMemsetAsync(c->amax, 0, sizeof(unsigned) * (size_t)n, c->stream));
    dim3 grid(c->b.n_tokens, zp_ceil_div(d->n_heads + 2 * d->n_kv_heads, QKV_WARPS));
    ZP_DISPATCH_STORAGE(c->fp32, qkv_rope_kernel<T, T><<<grid, QKV_WARPS * 32, 0, c->stream>>>(
                                     (const T *)qkv, NULL, NULL, (const T *)k_norm, NULL, NULL, NULL, NULL, c->d.positions, c->d.slots,
                                     c->inv_freq, c->rope_scale, d->n_heads, d->n_kv_heads, d->head_dim, d->qk_norm_eps, c->amax));
    ZP_LAUNCH_CHECK("kv_amax");
    static_assert(sizeof(unsigned) == sizeof(float), "kv_amax: float bit patterns in unsigned words");
    ZP_CUDA_CHECK(cudaMemcpyAsync(amax, c->amax, sizeof(unsigned) * (size_t)n, cudaMemcpyDeviceToHost, c->stream)); /* the patterns are the floats */
    ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return ZP_OK;
}

static zp_status cu_silu_mul(zp_backend *be, void *out, const void *gu, int T_, int I) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    if ((size_t)T_ * I == 0) return ZP_OK;
    if (I % 4) return zp_fail(ZP_ERR_UNSUPPORTED, "cuda silu_mul: intermediate size %d is not a multiple of 4", I);
    ZP_DISPATCH_STORAGE(c->fp32, silu_mul_kernel<T><<<zp_ceil_div((long)T_ * I / 4, 256), 256, 0, c->stream>>>((T *)out, (const T *)gu, T_, I));
    ZP_LAUNCH_CHECK("silu_mul");
    return ZP_OK;
}

static zp_status cu_gather_rows(zp_backend *be, void *out, const void *x, int H) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ELEMENTWISE);
    if (c->b.n_out == 0) return ZP_OK;
    gather_rows_kernel<<<c->b.n_out, 256, 0, c->stream>>>((float *)out, (const float *)x, c->d.out_rows, H);
    ZP_LAUNCH_CHECK("gather_rows");
    return ZP_OK;
}

/* ---------------------------------------------------------------- profiling */

zp_status cuda_prof_flush(cuda_ctx *c) {
    for (int i = 0; i < c->pn; i++) {
        float ms = 0.f;
        ZP_CUDA_CHECK(cudaEventSynchronize(c->pev[2 * i + 1]));
        ZP_CUDA_CHECK(cudaEventElapsedTime(&ms, c->pev[2 * i], c->pev[2 * i + 1]));
        c->psec[c->pcat[i]] += 1e-3 * ms;
    }
    c->pn = 0;
    return ZP_OK;
}

static zp_status cu_op_seconds(zp_backend *be, double *seconds) {
    cuda_ctx *c = CUDA_CTX(be);
    ZP_TRY(cuda_prof_flush(c));
    for (int k = 0; k < ZP_OP_COUNT; k++) {
        if (seconds) seconds[k] = c->psec[k];
        else c->psec[k] = 0.0;
    }
    return ZP_OK;
}

/* The median of ms[0, n) (sorted in place). */
static float median_ms(float *ms, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) { float t = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = t; }
    return ms[n / 2];
}

/* 1 GiB device-to-device copies timed with events; median of 9 after a warm-up copy. */
static zp_status cu_copy_bandwidth(zp_backend *be, double *bytes_per_s) {
    cuda_ctx *c = CUDA_CTX(be);
    const size_t n = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0, e1;
    ZP_CUDA_CHECK(cudaMalloc(&a, n));
    if (cudaMalloc(&b, n) != cudaSuccess) { cudaFree(a); return zp_fail(ZP_ERR_OOM, "copy bandwidth: no device memory for 2 GiB"); }
    ZP_CUDA_CHECK(cudaEventCreate(&e0));
    ZP_CUDA_CHECK(cudaEventCreate(&e1));
    float ms[9];
    cudaError_t e = cudaMemsetAsync(a, 1, n, c->stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, c->stream);
    for (int i = 0; e == cudaSuccess && i < 9; i++) {
        e = cudaEventRecord(e0, c->stream);
        if (e == cudaSuccess) e = cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, n, cudaMemcpyDeviceToDevice, c->stream);
        if (e == cudaSuccess) e = cudaEventRecord(e1, c->stream);
        if (e == cudaSuccess) e = cudaEventSynchronize(e1);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms[i], e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "copy bandwidth: %s", cudaGetErrorString(e));
    *bytes_per_s = 2.0 * (double)n / (1e-3 * median_ms(ms, 9));
    return ZP_OK;
}

/* An 8192-square product of the storage type (bf16, fp32 sums, bf16 out; fp32 in the parity
 * mode) through the model's GEMM entry, timed with events: median of 5 after a warm-up one. */
static zp_status cu_matmul_rate(zp_backend *be, double *flops_per_s) {
    cuda_ctx *c = CUDA_CTX(be);
    const int n = 8192;
    const size_t bytes = (size_t)n * n * c->elem;
    void *buf[3] = {NULL, NULL, NULL};
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 3 && e == cudaSuccess; i++) {
        e = cudaMalloc(&buf[i], bytes);
        if (e == cudaSuccess) e = cudaMemsetAsync(buf[i], 0, bytes, c->stream);
    }
    if (e == cudaSuccess) e = cudaEventCreate(&e0);
    if (e == cudaSuccess) e = cudaEventCreate(&e1);
    float ms[5];
    zp_status s = e == cudaSuccess ? ZP_OK : zp_fail(ZP_ERR_OOM, "matmul rate: no device memory for 3 x %zu bytes (%s)", bytes, cudaGetErrorString(e));
    for (int i = -1; s == ZP_OK && i < 5; i++) {
        if (cudaEventRecord(e0, c->stream) != cudaSuccess) s = zp_fail(ZP_ERR_BACKEND, "matmul rate: event record failed");
        if (s == ZP_OK) s = cuda_gemm(c, buf[2], c->fp32 ? CUDA_R_32F : CUDA_R_16BF, buf[0], buf[1], n, n, n);
        if (s == ZP_OK && (cudaEventRecord(e1, c->stream) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess))
            s = zp_fail(ZP_ERR_BACKEND, "matmul rate: timing the product failed");
        if (s == ZP_OK && i >= 0 && cudaEventElapsedTime(&ms[i], e0, e1) != cudaSuccess) s = zp_fail(ZP_ERR_BACKEND, "matmul rate: no elapsed time");
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    for (int i = 0; i < 3; i++) cudaFree(buf[i]);
    if (s != ZP_OK) return s;
    *flops_per_s = 2.0 * n * (double)n * n / (1e-3 * median_ms(ms, 5));
    return ZP_OK;
}

/* ---------------------------------------------------------------- public API */

static zp_status cu_bind(zp_backend *be) {
    ZP_CUDA_CHECK(cudaSetDevice(CUDA_CTX(be)->device));
    return ZP_OK;
}

static void cu_destroy(zp_backend *be) {
    cuda_ctx *c = CUDA_CTX(be);
    cudaFree(c->packed);
    cudaFree(c->inv_freq);
    cudaFree(c->gather);
    cudaFree(c->keep);
    cudaFree(c->scores);
    cudaFree(c->tab);
    cudaFree(c->cpack);
    cudaFree(c->cwork);
    cudaFree(c->trig_stats);
    cudaFree(c->srows);
    cudaFree(c->dec_part);
    cudaFree(c->amax);
    cuda_graph_free(c);
    cuda_gemm_tuner_free(c);
    pthread_mutex_destroy(&c->record_lock);
    cudaFreeHost(c->hbatch);
    if (c->ev_upload) cudaEventDestroy(c->ev_upload);
    for (int i = 0; c->pev && i < 2 * ZP_PROF_MAX; i++) cudaEventDestroy(c->pev[i]);
    free(c->pev);
    free(c->pcat);
    free(c->hpack);
    if (c->ev_model) cudaEventDestroy(c->ev_model);
    if (c->ev_done) cudaEventDestroy(c->ev_done);
    if (c->cstream) cudaStreamDestroy(c->cstream);
    cublasDestroy(c->cublas);
    cudaStreamDestroy(c->stream);
    free(c);
    free(be);
}

extern "C" zp_status zp_backend_cuda_create(int device, int fp32, const zp_backend_options *opt, zp_backend **out) {
    const zp_backend_options knobs = opt ? *opt : zp_backend_options_default();
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        return zp_fail(ZP_ERR_UNSUPPORTED, "device cuda: no usable GPU (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    if (device >= n) return zp_fail(ZP_ERR_INVALID, "device cuda:%d: only %d GPU(s)", device, n);
    ZP_CUDA_CHECK(cudaSetDevice(device));
    zp_backend *be = (zp_backend *)calloc(1, sizeof *be);
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!be || !c) { free(be); free(c); return zp_fail(ZP_ERR_OOM, "cuda backend: out of host memory"); }
    c->device = device;
    c->fp32 = fp32;
    c->knobs = knobs;
    pthread_mutex_init(&c->record_lock, NULL);
    c->elem = fp32 ? sizeof(float) : sizeof(bf16);
    be->ctx = c;
    be->name = "cuda";
    be->cache_elem_bytes = (int)c->elem;
    be->destroy = cu_destroy;
    be->bind = cu_bind;
    /* compress_priority_low (a tuning option of the benchmarks): the model stream gets the
     * highest stream priority and the compression stream the lowest, so pending decode blocks
     * are dispatched before compression blocks (running blocks are never preempted) */
    int least = 0, greatest = 0, prio_model = 0, prio_comp = 0;
    if (knobs.compress_priority_low && cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess) {
        prio_model = greatest;
        prio_comp = least;
    }
    if (cudaStreamCreateWithPriority(&c->stream, cudaStreamNonBlocking, prio_model) != cudaSuccess ||
        cublasCreate(&c->cublas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->cublas, c->stream) != CUBLAS_STATUS_SUCCESS ||
        cudaStreamCreateWithPriority(&c->cstream, cudaStreamNonBlocking, prio_comp) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->ev_model, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->ev_done, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->ev_upload, cudaEventDisableTiming) != cudaSuccess) {
        free(c); free(be);
        return zp_fail(ZP_ERR_BACKEND, "cuda backend: cannot create the streams, events or the cuBLAS handle");
    }
    if (knobs.profile) {
        c->pev = (cudaEvent_t *)calloc(2 * ZP_PROF_MAX, sizeof(cudaEvent_t));
        c->pcat = (int *)calloc(ZP_PROF_MAX, sizeof(int));
        c->prof = c->pev && c->pcat;
        for (int i = 0; c->prof && i < 2 * ZP_PROF_MAX; i++) c->prof = cudaEventCreate(&c->pev[i]) == cudaSuccess;
    }
    if (cudaDeviceGetAttribute(&c->n_sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) c->n_sms = 1;
    cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH); /* no TF32: operands are bf16 anyway */
    be->alloc = cu_alloc;
    be->alloc_cache = cu_alloc_cache;
    be->release = cu_release;
    be->mem_info = cu_mem_info;
    be->weight_upload = cu_weight_upload;
    be->to_host = cu_to_host;
    be->from_host = cu_from_host;
    be->rope_init = cu_rope_init;
    be->set_batch = cu_set_batch;
    be->embed = cu_embed;
    be->rmsnorm = cu_rmsnorm;
    be->add = cu_add;
    be->add_rmsnorm = cu_add_rmsnorm;
    be->matmul = cu_matmul;
    be->qkv_rope_store = cu_qkv_rope_store;
    be->kv_amax = cu_kv_amax;
    be->attn_prefill = cuda_attn_prefill;
    be->attn_decode = cuda_attn_decode;
    be->attn_history = cuda_attn_history;
    be->silu_mul = cu_silu_mul;
    be->gather_rows = cu_gather_rows;
    be->query_store = cuda_query_store;
    be->query_read = cuda_query_read;
    be->key_gather = cuda_key_gather;
    be->score_read = cuda_score_read;
    be->kv_compact = cuda_kv_compact;
    be->compress = cuda_compress;
    be->compress_wait = cuda_compress_wait;
    be->sample = cuda_sample;
    be->op_seconds = cu_op_seconds;
    be->copy_bandwidth = cu_copy_bandwidth;
    be->matmul_rate = cu_matmul_rate;
    be->graph_begin = cuda_graph_begin;
    be->graph_end = cuda_graph_end;
    c->graph_slot = -1;
    if (cuda_gemm_tuner_create(c) != ZP_OK) {
        cu_destroy(be);
        zp_error_prefix("cuda backend: ZIPAGE_GEMM_TUNE");
        return ZP_ERR_BACKEND;
    }
    *out = be;
    return ZP_OK;
}
