/* plan_cuda.cu - score plans on the GPU, stage for stage as scorers/plan.c (the reference the
 * GPU tests compare against). Three launches over all jobs (request, layer, KV head):
 *   stage 1  one block per job: window attention from the paged K cache and the query cache
 *            (rows in shared memory, no [w, n] matrix; each key read once per window row for
 *            all the group's query heads), max-norm, global score with the stored history,
 *            pooling; writes S and P.
 *   pairs    (redundancy only) one block per 128 tokens of a job: cosine similarities of
 *            normalised keys against the token's comparison set (its block for lightning, the
 *            request for raw) as register-tiled dot blocks, row sums and the "last above theta"
 *            partner; O(n bs D) or O(n^2 D).
 *   trig     (TriAttention, instead of stage 1) one block per job: the keys' scores from the
 *            query heads' statistics, z-normalised, the group's max; across layers, one block
 *            per request reduces the layers' rows (plan_trig_across_kernel).
 *   finish   one block per job: redundancy r, softmax, max-norm, the lambda mix, sinks, and the
 *            keep-recent top-k by exact rank (ties: the earlier token wins, as scorer_topk).
 * Sums run in a different order than on the host, so scores agree to float rounding, not bits.
 * Keys are of KT (the storage type, or E4M3 bytes read as value x the (layer, KV head)'s scale,
 * as the host reads an fp8 cache); the query cache is of the storage type T.
 */
#include <math.h>

#include "key_hash.h"  /* scorers/: the same hash as the host scorers' */
#include "kv_elem.cuh" /* keys of an fp8 cache: E4M3 x the (layer, head)'s scale */
#include "plan_cuda.cuh"

#define PAIRS_Y 128            /* tokens per block of the pairs stage */
#define PAIRS_X 64             /* partner keys per chunk */
#define PAIRS_E 32             /* head dims per staged partner slice */
#define PAIRS_CS (PAIRS_X + 1) /* row stride of the dot tile */

/* Key row of token t (physical order) of one (layer, KV head), through the block table. */
template <typename T>
__device__ __forceinline__ const T *key_row(const T *kl, const int *table, int t, int bs, int Hkv, int g, int D) {
    return kl + (((size_t)table[t / bs] * bs + t % bs) * Hkv + g) * D;
}

/* In-place softmax of x[0, m) in shared memory (same thread-to-element map as the callers). */
__device__ static void softmax_rows(float *x, int m, float *red) {
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < m; t += blockDim.x) mx = fmaxf(mx, x[t]);
    mx = zp_block_max(mx, red);
    float z = 0.f;
    for (int t = threadIdx.x; t < m; t += blockDim.x) z += x[t] = expf(x[t] - mx);
    z = zp_block_sum(z, red);
    for (int t = threadIdx.x; t < m; t += blockDim.x) x[t] /= z;
}

/* x[0, n) /= max of x[0, m) when that maximum is positive (scorer_max_normalize). */
__device__ static void max_normalize(float *x, int n, int m, float *red) {
    float mx = 0.f;
    for (int t = threadIdx.x; t < m; t += blockDim.x) mx = fmaxf(mx, x[t]);
    mx = zp_block_max(mx, red);
    if (mx > 0.f)
        for (int t = threadIdx.x; t < n; t += blockDim.x) x[t] /= mx;
}

#define PLAN_MAX_HG 8 /* query heads whose logits one pass over the keys computes */

/* acc[hh] += q_{h0+hh}[e, e+8) . kv[0, 8) for hh < nh, in e order (q rows in shared memory:
 * every thread reads the same ones, a broadcast). */
__device__ __forceinline__ void logit_chunk(float *acc, const float *kv, const float *qs, int h0, int nh, int D, int e) {
#pragma unroll
    for (int hh = 0; hh < PLAN_MAX_HG; hh++) {
        if (hh >= nh) break;
        const float4 *q4 = (const float4 *)(qs + (size_t)(h0 + hh) * D + e);
        const float4 a = q4[0], b = q4[1];
        const float q[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 8; i++) acc[hh] += q[i] * kv[i];
    }
}

/* lg[hh * n + t] = (q_{h0+hh} . k_t) * scale for hh < nh, t < vis: each key is read once for
 * the nh heads, 8 values at a time; every dot sums e = 0 .. D-1 in order. DT: the head dim as
 * a constant, or 0 for d.head_dim; with bf16 keys and a constant DT, each half of a key row is
 * loaded at once (8 loads of 16 bytes in flight for D 128) before its dots. */
template <typename T, int DT>
__device__ static void head_logits(const zp_attn_dims &d, const T *kl, float ks, const int *table, int g, int vis, const float *qs, int h0,
                                   int nh, float *lg, int n) {
    const int D = DT ? DT : d.head_dim, bs = d.block_size, Hkv = d.n_kv_heads;
    for (int t = threadIdx.x; t < vis; t += blockDim.x) {
        const T *k = key_row(kl, table, t, bs, Hkv, g, D);
        float acc[PLAN_MAX_HG];
#pragma unroll
        for (int hh = 0; hh < PLAN_MAX_HG; hh++) acc[hh] = 0.f;
        if constexpr (DT > 0 && DT % 16 == 0 && sizeof(T) == 2) {
            constexpr int HALF = DT / 2;
#pragma unroll
            for (int e0 = 0; e0 < DT; e0 += HALF) {
                raw_vec<T, HALF> r;
                r.load(k + e0);
#pragma unroll
                for (int c = 0; c < HALF / 8; c++) {
                    float kv[8];
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const float2 f = __bfloat1622float2(*(const __nv_bfloat162 *)&r.w[4 * c + i]);
                        kv[2 * i] = f.x;
                        kv[2 * i + 1] = f.y;
                    }
                    logit_chunk(acc, kv, qs, h0, nh, D, e0 + 8 * c);
                }
            }
        } else {
            int e = 0;
            for (; D % 8 == 0 && e < D; e += 8) { /* rows start 16-byte aligned: vector loads */
                raw_vec<T, 8> r;
                float kv[8];
                r.load(k + e);
                r.to_float(kv, ks);
                logit_chunk(acc, kv, qs, h0, nh, D, e);
            }
            for (; e < D; e++) {
                const float kv = kv_ld(k[e], ks);
                for (int hh = 0; hh < nh; hh++) acc[hh] += qs[(size_t)(h0 + hh) * D + e] * kv;
            }
        }
#pragma unroll
        for (int hh = 0; hh < PLAN_MAX_HG; hh++)
            if (hh < nh) lg[(size_t)hh * n + t] = acc[hh] * d.scale;
    }
}

/* A[n] += one window row j (group-reduced probabilities over the visible keys). The G query
 * heads go through the keys hg at a time (lg holds [hg][n] logits). */
template <typename T, int DT>
__device__ static void attention_row(const zp_score_plan &P, const zp_attn_dims &d, const T *kl, float ks, const int *table, int g, int n,
                                     int j, int hg, const float *qs, float *row, float *lg, float *A, float *red) {
    const int G = d.n_heads / d.n_kv_heads, w = d.window;
    const int vis = P.attn.exclude_window ? n - w - P.attn.skip_newest : n - w + j + 1;
    if (vis <= 0) return; /* an all-zero row changes neither a sum nor a max of non-negatives */
    const int logit_mix = P.attn.gqa == ZP_GQA_MAX_LOGIT || P.attn.gqa == ZP_GQA_SUM_LOGIT;
    for (int t = threadIdx.x; t < vis; t += blockDim.x) row[t] = logit_mix && P.attn.gqa == ZP_GQA_MAX_LOGIT ? -INFINITY : 0.f;
    for (int h0 = 0; h0 < G; h0 += hg) {
        const int nh = G - h0 < hg ? G - h0 : hg;
        __syncthreads(); /* lg of the previous group is consumed */
        head_logits<T, DT>(d, kl, ks, table, g, vis, qs, h0, nh, lg, n);
        if (logit_mix) { /* each thread combines its own keys' logits, heads in order */
            for (int t = threadIdx.x; t < vis; t += blockDim.x)
                for (int hh = 0; hh < nh; hh++) {
                    const float z = lg[(size_t)hh * n + t];
                    row[t] = P.attn.gqa == ZP_GQA_MAX_LOGIT ? fmaxf(row[t], z) : row[t] + z;
                }
            continue;
        }
        for (int hh = 0; hh < nh; hh++) {
            float *l = lg + (size_t)hh * n;
            softmax_rows(l, vis, red);
            for (int t = threadIdx.x; t < vis; t += blockDim.x)
                row[t] = P.attn.gqa == ZP_GQA_MAX_PROB ? fmaxf(row[t], l[t]) : row[t] + l[t] / (float)G;
        }
    }
    if (logit_mix) softmax_rows(row, vis, red);
    for (int t = threadIdx.x; t < vis; t += blockDim.x) A[t] = P.attn.qred == ZP_QRED_MAX ? fmaxf(A[t], row[t]) : A[t] + row[t];
}

/* A[t] from the keys alone (scorer_key_score): -||k|| (rounded), -cos(k, mean unit key) or the
 * seeded draw of (layer, head, n, t) (key_hash.h); a thread per token, each sum in the host's
 * order without fused multiply-adds. nrm [n] and anchor [D] are shared scratch. */
template <typename T>
__device__ static void key_scores(const zp_score_plan &P, const T *kl, float ks, const int *table, int layer, int n, int bs, int Hkv, int g,
                                  int head0, int D, float *A, float *nrm, float *anchor) {
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        if (P.key_score == ZP_KEYS_RANDOM) { A[t] = zp_key_draw(P.seed, layer, head0 + g, n, t); continue; }
        const T *k = key_row(kl, table, t, bs, Hkv, g, D);
        float s = 0.f;
        for (int i = 0; i < D; i++) s = __fadd_rn(s, __fmul_rn(kv_ld(k[i], ks), kv_ld(k[i], ks)));
        nrm[t] = sqrtf(s);
        A[t] = P.key_score == ZP_KEYS_NORM ? -zp_round_bits(nrm[t], ZP_KEY_NORM_BITS) : -nrm[t];
    }
    if (P.key_score != ZP_KEYS_DIFF) return;
    __syncthreads();
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float a = 0.f;
        for (int t = 0; t < n; t++) a = __fadd_rn(a, __fmul_rn(kv_ld(key_row(kl, table, t, bs, Hkv, g, D)[i], ks), 1.0f / fmaxf(nrm[t], ZP_KEY_NORM_EPS)));
        anchor[i] = a / (float)n;
    }
    __syncthreads();
    float an = 0.f;
    for (int i = 0; i < D; i++) an = __fadd_rn(an, __fmul_rn(anchor[i], anchor[i]));
    an = sqrtf(an);
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const T *k = key_row(kl, table, t, bs, Hkv, g, D);
        float dot = 0.f;
        for (int i = 0; i < D; i++) dot = __fadd_rn(dot, __fmul_rn(kv_ld(k[i], ks), anchor[i]));
        A[t] = -dot / __fmul_rn(fmaxf(nrm[t], ZP_COS_EPS), fmaxf(an, ZP_COS_EPS));
    }
}

/* Stage 1, one block per job. Shared: q [G*D] | row [n] | A [n] | lg [hg][n]. Keys of KT, queries of T. */
template <typename T, typename KT, int DT>
__global__ static void plan_stage1_kernel(zp_plan_jobs J, zp_score_plan P, zp_attn_dims d, const KT *kc, const T *qc, const float *sc, int hg,
                                          int max_n) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    const int4 jb = J.jobs[blockIdx.x];
    const int *rq = J.reqs + ZP_REQ_FIELDS * jb.x;
    const int n = rq[ZP_REQ_N], n_hist = rq[ZP_REQ_NHIST], qid = rq[ZP_REQ_QID], layer = jb.y, g = jb.z;
    const int *table = J.tables + rq[ZP_REQ_SRC];
    const int G = d.n_heads / d.n_kv_heads, D = d.head_dim, w = d.window, bs = d.block_size, Hkv = d.n_kv_heads;
    float *qs = smem, *row = qs + G * D, *A = row + max_n, *lg = A + max_n;
    const KT *kl = kc + (size_t)layer * d.num_blocks * bs * Hkv * D;
    const float ks = kv_scale(d, 0, layer, g);
    for (int t = threadIdx.x; t < n; t += blockDim.x) A[t] = 0.f;
    if (P.attention) {
        const int rows = w - (P.attn.skip_newest != 0); /* the newest row skipped: MorphKV's previous queries */
        for (int j = 0; j < rows; j++) {
            const T *qrow = qc + (((size_t)layer * d.n_qslots + qid) * w + j) * d.n_heads * D + (size_t)g * G * D;
            __syncthreads(); /* everyone is done with the previous row's queries */
            for (int i = threadIdx.x; i < G * D; i += blockDim.x) qs[i] = zp_ld(qrow[i]);
            __syncthreads();
            attention_row<KT, DT>(P, d, kl, ks, table, g, n, j, hg, qs, row, lg, A, red);
        }
        if (P.attn.qred == ZP_QRED_MEAN)
            for (int t = threadIdx.x; t < n; t += blockDim.x) A[t] /= (float)rows;
    } else if (P.key_score != ZP_KEYS_NONE) {
        __syncthreads(); /* A's zeros are written */
        key_scores<KT>(P, kl, ks, table, layer, n, bs, Hkv, g, d.kv_head0, D, A, row, qs); /* row: the norms; qs (G*D >= D): the anchor */
    }
    if (P.max_norm) max_normalize(A, n, P.norm_candidates ? n - w : n, red);
    const int hist_m = !P.history_excludes_window ? n_hist : n_hist > w ? n_hist - w : 0;
    const size_t off = (size_t)jb.w;
    const float *sl = sc ? sc + (size_t)layer * d.num_blocks * bs * Hkv : NULL;
    for (int t = threadIdx.x; t < n; t += blockDim.x) { /* S into row[] and J.S */
        float s = A[t];
        if (P.global != ZP_GLOBAL_NONE && sl && t < hist_m) {
            float H = P.gamma * zp_ld(sl[((size_t)table[t / bs] * bs + t % bs) * Hkv + g]);
            s = P.global == ZP_GLOBAL_SUM ? A[t] + H : fmaxf(A[t], H);
        }
        row[t] = s;
        J.S[off + t] = s;
    }
    __syncthreads();
    const int pool = P.pool_kernel > 1 && (!P.pool_first_only || n_hist == 0), m = P.pool_candidates ? n - w : n, h = P.pool_kernel / 2;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        float p = 0.f;
        if (t < m && !pool) p = row[t];
        if (t < m && pool) {
            p = -INFINITY;
            for (int u = t - h < 0 ? 0 : t - h; u <= (t + h >= m ? m - 1 : t + h); u++) p = fmaxf(p, row[u]);
        }
        J.P[off + t] = p;
    }
}

/* 1 / max(||k||, 1e-6) of rows [r0, r0+nr) of one (layer, KV head) to inv[i]: one warp per
 * row, each lane summing dims lane, lane+32, ... then a butterfly (the unit-key rule). */
template <typename T>
__device__ static void unit_inv_norms(const T *kl, float ks, const int *table, int r0, int nr, int bs, int Hkv, int g, int D, float *inv) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    for (int i = warp; i < nr; i += nw) {
        const T *k = key_row(kl, table, r0 + i, bs, Hkv, g, D);
        float ss = 0.f;
        for (int e = lane; e < D; e += 32) ss += kv_ld(k[e], ks) * kv_ld(k[e], ks);
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) inv[i] = 1.0f / fmaxf(sqrtf(ss), 1e-6f);
    }
}

/* Eight consecutive values of a key row as floats (one 16-byte load for bf16, two for fp32). */
__device__ __forceinline__ void load8(const bf16 *p, float *v) {
    const uint4 w = *(const uint4 *)p;
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __bfloat1622float2(*(const __nv_bfloat162 *)&u[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}
__device__ __forceinline__ void load8(const float *p, float *v) {
    const float4 a = *(const float4 *)p, b = *(const float4 *)(p + 4);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}
__device__ __forceinline__ void load8(const e4m3 *p, float *v) { /* not yet scaled */
    raw_vec<e4m3, 8> r;
    r.load(p);
    r.to_float(v);
}

/* Unit keys of rows [r0, r0+nr) (of `rows` staged; blockDim a multiple of rows), dims
 * [e0, e0+ne), transposed to out[(e - e0) * rows + i]; rows past nr and dims past D are 0.
 * Each thread keeps one row, so its table lookup is done once. With D, e0 and ne multiples of
 * 8, a thread loads 8 dims at once (the warp's 32 rows in 32 loads instead of 256); the
 * stores go to 32 consecutive rows, one bank each. Same products either way. */
template <typename T>
__device__ static void stage_unit_keys_t(const T *kl, float ks, const int *table, int r0, int nr, int rows, int bs, int Hkv, int g, int D,
                                         int e0, int ne, const float *inv, float *out) {
    const int r = threadIdx.x % rows, step = blockDim.x / rows;
    const T *k = r < nr ? key_row(kl, table, r0 + r, bs, Hkv, g, D) : NULL;
    const float s = r < nr ? inv[r] : 0.f;
    const float fs = sizeof(T) == 1 ? ks : 1.0f; /* an E4M3 byte's scale (load8 leaves it out) */
    if (D % 8 == 0 && e0 % 8 == 0 && ne % 8 == 0) {
        for (int e = 8 * (threadIdx.x / rows); e < ne; e += 8 * step) {
            float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            if (k && e0 + e < D) load8(k + e0 + e, v);
#pragma unroll
            for (int j = 0; j < 8; j++) out[(e + j) * rows + r] = k && e0 + e < D ? (v[j] * fs) * s : 0.f;
        }
        return;
    }
    for (int e = threadIdx.x / rows; e < ne; e += step) out[e * rows + r] = k && e0 + e < D ? kv_ld(k[e0 + e], ks) * s : 0.f;
}

/* Pairs stage: block (x: PAIRS_Y-token tile, y: job), 256 threads. The tile's unit keys stay
 * in shared memory, transposed [DP][PAIRS_Y]; partners come in chunks of PAIRS_X, their dims
 * in slices of PAIRS_E. Each thread holds an 8 x 4 block of the tile's dots in registers (3
 * shared loads per 32 FMAs), every dot summed over e = 0 .. D-1 in order; the chunk's dots
 * then go through shared memory so that one thread per token scans its partners in order
 * (the row sum in the host's order, the last partner above theta, the block's first).
 * Shared: own keys [DP][Y] | partner slice [E][X] | dots [Y][X+1] | inverse norms [Y] + [X]. */
template <typename T>
__global__ static void __launch_bounds__(256) plan_pairs_kernel(zp_plan_jobs J, zp_attn_dims d, const T *kc, int lightning,
                                                                float theta) {
    extern __shared__ __align__(16) float smem[];
    const int4 jb = J.jobs[blockIdx.y];
    const int *rq = J.reqs + ZP_REQ_FIELDS * jb.x;
    const int n = rq[ZP_REQ_N], y0 = blockIdx.x * PAIRS_Y;
    if (y0 >= n) return; /* the whole block: grids are sized for the longest request */
    const int *table = J.tables + rq[ZP_REQ_SRC];
    const int D = d.head_dim, DP = (D + PAIRS_E - 1) / PAIRS_E * PAIRS_E, bs = d.block_size, Hkv = d.n_kv_heads, g = jb.z;
    const int ny = n - y0 < PAIRS_Y ? n - y0 : PAIRS_Y;
    const T *kl = kc + (size_t)jb.y * d.num_blocks * bs * Hkv * D;
    const float ks = kv_scale(d, 0, jb.y, g);
    float *ky = smem, *kx = ky + DP * PAIRS_Y, *dots = kx + PAIRS_E * PAIRS_X, *inv_y = dots + PAIRS_Y * PAIRS_CS, *inv_x = inv_y + PAIRS_Y;
    unit_inv_norms(kl, ks, table, y0, ny, bs, Hkv, g, D, inv_y);
    __syncthreads();
    stage_unit_keys_t(kl, ks, table, y0, ny, PAIRS_Y, bs, Hkv, g, D, 0, DP, inv_y, ky);
    const int t = threadIdx.x, y = y0 + t, valid = t < ny, tx = t % 16, ty = t / 16;
    const int lo = lightning ? (y / bs) * bs : 0, hi = lightning ? (lo + bs < n ? lo + bs : n) : n;
    const int xlo = lightning ? (y0 / bs) * bs : 0;
    const int xhi = lightning ? (((y0 + ny - 1) / bs + 1) * bs < n ? ((y0 + ny - 1) / bs + 1) * bs : n) : n;
    float colsum = 0.f, clast = 0.f, clo = 0.f;
    int last = -1;
    for (int xb = xlo; xb < xhi; xb += PAIRS_X) {
        const int nx = xhi - xb < PAIRS_X ? xhi - xb : PAIRS_X;
        unit_inv_norms(kl, ks, table, xb, nx, bs, Hkv, g, D, inv_x);
        float acc[8][4];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
        for (int e0 = 0; e0 < DP; e0 += PAIRS_E) {
            __syncthreads(); /* inv_x written; the previous slice read */
            stage_unit_keys_t(kl, ks, table, xb, nx, PAIRS_X, bs, Hkv, g, D, e0, PAIRS_E, inv_x, kx);
            __syncthreads();
#pragma unroll 8
            for (int e = 0; e < PAIRS_E; e++) {
                const float4 a0 = *(const float4 *)(ky + (e0 + e) * PAIRS_Y + ty * 8), a1 = *(const float4 *)(ky + (e0 + e) * PAIRS_Y + ty * 8 + 4);
                const float4 b = *(const float4 *)(kx + e * PAIRS_X + tx * 4);
                const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) acc[i][j] += bv[j] * av[i];
            }
        }
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) dots[(ty * 8 + i) * PAIRS_CS + tx * 4 + j] = acc[i][j];
        __syncthreads();
        if (valid)
            for (int i = 0; i < nx; i++) { /* partners in order */
                const int x = xb + i;
                if (x < lo || x >= hi || x == y) continue;
                const float c = dots[t * PAIRS_CS + i];
                colsum += c; /* dots are symmetric: the column sum of y is its row sum */
                if (c > theta) { last = x; clast = c; }
                if (x == lo) clo = c;
            }
        __syncthreads(); /* the dots read before the next chunk writes them */
    }
    if (!valid) return;
    const size_t o = (size_t)jb.w + y;
    J.rs[o] = colsum;
    J.last[o] = last;
    J.cl[o] = last >= 0 ? clast : clo;
}

/* The selection order of scorer_topk as one unsigned key per token: a higher score first, on
 * equal scores the earlier token (scores are never NaN here; -0 counts as +0). Keys are
 * unique, so the k largest of them are exactly the k best-ranked tokens. */
__device__ __forceinline__ unsigned long long rank_key(float s, int t) {
    const unsigned u = __float_as_uint(s == 0.f ? 0.f : s), ord = u & 0x80000000u ? ~u : u | 0x80000000u;
    return (unsigned long long)ord << 32 | (0xffffffffu - (unsigned)t);
}

/* The k-th largest rank_key among C[0, m) (1 <= k <= m), by radix select: 8 rounds of a
 * 256-bin histogram of the keys that share the prefix found so far. O(m) per round instead of
 * an O(m^2) rank count. Every thread of the block calls; every thread gets the key. */
__device__ static unsigned long long kth_largest_key(const float *C, int m, int k) {
    __shared__ unsigned hist[256];
    __shared__ unsigned long long prefix_sh;
    __shared__ int k_sh;
    unsigned long long prefix = 0ull, mask = 0ull;
    for (int shift = 56; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0u;
        __syncthreads();
        for (int t = threadIdx.x; t < m; t += blockDim.x) {
            const unsigned long long key = rank_key(C[t], t);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) { /* the bin holding the k-th largest, counting from the top */
            int b = 255;
            unsigned above = 0u;
            while (above + hist[b] < (unsigned)k) above += hist[b--];
            prefix_sh = prefix | (unsigned long long)b << shift;
            k_sh = k - (int)above;
        }
        __syncthreads();
        prefix = prefix_sh;
        k = k_sh;
        mask |= 255ull << shift;
        __syncthreads(); /* prefix_sh and k_sh are rewritten in the next round */
    }
    return prefix;
}

/* J.order[off ..]: the kept candidates t < m (kc of them) by descending rank_key (a bitonic sort
 * of their keys in K [pow2 >= kc], shared), then the tokens [m, n) in order: R-KV's cache
 * order. Reads the keep flags this block just wrote. */
__device__ static void score_order(const zp_plan_jobs &J, const float *C, size_t off, int m, int n, int kc, unsigned long long *K) {
    __shared__ int cnt;
    int K2 = 1;
    while (K2 < kc) K2 <<= 1;
    if (threadIdx.x == 0) cnt = 0;
    for (int i = threadIdx.x; i < K2; i += blockDim.x) K[i] = 0ull; /* below every real key */
    __syncthreads();
    for (int t = threadIdx.x; t < m; t += blockDim.x)
        if (J.keep[off + t]) K[atomicAdd(&cnt, 1)] = rank_key(C[t], t);
    __syncthreads();
    for (int size = 2; size <= K2; size <<= 1)
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < K2; i += blockDim.x) {
                const int j = i ^ stride;
                if (j <= i) continue;
                const unsigned long long a = K[i], b = K[j];
                if ((a < b) == ((i & size) == 0)) { K[i] = b; K[j] = a; } /* descending at the last stage */
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < kc; i += blockDim.x) J.order[off + i] = (int)(0xffffffffu - (unsigned)(K[i] & 0xffffffffull));
    for (int t = m + threadIdx.x; t < n; t += blockDim.x) J.order[off + kc + (t - m)] = t;
}

/* Finish stage, one block per job. Shared: C [max_n] | R [max_n] | with order_score the sort keys
 * [pow2 >= budget] (u64). */
__global__ static void plan_finish_kernel(zp_plan_jobs J, zp_score_plan P, int block_size, int window, int budget) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    const int4 jb = J.jobs[blockIdx.x];
    const int n = J.reqs[ZP_REQ_FIELDS * jb.x + ZP_REQ_N];
    const size_t off = (size_t)jb.w;
    float *C = smem, *R = smem + n;
    for (int t = threadIdx.x; t < n; t += blockDim.x) C[t] = J.P[off + t];
    if (P.redundancy != ZP_RED_NONE) {
        const int lightning = P.redundancy == ZP_RED_LIGHTNING;
        const float div = P.temperature * (float)(lightning ? block_size : n);
        for (int x = threadIdx.x; x < n; x += blockDim.x) {
            const int lo = lightning ? (x / block_size) * block_size : 0;
            const int hi = lightning ? (lo + block_size < n ? lo + block_size : n) : n;
            float r = J.rs[off + x];
            for (int y = lo; y < hi; y++) { /* in y order, as the host subtracts */
                const int l = J.last[off + y];
                if (l == x || (P.rkv_quirk && l < 0 && x == lo && y != lo)) r -= J.cl[off + y];
            }
            R[x] = r / div;
        }
        softmax_rows(R, n, red);
        if (P.max_norm) max_normalize(R, n, P.norm_candidates ? n - window : n, red);
        for (int t = threadIdx.x; t < n; t += blockDim.x) C[t] = P.lambda * C[t] - (1.0f - P.lambda) * R[t];
    }
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        if (t < P.sink) C[t] = INFINITY;
        if (C[t] != C[t]) C[t] = -INFINITY; /* NaN ranks last, as scorer_topk */
    }
    __syncthreads();
    int recent = P.recent < budget ? P.recent : budget;
    recent = recent < n ? (recent < 0 ? 0 : recent) : n;
    const int m = n - recent, k = budget - recent;
    /* candidates t < m: kept when among the k best (higher score first, then the earlier
     * token), i.e. when their key is at least the k-th largest */
    const unsigned long long kth = k > 0 && k < m ? kth_largest_key(C, m, k) : 0ull;
    for (int t = threadIdx.x; t < n; t += blockDim.x)
        J.keep[off + t] = (uint8_t)(t >= m || k >= m || (k > 0 && rank_key(C[t], t) >= kth));
    if (P.order_score) score_order(J, C, off, m, n, k < m ? k : m, (unsigned long long *)(smem + 2 * J.max_n));
}

/* TriAttention's score of one job (scorers/trig.c, term for term): the phases of the request's
 * next position in double (scorer_trig_phase), each of the group's query heads scoring the keys
 * after the protected prompt from its statistics (scorer_trig_score, accumulated in double in f
 * order), z-normalised over them (scorer_znorm: the moments in double), the group's max; the
 * prompt at +inf. Writes the row to S and P (the plan has no other stage before the selection).
 * In a mode across layers the row is the layer's share, which plan_trig_across_kernel reduces. */
template <typename KT>
__global__ static void plan_trig_kernel(zp_plan_jobs J, zp_attn_dims d, const KT *kc) {
    extern __shared__ double dsm[];
    __shared__ double red[32];
    const int4 jb = J.jobs[blockIdx.x];
    const int *rq = J.reqs + ZP_REQ_FIELDS * jb.x;
    const int n = rq[ZP_REQ_N], protect = rq[ZP_REQ_PROTECT], layer = jb.y, g = jb.z, m = n - protect;
    const int G = d.n_heads / d.n_kv_heads, D = d.head_dim, F = D / 2, bs = d.block_size, Hkv = d.n_kv_heads;
    double *C = dsm, *S = C + F;
    float *q = (float *)(S + F), *row = q + 3 * F, *gmax = row + J.max_n;
    const int *table = J.tables + rq[ZP_REQ_SRC];
    const KT *kl = kc + (size_t)layer * d.num_blocks * bs * Hkv * D;
    const float ks = kv_scale(d, 0, layer, g);
    for (int f = threadIdx.x; f < F; f += blockDim.x) {
        double c = 0.0, s = 0.0;
        for (int j = 0; j < ZP_TRIG_OFFSETS; j++) {
            const double a = ((double)rq[ZP_REQ_POS] + (double)(1 << j)) * (double)J.trig_freqs[f];
            c += cos(a);
            s += sin(a);
        }
        C[f] = c / ZP_TRIG_OFFSETS;
        S[f] = s / ZP_TRIG_OFFSETS;
    }
    for (int t = threadIdx.x; t < m; t += blockDim.x) gmax[t] = -INFINITY;
    for (int h = 0; h < G && m > 0; h++) {
        const float *qs = J.trig_stats + ((size_t)layer * d.n_heads + (size_t)g * G + h) * 3 * F;
        __syncthreads(); /* the previous head's statistics are no longer read */
        for (int i = threadIdx.x; i < 3 * F; i += blockDim.x) q[i] = qs[i];
        __syncthreads();
        double part = 0.0;
        for (int t = threadIdx.x; t < m; t += blockDim.x) {
            const KT *k = key_row(kl, table, protect + t, bs, Hkv, g, D);
            double acc = 0.0;
            for (int f = 0; f < F; f++) {
                const double kr = kv_ld(k[f], ks), ki = kv_ld(k[f + F], ks), qr = q[f], qi = q[F + f];
                const double A = __dadd_rn(__dmul_rn(qr, kr), __dmul_rn(qi, ki)), B = __dsub_rn(__dmul_rn(qi, kr), __dmul_rn(qr, ki));
                const double mag = __dmul_rn(__dsub_rn((double)q[2 * F + f], sqrt(__dadd_rn(__dmul_rn(qr, qr), __dmul_rn(qi, qi)))),
                                             sqrt(__dadd_rn(__dmul_rn(kr, kr), __dmul_rn(ki, ki))));
                acc = __dadd_rn(acc, __dadd_rn(__dsub_rn(__dmul_rn(A, C[f]), __dmul_rn(B, S[f])), mag));
            }
            row[t] = (float)acc;
            part += row[t];
        }
        const double mean = zp_block_sum(part, red) / m;
        part = 0.0;
        for (int t = threadIdx.x; t < m; t += blockDim.x) part += (row[t] - mean) * (row[t] - mean);
        const double sd0 = sqrt(zp_block_sum(part, red) / m), sd = sd0 > (double)ZP_TRIG_STD_EPS ? sd0 : (double)ZP_TRIG_STD_EPS;
        for (int t = threadIdx.x; t < m; t += blockDim.x) gmax[t] = fmaxf(gmax[t], (float)((row[t] - mean) / sd));
    }
    const size_t off = (size_t)jb.w;
    __syncthreads(); /* token t's gmax[t - protect] was written by another thread */
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float a = t < protect ? INFINITY : gmax[t - protect];
        J.S[off + t] = a;
        J.P[off + t] = a;
    }
}

/* TriAttention across layers (scorer_trig_across), one block per request (its jobs are layer-
 * major, every layer in this call: compress_pack's order): per_head gives each KV head's tokens
 * the mean over layers of their rows (summed in layer order, as the host), union the max over
 * every layer and KV head; the result goes back into every layer's row. */
__global__ static void plan_trig_across_kernel(zp_plan_jobs J, int mode, int L, int Hkv) {
    const int r = blockIdx.x;
    const int n = J.reqs[ZP_REQ_FIELDS * r + ZP_REQ_N], protect = J.reqs[ZP_REQ_FIELDS * r + ZP_REQ_PROTECT];
    const int4 *jr = J.jobs + (size_t)r * L * Hkv;
    for (int t = protect + threadIdx.x; t < n; t += blockDim.x) {
        if (mode == ZP_TRIG_UNION) {
            float mx = -INFINITY;
            for (int g = 0; g < Hkv; g++)
                for (int l = 0; l < L; l++) mx = fmaxf(mx, J.P[(size_t)jr[l * Hkv + g].w + t]);
            for (int i = 0; i < L * Hkv; i++) J.S[(size_t)jr[i].w + t] = J.P[(size_t)jr[i].w + t] = mx;
            continue;
        }
        for (int g = 0; g < Hkv; g++) {
            float acc = 0.f;
            for (int l = 0; l < L; l++) acc += J.P[(size_t)jr[l * Hkv + g].w + t] / (float)L;
            for (int l = 0; l < L; l++) J.S[(size_t)jr[l * Hkv + g].w + t] = J.P[(size_t)jr[l * Hkv + g].w + t] = acc;
        }
    }
}

/* The most dynamic shared memory a block of this device may opt into. */
static zp_status smem_optin(int *bytes) {
    int dev = 0;
    ZP_CUDA_CHECK(cudaGetDevice(&dev));
    ZP_CUDA_CHECK(cudaDeviceGetAttribute(bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return ZP_OK;
}

/* Opts a kernel into `bytes` of dynamic shared memory, or names the limit it exceeds (with
 * the kernel's static shared memory). */
static zp_status smem_limit(const void *fn, size_t bytes, const char *stage, int n) {
    int optin = 0;
    ZP_TRY(smem_optin(&optin));
    cudaFuncAttributes fa;
    ZP_CUDA_CHECK(cudaFuncGetAttributes(&fa, fn));
    if (bytes + fa.sharedSizeBytes > (size_t)optin)
        return zp_fail(ZP_ERR_UNSUPPORTED, "cuda compression: %s needs %zu bytes of shared memory for %d tokens (device limit %d): "
                       "use a smaller nmax or block size", stage, bytes, n, optin);
    ZP_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return ZP_OK;
}

template <typename T, typename KT>
static zp_status plan_select_typed(cudaStream_t stream, const zp_attn_dims *d, const zp_score_plan *plan, int budget,
                                   const zp_plan_jobs *j, const KT *kc, const T *qc, const float *sc) {
    const int G = d->n_heads / d->n_kv_heads, D = d->head_dim;
    int optin = 0;
    ZP_TRY(smem_optin(&optin));
    int hg = G < PLAN_MAX_HG ? G : PLAN_MAX_HG; /* as many heads per pass over the keys as shared memory holds */
    while (hg > 1 && sizeof(float) * ((size_t)G * D + (2 + (size_t)hg) * j->max_n) + 32 * sizeof(float) > (size_t)optin) hg--;
    size_t s1 = sizeof(float) * ((size_t)G * D + (2 + (size_t)hg) * j->max_n);
    /* the common head dims as constants (unrolled key loads), any other at run time */
    auto s1k = D == 128 ? plan_stage1_kernel<T, KT, 128> : D == 64 ? plan_stage1_kernel<T, KT, 64> : plan_stage1_kernel<T, KT, 0>;
    if (plan->key_score == ZP_KEYS_TRIG) {
        const size_t st = sizeof(double) * (size_t)D + sizeof(float) * (3 * (size_t)(D / 2) + 2 * (size_t)j->max_n);
        ZP_TRY(smem_limit((const void *)plan_trig_kernel<KT>, st, "TriAttention's scores", j->max_n));
        plan_trig_kernel<KT><<<j->n_jobs, 256, st, stream>>>(*j, *d, kc);
        ZP_LAUNCH_CHECK("plan_trig");
        if (plan->trig_mode != ZP_TRIG_PER_LAYER_PERHEAD) {
            const int per_req = d->n_layers * d->n_kv_heads; /* every layer in this call (trig_inputs checks it) */
            plan_trig_across_kernel<<<j->n_jobs / per_req, 256, 0, stream>>>(*j, plan->trig_mode, d->n_layers, d->n_kv_heads);
            ZP_LAUNCH_CHECK("plan_trig_across");
        }
    } else {
        ZP_TRY(smem_limit((const void *)s1k, s1, "window attention", j->max_n));
        s1k<<<j->n_jobs, 256, s1, stream>>>(*j, *plan, *d, kc, qc, sc, hg, j->max_n);
        ZP_LAUNCH_CHECK("plan_stage1");
    }
    if (plan->redundancy != ZP_RED_NONE) {
        const size_t DP = (size_t)(D + PAIRS_E - 1) / PAIRS_E * PAIRS_E;
        size_t s2 = sizeof(float) * (DP * PAIRS_Y + PAIRS_E * PAIRS_X + PAIRS_Y * PAIRS_CS + PAIRS_Y + PAIRS_X);
        ZP_TRY(smem_limit((const void *)plan_pairs_kernel<KT>, s2, "redundancy", j->max_n));
        dim3 grid(zp_ceil_div(j->max_n, PAIRS_Y), j->n_jobs);
        plan_pairs_kernel<KT><<<grid, 256, s2, stream>>>(*j, *d, kc, plan->redundancy == ZP_RED_LIGHTNING, plan->theta);
        ZP_LAUNCH_CHECK("plan_pairs");
    }
    size_t s3 = sizeof(float) * 2 * (size_t)j->max_n, k2 = 1;
    while (k2 < (size_t)budget) k2 <<= 1;
    if (plan->order_score) s3 += sizeof(unsigned long long) * k2;
    ZP_TRY(smem_limit((const void *)plan_finish_kernel, s3, "selection", j->max_n));
    plan_finish_kernel<<<j->n_jobs, 256, s3, stream>>>(*j, *plan, d->block_size, d->window, budget);
    ZP_LAUNCH_CHECK("plan_finish");
    return ZP_OK;
}

zp_status cuda_plan_select(cudaStream_t stream, int fp32, const zp_attn_dims *d, const zp_score_plan *plan, int budget,
                           const zp_plan_jobs *j, const void *k_cache, const void *q_cache, const void *score_cache) {
    if (j->n_jobs == 0) return ZP_OK;
    if (plan->key_score == ZP_KEYS_TRIG && (!j->trig_stats || !j->trig_freqs))
        return zp_fail(ZP_ERR_INVALID, "cuda compression: TriAttention without its statistics on the device");
    if (d->window <= 0 || d->window > j->max_n) return zp_fail(ZP_ERR_INVALID, "cuda compression: window %d must be in [1, n]", d->window);
    if (plan->attention && plan->attn.skip_newest && d->window < 2)
        return zp_fail(ZP_ERR_INVALID, "cuda compression: skipping the newest of %d window queries leaves none", d->window);
    ZP_DISPATCH_KV(fp32, d->kv_fp8, return (plan_select_typed<T, KT>(stream, d, plan, budget, j, (const KT *)k_cache, (const T *)q_cache,
                                                                      (const float *)score_cache)));
    return ZP_OK;
}
