/* decode_frame.cuh - the frame every block-per-(partition, KV head, sequence) decode-attention
 * kernel shares (decode_attn_cuda.cu in the mainline, dev/cuda/ for the variants under study):
 * partition ranges, the block's place in the grid, the merge of the warps' online-softmax
 * results and of a split sequence's partitions. Not here: key loops and launches. */
#ifndef ZP_DECODE_FRAME_CUH
#define ZP_DECODE_FRAME_CUH

#include "decode_mma.cuh"

/* The partitions of each sequence for `items` (sequence, KV head) blocks: only as many as it
 * takes to give every SM four blocks, and no more than whole grains of the longest sequence
 * the block tables can hold (max_parts). A function of the batch shape only (no per-step host
 * data), so a recorded graph's launch stays right for every step of that shape. */
static inline int decode_parts_default(long items, int n_sms, int max_parts) {
    const int n = (int)zp_ceil_div(4L * n_sms, items < 1 ? 1 : items);
    return n < 1 ? 1 : n > max_parts ? max_parts : n;
}

/* Keys [t0, t1) of partition p of a sequence of n keys cut into n_parts partitions of
 * part_len = n / n_parts rounded up to whole DEC_GRAIN (a function of the device data only,
 * so a recorded CUDA graph stays right as sequences grow). */
__device__ __forceinline__ void decode_part_range(int n, int p, int n_parts, int *t0, int *t1) {
    const int part_len = (n + n_parts * DEC_GRAIN - 1) / (n_parts * DEC_GRAIN) * DEC_GRAIN;
    *t0 = p * part_len;
    *t1 = *t0 + part_len < n ? *t0 + part_len : n;
}

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

/* The block's place in the grid (n_parts, Hkv, S): partition p of KV head kh of sequence s,
 * its keys [t0, t1) of n, the query row, the group's first head and the block table. (The
 * measured decode_attn_mma_kernel keeps the same lines inline: through this struct its
 * registers went from 202 to 206 and its code changed, so it waits for a GPU measurement.) */
struct dec_place {
    int p, kh, G, n, row, t0, t1;
    size_t head0;
    const int *bt;
};
__device__ __forceinline__ dec_place decode_place(const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv,
                                                  int n_parts) {
    dec_place d;
    const int s = blockIdx.z;
    d.p = blockIdx.x;
    d.kh = blockIdx.y;
    d.G = Hq / Hkv;
    d.n = kv_len[s];
    d.row = q_start[s];
    d.head0 = (size_t)s * Hq + (size_t)d.kh * d.G;
    decode_part_range(d.n, d.p, n_parts, &d.t0, &d.t1);
    d.bt = tables + (size_t)s * max_blocks;
    return d;
}

/* An empty partition (of a shorter sequence): max -inf, sum 0 for the G heads of the group. */
__device__ __forceinline__ void decode_part_empty(float *part_ml, size_t head0, int p, int n_parts, int G) {
    const int tid = threadIdx.x;
    if (tid < G) {
        part_ml[((head0 + tid) * n_parts + p) * 2] = -INFINITY;
        part_ml[((head0 + tid) * n_parts + p) * 2 + 1] = 0.f;
    }
}

/* After __syncthreads: merges the DEC_WARPS warps' (max, sum) wml [DEC_WARPS][G][2] and
 * unnormalised outputs wacc [DEC_WARPS][G][D] and writes the block's result: out[row] (and its
 * bf16 copy) when the sequence is one partition, else the partition's partial output and
 * statistics. */
__device__ __forceinline__ void decode_block_finish(const float *wml, const float *wacc, int G, int D, float *out, bf16 *out_bf,
                                                    float *part_acc, float *part_ml, int row, int Hq, int kh, size_t head0, int p,
                                                    int n_parts) {
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
        const int g = i / D, d = i % D;
        float M, L, o;
        softmax_merge(wml + 2 * g, 2 * G, wacc + (size_t)g * D + d, G * D, DEC_WARPS, &M, &L, &o);
        if (n_parts == 1) {
            const size_t oi = ((size_t)row * Hq + (size_t)kh * G + g) * D + d;
            if (out) out[oi] = o / L; /* one of out and out_bf: the operand type */
            if (out_bf) out_bf[oi] = __float2bfloat16(o / L);
        } else {
            part_acc[((head0 + g) * n_parts + p) * D + d] = o;
            if (d == 0) { part_ml[((head0 + g) * n_parts + p) * 2] = M; part_ml[((head0 + g) * n_parts + p) * 2 + 1] = L; }
        }
    }
}

/* The warp's result for head gq: the lanes' partial sums added, (max in natural-log units,
 * sum) to wml, the output to wacc; n-tile (hd, j) holds dims 64hd + 16t + j and +8. */
template <int D>
__device__ __forceinline__ void mma_warp_store(float m, float l, const float (&o)[D / 8][2], int warp, int gq, int G, int t, float *wml,
                                               float *wacc) {
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (gq >= G) return;
    if (t == 0) { wml[(warp * G + gq) * 2] = m * 0.69314718055994531f; wml[(warp * G + gq) * 2 + 1] = l; }
    float *wo = wacc + (size_t)(warp * G + gq) * D;
#pragma unroll
    for (int hd = 0; hd < D / 64; hd++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            wo[64 * hd + 16 * t + j] = o[8 * hd + j][0];
            wo[64 * hd + 16 * t + 8 + j] = o[8 * hd + j][1];
        }
}

/* Grid (S, Hq), D threads: out = sum_p acc_p e^(m_p - M) / sum_p l_p e^(m_p - M). */
static __global__ void decode_merge_kernel(float *out, bf16 *out_bf, const float *part_acc, const float *part_ml, const int *q_start, int Hq, int D,
                                           int n_parts) {
    const int s = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const size_t sh = (size_t)s * Hq + h;
    float M, L, o;
    softmax_merge(part_ml + sh * n_parts * 2, 2, part_acc + sh * n_parts * D + d, D, n_parts, &M, &L, &o);
    const size_t oi = ((size_t)q_start[s] * Hq + h) * D + d;
    if (out) out[oi] = o / L;
    if (out_bf) out_bf[oi] = __float2bfloat16(o / L);
}

#endif
