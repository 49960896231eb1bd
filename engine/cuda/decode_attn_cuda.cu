/* decode_attn_cuda.cu - paged decode attention (one query row per sequence), flash-decoding
 * style: a thread block per (KV partition, KV head, sequence) serves the whole GQA group of
 * the KV head (K and V are read once for G query heads), walks its partition of the block
 * table in chunks of DEC_CHUNK keys with an online softmax, and, when a sequence is split
 * over several partitions (small batches with long contexts, so every SM has work), a second
 * kernel merges the partial results by their softmax statistics. Keys are read as 16-byte
 * vectors. No [seq, seq] or [n_kv] matrix leaves shared memory.
 * Not here: prefill (ragged rows, causal; backend_cuda.cu) and tensor-core MMA (fp32 FMA).
 */
#include <math.h>

#include "cuda_common.cuh"

#define DEC_THREADS 128
#define DEC_CHUNK 256 /* keys scored per round (shared logits [G][DEC_CHUNK]) */
#define DEC_MAX_G 8   /* query heads per KV head (Qwen3-32B: 8) */

__device__ __forceinline__ void load8(const bf16 *p, float *o) {
    const uint4 r = *(const uint4 *)p;
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&r;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __bfloat1622float2(h[i]);
        o[2 * i] = f.x;
        o[2 * i + 1] = f.y;
    }
}
__device__ __forceinline__ void load4(const bf16 *p, float *o) {
    const uint2 r = *(const uint2 *)p;
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&r;
    const float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
    o[0] = a.x; o[1] = a.y; o[2] = b.x; o[3] = b.y;
}
__device__ __forceinline__ void load4(const float *p, float *o) {
    const float4 a = *(const float4 *)p;
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
}
__device__ __forceinline__ void load8(const float *p, float *o) {
    const float4 a = ((const float4 *)p)[0], b = ((const float4 *)p)[1];
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w; o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
}

/* Grid (n_parts, Hkv, S), DEC_THREADS threads, head dim D a template constant. Shared:
 * q [G][D] | logits [G][DEC_CHUNK] | running max, sum, rescale [3][G] | partial outputs
 * [TL][G][D]. Scores: a thread per key (16-byte loads, the whole row in flight). Values: the
 * threads are TL token lanes x D/4 dim lanes, 4 dims each, so every lane keeps several loads
 * in flight; the token lanes are summed once at the end. n_parts == 1: writes out[row];
 * otherwise unnormalised partial outputs and (max, sum) per (seq, head, partition). */
template <typename T, int D>
__global__ static void decode_attn_kernel(float *out, float *part_acc, float *part_ml, const float *q, const T *kc, const T *vc,
                                          const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv,
                                          int bs, float scale, int n_parts, int part_len) {
    constexpr int DL = D / 4, TL = DEC_THREADS / DL; /* dim lanes (4 dims each), token lanes */
    extern __shared__ float sm[];
    __shared__ float red[32];
    const int p = blockIdx.x, kh = blockIdx.y, s = blockIdx.z, G = Hq / Hkv, tid = threadIdx.x;
    const int n = kv_len[s], row = q_start[s], t0 = p * part_len, t1 = t0 + part_len < n ? t0 + part_len : n;
    float *qs = sm, *lg = qs + G * D, *run_m = lg + G * DEC_CHUNK, *run_l = run_m + G, *corr = run_l + G, *po = corr + G;
    const int *bt = tables + (size_t)s * max_blocks;
    const size_t head0 = (size_t)s * Hq + (size_t)kh * G; /* first query head of the group, as (seq, head) index */
    if (t0 >= n) { /* an empty partition of a shorter sequence */
        if (tid < G) { part_ml[((head0 + tid) * n_parts + p) * 2] = -INFINITY; part_ml[((head0 + tid) * n_parts + p) * 2 + 1] = 0.f; }
        return;
    }
    for (int i = tid; i < G * D; i += blockDim.x) qs[i] = q[((size_t)row * Hq + (size_t)kh * G) * D + i];
    if (tid < G) { run_m[tid] = -INFINITY; run_l[tid] = 0.f; }
    const int dl = tid % DL, tl = tid / DL;
    float acc[DEC_MAX_G][4];
#pragma unroll
    for (int g = 0; g < DEC_MAX_G; g++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[g][i] = 0.f;
    __syncthreads();
    for (int c0 = t0; c0 < t1; c0 += DEC_CHUNK) {
        const int nc = t1 - c0 < DEC_CHUNK ? t1 - c0 : DEC_CHUNK;
        for (int j = tid; j < nc; j += blockDim.x) { /* logits of G heads for key c0 + j */
            const int t = c0 + j;
            const T *k = kc + (((size_t)bt[t / bs] * bs + t % bs) * Hkv + kh) * D;
            float dot[DEC_MAX_G];
#pragma unroll
            for (int g = 0; g < DEC_MAX_G; g++) dot[g] = 0.f;
#pragma unroll
            for (int e0 = 0; e0 < D; e0 += 32) { /* 64 bytes of the key in flight per round */
                float kr[32];
#pragma unroll
                for (int e = 0; e < 32; e += 8) load8(k + e0 + e, kr + e);
#pragma unroll
                for (int g = 0; g < DEC_MAX_G; g++) {
                    if (g >= G) break;
#pragma unroll
                    for (int e = 0; e < 32; e++) dot[g] += qs[g * D + e0 + e] * kr[e];
                }
            }
#pragma unroll
            for (int g = 0; g < DEC_MAX_G; g++)
                if (g < G) lg[g * DEC_CHUNK + j] = dot[g] * scale;
        }
        __syncthreads();
        for (int g = 0; g < G; g++) { /* online softmax statistics of this chunk, per head */
            float mx = -INFINITY;
            for (int j = tid; j < nc; j += blockDim.x) mx = fmaxf(mx, lg[g * DEC_CHUNK + j]);
            mx = zp_block_max(mx, red);
            const float m_new = fmaxf(run_m[g], mx);
            float l = 0.f;
            for (int j = tid; j < nc; j += blockDim.x) l += lg[g * DEC_CHUNK + j] = expf(lg[g * DEC_CHUNK + j] - m_new);
            l = zp_block_sum(l, red);
            __syncthreads(); /* every thread has read run_m[g] */
            if (tid == 0) {
                corr[g] = expf(run_m[g] - m_new);
                run_l[g] = run_l[g] * corr[g] + l;
                run_m[g] = m_new;
            }
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < DEC_MAX_G; g++) {
            const float cg = g < G ? corr[g] : 0.f;
#pragma unroll
            for (int i = 0; i < 4; i++) acc[g][i] *= cg;
        }
#pragma unroll 4
        for (int j = tl; j < nc; j += TL) { /* values: 4 dims of token c0 + j */
            const int t = c0 + j;
            float v[4];
            load4(vc + (((size_t)bt[t / bs] * bs + t % bs) * Hkv + kh) * D + 4 * dl, v);
#pragma unroll
            for (int g = 0; g < DEC_MAX_G; g++) {
                if (g >= G) break;
                const float pg = lg[g * DEC_CHUNK + j];
#pragma unroll
                for (int i = 0; i < 4; i++) acc[g][i] += pg * v[i];
            }
        }
        __syncthreads(); /* lg is overwritten by the next chunk */
    }
#pragma unroll
    for (int g = 0; g < DEC_MAX_G; g++) {
        if (g >= G) break;
#pragma unroll
        for (int i = 0; i < 4; i++) po[((size_t)tl * G + g) * D + 4 * dl + i] = acc[g][i];
    }
    __syncthreads();
    for (int i = tid; i < G * D; i += blockDim.x) { /* sum the token lanes */
        const int g = i / D, d = i % D;
        float o = 0.f;
        for (int l = 0; l < TL; l++) o += po[((size_t)l * G + g) * D + d];
        if (n_parts == 1) out[((size_t)row * Hq + (size_t)kh * G + g) * D + d] = o / run_l[g];
        else part_acc[((head0 + g) * n_parts + p) * D + d] = o;
    }
    if (n_parts > 1 && tid < G) {
        part_ml[((head0 + tid) * n_parts + p) * 2] = run_m[tid];
        part_ml[((head0 + tid) * n_parts + p) * 2 + 1] = run_l[tid];
    }
}

/* Grid (S, Hq), D threads: out = sum_p acc_p e^(m_p - M) / sum_p l_p e^(m_p - M). */
__global__ static void decode_merge_kernel(float *out, const float *part_acc, const float *part_ml, const int *q_start, int Hq, int D,
                                           int n_parts) {
    const int s = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const size_t sh = (size_t)s * Hq + h;
    float M = -INFINITY, L = 0.f, o = 0.f;
    for (int p = 0; p < n_parts; p++) M = fmaxf(M, part_ml[(sh * n_parts + p) * 2]);
    for (int p = 0; p < n_parts; p++) {
        const float m = part_ml[(sh * n_parts + p) * 2];
        if (m == -INFINITY) continue;
        const float w = expf(m - M);
        L += part_ml[(sh * n_parts + p) * 2 + 1] * w;
        o += part_acc[(sh * n_parts + p) * D + d] * w;
    }
    out[((size_t)q_start[s] * Hq + h) * D + d] = o / L;
}

template <typename T, int D>
static zp_status decode_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, float *part_acc, float *part_ml, const float *q,
                               const T *kc, const T *vc, int n_parts, int part_len) {
    const int G = d->n_heads / d->n_kv_heads, TL = DEC_THREADS / (D / 4);
    const size_t smem = sizeof(float) * ((size_t)G * D + (size_t)G * DEC_CHUNK + 3 * (size_t)G + (size_t)TL * G * D);
    if (smem > 48 * 1024) ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid(n_parts, d->n_kv_heads, c->b.n_seqs);
    decode_attn_kernel<T, D><<<grid, DEC_THREADS, smem, c->stream>>>(out, part_acc, part_ml, q, kc, vc, c->d.q_start, c->d.kv_len,
                                                                    c->d.tables, c->b.max_blocks, d->n_heads, d->n_kv_heads,
                                                                    d->block_size, d->scale, n_parts, part_len);
    ZP_LAUNCH_CHECK("decode_attention");
    return ZP_OK;
}

zp_status cuda_attn_decode(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                           int layer) {
    cuda_ctx *c = CUDA_CTX(be);
    zp_prof_scope prof(c, ZP_OP_ATTENTION);
    const int S = c->b.n_seqs, G = d->n_heads / d->n_kv_heads, D = d->head_dim;
    if ((D != 64 && D != 128 && D != 256) || G > DEC_MAX_G)
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda decode attention: head_dim %d (64, 128 or 256) or %d query heads per KV head (at most %d)",
                       D, G, DEC_MAX_G);
    if (S == 0) return ZP_OK;
    int max_kv = 1;
    for (int s = 0; s < S; s++) max_kv = c->b.seq_kv_len[s] > max_kv ? c->b.seq_kv_len[s] : max_kv;
    /* split sequences only as far as it takes to give every SM two blocks, in whole chunks */
    int n_parts = zp_ceil_div(2L * c->n_sms, (long)S * d->n_kv_heads);
    const int max_parts = zp_ceil_div(max_kv, DEC_CHUNK);
    n_parts = n_parts < 1 ? 1 : n_parts > max_parts ? max_parts : n_parts;
    const int part_len = zp_ceil_div(zp_ceil_div(max_kv, n_parts), DEC_CHUNK) * DEC_CHUNK;
    n_parts = zp_ceil_div(max_kv, part_len);
    if (n_parts > 1) {
        const size_t heads = (size_t)S * d->n_heads * n_parts;
        ZP_TRY(cuda_grow(&c->dec_part, &c->dec_part_cap, sizeof(float) * heads * (D + 2)));
    }
    float *part_acc = (float *)c->dec_part, *part_ml = part_acc ? part_acc + (size_t)S * d->n_heads * n_parts * D : NULL;
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * D;
    ZP_DISPATCH_STORAGE(c->fp32, {
        const T *kc = (const T *)k_cache + layer_off, *vc = (const T *)v_cache + layer_off;
        if (D == 64) ZP_TRY((decode_launch<T, 64>(c, d, (float *)out, part_acc, part_ml, (const float *)q, kc, vc, n_parts, part_len)));
        else if (D == 128) ZP_TRY((decode_launch<T, 128>(c, d, (float *)out, part_acc, part_ml, (const float *)q, kc, vc, n_parts, part_len)));
        else ZP_TRY((decode_launch<T, 256>(c, d, (float *)out, part_acc, part_ml, (const float *)q, kc, vc, n_parts, part_len)));
    });
    if (n_parts > 1) {
        decode_merge_kernel<<<dim3(S, d->n_heads), D, 0, c->stream>>>((float *)out, part_acc, part_ml, c->d.q_start, d->n_heads, D, n_parts);
        ZP_LAUNCH_CHECK("decode_merge");
    }
    return ZP_OK;
}
