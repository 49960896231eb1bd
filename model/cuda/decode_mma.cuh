/* decode_mma.cuh - the pieces the tensor-core decode kernels share (decode_attn_cuda.cu: the
 * block-per-(partition, KV head, sequence) kernels; decode_warp_cuda.cu: a warp per (KV head,
 * sequence)): the grid constants, the mma.sync QK^T / online-softmax / PV steps of one
 * 16-key tile, and the cp.async copies with their shared-memory swizzles.
 * Not here: kernels, launches, partition ranges (decode_attn_cuda.cu), the fp32 path. */
#ifndef ZP_DECODE_MMA_CUH
#define ZP_DECODE_MMA_CUH

#include "cuda_common.cuh"
#include "kv_elem.cuh" /* e4m3, kv_head_scale */

#define DEC_WARPS 4
#define DEC_TILE 32                       /* keys of one warp round */
#define DEC_GRAIN (DEC_WARPS * DEC_TILE)  /* partition lengths are multiples of this */
#define DEC_MAX_G 8                       /* query heads per KV head (Qwen3-32B: 8) */

/* Tensor-core decode (bf16 caches, D 64 or 128): the same grid, partitions and warp merge as
 * decode_attn_kernel, but each warp scores and sums its keys with mma.sync m16n8k16 (bf16 in,
 * fp32 accumulate): rows of the A operand are the group's G query heads (rows G..15 zero), so
 * a tile of 16 keys costs 2 x D/16 MMAs for QK^T and D/8 for PV instead of ~2 G D FMAs per key
 * and lane. Lane (gq = lane/4, t = lane%4) loads whole 16-byte pieces and the head dims are
 * permuted consistently instead of staged through shared memory:
 *   QK^T: k-step 2c+h, k-positions 2t+e / 2t+8+e <-> dims 32c+8t+4h+e / +2; key n = gq of the n-tile;
 *   PV:   k-positions 2t+e / 2t+8+e <-> keys 2t+e / 8+2t+e of the tile (the QK C fragment), and
 *         column gq of n-tile (hd, j) <-> dim 64hd+8gq+j (two keys' words interleaved by byte_perm).
 * Softmax in the log2 domain; Q and P rounded to the MMA operand type of the cache (dec_op: bf16
 * for a bf16 cache, as in the prefill tiles; fp16 for an E4M3 one). */
#define DEC_MMA_TILE 16

__device__ __forceinline__ void mma_bf16_16816(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_f16_16816(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(const uint32_t *)&v;
}
__device__ __forceinline__ uint32_t pack_f16(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *(const uint32_t *)&v;
}

/* The MMA operands of a cache type KT. A bf16 cache multiplies in bf16. An E4M3 cache multiplies
 * in fp16: its bytes widen to fp16 exactly in one instruction (e4m3x2_to_f16x2; to bf16 it takes
 * four), and Q and P keep 11 significant bits instead of 8. fp16 overflows at 65,504, so Q enters
 * it already multiplied by the softmax scale (dec_q_mul): at head dim 128 a query component would
 * have to pass 5e5 to overflow. */
template <typename KT>
struct dec_op {
    __device__ static __forceinline__ uint32_t pack(float lo, float hi) { return pack_bf16(lo, hi); }
    __device__ static __forceinline__ void mma(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
        mma_bf16_16816(c, a0, a2, b0, b1);
    }
};
template <>
struct dec_op<e4m3> {
    __device__ static __forceinline__ uint32_t pack(float lo, float hi) { return pack_f16(lo, hi); }
    __device__ static __forceinline__ void mma(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
        mma_f16_16816(c, a0, a2, b0, b1);
    }
};

/* A fragments of the group's queries x qmul (rows gq < G; words R0 and R2 of each k-step). */
template <int D, typename KT>
__device__ __forceinline__ void mma_load_q(uint32_t (&qa)[D / 16][2], const float *qr, int gq, int G, int t, float qmul) {
    typedef dec_op<KT> OP;
#pragma unroll
    for (int c = 0; c < D / 32; c++) {
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f), y = x;
        if (gq < G) { x = *(const float4 *)(qr + 32 * c + 8 * t); y = *(const float4 *)(qr + 32 * c + 8 * t + 4); }
        qa[2 * c][0] = OP::pack(x.x * qmul, x.y * qmul);
        qa[2 * c][1] = OP::pack(x.z * qmul, x.w * qmul);
        qa[2 * c + 1][0] = OP::pack(y.x * qmul, y.y * qmul);
        qa[2 * c + 1][1] = OP::pack(y.z * qmul, y.w * qmul);
    }
}

/* A warp's start: the Q fragments (x qmul: dec_q_mul) and an empty softmax state (m, l, o). */
template <int D, typename KT = bf16>
__device__ __forceinline__ void mma_warp_begin(uint32_t (&qa)[D / 16][2], const float *qr, int gq, int G, int t, float &m, float &l,
                                               float (&o)[D / 8][2], float qmul = 1.f) {
    mma_load_q<D, KT>(qa, qr, gq, G, t, qmul);
    m = -INFINITY;
    l = 0.f;
#pragma unroll
    for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = 0.f;
}

/* Lanes 0..15: the physical row of key c + lane of a tile, or -1 past t1. */
__device__ __forceinline__ int dec_phys_row(int lane, int c, int t1, const int *bt, int bs) {
    return lane < DEC_MMA_TILE && c + lane < t1 ? bt[(c + lane) / bs] * bs + (c + lane) % bs : -1;
}

/* QK^T of one 16-key tile from the K fragments: sc[nt] holds head gq's logits of keys
 * 8nt + 2t, +1 (words 0, 1). */
template <int D, typename KT = bf16>
__device__ __forceinline__ void mma_tile_scores(float (&sc)[2][4], const uint32_t (&qa)[D / 16][2], const uint4 (&kr)[2][D / 32]) {
    typedef dec_op<KT> OP;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
        sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.f;
#pragma unroll
        for (int c = 0; c < D / 32; c++) {
            OP::mma(sc[nt], qa[2 * c][0], qa[2 * c][1], kr[nt][c].x, kr[nt][c].y);
            OP::mma(sc[nt], qa[2 * c + 1][0], qa[2 * c + 1][1], kr[nt][c].z, kr[nt][c].w);
        }
    }
}

/* The online softmax of a tile's first nc keys (log2 units, sl2 = scale * log2 e) and its PV
 * from the V fragments into o; m, l: the running max and the lane's partial sum. */
template <int D, typename KT = bf16>
__device__ __forceinline__ void mma_tile_update(const float (&sc)[2][4], int nc, float sl2, int t, float &m, float &l, float (&o)[D / 8][2],
                                                const uint4 (&vr)[4][D / 64]) {
    typedef dec_op<KT> OP;
    float x[4], mx = -INFINITY; /* head gq, keys 2t, 2t+1, 8+2t, 9+2t */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        x[i] = 8 * (i >> 1) + 2 * t + (i & 1) < nc ? sc[i >> 1][i & 1] * sl2 : -INFINITY;
        mx = fmaxf(mx, x[i]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx), corr = exp2f(m - m_new);
    float pr[4];
#pragma unroll
    for (int i = 0; i < 4; i++) pr[i] = exp2f(x[i] - m_new);
    l = l * corr + (pr[0] + pr[1]) + (pr[2] + pr[3]);
    m = m_new;
    const uint32_t pa0 = OP::pack(pr[0], pr[1]), pa2 = OP::pack(pr[2], pr[3]);
#pragma unroll
    for (int hd = 0; hd < D / 64; hd++) {
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const uint32_t a = (&vr[0][hd].x)[w], b = (&vr[1][hd].x)[w], c = (&vr[2][hd].x)[w], d = (&vr[3][hd].x)[w];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const unsigned sel = e ? 0x7632u : 0x5410u;
                float acc[4] = {o[8 * hd + 2 * w + e][0] * corr, o[8 * hd + 2 * w + e][1] * corr, 0.f, 0.f};
                OP::mma(acc, pa0, pa2, __byte_perm(a, b, sel), __byte_perm(c, d, sel));
                o[8 * hd + 2 * w + e][0] = acc[0];
                o[8 * hd + 2 * w + e][1] = acc[1];
            }
        }
    }
}

/* The cp.async kernels' shared-memory tiles per warp, by cache element size: copies run
 * dec_stages - 1 tiles ahead, so that an E4M3 cache (half the bytes a tile) keeps as many bytes in
 * flight as a bf16 one (2 x 8 KiB at head dim 128). */
__host__ __device__ constexpr int dec_stages(int elem) { return elem == 1 ? 5 : 3; }

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int bytes) {
    const unsigned sa = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
/* The shared-memory layout of a stage's K and V tiles: 16 rows of D elements of the cache type
 * KT (bf16, or E4M3 bytes), moved in 16-byte chunks (CH a row) whose order within a row is
 * XOR-swizzled so that the fragment reads below spread over the banks:
 *   bf16        K: chunk ^ 4 (row & 1)          V: chunk ^ 2 ((row >> 1) & 3)
 *   E4M3, D 128 K: chunk ^ 2 (row & 3)          V: chunk ^ 4 ((row >> 1) & 1)
 *   E4M3, D 64  K: chunk ^ 2 ((row >> 1) & 1)   V: chunk ^ 2 ((row >> 1) & 1)
 * (an E4M3 fragment is 8 bytes, half a chunk: K lanes read rows gq at chunks 2c + t/2, V lanes
 * rows 2t + e at chunks gq/2 + 4hd; a 64-byte row fills half the banks, so at D 64 rows 2k and
 * 2k + 1 already differ and the K swizzle separates rows 2k from 2k + 2; V's four rows of one read
 * share a bank half there whatever the order within a row: a 2-way conflict left as it is).
 * Any permutation is correct: writes and reads share it. */
template <int D, typename KT>
struct dec_tile {
    static constexpr int ROW = D * (int)sizeof(KT), CH = ROW / 16, BYTES = DEC_MMA_TILE * ROW;
    __device__ static __forceinline__ int swz(int is_v, int row, int ch) {
        if constexpr (sizeof(KT) == 2) return is_v ? ch ^ (2 * ((row >> 1) & 3)) : ch ^ (4 * (row & 1));
        else if constexpr (CH == 4) return ch ^ (2 * ((row >> 1) & 1));
        else return is_v ? ch ^ (4 * ((row >> 1) & 1)) : ch ^ (2 * (row & 3));
    }
    /* The B fragment word quadruple (dec_op's operand type) of row `row`, elements e0 .. e0 + 7
     * (e0 % 8 == 0): bf16 read as it is; E4M3 bytes widened exactly to fp16 (the caller applies
     * the scale in fp32). */
    __device__ static __forceinline__ uint4 frag(const unsigned char *tile, int is_v, int row, int e0) {
        const int b0 = e0 * (int)sizeof(KT), ch = b0 / 16;
        const unsigned char *p = tile + row * ROW + 16 * swz(is_v, row, ch) + b0 % 16;
        if constexpr (sizeof(KT) == 2) return *(const uint4 *)p;
        else {
            const uint2 w = *(const uint2 *)p;
            return make_uint4(e4m3x2_to_f16x2(w.x & 0xffffu), e4m3x2_to_f16x2(w.x >> 16), e4m3x2_to_f16x2(w.y & 0xffffu),
                              e4m3x2_to_f16x2(w.y >> 16));
        }
    }
};

/* A warp's walk over its tiles c0, c0 + stride, ... below t1 (keys of block table bt, block
 * size bs): K/V rows of KV head kh copied by cp.async NS - 1 tiles ahead into the warp's
 * stage memory ([NS = dec_stages][K | V] tiles of dec_tile<D, KT>), then each tile's QK^T,
 * online softmax and PV into (m, l, o) (mma_warp_begin's state). sl2 multiplies the logits
 * (dec_key_scale); an fp8 cache's V scale multiplies o afterwards (dec_value_scale). Returns with
 * every copy done. */
template <int D, typename KT>
__device__ __forceinline__ void dec_async_walk(unsigned char *stage, int c0, int stride, int t1, const int *bt, int bs, const KT *kc,
                                               const KT *vc, int Hkv, int kh, const uint32_t (&qa)[D / 16][2], float sl2, float &m,
                                               float &l, float (&o)[D / 8][2]) {
    typedef dec_tile<D, KT> TL;
    constexpr int NC = D / 32, NH = D / 64, CH = TL::CH, TILE = TL::BYTES;
    static_assert(DEC_MMA_TILE * CH % 32 == 0, "dec_async_walk: whole chunks per lane");
    const int lane = threadIdx.x % 32, gq = lane >> 2, t = lane & 3;
    const unsigned char *kb = (const unsigned char *)kc, *vb = (const unsigned char *)vc;
    auto phys_row = [&](int c) { return dec_phys_row(lane, c, t1, bt, bs); };
    auto issue = [&](int st, int c, int prow) { /* tile c (rows in lanes 0..15) into stage st, as one group (empty past t1) */
        unsigned char *sk = stage + (size_t)st * 2 * TILE, *sv = sk + TILE;
#pragma unroll
        for (int j = 0; j < DEC_MMA_TILE * CH / 32; j++) {
            if (c >= t1) break;
            const int qi = lane + 32 * j, r = qi / CH, ch = qi % CH, pr = __shfl_sync(0xffffffffu, prow, r);
            const size_t from = ((size_t)(pr < 0 ? 0 : pr) * Hkv + kh) * TL::ROW + 16 * ch;
            cp_async16(sk + r * TL::ROW + 16 * TL::swz(0, r, ch), kb + from, pr < 0 ? 0 : 16);
            cp_async16(sv + r * TL::ROW + 16 * TL::swz(1, r, ch), vb + from, pr < 0 ? 0 : 16);
        }
        cp_async_commit();
    };
    constexpr int NS = dec_stages((int)sizeof(KT));
#pragma unroll
    for (int st = 0; st < NS - 1; st++) issue(st, c0 + st * stride, phys_row(c0 + st * stride));
    int prow_ahead = phys_row(c0 + (NS - 1) * stride);
    for (int it = 0; c0 < t1; c0 += stride, it++) {
        const int nc = t1 - c0 < DEC_MMA_TILE ? t1 - c0 : DEC_MMA_TILE;
        cp_async_wait<NS - 2>(); /* this lane's copies of tile it are done ... */
        __syncwarp();                    /* ... and every lane's; the stage read last round is free */
        issue((it + NS - 1) % NS, c0 + (NS - 1) * stride, prow_ahead);
        prow_ahead = phys_row(c0 + NS * stride);
        const unsigned char *sk = stage + (size_t)(it % NS) * 2 * TILE, *sv = sk + TILE;
        uint4 kr[2][NC], vr[4][NH];
#pragma unroll
        for (int nt = 0; nt < 2; nt++) /* key 8nt + gq, dims 32c + 8t .. +7 */
#pragma unroll
            for (int c = 0; c < NC; c++) kr[nt][c] = TL::frag(sk, 0, 8 * nt + gq, 32 * c + 8 * t);
        float sc[2][4];
        mma_tile_scores<D, KT>(sc, qa, kr);
#pragma unroll
        for (int i = 0; i < 4; i++) { /* key 2t + (i & 1) + 8 (i >> 1), dims 8gq + 64hd .. +7 */
            const int r = 2 * t + (i & 1) + 8 * (i >> 1);
#pragma unroll
            for (int hd = 0; hd < NH; hd++) vr[i][hd] = TL::frag(sv, 1, r, 8 * gq + 64 * hd);
        }
        mma_tile_update<D, KT>(sc, nc, sl2, t, m, l, o, vr);
    }
    cp_async_wait<0>();
}

/* Shared memory of the cp.async kernels' stages: DEC_WARPS warps' dec_stages (K, V) tile pairs. */
static inline size_t dec_stage_bytes(int D, int elem) { return (size_t)DEC_WARPS * dec_stages(elem) * 2 * DEC_MMA_TILE * D * elem; }

/* Where the softmax scale sl2 (log2 units) and an fp8 cache's scales enter a tensor-core
 * kernel. bf16 cache: Q as it is (dec_q_mul 1), the logits x sl2 (dec_key_scale). E4M3 cache:
 * Q x sl2 before it is rounded to fp16 (dec_op), the logits x the K scale (keys enter the MMAs
 * as their exact E4M3 values); the V scale multiplies the warp's output sums (the same for every
 * partition of a head). */
template <typename KT>
__device__ __forceinline__ float dec_q_mul(float sl2) {
    if constexpr (sizeof(KT) == 1) return sl2;
    else return 1.f;
}
template <int D, typename KT>
__device__ __forceinline__ float dec_key_scale(float sl2, const float *ks, int kh) {
    if constexpr (sizeof(KT) == 1) return kv_head_scale(ks, kh);
    else return sl2;
}
template <int D, typename KT>
__device__ __forceinline__ void dec_value_scale(float (&o)[D / 8][2], const float *vs, int kh) {
    if constexpr (sizeof(KT) == 1) {
        const float s = kv_head_scale(vs, kh);
#pragma unroll
        for (int j = 0; j < D / 8; j++) { o[j][0] *= s; o[j][1] *= s; }
    }
}

/* A warp per (KV head, sequence) instead of a block, one partition (decode_warp_cuda.cu):
 * out (and out_bf) as the block kernels. */
template <typename KT>
zp_status cuda_decode_warp_launch(cuda_ctx *c, const zp_attn_dims *d, float *out, bf16 *out_bf, const float *q, const KT *kc,
                                  const KT *vc, const float *ks, const float *vs);

#endif
