/* prefill_attn_cuda.cu - causal attention of ragged prefill rows over the paged KV cache.
 * bf16 storage: a flash-attention tile kernel on tensor cores (WMMA bf16 16x16x16, fp32
 * accumulation): a thread block per (16-row query tile of a sequence, KV head), one warp per
 * query head of the GQA group, so each K/V tile staged in shared memory serves G heads; online
 * softmax per row in fp32, P rounded to bf16 for the P.V product (as flash attention does).
 * An fp8 cache in bf16 storage takes the same tiles, its bytes decoded x scale into the bf16 tiles.
 * fp32 storage (the parity mode), head sizes other than 64/128/256 and shapes whose tiles do not
 * fit in shared memory use the row kernel: one thread block per (row, head), exact fp32,
 * any even head size up to ATT_MAX_D; the decode path uses it too where its own kernels do
 * not apply. No [seq, seq] matrix anywhere.
 * Not here: the tensor-core decode kernels (one row per sequence; decode_attn_cuda.cu).
 */
#include <math.h>
#include <mma.h>

#include "cuda_common.cuh"
#include "kv_elem.cuh"

using namespace nvcuda;

/* Grid (T, Hq), D rounded up to whole warps threads (D even, D <= ATT_MAX_D): row t of its
 * sequence attends physical KV [0, kv_len - q_len + i] through the block table with an online
 * softmax. Tiles of blockDim keys: thread j scores key j of the tile, then thread d < D
 * accumulates output dimension d. Exact fp32; also the decode path of head sizes and groups
 * the tensor-core kernels do not take (a decode row is a prefill row with q_len 1). out and
 * out_bf (the output projection's bf16 operand) may each be NULL. The caches are of KT (kv_elem.cuh: the
 * storage type, or E4M3 bytes read with the layer's scales ks, vs [Hkv]; NULL: 1.0): the path of
 * every fp8 cache so far. */
#define ATT_MAX_D ZP_MAX_HEAD_DIM
template <typename KT>
__global__ static void attention_kernel(float *out, bf16 *out_bf, const float *q, const KT *kc, const KT *vc, const float *ks,
                                        const float *vs, const int *row_seq, const int *q_start, const int *q_len, const int *kv_len,
                                        const int *tables, int max_blocks, int Hq, int Hkv, int D, int bs, float scale) {
    __shared__ float qs[ATT_MAX_D], sc[ATT_MAX_D], red[32];
    const int t = blockIdx.x, h = blockIdx.y, tid = threadIdx.x, nt = blockDim.x, kh = h / (Hq / Hkv);
    const int s = row_seq[t], i = t - q_start[s], n_vis = kv_len[s] - q_len[s] + i + 1;
    const int *bt = tables + (size_t)s * max_blocks;
    const float sk = kv_head_scale(ks, kh), sv = kv_head_scale(vs, kh);
    if (tid < D) qs[tid] = q[((size_t)t * Hq + h) * D + tid];
    __syncthreads();
    float m = -INFINITY, l = 0.f, acc = 0.f;
    for (int j0 = 0; j0 < n_vis; j0 += nt) {
        const int j = j0 + tid;
        float z = -INFINITY;
        if (j < n_vis) {
            const KT *k = kc + (((size_t)bt[j / bs] * bs + j % bs) * Hkv + kh) * D;
            float dot = 0.f;
            for (int e = 0; e < D; e++) dot += qs[e] * kv_ld(k[e], sk);
            z = dot * scale;
        }
        sc[tid] = z;
        /* tile max (nt is a whole number of warps) */
        float mx = z;
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if (tid % 32 == 0) red[tid / 32] = mx;
        __syncthreads();
        float tile_max = -INFINITY;
        for (int w = 0; w < nt / 32; w++) tile_max = fmaxf(tile_max, red[w]);
        const float m_new = fmaxf(m, tile_max), corr = expf(m - m_new);
        l *= corr;
        acc *= corr;
        const int n_tile = n_vis - j0 < nt ? n_vis - j0 : nt;
        for (int jj = 0; jj < n_tile; jj++) {
            const int jk = j0 + jj;
            float p = expf(sc[jj] - m_new);
            l += p;
            if (tid < D) acc += p * kv_ld(vc[(((size_t)bt[jk / bs] * bs + jk % bs) * Hkv + kh) * D + tid], sv);
        }
        m = m_new;
        __syncthreads();
    }
    if (tid >= D) return;
    const size_t oi = ((size_t)t * Hq + h) * D + tid;
    if (out) out[oi] = acc / l;
    if (out_bf) out_bf[oi] = __float2bfloat16(acc / l);
}

zp_status cuda_attn_rows(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, const float *q, const void *k_cache,
                         const void *v_cache, int layer) {
    const int D = d->head_dim;
    if (D % 2 || D > ATT_MAX_D)
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda attention: head_dim %d must be even and at most %d", D, ATT_MAX_D);
    ZP_TRY(kv_check(d, "attention"));
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * D;
    dim3 grid(c->b.n_tokens, d->n_heads);
    const float *ks = kv_layer_scales(d, 0, layer), *vs = kv_layer_scales(d, 1, layer);
    ZP_DISPATCH_KV(c->fp32, d->kv_fp8, attention_kernel<KT><<<grid, (D + 31) / 32 * 32, 0, c->stream>>>(
                                     out, out_bf, q, (const KT *)k_cache + layer_off, (const KT *)v_cache + layer_off, ks, vs, c->d.row_seq,
                                     c->d.q_start, c->d.q_len, c->d.kv_len, c->d.tables, c->b.max_blocks, d->n_heads, d->n_kv_heads, D,
                                     d->block_size, d->scale));
    ZP_LAUNCH_CHECK("attention (rows)");
    return ZP_OK;
}

/* Shared-memory layout of the tile kernel, in bytes (every region 128-byte aligned). Leading
 * dimensions are padded by 8 bf16 / 4 floats so WMMA rows do not fall on the same banks. */
template <int D, int KT>
struct pf_layout {
    static constexpr int LDH = D + 8, LDS = KT + 4, LDP = KT + 8, LDO = D + 4; /* K/V/Q, S, P, O */
    static constexpr size_t KV = (size_t)KT * LDH * 2;                           /* one of K, V */
    static constexpr size_t Q = 16 * (size_t)LDH * 2, S = 16 * (size_t)LDS * 4, P = 16 * (size_t)LDP * 2, O = 16 * (size_t)LDO * 4;
    static constexpr size_t STAT = 2 * 16 * 4;                                    /* max, sum per row */
    __host__ __device__ static constexpr size_t al(size_t x) { return (x + 127) / 128 * 128; }
    static constexpr size_t KVA = al(KV), SOFF = al(Q), POFF = SOFF + al(S), OOFF = POFF + al(P), MOFF = OOFF + al(O);
    static constexpr size_t WARP = MOFF + al(STAT); /* one warp's Q | S | P | O | stats */
    static size_t bytes(int G) { return 2 * KVA + (size_t)G * WARP; }
};

/* Eight consecutive cache elements as eight bf16 for a WMMA tile: bf16 as they are; E4M3
 * bytes decoded x scale s, rounded to bf16 (exact for a power-of-two scale: 3 mantissa bits). */
__device__ __forceinline__ uint4 stage8(const bf16 *p, float) { return *(const uint4 *)p; }
__device__ __forceinline__ uint4 stage8(const e4m3 *p, float s) {
    raw_vec<e4m3, 8> r;
    float f[8];
    r.load(p);
    r.to_float(f, s);
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
        w[i] = *(const uint32_t *)&h;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Grid (n_tiles, Hkv), G warps. Tile k covers rows tile_row0[k] .. +16 of sequence
 * tile_seq[k]; warp g computes query head kh*G + g of those rows. Row i of a sequence sees
 * physical keys [0, kv_len - q_len + i]; the block walks key tiles of KT up to the last key
 * its last row sees. The caches are of C: bf16, or an fp8 cache's E4M3 bytes (kv_elem.cuh) with
 * the layer's scales ks, vs [Hkv] (NULL: 1.0), staged as bf16. Shared memory: pf_layout<D, KT>. */
template <int D, int KT, typename C>
__global__ static void prefill_tile_kernel(float *out, bf16 *out_bf, const float *q, const C *kc, const C *vc, const float *ks, const float *vs,
                                           const int *tile_seq, const int *tile_row0, const int *q_start, const int *q_len, const int *kv_len,
                                           const int *tables, int max_blocks, int Hq, int Hkv, int bs, float scale) {
    typedef pf_layout<D, KT> L;
    extern __shared__ __align__(128) unsigned char smem[];
    const int G = Hq / Hkv, kh = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32, h = kh * G + warp;
    const int s = tile_seq[blockIdx.x], i0 = tile_row0[blockIdx.x], ql = q_len[s], base = kv_len[s] - ql;
    const int nrows = ql - i0 < 16 ? ql - i0 : 16, n_keys = base + i0 + nrows, row0 = q_start[s] + i0;
    const int *bt = tables + (size_t)s * max_blocks;
    const float sk = kv_head_scale(ks, kh), sv = kv_head_scale(vs, kh);
    bf16 *Ks = (bf16 *)smem, *Vs = (bf16 *)(smem + L::KVA);
    unsigned char *wbase = smem + 2 * L::KVA + (size_t)warp * L::WARP;
    bf16 *Qs = (bf16 *)wbase, *Ps = (bf16 *)(wbase + L::POFF);
    float *Ss = (float *)(wbase + L::SOFF), *Os = (float *)(wbase + L::OOFF), *mrow = (float *)(wbase + L::MOFF), *lrow = mrow + 16;
    /* this warp's query rows (bf16; rows past the tile are zero) and a zero output */
    for (int i = lane; i < 16 * D; i += 32) {
        const int r = i / D, d = i % D;
        Qs[r * L::LDH + d] = __float2bfloat16(r < nrows ? q[((size_t)(row0 + r) * Hq + h) * D + d] : 0.f);
        Os[r * L::LDO + d] = 0.f;
    }
    if (lane < 16) { mrow[lane] = -INFINITY; lrow[lane] = 0.f; }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> qf[D / 16];
#pragma unroll
    for (int k = 0; k < D / 16; k++) wmma::load_matrix_sync(qf[k], Qs + k * 16, L::LDH);
    const int r = lane / 2, half = lane % 2; /* softmax: two lanes per row, alternate columns */
    for (int k0 = 0; k0 < n_keys; k0 += KT) {
        const int nk = n_keys - k0 < KT ? n_keys - k0 : KT;
        __syncthreads(); /* every warp is done with the previous K/V tile */
        for (int i = threadIdx.x; i < KT * (D / 8); i += blockDim.x) { /* stage K and V, 8 elements at a time */
            const int j = i / (D / 8), c = (i % (D / 8)) * 8;
            uint4 kv4 = make_uint4(0, 0, 0, 0), vv4 = kv4;
            if (j < nk) {
                const int t = k0 + j;
                const size_t off = (((size_t)bt[t / bs] * bs + t % bs) * Hkv + kh) * D + c;
                kv4 = stage8(kc + off, sk);
                vv4 = stage8(vc + off, sv);
            }
            *(uint4 *)(Ks + j * L::LDH + c) = kv4;
            *(uint4 *)(Vs + j * L::LDH + c) = vv4;
        }
        __syncthreads();
        /* S[16, KT] = Q K^T */
#pragma unroll
        for (int n = 0; n < KT / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
            wmma::fill_fragment(sf, 0.f);
#pragma unroll
            for (int k = 0; k < D / 16; k++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, Ks + n * 16 * L::LDH + k * 16, L::LDH);
                wmma::mma_sync(sf, qf[k], kf, sf);
            }
            wmma::store_matrix_sync(Ss + n * 16, sf, L::LDS, wmma::mem_row_major);
        }
        __syncwarp();
        /* online softmax of row r over this tile's visible keys; P to bf16; rescale O */
        const int vis = r < nrows ? base + i0 + r + 1 - k0 : 0; /* keys of this tile row r sees */
        float mx = -INFINITY;
        for (int c = half; c < KT; c += 2)
            if (c < vis) mx = fmaxf(mx, Ss[r * L::LDS + c] * scale);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        const float m_old = mrow[r], m_new = fmaxf(m_old, mx);
        const float corr = m_new == -INFINITY ? 1.f : expf(m_old - m_new);
        float sum = 0.f;
        for (int c = half; c < KT; c += 2) {
            const float pz = c < vis ? expf(Ss[r * L::LDS + c] * scale - m_new) : 0.f;
            sum += pz;
            Ps[r * L::LDP + c] = __float2bfloat16(pz);
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        __syncwarp();
        if (half == 0) { mrow[r] = m_new; lrow[r] = lrow[r] * corr + sum; }
        for (int c = half; c < D; c += 2) Os[r * L::LDO + c] *= corr;
        __syncwarp();
        /* O[16, D] += P V */
#pragma unroll
        for (int n = 0; n < D / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
            wmma::load_matrix_sync(of, Os + n * 16, L::LDO, wmma::mem_row_major);
#pragma unroll
            for (int k = 0; k < KT / 16; k++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> pf;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> vf;
                wmma::load_matrix_sync(pf, Ps + k * 16, L::LDP);
                wmma::load_matrix_sync(vf, Vs + k * 16 * L::LDH + n * 16, L::LDH);
                wmma::mma_sync(of, pf, vf, of);
            }
            wmma::store_matrix_sync(Os + n * 16, of, L::LDO, wmma::mem_row_major);
        }
        __syncwarp();
    }
    for (int i = lane; i < nrows * D; i += 32) {
        const int rr = i / D, d = i % D;
        const size_t oi = ((size_t)(row0 + rr) * Hq + h) * D + d;
        if (out) out[oi] = Os[rr * L::LDO + d] / lrow[rr];
        if (out_bf) out_bf[oi] = __float2bfloat16(Os[rr * L::LDO + d] / lrow[rr]);
    }
}

/* Whether the tile kernel's shared memory fits for this GQA group (G warps). */
template <int D, int KT>
static int prefill_tile_fits(int G) { return G <= 8 && pf_layout<D, KT>::bytes(G) <= 227 * 1024; }

template <int D, int KT, typename C>
static zp_status prefill_tile_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, const float *q, const C *kc,
                                     const C *vc, const float *ks, const float *vs) {
    const int G = d->n_heads / d->n_kv_heads;
    const size_t smem = pf_layout<D, KT>::bytes(G);
    /* per call, not cached in a static: the attribute belongs to the current device */
    ZP_CUDA_CHECK(cudaFuncSetAttribute(prefill_tile_kernel<D, KT, C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    prefill_tile_kernel<D, KT, C><<<dim3(c->n_ptiles, d->n_kv_heads), 32 * G, smem, c->stream>>>(
        out, out_bf, q, kc, vc, ks, vs, c->d.tile_seq, c->d.tile_row0, c->d.q_start, c->d.q_len, c->d.kv_len, c->d.tables, c->b.max_blocks, d->n_heads,
        d->n_kv_heads, d->block_size, d->scale);
    ZP_LAUNCH_CHECK("prefill attention (tiles)");
    return ZP_OK;
}

/* The tile kernel at the head size (64, 128, 256). */
template <typename C>
static zp_status prefill_tiles(cuda_ctx *c, const zp_attn_dims *d, bf16 *obf, const float *qf, const C *kc, const C *vc, const float *ks,
                               const float *vs) {
    if (d->head_dim == 64) return prefill_tile_launch<64, 64, C>(c, d, NULL, obf, qf, kc, vc, ks, vs);
    if (d->head_dim == 128) return prefill_tile_launch<128, 64, C>(c, d, NULL, obf, qf, kc, vc, ks, vs);
    return prefill_tile_launch<256, 32, C>(c, d, NULL, obf, qf, kc, vc, ks, vs);
}

zp_status cuda_attn_prefill(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache, const void *v_cache,
                            int layer) {
    if (zp_attn_layer_of(d, layer)) /* gpt-oss's layers: the CPU backend has them */
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda attn_prefill: layer %d has a sliding window or attention sinks (not built on CUDA yet)", layer);
    cuda_ctx *c = CUDA_CTX(be);
    cuda_use_layer_view(c, layer);
    zp_prof_scope prof(c, ZP_OP_ATTENTION);
    if (c->b.n_tokens == 0) return ZP_OK;
    const size_t layer_off = (size_t)layer * d->num_blocks * d->block_size * d->n_kv_heads * d->head_dim;
    if (!c->fp32 && c->n_ptiles > 0) {
        ZP_TRY(kv_check(d, "attn_prefill"));
        const int G = d->n_heads / d->n_kv_heads, D = d->head_dim;
        const float *qf = (const float *)q, *ks = kv_layer_scales(d, 0, layer), *vs = kv_layer_scales(d, 1, layer);
        const int fits = (D == 64 && prefill_tile_fits<64, 64>(G)) || (D == 128 && prefill_tile_fits<128, 64>(G)) ||
                         (D == 256 && prefill_tile_fits<256, 32>(G));
        bf16 *obf = (bf16 *)out; /* bf16 storage: the operand type is bf16 */
        if (fits && d->kv_fp8) /* bf16 storage: the cache is bf16 or fp8 */
            return prefill_tiles<e4m3>(c, d, obf, qf, (const e4m3 *)k_cache + layer_off, (const e4m3 *)v_cache + layer_off, ks, vs);
        if (fits) return prefill_tiles<bf16>(c, d, obf, qf, (const bf16 *)k_cache + layer_off, (const bf16 *)v_cache + layer_off, ks, vs);
    }
    return cuda_attn_rows(c, d, cuda_operand_f32(c, out), cuda_operand_bf16(c, out), (const float *)q, k_cache, v_cache, layer);
}
