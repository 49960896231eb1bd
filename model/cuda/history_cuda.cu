/* history_cuda.cu - the backend op attn_history (backend.h) on the GPU: every batch row's
 * softmax attention over the keys it sees, summed per key into the fp32 score cache (exact
 * H2O's running score). The CUDA twin of model/cpu/history_cpu.c, in the same two passes:
 *   stats:  grid (T, Hq), 4 warps; each warp walks keys j = warp, warp + 4, ... (lanes split D)
 *           with an online maximum and sum; the row's (max, 1 / sum) go to stats [T][Hq][2];
 *   sums:   grid (key tiles over max_blocks * block_size, S, Hkv), 4 warps of 8 keys each; a
 *           warp sums exp(z - max) / sum over the rows that see its key and the group's heads,
 *           and writes (new key ? 0 : stored) + sum / G. Every (key, KV head) has one writer:
 *           no atomics, the same sums run to run.
 * The grid depends only on the batch shape (T, S, max_blocks), so decode graphs replay it.
 * It does not select or evict; its cost is two passes over the visible keys per query head.
 */
#include "cuda_common.cuh"
#include "kv_elem.cuh" /* the keys of an fp8 cache: E4M3 x the layer's scale of the head */

#define HIST_WARPS 4
#define HIST_KEYS_PER_WARP 8

/* q . k over D elements split across the lanes of a warp (keys of KT with scale sk); every
 * lane gets the sum. */
template <typename KT>
__device__ static float warp_dot(const float *q, const KT *k, float sk, int D) {
    float s = 0.f;
    for (int e = threadIdx.x % 32; e < D; e += 32) s += q[e] * kv_ld(k[e], sk);
    return zp_warp_sum(s);
}

template <typename T>
__global__ static void history_stats_kernel(float *stats, const float *q, const T *kc, const float *ks, const int *row_seq, const int *q_start,
                                            const int *q_len, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv, int D,
                                            int bs, float scale) {
    __shared__ float wm[HIST_WARPS], ws[HIST_WARPS];
    const int t = blockIdx.x, h = blockIdx.y, s = row_seq[t], warp = threadIdx.x / 32, g = h / (Hq / Hkv);
    const int n_vis = kv_len[s] - q_len[s] + (t - q_start[s]) + 1;
    const int *bt = tables + (size_t)s * max_blocks;
    const float *qh = q + ((size_t)t * Hq + h) * D;
    float mx = -INFINITY, sum = 0.f;
    for (int j = warp; j < n_vis; j += HIST_WARPS) {
        const size_t slot = (size_t)bt[j / bs] * bs + j % bs;
        const float z = warp_dot(qh, kc + (slot * Hkv + g) * D, kv_head_scale(ks, g), D) * scale;
        if (z > mx) { sum *= expf(mx - z); mx = z; }
        sum += expf(z - mx);
    }
    if (threadIdx.x % 32 == 0) { wm[warp] = mx; ws[warp] = sum; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float m = -INFINITY, tot = 0.f;
        for (int i = 0; i < HIST_WARPS; i++) m = fmaxf(m, wm[i]);
        for (int i = 0; i < HIST_WARPS; i++)
            if (ws[i] > 0.f) tot += ws[i] * expf(wm[i] - m);
        stats[((size_t)t * Hq + h) * 2] = m;
        stats[((size_t)t * Hq + h) * 2 + 1] = 1.0f / tot;
    }
}

template <typename T>
__global__ static void history_sums_kernel(float *sc, const float *stats, const float *q, const T *kc, const float *ks, const int *q_start,
                                           const int *q_len, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv,
                                           int D, int bs, float scale) {
    const int s = blockIdx.y, g = blockIdx.z, G = Hq / Hkv, warp = threadIdx.x / 32;
    const int n = kv_len[s], ql = q_len[s], base = n - ql, q0 = q_start[s];
    const int *bt = tables + (size_t)s * max_blocks;
    for (int k = 0; k < HIST_KEYS_PER_WARP; k++) {
        const int j = (blockIdx.x * HIST_WARPS + warp) * HIST_KEYS_PER_WARP + k;
        if (j >= n) return;
        const size_t slot = (size_t)bt[j / bs] * bs + j % bs;
        const T *kj = kc + (slot * Hkv + g) * D;
        float acc = 0.f;
        for (int i = j > base ? j - base : 0; i < ql; i++)
            for (int h = g * G; h < (g + 1) * G; h++) {
                const float *st = stats + ((size_t)(q0 + i) * Hq + h) * 2;
                acc += expf(warp_dot(q + ((size_t)(q0 + i) * Hq + h) * D, kj, kv_head_scale(ks, g), D) * scale - st[0]) * st[1];
            }
        if (threadIdx.x % 32 == 0) sc[slot * Hkv + g] = (j >= base ? 0.f : sc[slot * Hkv + g]) + acc / (float)G;
    }
}

zp_status cuda_attn_history(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache, void *stats,
                            int layer) {
    if (zp_attn_layer_of(d, layer)) /* gpt-oss's layers: the CPU backend has them */
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda attn_history: layer %d has a sliding window or attention sinks (not built on CUDA yet)", layer);
    cuda_ctx *c = CUDA_CTX(be);
    cuda_use_layer_view(c, layer);
    if (c->b.n_tokens == 0) return ZP_OK;
    zp_prof_scope prof(c, ZP_OP_ATTENTION);
    const int D = d->head_dim, bs = d->block_size, Hkv = d->n_kv_heads;
    const size_t layer_off = (size_t)layer * d->num_blocks * bs * Hkv * D;
    float *sc = (float *)score_cache + (size_t)layer * d->num_blocks * bs * Hkv;
    const int per_block = HIST_WARPS * HIST_KEYS_PER_WARP;
    ZP_TRY(kv_check(d, "attn_history"));
    const float *ks = kv_layer_scales(d, 0, layer);
    dim3 g1(c->b.n_tokens, d->n_heads), g2(zp_ceil_div((long)c->b.max_blocks * bs, per_block), c->b.n_seqs, Hkv);
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, {
        history_stats_kernel<KT><<<g1, 32 * HIST_WARPS, 0, c->stream>>>((float *)stats, (const float *)q, (const KT *)k_cache + layer_off,
                                                                      ks, c->d.row_seq, c->d.q_start, c->d.q_len, c->d.kv_len, c->d.tables,
                                                                      c->b.max_blocks, d->n_heads, Hkv, D, bs, d->scale);
        history_sums_kernel<KT><<<g2, 32 * HIST_WARPS, 0, c->stream>>>(sc, (const float *)stats, (const float *)q,
                                                                     (const KT *)k_cache + layer_off, ks, c->d.q_start, c->d.q_len,
                                                                     c->d.kv_len, c->d.tables, c->b.max_blocks, d->n_heads, Hkv, D,
                                                                     bs, d->scale);
    });
    ZP_LAUNCH_CHECK("attn_history");
    return ZP_OK;
}
