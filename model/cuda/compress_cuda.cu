/* compress_cuda.cu - the CUDA backend's compression ops: query-cache store and read, key and
 * score gathers through a block table (to the host, where the reference policies score), and
 * compaction of K, V and scores per (layer, KV head): in position order, then, for a policy
 * that keeps R-KV's score order, a permutation of the kept rows in place.
 * `compress` is the device path the engine uses on this backend: the policy's score plan runs
 * on the GPU (model/cuda/plan_cuda.cu) and the kept tokens of many (request, layer, KV
 * head) jobs are compacted in one launch, on a stream of its own; only block tables go up.
 * The gathers above remain for tests and for scoring on the host.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"
#include "kv_elem.cuh" /* the K/V cache's element types: an fp8 cache's rows move as bytes */
#include "plan_cuda.cuh"

/* A block per batch row: its query row to query-cache row row_qslot[row], when it has one
 * (-1: none). Launched over every row whether any stores or not, so a decode graph recorded at
 * one step replays right at a step with other stores. */
template <typename T>
__global__ static void query_store_kernel(T *qc, const float *q, const int *row_qslot, int row_len) {
    const int slot = row_qslot[blockIdx.x];
    if (slot < 0) return;
    const float *src = q + (size_t)blockIdx.x * row_len;
    T *dst = qc + (size_t)slot * row_len;
    for (int i = threadIdx.x; i < row_len; i += blockDim.x) zp_st(&dst[i], src[i]);
}

template <typename T>
__global__ static void to_f32_kernel(float *out, const T *x, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = zp_ld(x[i]);
}

/* out[g][t][:] = k[slot(t)][g][:] (keys of KT, with the layer's scales ks), grid (n, Hkv), D threads. */
template <typename KT>
__global__ static void key_gather_kernel(float *out, const KT *kc, const float *ks, const int *table, int n, int Hkv, int D, int bs) {
    const int t = blockIdx.x, g = blockIdx.y;
    const size_t slot = (size_t)table[t / bs] * bs + t % bs;
    const float s = kv_head_scale(ks, g);
    for (int e = threadIdx.x; e < D; e += blockDim.x) out[((size_t)g * n + t) * D + e] = kv_ld(kc[(slot * Hkv + g) * D + e], s);
}

template <typename T>
__global__ static void score_gather_kernel(float *out, const float *sc, const int *table, int n, int Hkv, int bs) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * Hkv) return;
    const int g = i / n, t = i % n;
    out[i] = sc[((size_t)table[t / bs] * bs + t % bs) * Hkv + g];
}

/* Element e of a key row (rotate-halves; partner: element e +- D/2) rotated from position
 * `from` to `to`: the twin of zp_rope_shift_row (model/rope.c), op for op in fp32 without
 * fused multiply-adds, the angle difference and its sine and cosine in double. */
__device__ static float shift_element(float x, float partner, int e, int half, const float *inv_freq, int from, int to) {
    const int f = e < half ? e : e - half;
    const float a_from = __fmul_rn((float)from, inv_freq[f]), a_to = __fmul_rn((float)to, inv_freq[f]);
    double sd, cd;
    sincos((double)a_to - (double)a_from, &sd, &cd);
    const float c = (float)cd, s = (float)sd;
    return e < half ? __fsub_rn(__fmul_rn(x, c), __fmul_rn(partner, s)) : __fadd_rn(__fmul_rn(x, c), __fmul_rn(partner, s));
}

/* One block per KV head, D threads; tokens in order (each write lands at or before its read).
 * inv_freq (not NULL): StreamingLLM's position shift, each moved key re-rotated from its index
 * to its new one (a moved key's source row is never a target of the same move; an fp8 key is
 * decoded with the layer's scale ks[g], rotated and rounded again). */
template <typename T>
__global__ static void compact_kernel(T *kc, T *vc, float *sc, const float *ks, const int *src, const int *dst, int n, const uint8_t *keep,
                                      const float *scores, int Hkv, int D, int bs, const float *inv_freq) {
    const int g = blockIdx.x, half = D / 2;
    const float s = kv_head_scale(ks, g);
    int i = 0;
    for (int t = 0; t < n; t++) {
        if (!keep[(size_t)g * n + t]) continue;
        const size_t from = ((size_t)src[t / bs] * bs + t % bs) * Hkv + g, to = ((size_t)dst[i / bs] * bs + i % bs) * Hkv + g;
        for (int e = threadIdx.x; e < D; e += blockDim.x) {
            T kv = kc[from * D + e], vv = vc[from * D + e];
            if (inv_freq && t != i) {
                const float r = shift_element(kv_ld(kv, s), kv_ld(kc[from * D + (e < half ? e + half : e - half)], s), e, half, inv_freq, t, i);
                kv_st(&kc[to * D + e], r, s);
            } else {
                kc[to * D + e] = kv;
            }
            vc[to * D + e] = vv;
        }
        if (sc && threadIdx.x == 0) sc[to] = scores[(size_t)g * n + t];
        __syncthreads();
        i++;
    }
}

/* Positions [0, k) of one (layer, KV head) target, compacted in position order, are rewritten
 * so that position i holds the row that was at p[i] (p: shared, a permutation of [0, k); it is
 * consumed, entries become -1). Cycle by cycle, one row at a time through tmp (shared, 2 D):
 * every thread follows the same cycle (p is shared), the D elements of a row are moved by all. */
template <typename T>
__device__ static void permute_cycles(T *kc, T *vc, float *sc, const int *dst, size_t lk, int g, int Hkv, int D, int bs, int *p, int k,
                                      T *tmp) {
    __shared__ float ts;
#define ROW(i) ((lk + (size_t)dst[(i) / bs] * bs + (i) % bs) * Hkv + g)
    for (int s = 0; s < k; s++) {
        if (p[s] < 0 || p[s] == s) continue; /* done, or a fixed point */
        const size_t rs = ROW(s);
        for (int e = threadIdx.x; e < D; e += blockDim.x) { tmp[e] = kc[rs * D + e]; tmp[D + e] = vc[rs * D + e]; }
        if (sc && threadIdx.x == 0) ts = sc[rs];
        __syncthreads();
        for (int i = s;;) {
            const int j = p[i];
            const size_t ri = ROW(i);
            __syncthreads(); /* p[i] read by every thread before it is marked */
            if (threadIdx.x == 0) p[i] = -1;
            if (j == s) {
                for (int e = threadIdx.x; e < D; e += blockDim.x) { kc[ri * D + e] = tmp[e]; vc[ri * D + e] = tmp[D + e]; }
                if (sc && threadIdx.x == 0) sc[ri] = ts;
                __syncthreads();
                break;
            }
            const size_t rj = ROW(j);
            for (int e = threadIdx.x; e < D; e += blockDim.x) { kc[ri * D + e] = kc[rj * D + e]; vc[ri * D + e] = vc[rj * D + e]; }
            if (sc && threadIdx.x == 0) sc[ri] = sc[rj];
            __syncthreads();
            i = j;
        }
    }
#undef ROW
}

/* Host path: one block per KV head, perm [Hkv][k] from the host. Shared: p [k] | tmp [2 D]. */
template <typename T>
__global__ static void permute_kernel(T *kc, T *vc, float *sc, const int *dst, const int *perm, int k, int Hkv, int D, int bs) {
    extern __shared__ int psm[];
    const int g = blockIdx.x;
    for (int i = threadIdx.x; i < k; i += blockDim.x) psm[i] = perm[(size_t)g * k + i];
    __syncthreads();
    permute_cycles<T>(kc, vc, sc, dst, 0, g, Hkv, D, bs, psm, k, (T *)(psm + k + (k & 1)));
}

/* Dynamic shared memory of a permutation of k rows of D elements of `elem` bytes (opted into
 * above the default 48 KB). */
template <typename T>
static zp_status permute_smem(const void *fn, int k, int D, size_t *bytes) {
    *bytes = sizeof(int) * (size_t)(k + 1) + 2 * sizeof(T) * (size_t)D + 16;
    if (*bytes > 48u * 1024u) ZP_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*bytes));
    return ZP_OK;
}

zp_status cuda_scratch(cuda_ctx *c, size_t floats) { return cuda_grow(c, (void **)&c->gather, &c->gather_cap, floats * sizeof(float)); }

zp_status cuda_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer) {
    cuda_ctx *c = CUDA_CTX(be);
    if (c->b.n_tokens == 0) return ZP_OK;
    const size_t row = (size_t)d->n_heads * d->head_dim;
    ZP_DISPATCH_STORAGE(c->fp32, query_store_kernel<T><<<c->b.n_tokens, 256, 0, c->stream>>>(
                                     (T *)qcache + (size_t)layer * d->n_qslots * d->window * row, (const float *)q, c->d.row_qslot,
                                     (int)row));
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

/* Grows a device buffer to at least `bytes` (by half again; the old contents are dropped).
 * Waits for the whole device first: the old buffer may be read by work on either stream. The
 * device-wide wait and cudaFree must not meet a graph being recorded on the model stream (they
 * invalidate the capture), so a thread that is not the recorder (the async compression thread)
 * holds record_lock while it grows; the recording thread itself never grows a buffer (a key is
 * recorded on its second sighting, after an eager run sized everything). */
zp_status cuda_grow(cuda_ctx *c, void **buf, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return ZP_OK;
    const int lock = !cuda_graph_recording_here();
    if (lock) pthread_mutex_lock(&c->record_lock);
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) {
        cudaFree(*buf);
        *buf = NULL;
        *cap = 0;
        e = cudaMalloc(buf, bytes + bytes / 2);
        if (e == cudaSuccess) *cap = bytes + bytes / 2;
    }
    if (lock) pthread_mutex_unlock(&c->record_lock);
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda: growing a buffer to %zu bytes failed at %s:%d: %s", bytes, __FILE__, __LINE__, cudaGetErrorString(e));
    return ZP_OK;
}

/* Block tables come from the host: up to two go into the persistent table buffer (stream
 * ordered, so a later upload never overtakes a kernel still reading the previous one). */
static zp_status upload_tables(cuda_ctx *c, const int *a, int na, const int *b, int nb, int **da, int **db) {
    ZP_TRY(cuda_grow(c, (void **)&c->tab, &c->tab_cap, sizeof(int) * (size_t)(na + nb + 1)));
    *da = c->tab;
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->tab, a, sizeof(int) * (size_t)na, cudaMemcpyHostToDevice, c->stream));
    if (db) {
        *db = c->tab + na;
        ZP_CUDA_CHECK(cudaMemcpyAsync(c->tab + na, b, sizeof(int) * (size_t)nb, cudaMemcpyHostToDevice, c->stream));
    }
    return ZP_OK;
}

/* Ends a gather: checks the launch, copies `total` floats of c->gather to the host `out`
 * and waits; any failure is reported as op `what`. */
static zp_status gather_finish(cuda_ctx *c, float *out, size_t total, const char *what) {
    cudaError_t le = cudaGetLastError();
    cudaError_t ce = cudaMemcpyAsync(out, c->gather, total * sizeof(float), cudaMemcpyDeviceToHost, c->stream);
    cudaError_t se = cudaStreamSynchronize(c->stream);
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
    ZP_TRY(upload_tables(c, table, nb, NULL, 0, &dt, NULL));
    dim3 grid(n, d->n_kv_heads);
    ZP_TRY(kv_check(d, "key_gather"));
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, key_gather_kernel<KT><<<grid, d->head_dim < 256 ? d->head_dim : 256, 0, c->stream>>>(
                                     c->gather, (const KT *)k_cache + (size_t)layer * d->num_blocks * bs * d->n_kv_heads * d->head_dim,
                                     kv_layer_scales(d, 0, layer), dt, n, d->n_kv_heads, d->head_dim, bs));
    return gather_finish(c, out, total, "key_gather");
}

zp_status cuda_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out) {
    cuda_ctx *c = CUDA_CTX(be);
    const int bs = d->block_size, nb = zp_ceil_div(n, bs);
    const size_t total = (size_t)d->n_kv_heads * n;
    ZP_TRY(cuda_scratch(c, total));
    int *dt;
    ZP_TRY(upload_tables(c, table, nb, NULL, 0, &dt, NULL));
    ZP_DISPATCH_STORAGE(c->fp32, score_gather_kernel<T><<<zp_ceil_div((long)total, 256), 256, 0, c->stream>>>(
                                     c->gather, (const float *)score_cache + (size_t)layer * d->num_blocks * bs * d->n_kv_heads, dt, n,
                                     d->n_kv_heads, bs));
    return gather_finish(c, out, total, "score_read");
}

/* perm[g][i] = the position-order rank of order[g][i] among head g's kept tokens (host). */
static zp_status order_to_perm(const uint8_t *keep, const int *order, int n, int Hkv, int k, int *perm) {
    int *pos = (int *)malloc(sizeof(int) * (size_t)n);
    if (!pos) return zp_fail(ZP_ERR_OOM, "cuda kv_compact: no memory to order %d tokens", n);
    zp_status st = ZP_OK;
    for (int g = 0; g < Hkv && st == ZP_OK; g++) {
        int c = 0;
        for (int t = 0; t < n; t++) pos[t] = keep[(size_t)g * n + t] ? c++ : -1;
        for (int i = 0; i < k && st == ZP_OK; i++) {
            const int t = order[(size_t)g * n + i];
            perm[(size_t)g * k + i] = t >= 0 && t < n ? pos[t] : -1;
            if (perm[(size_t)g * k + i] < 0) st = zp_fail(ZP_ERR_INVALID, "cuda kv_compact: order entry %d (token %d) is not kept", i, t);
        }
    }
    free(pos);
    return st;
}

/* The rope frequencies of a position shift (NULL without one); refuses a shift it cannot do. */
static zp_status shift_frequencies(const cuda_ctx *c, const zp_attn_dims *d, int shift, int order, const float **inv_freq) {
    *inv_freq = NULL;
    if (!shift) return ZP_OK;
    if (order) return zp_fail(ZP_ERR_INVALID, "cuda compaction: a position shift needs position order (an order was given)");
    if (!c->inv_freq || 2 * c->half_dim != d->head_dim)
        return zp_fail(ZP_ERR_INVALID, "cuda compaction: a position shift needs the rope frequencies of head_dim %d (rope_init)", d->head_dim);
    *inv_freq = c->inv_freq;
    return ZP_OK;
}

zp_status cuda_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                          const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift) {
    cuda_ctx *c = CUDA_CTX(be);
    const int bs = d->block_size, Hkv = d->n_kv_heads, D = d->head_dim, nb = zp_ceil_div(n, bs);
    const float *inv_freq;
    ZP_TRY(shift_frequencies(c, d, shift, order != NULL, &inv_freq));
    const size_t nk = (size_t)Hkv * n;
    ZP_TRY(cuda_grow(c, (void **)&c->keep, &c->keep_cap, nk));
    ZP_TRY(cuda_grow(c, (void **)&c->scores, &c->scores_cap, nk * sizeof(float)));
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->keep, keep, nk, cudaMemcpyHostToDevice, c->stream));
    if (score_cache && scores) ZP_CUDA_CHECK(cudaMemcpyAsync(c->scores, scores, nk * sizeof(float), cudaMemcpyHostToDevice, c->stream));
    int max_kept = 0; /* the target table holds exactly the blocks the kept tokens need */
    for (int g = 0; g < Hkv; g++) {
        int k = 0;
        for (int t = 0; t < n; t++) k += keep[(size_t)g * n + t] != 0;
        max_kept = k > max_kept ? k : max_kept;
    }
    int *dsrc, *ddst;
    ZP_TRY(upload_tables(c, src, nb, dst, zp_ceil_div(max_kept, bs), &dsrc, &ddst));
    const size_t layer_off = (size_t)layer * d->num_blocks * bs * Hkv * D;
    const size_t score_off = (size_t)layer * d->num_blocks * bs * Hkv;
    const int has_scores = score_cache && scores;
    ZP_TRY(kv_check(d, "kv_compact"));
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, compact_kernel<KT><<<Hkv, D < 256 ? D : 256, 0, c->stream>>>(
                                     (KT *)k_cache + layer_off, (KT *)v_cache + layer_off, has_scores ? (float *)score_cache + score_off : (float *)NULL,
                                     kv_layer_scales(d, 0, layer), dsrc, ddst, n, c->keep, c->scores, Hkv, D, bs, inv_freq));
    if (order && max_kept > 0) { /* then the kept rows into the given order */
        int *perm = (int *)malloc(sizeof(int) * (size_t)Hkv * max_kept), *dperm = NULL;
        if (!perm) return zp_fail(ZP_ERR_OOM, "cuda kv_compact: no memory for %d x %d order entries", Hkv, max_kept);
        zp_status st = order_to_perm(keep, order, n, Hkv, max_kept, perm);
        cudaError_t e = st == ZP_OK ? cudaMalloc((void **)&dperm, sizeof(int) * (size_t)Hkv * max_kept) : cudaSuccess;
        if (st == ZP_OK && e == cudaSuccess) e = cudaMemcpyAsync(dperm, perm, sizeof(int) * (size_t)Hkv * max_kept, cudaMemcpyHostToDevice, c->stream);
        size_t smem = 0;
        if (st == ZP_OK && e == cudaSuccess)
            ZP_DISPATCH_KV(c->fp32, d->kv_fp8, {
                st = permute_smem<KT>((const void *)permute_kernel<KT>, max_kept, D, &smem);
                if (st == ZP_OK)
                    permute_kernel<KT><<<Hkv, 256, smem, c->stream>>>((KT *)k_cache + layer_off, (KT *)v_cache + layer_off,
                                                                  has_scores ? (float *)score_cache + score_off : (float *)NULL, ddst, dperm,
                                                                  max_kept, Hkv, D, bs);
            });
        if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
        cudaFree(dperm);
        free(perm);
        if (st != ZP_OK) return st;
        if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda kv_compact (order) failed: %s", cudaGetErrorString(e));
    }
    cudaError_t le = cudaGetLastError(), se = cudaStreamSynchronize(c->stream);
    if (le != cudaSuccess || se != cudaSuccess)
        return zp_fail(ZP_ERR_BACKEND, "cuda kv_compact failed: %s", cudaGetErrorString(le != cudaSuccess ? le : se));
    return ZP_OK;
}

/* ---------------------------------------------------------------- device-side compression */

#define COMPACT_CHUNK 32 /* kept tokens staged in shared memory per read-then-write round */

/* One block per job: the kept tokens of the job's (layer, KV head), in order, to positions
 * 0.. of the target table; rounds of COMPACT_CHUNK tokens are read completely before they are
 * written, so a target block that is also a source block is never overwritten before it is
 * read (every write lands at or before its read). Shared: K and V rows [chunk][D] each.
 * inv_freq (not NULL): StreamingLLM's position shift, each moved key re-rotated from its source
 * index to its target index (shift_element, from the staged row; an fp8 key decoded with its
 * (layer, head)'s scale and rounded again). */
template <typename T>
__global__ static void compact_jobs_kernel(zp_plan_jobs J, zp_attn_dims d, T *kc, T *vc, float *sc, const float *inv_freq) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ int idx[256], warp_base[9], n_done;
    T *kb = (T *)smem_raw, *vb = kb + COMPACT_CHUNK * d.head_dim;
    const int4 jb = J.jobs[blockIdx.x];
    const int *rq = J.reqs + ZP_REQ_FIELDS * jb.x;
    const int n = rq[ZP_REQ_N], D = d.head_dim, bs = d.block_size, Hkv = d.n_kv_heads, g = jb.z;
    const int *src = J.tables + rq[ZP_REQ_SRC], *dst = J.tables + rq[ZP_REQ_DST];
    const size_t lk = (size_t)jb.y * d.num_blocks * bs, off = (size_t)jb.w; /* lk: the layer's first slot */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float ks = kv_scale(d, 0, jb.y, g);
    if (threadIdx.x == 0) n_done = 0;
    for (int t0 = 0; t0 < n; t0 += blockDim.x) {
        const int t = t0 + threadIdx.x, flag = t < n && J.keep[off + t];
        const unsigned ballot = __ballot_sync(0xffffffffu, flag);
        __syncthreads();
        if (lane == 0) warp_base[warp + 1] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {
            warp_base[0] = 0;
            for (int i = 1; i <= (int)blockDim.x / 32; i++) warp_base[i] += warp_base[i - 1];
        }
        __syncthreads();
        if (flag) idx[warp_base[warp] + __popc(ballot & ((1u << lane) - 1u))] = t;
        __syncthreads();
        const int kept = warp_base[blockDim.x / 32], done = n_done;
        for (int c0 = 0; c0 < kept; c0 += COMPACT_CHUNK) {
            const int nc = kept - c0 < COMPACT_CHUNK ? kept - c0 : COMPACT_CHUNK;
            for (int i = threadIdx.x; i < nc * D; i += blockDim.x) {
                const int s = idx[c0 + i / D];
                const size_t from = (lk + (size_t)src[s / bs] * bs + s % bs) * Hkv + g;
                kb[i] = kc[from * D + i % D];
                vb[i] = vc[from * D + i % D];
            }
            __syncthreads();
            for (int i = threadIdx.x; i < nc * D; i += blockDim.x) {
                const int p = done + c0 + i / D, s = idx[c0 + i / D], e = i % D, half = D / 2;
                const size_t to = (lk + (size_t)dst[p / bs] * bs + p % bs) * Hkv + g;
                if (inv_freq && s != p)
                    kv_st(&kc[to * D + e], shift_element(kv_ld(kb[i], ks), kv_ld(kb[i - e + (e < half ? e + half : e - half)], ks), e, half, inv_freq, s, p), ks);
                else
                    kc[to * D + e] = kb[i];
                vc[to * D + e] = vb[i];
            }
            if (sc && threadIdx.x < nc) {
                const int p = done + c0 + threadIdx.x;
                sc[(lk + (size_t)dst[p / bs] * bs + p % bs) * Hkv + g] = J.S[off + idx[c0 + threadIdx.x]];
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) n_done = done + kept;
        __syncthreads();
    }
}

/* After compact_jobs_kernel, with order_score: each job's budget kept rows into the order the
 * plan gave (J.order): p[i] = the position-order rank of J.order[i], from a prefix count of
 * the keep flags written to J.last (free after the plan), then permute_cycles. Shared:
 * p [budget] | tmp [2 D]. */
template <typename T>
__global__ static void permute_jobs_kernel(zp_plan_jobs J, zp_attn_dims d, T *kc, T *vc, float *sc, int budget) {
    extern __shared__ int psm[];
    __shared__ int part[257];
    const int4 jb = J.jobs[blockIdx.x];
    const int *rq = J.reqs + ZP_REQ_FIELDS * jb.x;
    const int n = rq[ZP_REQ_N], bs = d.block_size, chunk = (n + blockDim.x - 1) / blockDim.x;
    const size_t off = (size_t)jb.w;
    int *pre = J.last + off;
    const int t0 = threadIdx.x * chunk, t1 = t0 + chunk < n ? t0 + chunk : n;
    int c = 0;
    for (int t = t0; t < t1; t++) c += J.keep[off + t] != 0;
    part[threadIdx.x + 1] = c;
    __syncthreads();
    if (threadIdx.x == 0) {
        part[0] = 0;
        for (int i = 1; i <= (int)blockDim.x; i++) part[i] += part[i - 1];
    }
    __syncthreads();
    c = part[threadIdx.x];
    for (int t = t0; t < t1; t++) pre[t] = J.keep[off + t] ? c++ : -1;
    __syncthreads();
    for (int i = threadIdx.x; i < budget; i += blockDim.x) psm[i] = pre[J.order[off + i]];
    __syncthreads();
    const size_t lk = (size_t)jb.y * d.num_blocks * bs;
    permute_cycles<T>(kc, vc, sc, J.tables + rq[ZP_REQ_DST], lk, jb.z, d.n_kv_heads, d.head_dim, bs, psm, budget,
                      (T *)(psm + budget + (budget & 1)));
}

/* Packs jobs, requests and tables into c->hpack and uploads them; lays the per-job rows out
 * in c->cwork. Layout of the upload: jobs (int4) | requests | tables. */
static zp_status compress_pack(cuda_ctx *c, const zp_attn_dims *d, int budget, int layer0, int layer1, const zp_compress_req *reqs,
                               int n_req, zp_plan_jobs *j) {
    const int Hkv = d->n_kv_heads, bs = d->block_size, per_req = (layer1 - layer0) * Hkv;
    size_t n_tab = 0, rows = 0;
    int max_n = 0;
    for (int r = 0; r < n_req; r++) {
        if (reqs[r].n <= budget || budget % bs)
            return zp_fail(ZP_ERR_INVALID, "cuda compress: request %d has %d tokens for a budget of %d (block %d)", r, reqs[r].n, budget, bs);
        n_tab += (size_t)zp_ceil_div(reqs[r].n, bs) + (size_t)budget / bs;
        rows += (size_t)reqs[r].n * per_req;
        max_n = reqs[r].n > max_n ? reqs[r].n : max_n;
    }
    const size_t n_jobs = (size_t)n_req * per_req, ints = 4 * n_jobs + (size_t)ZP_REQ_FIELDS * n_req + n_tab;
    if (ints > c->hpack_cap) {
        free(c->hpack);
        c->hpack_cap = 2 * ints;
        c->hpack = (int *)malloc(sizeof(int) * c->hpack_cap);
        if (!c->hpack) { c->hpack_cap = 0; return zp_fail(ZP_ERR_OOM, "cuda compress: no host memory for %zu job ints", ints); }
    }
    int *jobs = c->hpack, *rq = jobs + 4 * n_jobs, *tab = rq + ZP_REQ_FIELDS * n_req;
    size_t t = 0, row = 0, jn = 0;
    for (int r = 0; r < n_req; r++) {
        const int nb = zp_ceil_div(reqs[r].n, bs), tb = budget / bs; /* a prompt's last block may be partial */
        int *f = rq + ZP_REQ_FIELDS * r;
        f[ZP_REQ_N] = reqs[r].n;
        f[ZP_REQ_NHIST] = reqs[r].n_hist;
        f[ZP_REQ_QID] = reqs[r].qid;
        f[ZP_REQ_PROTECT] = reqs[r].protect;
        if (reqs[r].next_pos > INT_MAX) return zp_fail(ZP_ERR_INVALID, "cuda compress: request %d at position %lld", r, (long long)reqs[r].next_pos);
        f[ZP_REQ_POS] = (int)reqs[r].next_pos;
        f[ZP_REQ_SRC] = (int)t;
        memcpy(tab + t, reqs[r].src, sizeof(int) * nb);
        f[ZP_REQ_DST] = (int)(t + nb);
        memcpy(tab + t + nb, reqs[r].dst, sizeof(int) * tb);
        t += (size_t)nb + tb;
        for (int l = layer0; l < layer1; l++)
            for (int g = 0; g < Hkv; g++, jn++, row += reqs[r].n) {
                jobs[4 * jn] = r;
                jobs[4 * jn + 1] = l;
                jobs[4 * jn + 2] = g;
                jobs[4 * jn + 3] = (int)row;
            }
    }
    ZP_TRY(cuda_grow(c, (void **)&c->cpack, &c->cpack_cap, sizeof(int) * ints));
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->cpack, c->hpack, sizeof(int) * ints, cudaMemcpyHostToDevice, c->cstream));
    const size_t fbytes = sizeof(float) * rows;
    ZP_TRY(cuda_grow(c, &c->cwork, &c->cwork_cap, 6 * fbytes + rows));
    char *w = (char *)c->cwork;
    j->jobs = (const int4 *)c->cpack;
    j->reqs = c->cpack + 4 * n_jobs;
    j->tables = j->reqs + ZP_REQ_FIELDS * n_req;
    j->n_jobs = (int)n_jobs;
    j->max_n = max_n;
    j->S = (float *)w; /* the work area: five float arrays, the order, then the keep bytes */
    j->P = (float *)(w + fbytes);
    j->rs = (float *)(w + 2 * fbytes);
    j->cl = (float *)(w + 3 * fbytes);
    j->last = (int *)(w + 4 * fbytes);
    j->order = (int *)(w + 5 * fbytes);
    j->keep = (uint8_t *)(w + 6 * fbytes);
    return ZP_OK;
}

/* TriAttention's inputs on the device: the statistics, uploaded at the first compression that
 * carries them (the compressor's array, fixed for its life; re-uploaded for another array), and
 * the model's RoPE frequencies (rope_init's, the ones the host plan gets). */
static zp_status trig_inputs(cuda_ctx *c, const zp_attn_dims *d, const zp_score_plan *plan, int layer0, int layer1, zp_plan_jobs *j) {
    if (!plan->trig_stats) return zp_fail(ZP_ERR_INVALID, "cuda compress: TriAttention without its statistics");
    if (!c->inv_freq || 2 * c->half_dim != d->head_dim)
        return zp_fail(ZP_ERR_INVALID, "cuda compress: TriAttention needs the rope frequencies of head_dim %d (rope_init)", d->head_dim);
    if (plan->trig_mode != ZP_TRIG_PER_LAYER_PERHEAD && (layer0 != 0 || layer1 != d->n_layers))
        return zp_fail(ZP_ERR_INVALID, "cuda compress: TriAttention's modes across layers need every layer in one call (got %d to %d of %d)",
                       layer0, layer1, d->n_layers);
    if (c->trig_src != plan->trig_stats) {
        const size_t bytes = sizeof(float) * (size_t)d->n_layers * (size_t)d->n_heads * 3 * (size_t)(d->head_dim / 2);
        cudaFree(c->trig_stats);
        c->trig_stats = NULL;
        c->trig_src = NULL;
        ZP_CUDA_CHECK(cudaMalloc(&c->trig_stats, bytes));
        ZP_CUDA_CHECK(cudaMemcpy(c->trig_stats, plan->trig_stats, bytes, cudaMemcpyHostToDevice));
        c->trig_src = plan->trig_stats;
    }
    j->trig_stats = c->trig_stats;
    j->trig_freqs = c->inv_freq;
    return ZP_OK;
}

zp_status cuda_compress(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                        const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache, void *score_cache) {
    cuda_ctx *c = CUDA_CTX(be);
    if (n_req <= 0 || layer0 >= layer1) return ZP_OK;
    pthread_mutex_lock(&c->record_lock); /* not while a graph records the model stream */
    cudaError_t e = cudaEventRecord(c->ev_model, c->stream); /* the decode steps that wrote these K/V */
    pthread_mutex_unlock(&c->record_lock);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(c->cstream, c->ev_model, 0);
    if (e != cudaSuccess) return zp_fail(ZP_ERR_BACKEND, "cuda compress: ordering after the model stream: %s", cudaGetErrorString(e));
    const float *inv_freq;
    ZP_TRY(shift_frequencies(c, d, plan->shift_positions, plan->order_score, &inv_freq));
    zp_plan_jobs j = {};
    ZP_TRY(compress_pack(c, d, budget, layer0, layer1, reqs, n_req, &j));
    if (plan->key_score == ZP_KEYS_TRIG) ZP_TRY(trig_inputs(c, d, plan, layer0, layer1, &j));
    ZP_TRY(kv_check(d, "compress"));
    ZP_TRY(cuda_plan_select(c->cstream, c->fp32, d, plan, budget, &j, k_cache, q_cache, score_cache));
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, {
        const size_t smem = 2 * COMPACT_CHUNK * (size_t)d->head_dim * sizeof(KT);
        compact_jobs_kernel<KT><<<j.n_jobs, 256, smem, c->cstream>>>(j, *d, (KT *)k_cache, (KT *)v_cache, (float *)score_cache, inv_freq);
    });
    ZP_LAUNCH_CHECK("compact_jobs");
    if (plan->order_score) {
        size_t psmem = 0;
        ZP_DISPATCH_KV(c->fp32, d->kv_fp8, {
            ZP_TRY(permute_smem<KT>((const void *)permute_jobs_kernel<KT>, budget, d->head_dim, &psmem));
            permute_jobs_kernel<KT><<<j.n_jobs, 256, psmem, c->cstream>>>(j, *d, (KT *)k_cache, (KT *)v_cache, (float *)score_cache, budget);
        });
        ZP_LAUNCH_CHECK("permute_jobs");
    }
    ZP_CUDA_CHECK(cudaEventRecord(c->ev_done, c->cstream));
    c->done_pending = 1;
    return ZP_OK;
}

zp_status cuda_compress_wait(zp_backend *be) {
    cuda_ctx *c = CUDA_CTX(be);
    if (!c->done_pending) return ZP_OK;
    c->done_pending = 0;
    ZP_CUDA_CHECK(cudaEventSynchronize(c->ev_done));
    return ZP_OK;
}
