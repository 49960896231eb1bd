/* compress_cuda.cu - the CUDA backend's compression ops: query-cache store and read, key and
 * score gathers through a block table (to the host, where the reference policies score), and
 * order-preserving compaction of K, V and scores per (layer, KV head).
 * Device-side scorers and top-k (so nothing crosses to the host) are the next step of the
 * CUDA issue; these ops keep the engine's compression path identical on both backends.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

template <typename T>
__global__ static void query_store_kernel(T *qc, const float *q, const int *rows, const int *slots, int row_len) {
    const float *src = q + (size_t)rows[blockIdx.x] * row_len;
    T *dst = qc + (size_t)slots[blockIdx.x] * row_len;
    for (int i = threadIdx.x; i < row_len; i += blockDim.x) zp_st(&dst[i], src[i]);
}

template <typename T>
__global__ static void to_f32_kernel(float *out, const T *x, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = zp_ld(x[i]);
}

/* out[g][t][:] = k[slot(t)][g][:], grid (n, Hkv), D threads. */
template <typename T>
__global__ static void key_gather_kernel(float *out, const T *kc, const int *table, int n, int Hkv, int D, int bs) {
    const int t = blockIdx.x, g = blockIdx.y;
    const size_t slot = (size_t)table[t / bs] * bs + t % bs;
    for (int e = threadIdx.x; e < D; e += blockDim.x) out[((size_t)g * n + t) * D + e] = zp_ld(kc[(slot * Hkv + g) * D + e]);
}

template <typename T>
__global__ static void score_gather_kernel(float *out, const T *sc, const int *table, int n, int Hkv, int bs) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * Hkv) return;
    const int g = i / n, t = i % n;
    out[i] = zp_ld(sc[((size_t)table[t / bs] * bs + t % bs) * Hkv + g]);
}

/* One block per KV head, D threads; tokens in order (each write lands at or before its read). */
template <typename T>
__global__ static void compact_kernel(T *kc, T *vc, T *sc, const int *src, const int *dst, int n, const uint8_t *keep,
                                      const float *scores, int Hkv, int D, int bs) {
    const int g = blockIdx.x;
    int i = 0;
    for (int t = 0; t < n; t++) {
        if (!keep[(size_t)g * n + t]) continue;
        const size_t from = ((size_t)src[t / bs] * bs + t % bs) * Hkv + g, to = ((size_t)dst[i / bs] * bs + i % bs) * Hkv + g;
        for (int e = threadIdx.x; e < D; e += blockDim.x) {
            T kv = kc[from * D + e], vv = vc[from * D + e];
            kc[to * D + e] = kv;
            vc[to * D + e] = vv;
        }
        if (sc && threadIdx.x == 0) zp_st(&sc[to], scores[(size_t)g * n + t]);
        __syncthreads();
        i++;
    }
}

zp_status cuda_scratch(cuda_ctx *c, size_t floats) {
    if (floats <= c->gather_cap) return ZP_OK;
    cudaFree(c->gather);
    c->gather_cap = 2 * floats;
    ZP_CUDA_CHECK(cudaMalloc(&c->gather, c->gather_cap * sizeof(float)));
    return ZP_OK;
}

zp_status cuda_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer) {
    cuda_ctx *c = CUDA_CTX(be);
    if (c->b.n_qstore == 0) return ZP_OK;
    const size_t row = (size_t)d->n_heads * d->head_dim;
    ZP_DISPATCH_STORAGE(c->fp32, query_store_kernel<T><<<c->b.n_qstore, 256, 0, c->stream>>>(
                                     (T *)qcache + (size_t)layer * d->n_qslots * d->window * row, (const float *)q, c->d.qstore_rows,
                                     c->d.qstore_slots, (int)row));
    ZP_LAUNCH_CHECK("query_store");
    return ZP_OK;
}

zp_status cuda_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out) {
    cuda_ctx *c = CUDA_CTX(be);
    const size_t n = (size_t)d->window * d->n_heads * d->head_dim;
    ZP_TRY(cuda_scratch(c, n));
    ZP_DISPATCH_STORAGE(c->fp32, to_f32_kernel<T><<<zp_ceil_div((long)n, 256), 256, 0, c->stream>>>(
                                     c->gather, (const T *)qcache + ((size_t)layer * d->n_qslots + qid) * n, n));
    ZP_LAUNCH_CHECK("query_read");
    ZP_CUDA_CHECK(cudaMemcpyAsync(out, c->gather, n * sizeof(float), cudaMemcpyDeviceToHost, c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return ZP_OK;
}

/* Block tables come from the host: upload them into the tail of the int scratch. */
static zp_status upload_table(cuda_ctx *c, const int *table, int n_blocks, int **out) {
    ZP_CUDA_CHECK(cudaMalloc(out, sizeof(int) * (size_t)(n_blocks ? n_blocks : 1)));
    ZP_CUDA_CHECK(cudaMemcpyAsync(*out, table, sizeof(int) * (size_t)n_blocks, cudaMemcpyHostToDevice, c->stream));
    return ZP_OK;
}

/* Ends a gather: checks the launch, copies `total` floats of c->gather to the host `out`,
 * waits, frees the uploaded block table `dt`; any failure is reported as op `what`. */
static zp_status gather_finish(cuda_ctx *c, int *dt, float *out, size_t total, const char *what) {
    cudaError_t le = cudaGetLastError();
    cudaError_t ce = cudaMemcpyAsync(out, c->gather, total * sizeof(float), cudaMemcpyDeviceToHost, c->stream);
    cudaError_t se = cudaStreamSynchronize(c->stream);
    cudaFree(dt);
    if (le != cudaSuccess || ce != cudaSuccess || se != cudaSuccess)
        return zp_fail(ZP_ERR_BACKEND, "cuda %s failed: %s", what, cudaGetErrorString(le != cudaSuccess ? le : ce != cudaSuccess ? ce : se));
    return ZP_OK;
}

zp_status cuda_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out) {
    cuda_ctx *c = CUDA_CTX(be);
    const int bs = d->block_size, nb = zp_ceil_div(n, bs);
    const size_t total = (size_t)d->n_kv_heads * n * d->head_dim;
    ZP_TRY(cuda_scratch(c, total));
    int *dt;
    ZP_TRY(upload_table(c, table, nb, &dt));
    dim3 grid(n, d->n_kv_heads);
    ZP_DISPATCH_STORAGE(c->fp32, key_gather_kernel<T><<<grid, d->head_dim < 256 ? d->head_dim : 256, 0, c->stream>>>(
                                     c->gather, (const T *)k_cache + (size_t)layer * d->num_blocks * bs * d->n_kv_heads * d->head_dim, dt,
                                     n, d->n_kv_heads, d->head_dim, bs));
    return gather_finish(c, dt, out, total, "key_gather");
}

zp_status cuda_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out) {
    cuda_ctx *c = CUDA_CTX(be);
    const int bs = d->block_size, nb = zp_ceil_div(n, bs);
    const size_t total = (size_t)d->n_kv_heads * n;
    ZP_TRY(cuda_scratch(c, total));
    int *dt;
    ZP_TRY(upload_table(c, table, nb, &dt));
    ZP_DISPATCH_STORAGE(c->fp32, score_gather_kernel<T><<<zp_ceil_div((long)total, 256), 256, 0, c->stream>>>(
                                     c->gather, (const T *)score_cache + (size_t)layer * d->num_blocks * bs * d->n_kv_heads, dt, n,
                                     d->n_kv_heads, bs));
    return gather_finish(c, dt, out, total, "score_read");
}

zp_status cuda_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                          const int *src, int n, const int *dst, const uint8_t *keep, const float *scores) {
    cuda_ctx *c = CUDA_CTX(be);
    const int bs = d->block_size, Hkv = d->n_kv_heads, D = d->head_dim, nb = zp_ceil_div(n, bs);
    const size_t nk = (size_t)Hkv * n;
    if (nk > c->keep_cap) {
        cudaFree(c->keep);
        cudaFree(c->scores);
        c->keep_cap = 2 * nk;
        ZP_CUDA_CHECK(cudaMalloc(&c->keep, c->keep_cap));
        ZP_CUDA_CHECK(cudaMalloc(&c->scores, c->keep_cap * sizeof(float)));
    }
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->keep, keep, nk, cudaMemcpyHostToDevice, c->stream));
    if (score_cache && scores) ZP_CUDA_CHECK(cudaMemcpyAsync(c->scores, scores, nk * sizeof(float), cudaMemcpyHostToDevice, c->stream));
    int max_kept = 0; /* the target table holds exactly the blocks the kept tokens need */
    for (int g = 0; g < Hkv; g++) {
        int k = 0;
        for (int t = 0; t < n; t++) k += keep[(size_t)g * n + t] != 0;
        max_kept = k > max_kept ? k : max_kept;
    }
    int *dsrc, *ddst;
    ZP_TRY(upload_table(c, src, nb, &dsrc));
    ZP_TRY(upload_table(c, dst, zp_ceil_div(max_kept, bs), &ddst));
    const size_t layer_off = (size_t)layer * d->num_blocks * bs * Hkv * D;
    const size_t score_off = (size_t)layer * d->num_blocks * bs * Hkv;
    const int has_scores = score_cache && scores;
    ZP_DISPATCH_STORAGE(c->fp32, compact_kernel<T><<<Hkv, D < 256 ? D : 256, 0, c->stream>>>(
                                     (T *)k_cache + layer_off, (T *)v_cache + layer_off, has_scores ? (T *)score_cache + score_off : (T *)NULL,
                                     dsrc, ddst, n, c->keep, c->scores, Hkv, D, bs));
    cudaError_t le = cudaGetLastError(), se = cudaStreamSynchronize(c->stream);
    cudaFree(dsrc);
    cudaFree(ddst);
    if (le != cudaSuccess || se != cudaSuccess)
        return zp_fail(ZP_ERR_BACKEND, "cuda kv_compact failed: %s", cudaGetErrorString(le != cudaSuccess ? le : se));
    return ZP_OK;
}
