/* decode_attn_cuda.cu - paged decode attention (one query row per sequence), flash-decoding
 * style: a thread block per (KV partition, KV head, sequence) serves the whole GQA group of
 * the KV head (K and V are read once for G query heads). Each of its DEC_WARPS warps walks its
 * own tiles of keys with its own online softmax (no block-wide barrier inside the key loop);
 * the warps' results are merged once at the end, and, when a sequence is split over several
 * partitions (small batches with long contexts, so every SM has work), a second kernel merges
 * the partitions by their softmax statistics (decode_frame.cuh). The kernels and the rule that
 * picks one (decode_launch, the only place it is stated):
 *   decode_attn_warp_kernel   bf16 caches and fp8 ones in bf16 storage, head dim 64/128, one
 *                             partition, batches whose (sequence, KV head) items fill the
 *                             resident warps and contexts up to DEC_WARP_MAX_KEYS: a warp per
 *                             item (decode_warp_cuda.cu);
 *   decode_attn_async_kernel  the same caches and head dims otherwise: QK^T and PV on tensor
 *                             cores (mma.sync), K/V tiles copied by cp.async two ahead through
 *                             shared memory (E4M3 bytes staged as they are, widened exactly to
 *                             fp16 in the fragments for fp16 MMAs, the scales applied in fp32);
 *   decode_attn_kernel        fp32 caches (the parity mode), head dim 256, and fp8 caches of
 *                             head dim 128 or 256 in fp32 storage or of head dim 256 (E4M3 bytes
 *                             decoded x the head's scale in registers): fp32 FMAs, keys by groups
 *                             of D/16 lanes, values across the warp;
 *   the exact row kernel      other head sizes (any even one up to 512), groups beyond
 *                             DEC_MAX_G and fp8 caches of head dim 64 in fp32 storage
 *                             (prefill_attn_cuda.cu; one block per (sequence, query head), no
 *                             partitions): a correct fallback for shapes no supported model has,
 *                             not a fast path.
 * Partitions: enough to give every SM four blocks (decode_parts_default). No [seq, seq] or
 * [n_kv] matrix leaves shared memory. Variants measured and not taken (a register pipeline,
 * other split rules) live in dev/cuda/, with their validator and timer.
 * Not here: prefill (ragged rows, causal; prefill_attn_cuda.cu).
 */
#include <math.h>

#include "cuda_common.cuh"
#include "decode_frame.cuh" /* decode_mma.cuh, the partitions and merges */
#include "kv_elem.cuh"      /* an fp8 cache's element and scales */

#define DEC_QPAD 20                       /* floats per 16-dim query chunk in shared (bank spread) */

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
decode_attn_kernel(float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q, const T *kc, const T *vc, const float *ks,
                   const float *vs, const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv, int bs,
                   float scale, int n_parts) {
    constexpr int LPK = D / 16, KPP = 32 / LPK, DV = D / 32; /* lanes per key, keys per pass, value dims per lane */
    /* passes (keys) whose K (V) loads are in flight together: at most RB registers of raw data */
    constexpr int RB = D > 128 ? 32 : 64, KB = 16 * (int)sizeof(T) / 4, KG = LPK < RB / KB ? LPK : RB / KB;
    constexpr int VB = DV * (int)sizeof(T) / 4 > 0 ? DV * (int)sizeof(T) / 4 : 1, VG = DEC_TILE < RB / VB ? DEC_TILE : RB / VB;
    extern __shared__ float sm[];
    const int p = blockIdx.x, kh = blockIdx.y, s = blockIdx.z, G = Hq / Hkv, tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32, kk = lane / LPK, dl = lane % LPK;
    const int n = kv_len[s], row = q_start[s];
    int t0, t1;
    decode_part_range(n, p, n_parts, &t0, &t1);
    float *qs = sm, *lg = qs + G * LPK * DEC_QPAD, *wml = lg + DEC_WARPS * G * DEC_TILE, *wacc = wml + DEC_WARPS * G * 2;
    float *lw = lg + warp * G * DEC_TILE;
    const int *bt = tables + (size_t)s * max_blocks;
    const size_t head0 = (size_t)s * Hq + (size_t)kh * G; /* first query head of the group, as (seq, head) index */
    const float sk = kv_head_scale(ks, kh), sv = kv_head_scale(vs, kh); /* an fp8 cache's scales (kv_elem.cuh) */
    if (t0 >= n) return decode_part_empty(part_ml, head0, p, n_parts, G);
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
                kr[i].to_float(kf, sk);
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
            const float m_new = fmaxf(m[g], zp_warp_max(z)), corr = expf(m[g] - m_new), pz = lane < nc ? expf(z - m_new) : 0.f;
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
                vr[i].to_float(v, sv);
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
        const float lt = zp_warp_sum(l[g]);
        if (lane == 0) { wml[(warp * G + g) * 2] = m[g]; wml[(warp * G + g) * 2 + 1] = lt; }
#pragma unroll
        for (int i = 0; i < DV; i++) wacc[(warp * G + g) * D + lane * DV + i] = acc[g][i];
    }
    __syncthreads();
    decode_block_finish(wml, wacc, G, D, out, out_bf, part_acc, part_ml, row, Hq, kh, head0, p, n_parts);
}

/* The default bf16 decode kernel (0.75 of the copy bandwidth at 256 x 384 against the register
 * pipeline's 0.68, equal on long contexts; bench/RESULTS.md): the tensor-core kernel with its
 * K/V tiles copied by cp.async into shared memory dec_stages - 1 tiles ahead (twice the bytes in flight
 * of the register pipeline, which keeps one), then read into the same fragments. Per warp and
 * stage: K and V of 16 keys, rows of D bf16, 16-byte chunks XOR-swizzled so that the fragment
 * reads hit distinct banks (K: chunk ^ 4 (row & 1); V: chunk ^ 2 ((row >> 1) & 3)). After the
 * key loop the stages' memory holds the warps' (max, sum) and outputs. Rows past the end are
 * zero-filled by the copy (0 * garbage would be NaN). */


static size_t decode_async_smem(int D, int elem) {
    const size_t stages = dec_stage_bytes(D, elem);
    const size_t merge = sizeof(float) * DEC_WARPS * DEC_MAX_G * (2 + (size_t)D);
    return stages > merge ? stages : merge;
}

/* KT: bf16, or E4M3 bytes (an fp8 cache in bf16 storage: the bytes staged as they are, widened
 * to fp16 in the fragments (dec_op), the scales applied in fp32: dec_key_scale, dec_value_scale). */
template <int D, typename KT>
__global__ static void __launch_bounds__(DEC_WARPS * 32, 2)
decode_attn_async_kernel(float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q, const KT *kc, const KT *vc,
                         const float *ks, const float *vs, const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq,
                         int Hkv, int bs, float scale, int n_parts) {
    static_assert(D == 64 || D == 128, "decode_attn_async_kernel: D 64 or 128");
    constexpr int TILE = dec_tile<D, KT>::BYTES;
    extern __shared__ __align__(16) unsigned char dsm[];
    const dec_place P = decode_place(q_start, kv_len, tables, max_blocks, Hq, Hkv, n_parts);
    const int p = P.p, kh = P.kh, G = P.G, row = P.row, t1 = P.t1, *bt = P.bt;
    const size_t head0 = P.head0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, t = lane & 3;
    if (P.t0 >= P.n) return decode_part_empty(part_ml, head0, p, n_parts, G);
    unsigned char *stage = dsm + (size_t)warp * dec_stages((int)sizeof(KT)) * 2 * TILE; /* [stage][K | V] tiles */
    uint32_t qa[D / 16][2];
    float m, l, o[D / 8][2];
    const float sl2_q = scale * 1.44269504088896341f; /* the softmax scale in log2 units */
    mma_warp_begin<D, KT>(qa, q + ((size_t)row * Hq + (size_t)kh * G + gq) * D, gq, G, t, m, l, o, dec_q_mul<KT>(sl2_q));
    const float sl2 = dec_key_scale<D, KT>(sl2_q, ks, kh);
    dec_async_walk<D, KT>(stage, P.t0 + warp * DEC_MMA_TILE, DEC_WARPS * DEC_MMA_TILE, t1, bt, bs, kc, vc, Hkv, kh, qa, sl2, m, l, o);
    dec_value_scale<D, KT>(o, vs, kh);
    __syncthreads(); /* every warp is done with its stages: the memory now holds wml | wacc */
    float *wml = (float *)dsm, *wacc = wml + DEC_WARPS * DEC_MAX_G * 2;
    mma_warp_store<D>(m, l, o, warp, gq, G, t, wml, wacc);
    __syncthreads();
    decode_block_finish(wml, wacc, G, D, out, out_bf, part_acc, part_ml, row, Hq, kh, head0, p, n_parts);
}

/* The longest context (the batch's widest block table) the warp-per-item kernel takes: where
 * it and the block kernel measured equal (256 sequences of 4,096 keys, `bench_attention decode
 * 256 4096` under each); past that a long context would be one warp's walk while the other
 * warps idle. */
#define DEC_WARP_MAX_KEYS 4096

template <typename T, int D>
static zp_status decode_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q,
                               const T *kc, const T *vc, const float *ks, const float *vs, int n_parts) {
    dim3 grid(n_parts, d->n_kv_heads, c->b.n_seqs);
    /* tensor cores: bf16 caches, and fp8 ones in bf16 storage (in the fp32 parity mode an fp8
     * cache takes the CUDA-core kernel, whose fp32 sums follow the CPU reference's) */
    if constexpr (sizeof(T) <= 2 && D <= 128) {
        if (sizeof(T) == 2 || !c->fp32) {
            /* a warp per item where the items fill the resident warps (2 blocks per SM) at least
             * once and no context is longer than DEC_WARP_MAX_KEYS (`bench_attention decode`
             * under each kernel); fewer or longer items stay with the blocks, whose four
             * warps share an item, so that one long context among short ones is not walked by a
             * single warp). A key-only rule, like n_parts: a graph replays it for every step of
             * its batch shape */
            if (n_parts == 1 && (long)c->b.n_seqs * d->n_kv_heads >= 2L * c->n_sms * DEC_WARPS &&
                (long)c->b.max_blocks * d->block_size <= DEC_WARP_MAX_KEYS)
                return cuda_decode_warp_launch<T>(c, d, out, out_bf, q, kc, vc, ks, vs);
            /* per call, not cached in a static (the attributes belong to the current device, as in
             * the prefill launch); the largest carve-out, so that two blocks fit an SM */
            const size_t smem = decode_async_smem(D, (int)sizeof(T));
            ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_async_kernel<D, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_async_kernel<D, T>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                               cudaSharedmemCarveoutMaxShared));
            decode_attn_async_kernel<D, T><<<grid, DEC_WARPS * 32, smem, c->stream>>>(
                out, out_bf, part_acc, part_ml, q, kc, vc, ks, vs, c->d.q_start, c->d.kv_len, c->d.tables, c->b.max_blocks, d->n_heads,
                d->n_kv_heads, d->block_size, d->scale, n_parts);
            ZP_LAUNCH_CHECK("decode_attention_async");
            return ZP_OK;
        }
    }
    if constexpr (sizeof(T) == 1 && D == 64) { /* two value bytes a lane: cuda_attn_decode sends these to the row kernel */
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda decode attention: an fp8 cache of head size 64 in fp32 storage (the row kernel's)");
    } else {
        const int G = d->n_heads / d->n_kv_heads;
        const size_t smem = sizeof(float) * ((size_t)G * (D / 16) * DEC_QPAD + (size_t)DEC_WARPS * G * (DEC_TILE + 2 + D));
        if (smem > 48 * 1024)
            ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        decode_attn_kernel<T, D><<<grid, DEC_WARPS * 32, smem, c->stream>>>(out, out_bf, part_acc, part_ml, q, kc, vc, ks, vs, c->d.q_start,
                                                                        c->d.kv_len, c->d.tables, c->b.max_blocks, d->n_heads,
                                                                        d->n_kv_heads, d->block_size, d->scale, n_parts);
        ZP_LAUNCH_CHECK("decode_attention");
        return ZP_OK;
    }
}

/* decode_launch at the head size D: 64, 128 or 256. */
template <typename KT>
static zp_status decode_dims(cuda_ctx *c, const zp_attn_dims *d, int D, float *of, bf16 *obf, float *part_acc, float *part_ml, const float *q,
                             const KT *kc, const KT *vc, const float *ks, const float *vs, int n_parts) {
    if (D == 64) return decode_launch<KT, 64>(c, d, of, obf, part_acc, part_ml, q, kc, vc, ks, vs, n_parts);
    if (D == 128) return decode_launch<KT, 128>(c, d, of, obf, part_acc, part_ml, q, kc, vc, ks, vs, n_parts);
    return decode_launch<KT, 256>(c, d, of, obf, part_acc, part_ml, q, kc, vc, ks, vs, n_parts);
}

zp_status cuda_attn_decode(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                           int layer) {
    if (zp_attn_layer_of(d, layer)) /* gpt-oss's layers: the CPU backend has them */
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda attn_decode: layer %d has a sliding window or attention sinks (not built on CUDA yet)", layer);
    cuda_ctx *c = CUDA_CTX(be);
    cuda_use_layer_view(c, layer);
    zp_prof_scope prof(c, ZP_OP_ATTENTION);
    const int S = c->b.n_seqs, G = d->n_heads / d->n_kv_heads, D = d->head_dim;
    if (S == 0) return ZP_OK;
    /* other shapes, and fp8 caches of head size 64 in fp32 storage: the exact row kernel, one
     * block per (seq, head) */
    if ((D != 64 && D != 128 && D != 256) || G > DEC_MAX_G || (d->kv_fp8 && D == 64 && c->fp32)) {
        return cuda_attn_rows(c, d, cuda_operand_f32(c, out), cuda_operand_bf16(c, out), (const float *)q, k_cache, v_cache, layer);
    }
    const int max_parts = zp_ceil_div((long)c->b.max_blocks * d->block_size, DEC_GRAIN);
    const int n_parts = decode_parts_default((long)S * d->n_kv_heads, c->n_sms, max_parts);
    if (n_parts > 1) {
        const size_t heads = (size_t)S * d->n_heads * n_parts;
        ZP_TRY(cuda_grow(c, &c->dec_part, &c->dec_part_cap, sizeof(float) * heads * (D + 2)));
    }
    float *part_acc = (float *)c->dec_part, *part_ml = part_acc ? part_acc + (size_t)S * d->n_heads * n_parts * D : NULL;
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * D;
    float *of = cuda_operand_f32(c, out); /* out is of the operand type: fp32 rows or bf16 rows */
    bf16 *obf = cuda_operand_bf16(c, out);
    ZP_TRY(kv_check(d, "attn_decode"));
    const float *ks = kv_layer_scales(d, 0, layer), *vs = kv_layer_scales(d, 1, layer);
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, {
        const KT *kc = (const KT *)k_cache + layer_off, *vc = (const KT *)v_cache + layer_off;
        ZP_TRY(decode_dims<KT>(c, d, D, of, obf, part_acc, part_ml, (const float *)q, kc, vc, ks, vs, n_parts));
    });
    if (n_parts > 1) {
        decode_merge_kernel<<<dim3(S, d->n_heads), D, 0, c->stream>>>(of, obf, part_acc, part_ml, c->d.q_start, d->n_heads, D, n_parts);
        ZP_LAUNCH_CHECK("decode_merge");
    }
    return ZP_OK;
}
