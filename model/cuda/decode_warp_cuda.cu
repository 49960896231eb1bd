/* decode_warp_cuda.cu - paged decode attention with a warp per (KV head, sequence)
 * (the default where a batch's items fill the resident warps and its contexts are short, see
 * decode_launch): the cp.async tensor-core kernel's tile loop
 * (decode_mma.cuh), but each warp walks all the keys of its item in 16-key steps and writes its
 * result itself, so a block of DEC_WARPS warps serves DEC_WARPS items and no block-wide merge
 * or barrier follows the loop. On short contexts the block kernel pays its start (query
 * fragments, the first copies' latency) and its merge once per quarter of a context; here once
 * per context. It runs only where the batch alone fills the warps, so it has no partitions.
 * Its caches: bf16, or E4M3 bytes in bf16 storage (dec_async_walk widens them to fp16, the scales
 * apply in fp32).
 * Not here: partitions and their merge (the block kernels, decode_attn_cuda.cu), fp32 caches,
 * head dim 256.
 */
#include "cuda_common.cuh"
#include "decode_mma.cuh"

/* Grid ceil(n_items / DEC_WARPS) blocks of DEC_WARPS warps; warp item i = s * Hkv + kh.
 * Shared: [DEC_WARPS][dec_stages][K | V] tiles of dec_tile<D, KT>. q [rows, Hq, D] fp32; kc, vc
 * [blocks * bs, Hkv, D] of KT of this layer, with its scales ks, vs [Hkv] (fp8; NULL: 1.0);
 * out [rows, Hq, D] (or NULL) and out_bf. */
template <int D, typename KT>
__global__ static void __launch_bounds__(DEC_WARPS * 32, 2)
decode_attn_warp_kernel(float *out, bf16 *out_bf, const float *q, const KT *kc, const KT *vc, const float *ks, const float *vs,
                        const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv, int bs, float scale,
                        int n_items) {
    static_assert(D == 64 || D == 128, "decode_attn_warp_kernel: D 64 or 128");
    constexpr int NH = D / 64, TILE = dec_tile<D, KT>::BYTES; /* NH: 64-dim halves of the output */
    extern __shared__ __align__(16) unsigned char dsm[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, t = lane & 3;
    const int item = blockIdx.x * DEC_WARPS + warp;
    if (item >= n_items) return; /* no barrier below: a warp may leave early */
    const int kh = item % Hkv, s = item / Hkv, G = Hq / Hkv;
    const int n = kv_len[s], row = q_start[s];
    const int *bt = tables + (size_t)s * max_blocks;
    unsigned char *stage = dsm + (size_t)warp * dec_stages((int)sizeof(KT)) * 2 * TILE;
    uint32_t qa[D / 16][2];
    float m, l, o[D / 8][2];
    const float sl2_q = scale * 1.44269504088896341f; /* the softmax scale in log2 units */
    mma_warp_begin<D, KT>(qa, q + ((size_t)row * Hq + (size_t)kh * G + gq) * D, gq, G, t, m, l, o, dec_q_mul<KT>(sl2_q));
    const float sl2 = dec_key_scale<D, KT>(sl2_q, ks, kh);
    dec_async_walk<D, KT>(stage, 0, DEC_MMA_TILE, n, bt, bs, kc, vc, Hkv, kh, qa, sl2, m, l, o);
    dec_value_scale<D, KT>(o, vs, kh);
    /* head gq's result: the lanes' partial sums added; n-tile (hd, j) holds dims 64hd + 16t + j and +8 */
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (gq >= G) return;
    const size_t oi = ((size_t)row * Hq + (size_t)kh * G + gq) * D;
    const float inv = 1.f / l;
#pragma unroll
    for (int hd = 0; hd < NH; hd++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int d0 = 64 * hd + 16 * t + j;
            if (out) { out[oi + d0] = o[8 * hd + j][0] * inv; out[oi + d0 + 8] = o[8 * hd + j][1] * inv; }
            if (out_bf) { out_bf[oi + d0] = __float2bfloat16(o[8 * hd + j][0] * inv); out_bf[oi + d0 + 8] = __float2bfloat16(o[8 * hd + j][1] * inv); }
        }
}

template <typename KT>
zp_status cuda_decode_warp_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, const float *q, const KT *kc,
                                  const KT *vc, const float *ks, const float *vs) {
    const int D = d->head_dim, n_items = d->n_kv_heads * c->b.n_seqs;
    const size_t smem = dec_stage_bytes(D, (int)sizeof(KT));
    const int blocks = (n_items + DEC_WARPS - 1) / DEC_WARPS;
#define WARP_LAUNCH(DD)                                                                                                                 \
    do {                                                                                                                                \
        ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_warp_kernel<DD, KT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));   \
        ZP_CUDA_CHECK(cudaFuncSetAttribute(decode_attn_warp_kernel<DD, KT>, cudaFuncAttributePreferredSharedMemoryCarveout,             \
                                           cudaSharedmemCarveoutMaxShared));                                                            \
        decode_attn_warp_kernel<DD, KT><<<blocks, DEC_WARPS * 32, smem, c->stream>>>(out, out_bf, q, kc, vc, ks, vs, c->d.q_start,      \
                                                                                      c->d.kv_len, c->d.tables, c->b.max_blocks,         \
                                                                                      d->n_heads, d->n_kv_heads, d->block_size, d->scale, \
                                                                                      n_items);                                          \
    } while (0)
    if (D == 64) WARP_LAUNCH(64);
    else if (D == 128) WARP_LAUNCH(128);
    else return zp_fail(ZP_ERR_UNSUPPORTED, "cuda decode attention (warp kernel): head_dim %d (64 or 128)", D);
#undef WARP_LAUNCH
    ZP_LAUNCH_CHECK("decode_attention_warp");
    return ZP_OK;
}
template zp_status cuda_decode_warp_launch<bf16>(cuda_ctx *, const zp_attn_dims *, float *, bf16 *, const float *, const bf16 *, const bf16 *,
                                                 const float *, const float *);
template zp_status cuda_decode_warp_launch<e4m3>(cuda_ctx *, const zp_attn_dims *, float *, bf16 *, const float *, const e4m3 *, const e4m3 *,
                                                 const float *, const float *);
