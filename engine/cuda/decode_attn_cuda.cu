/* decode_attn_cuda.cu - paged decode attention (one query row per sequence), flash-decoding
 * style: a thread block per (KV partition, KV head, sequence) serves the whole GQA group of
 * the KV head (K and V are read once for G query heads). Each of its DEC_WARPS warps walks its
 * own tiles of DEC_TILE keys with its own online softmax (no block-wide barrier inside the
 * key loop); the warps' results are merged once at the end, and, when a sequence is split over
 * several partitions (small batches with long contexts, so every SM has work), a second kernel
 * merges the partitions by their softmax statistics. Keys: a group of D/16 lanes per key, 16
 * dims per lane; values: 32 lanes across the head dim (each warp reads whole rows). The block
 * table is read once per tile (one key per lane, passed on by shuffles) and a tile's K loads,
 * then its V loads, are all issued before they are used, so the kernel keeps enough bytes in
 * flight to stream at bandwidth. No [seq, seq] or [n_kv] matrix leaves shared memory.
 * Not here: prefill (ragged rows, causal; prefill_attn_cuda.cu) and tensor-core MMA (fp32 FMA).
 */
#include <math.h>

#include "cuda_common.cuh"

#define DEC_WARPS 4
#define DEC_TILE 32                       /* keys of one warp round */
#define DEC_GRAIN (DEC_WARPS * DEC_TILE)  /* partition lengths are multiples of this */
#define DEC_MAX_G 8                       /* query heads per KV head (Qwen3-32B: 8) */
#define DEC_QPAD 20                       /* floats per 16-dim query chunk in shared (bank spread) */

/* Merges n partial softmax results: (max, sum) at ml[i * ml_stride], unnormalised output at
 * acc[i * acc_stride]; a part without keys has max -inf. Sets the merged max, sum, output. */
__device__ __forceinline__ void softmax_merge(const float *ml, int ml_stride, const float *acc, int acc_stride, int n, float *M_out,
                                              float *L_out, float *o_out) {
    float M = -INFINITY, L = 0.f, o = 0.f;
    for (int i = 0; i < n; i++) M = fmaxf(M, ml[(size_t)i * ml_stride]);
    for (int i = 0; i < n; i++) {
        const float m = ml[(size_t)i * ml_stride];
        if (m == -INFINITY) continue;
        const float e = expf(m - M);
        L += ml[(size_t)i * ml_stride + 1] * e;
        o += acc[(size_t)i * acc_stride] * e;
    }
    *M_out = M;
    *L_out = L;
    *o_out = o;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Grid (n_parts, Hkv, S), DEC_WARPS warps, head dim D a template constant. Shared:
 * q [G][D/16][DEC_QPAD] | per-warp logits [DEC_WARPS][G][DEC_TILE] | per-warp (max, sum)
 * [DEC_WARPS][G][2] | per-warp outputs [DEC_WARPS][G][D]. Sequence s of n keys is cut into
 * n_parts partitions of part_len = n / n_parts rounded up to whole DEC_GRAIN (a function of
 * the device data only, so a recorded CUDA graph stays right as sequences grow); partition p
 * covers keys [p*part_len, min(n, (p+1)*part_len)); warp w takes its tiles w, w + DEC_WARPS, ...
 * n_parts == 1: writes out[row]; otherwise unnormalised partial outputs and (max, sum) per
 * (seq, head, partition). */
template <typename T, int D>
__global__ static void __launch_bounds__(DEC_WARPS * 32)
decode_attn_kernel(float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q, const T *kc, const T *vc, const int *q_start,
                   const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv, int bs, float scale, int n_parts) {
    constexpr int LPK = D / 16, KPP = 32 / LPK, DV = D / 32; /* lanes per key, keys per pass, value dims per lane */
    /* passes (keys) whose K (V) loads are in flight together: at most RB registers of raw data */
    constexpr int RB = D > 128 ? 32 : 64, KB = 16 * (int)sizeof(T) / 4, KG = LPK < RB / KB ? LPK : RB / KB;
    constexpr int VB = DV * (int)sizeof(T) / 4 > 0 ? DV * (int)sizeof(T) / 4 : 1, VG = DEC_TILE < RB / VB ? DEC_TILE : RB / VB;
    extern __shared__ float sm[];
    const int p = blockIdx.x, kh = blockIdx.y, s = blockIdx.z, G = Hq / Hkv, tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32, kk = lane / LPK, dl = lane % LPK;
    const int n = kv_len[s], row = q_start[s], part_len = (n + n_parts * DEC_GRAIN - 1) / (n_parts * DEC_GRAIN) * DEC_GRAIN;
    const int t0 = p * part_len, t1 = t0 + part_len < n ? t0 + part_len : n;
    float *qs = sm, *lg = qs + G * LPK * DEC_QPAD, *wml = lg + DEC_WARPS * G * DEC_TILE, *wacc = wml + DEC_WARPS * G * 2;
    float *lw = lg + warp * G * DEC_TILE;
    const int *bt = tables + (size_t)s * max_blocks;
    const size_t head0 = (size_t)s * Hq + (size_t)kh * G; /* first query head of the group, as (seq, head) index */
    if (t0 >= n) { /* an empty partition of a shorter sequence */
        if (tid < G) { part_ml[((head0 + tid) * n_parts + p) * 2] = -INFINITY; part_ml[((head0 + tid) * n_parts + p) * 2 + 1] = 0.f; }
        return;
    }
    for (int i = tid; i < G * D; i += blockDim.x) qs[(i / 16) * DEC_QPAD + i % 16] = q[((size_t)row * Hq + (size_t)kh * G) * D + i];
    float m[DEC_MAX_G], l[DEC_MAX_G], acc[DEC_MAX_G][DV];
#pragma unroll
    for (int g = 0; g < DEC_MAX_G; g++) {
        m[g] = -INFINITY;
        l[g] = 0.f;
#pragma unroll
        for (int i = 0; i < DV; i++) acc[g][i] = 0.f;
    }
    __syncthreads();
    for (int c0 = t0 + warp * DEC_TILE; c0 < t1; c0 += DEC_GRAIN) {
        const int nc = t1 - c0 < DEC_TILE ? t1 - c0 : DEC_TILE;
        /* lane j looks up the physical row of key c0 + j once; the loads below take it by shuffle,
         * so each K/V load depends on one earlier load only and a whole group is in flight at once */
        const int prow = lane < nc ? bt[(c0 + lane) / bs] * bs + (c0 + lane) % bs : 0;
#pragma unroll
        for (int pg = 0; pg < LPK; pg += KG) { /* logits: in pass i, lane group kk scores key i*KPP + kk */
            raw_vec<T, 16> kr[KG];
#pragma unroll
            for (int i = 0; i < KG; i++) {
                const int j = (pg + i) * KPP + kk, r = __shfl_sync(0xffffffffu, prow, j & 31);
                if (j < nc) kr[i].load(kc + ((size_t)r * Hkv + kh) * D + dl * 16);
                else kr[i].zero();
            }
#pragma unroll
            for (int i = 0; i < KG; i++) {
                const int j = (pg + i) * KPP + kk;
                float kf[16], dot[DEC_MAX_G];
                kr[i].to_float(kf);
#pragma unroll
                for (int g = 0; g < DEC_MAX_G; g++) {
                    dot[g] = 0.f;
                    if (g >= G) break;
                    const float4 *qv = (const float4 *)(qs + (g * LPK + dl) * DEC_QPAD);
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const float4 a = qv[e];
                        dot[g] += a.x * kf[4 * e] + a.y * kf[4 * e + 1] + a.z * kf[4 * e + 2] + a.w * kf[4 * e + 3];
                    }
                }
#pragma unroll
                for (int g = 0; g < DEC_MAX_G; g++) {
                    if (g >= G) break;
#pragma unroll
                    for (int o = LPK / 2; o > 0; o >>= 1) dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], o);
                    if (dl == 0 && j < nc) lw[g * DEC_TILE + j] = dot[g] * scale;
                }
            }
        }
        raw_vec<T, DV> vr[VG];
        auto load_values = [&](int v0) { /* lane holds dims lane*DV .. +DV of keys v0 .. v0+VG */
#pragma unroll
            for (int i = 0; i < VG; i++) {
                const int r = __shfl_sync(0xffffffffu, prow, (v0 + i) & 31);
                if (v0 + i < nc) vr[i].load(vc + ((size_t)r * Hkv + kh) * D + lane * DV);
            }
        };
        load_values(0); /* in flight during the softmax */
        __syncwarp();
#pragma unroll
        for (int g = 0; g < DEC_MAX_G; g++) { /* online softmax over the tile: lane j owns key j */
            if (g >= G) break;
            const float z = lane < nc ? lw[g * DEC_TILE + lane] : -INFINITY;
            const float m_new = fmaxf(m[g], warp_max(z)), corr = expf(m[g] - m_new), pz = lane < nc ? expf(z - m_new) : 0.f;
            lw[g * DEC_TILE + lane] = pz;
            l[g] = l[g] * corr + pz; /* a per-lane partial sum; m is the same in every lane */
            m[g] = m_new;
#pragma unroll
            for (int i = 0; i < DV; i++) acc[g][i] *= corr;
        }
        __syncwarp();
#pragma unroll
        for (int v0 = 0; v0 < DEC_TILE; v0 += VG) {
            if (v0) load_values(v0);
#pragma unroll
            for (int i = 0; i < VG; i++) {
                if (v0 + i >= nc) break;
                float v[DV];
                vr[i].to_float(v);
#pragma unroll
                for (int g = 0; g < DEC_MAX_G; g++) {
                    if (g >= G) break;
                    const float pg = lw[g * DEC_TILE + v0 + i];
#pragma unroll
                    for (int e = 0; e < DV; e++) acc[g][e] += pg * v[e];
                }
            }
        }
        __syncwarp(); /* lw is overwritten by the next tile */
    }
#pragma unroll
    for (int g = 0; g < DEC_MAX_G; g++) {
        if (g >= G) break;
        const float lt = warp_sum(l[g]);
        if (lane == 0) { wml[(warp * G + g) * 2] = m[g]; wml[(warp * G + g) * 2 + 1] = lt; }
#pragma unroll
        for (int i = 0; i < DV; i++) wacc[(warp * G + g) * D + lane * DV + i] = acc[g][i];
    }
    __syncthreads();
    for (int i = tid; i < G * D; i += blockDim.x) { /* merge the warps */
        const int g = i / D, d = i % D;
        float M, L, o;
        softmax_merge(wml + 2 * g, 2 * G, wacc + (size_t)g * D + d, G * D, DEC_WARPS, &M, &L, &o);
        if (n_parts == 1) {
            const size_t oi = ((size_t)row * Hq + (size_t)kh * G + g) * D + d;
            out[oi] = o / L;
            if (out_bf) out_bf[oi] = __float2bfloat16(o / L);
        } else {
            part_acc[((head0 + g) * n_parts + p) * D + d] = o;
            if (d == 0) { part_ml[((head0 + g) * n_parts + p) * 2] = M; part_ml[((head0 + g) * n_parts + p) * 2 + 1] = L; }
        }
    }
}

/* Grid (S, Hq), D threads: out = sum_p acc_p e^(m_p - M) / sum_p l_p e^(m_p - M). */
__global__ static void decode_merge_kernel(float *out, bf16 *out_bf, const float *part_acc, const float *part_ml, const int *q_start, int Hq, int D,
                                           int n_parts) {
    const int s = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const size_t sh = (size_t)s * Hq + h;
    float M, L, o;
    softmax_merge(part_ml + sh * n_parts * 2, 2, part_acc + sh * n_parts * D + d, D, n_parts, &M, &L, &o);
    const size_t oi = ((size_t)q_start[s] * Hq + h) * D + d;
    out[oi] = o / L;
    if (out_bf) out_bf[oi] = __float2bfloat16(o / L);
}

template <typename T, int D>
static zp_status decode_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q,
                               const T *kc, const T *vc, int n_parts) {
    const int G = d->n_heads / d->n_kv_heads;
    const size_t smem = sizeof(float) * ((size_t)G * (D / 16) * DEC_QPAD + (size_t)DEC_WARPS * G * (DEC_TILE + 2 + D));
    if (smem > 48 * 1024) ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid(n_parts, d->n_kv_heads, c->b.n_seqs);
    decode_attn_kernel<T, D><<<grid, DEC_WARPS * 32, smem, c->stream>>>(out, out_bf, part_acc, part_ml, q, kc, vc, c->d.q_start, c->d.kv_len,
                                                                    c->d.tables, c->b.max_blocks, d->n_heads, d->n_kv_heads,
                                                                    d->block_size, d->scale, n_parts);
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
    /* split sequences only as far as it takes to give every SM four blocks, and no further than
     * whole grains of the longest sequence the block tables can hold (no per-step host data:
     * the launch is the same for every step of one batch shape) */
    const int max_parts = zp_ceil_div((long)c->b.max_blocks * d->block_size, DEC_GRAIN);
    int n_parts = zp_ceil_div(4L * c->n_sms, (long)S * d->n_kv_heads);
    n_parts = n_parts < 1 ? 1 : n_parts > max_parts ? max_parts : n_parts;
    if (n_parts > 1) {
        const size_t heads = (size_t)S * d->n_heads * n_parts;
        ZP_TRY(cuda_grow(&c->dec_part, &c->dec_part_cap, sizeof(float) * heads * (D + 2)));
    }
    float *part_acc = (float *)c->dec_part, *part_ml = part_acc ? part_acc + (size_t)S * d->n_heads * n_parts * D : NULL;
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * D;
    bf16 *obf = cuda_xbf_produce(c, out, (size_t)c->b.n_tokens * d->n_heads * D); /* the operand of the output projection */
    ZP_DISPATCH_STORAGE(c->fp32, {
        const T *kc = (const T *)k_cache + layer_off, *vc = (const T *)v_cache + layer_off;
        if (D == 64) ZP_TRY((decode_launch<T, 64>(c, d, (float *)out, obf, part_acc, part_ml, (const float *)q, kc, vc, n_parts)));
        else if (D == 128) ZP_TRY((decode_launch<T, 128>(c, d, (float *)out, obf, part_acc, part_ml, (const float *)q, kc, vc, n_parts)));
        else ZP_TRY((decode_launch<T, 256>(c, d, (float *)out, obf, part_acc, part_ml, (const float *)q, kc, vc, n_parts)));
    });
    if (n_parts > 1) {
        decode_merge_kernel<<<dim3(S, d->n_heads), D, 0, c->stream>>>((float *)out, obf, part_acc, part_ml, c->d.q_start, d->n_heads, D, n_parts);
        ZP_LAUNCH_CHECK("decode_merge");
    }
    return ZP_OK;
}
