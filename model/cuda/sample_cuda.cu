/* sample_cuda.cu - next-token sampling on the GPU, one thread block per logits row, by the
 * rule of zp_sample_token (model/sampler.c) and with its random numbers (philox.h, drawn on
 * the device from (seed, request, sample, step)): greedy (first maximum), temperature over
 * the whole vocabulary by inverse CDF in id order, or top-k / top-p by a radix selection of
 * the probability threshold (histograms of p's float bits, 11 at a time: usually one pass
 * over the row besides the maximum and the candidates' collection, where zp_sample_token
 * bisects), then a sort of the few candidates at or above it. Only token ids go back
 * to the host. Not here: the repetition penalty (needs each request's history: such rows are
 * sampled on the host), and rows whose candidate set exceeds SAMPLE_CAP tokens (returned as
 * -1 for the host sampler; a near-uniform nucleus is the only way to get there).
 * Sums run in another order than on the host: a draw that lands within float rounding of a
 * token boundary may pick the neighbouring token.
 */
#include <math.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "../philox.h"

#define SAMPLE_THREADS 1024
#define SAMPLE_CAP 4096  /* candidates sorted in shared memory */
#define SAMPLE_BINS 2048 /* radix bins of one level: two per thread */
/* Radix levels over the bits of a non-negative float: 30..20, 19..9, 8..0. */
#define RADIX_SHIFT(l) ((l) == 0 ? 20 : (l) == 1 ? 9 : 0)
#define RADIX_WIDTH(l) ((l) == 2 ? 9 : 11)
static_assert(SAMPLE_BINS == 2 * SAMPLE_THREADS && SAMPLE_BINS <= SAMPLE_CAP, "first_enough: two bins per thread");

typedef struct {
    float v;
    int i;
} arg_pair;

/* Block-wide first maximum (ties: the lower index). */
__device__ static arg_pair block_argmax(arg_pair a, arg_pair *sh) {
    for (int o = 16; o > 0; o >>= 1) {
        arg_pair b = {__shfl_xor_sync(0xffffffffu, a.v, o), __shfl_xor_sync(0xffffffffu, a.i, o)};
        if (b.v > a.v || (b.v == a.v && b.i < a.i)) a = b;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[warp] = a;
    __syncthreads();
    arg_pair r = sh[0];
    for (int w = 1; w < nw; w++)
        if (sh[w].v > r.v || (sh[w].v == r.v && sh[w].i < r.i)) r = sh[w];
    return r;
}

/* Sorts cand[0, m) by probability descending, then id ascending (bitonic, padded to 2^k). */
__device__ static void sort_candidates(float *p, int *id, int m) {
    int n = 1;
    while (n < m) n <<= 1;
    for (int i = m + threadIdx.x; i < n; i += blockDim.x) { p[i] = -1.f; id[i] = 0x7fffffff; }
    __syncthreads();
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                const int l = i ^ j;
                if (l <= i) continue;
                const int desc = (i & k) == 0; /* this pair's run sorts "first before second" */
                const int before = p[l] > p[i] || (p[l] == p[i] && id[l] < id[i]); /* l should come first */
                if (desc == before) {
                    float tp = p[i]; p[i] = p[l]; p[l] = tp;
                    int ti = id[i]; id[i] = id[l]; id[l] = ti;
                }
            }
            __syncthreads();
        }
}

/* One radix level's choice: the first bin (in descending probability) at which the tokens
 * before it plus the bin hold enough, and what precedes it. */
typedef struct {
    int bin, before_cnt, bin_cnt;
    float before_mass;
} radix_sel;

/* Scans the histogram cnt/mass[0, SAMPLE_BINS) (bin 0 the most probable), starting from the
 * tokens above the bin being refined (above_c, above_m), for the first bin where the running
 * count reaches k (k > 0) or the running mass reaches need; sel->bin = SAMPLE_BINS if none.
 * Ends on a barrier: every thread may read *sel. wc and wm are 32-entry scratch. */
__device__ static void first_enough(const int *cnt, const float *mass, int above_c, float above_m, int k, float need,
                                    radix_sel *sel, int *wc, float *wm) {
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int c0 = cnt[2 * t], c1 = cnt[2 * t + 1];
    const float m0 = mass[2 * t], m1 = mass[2 * t + 1];
    int ic = c0 + c1;
    float im = m0 + m1;
    for (int o = 1; o < 32; o <<= 1) {
        const int yc = __shfl_up_sync(0xffffffffu, ic, o);
        const float ym = __shfl_up_sync(0xffffffffu, im, o);
        if (lane >= o) { ic += yc; im += ym; }
    }
    if (t == 0) sel->bin = SAMPLE_BINS;
    if (lane == 31) { wc[warp] = ic; wm[warp] = im; }
    __syncthreads();
    int bc = above_c + ic - (c0 + c1);
    float bm = above_m + im - (m0 + m1);
    for (int w = 0; w < warp; w++) { bc += wc[w]; bm += wm[w]; }
    const int e0 = (k && bc + c0 >= k) || bm + m0 >= need;
    const int e1 = (k && bc + c0 + c1 >= k) || bm + m0 + m1 >= need;
    if (e0 || e1) atomicMin(&sel->bin, e0 ? 2 * t : 2 * t + 1);
    __syncthreads();
    if (sel->bin == 2 * t) { sel->before_cnt = bc; sel->before_mass = bm; sel->bin_cnt = c0; }
    if (sel->bin == 2 * t + 1) { sel->before_cnt = bc + c0; sel->before_mass = bm + m0; sel->bin_cnt = c1; }
    __syncthreads();
}

/* Calls f(i, x[i]) for this thread's share of the row x[0, V), in increasing i: 16-byte loads
 * when the row allows them (every row does when V % 4 == 0), else one value at a time. */
template <class F> __device__ static void for_row(const float *x, int V, F f) {
    if ((V & 3) == 0 && ((uintptr_t)x & 15) == 0) {
        const float4 *x4 = (const float4 *)x;
#pragma unroll 2
        for (int j = threadIdx.x; j < V / 4; j += blockDim.x) {
            const float4 v = x4[j];
            f(4 * j, v.x);
            f(4 * j + 1, v.y);
            f(4 * j + 2, v.z);
            f(4 * j + 3, v.w);
        }
    } else {
        for (int i = threadIdx.x; i < V; i += blockDim.x) f(i, x[i]);
    }
}

/* Two blocks per multiprocessor: registers capped at 32 a thread. */
__global__ static void __launch_bounds__(SAMPLE_THREADS, 2) sample_kernel(const float *logits, int V, const zp_sample_row *rows, int *ids) {
    __shared__ float red[32];
    __shared__ arg_pair ared[32];
    __shared__ float cp[SAMPLE_CAP];
    __shared__ int cid[SAMPLE_CAP], n_cand, found, wcnt[32];
    __shared__ radix_sel sel;
    const zp_sample_row r = rows[blockIdx.x];
    const float *x = logits + (size_t)blockIdx.x * V;
    arg_pair best = {-INFINITY, 0x7fffffff};
    for_row(x, V, [&](int i, float v) {
        if (v > best.v || best.i == 0x7fffffff) best = (arg_pair){v, i};
    });
    best = block_argmax(best, ared);
    if (r.temperature <= 0.f || r.top_k == 1) {
        if (threadIdx.x == 0) ids[blockIdx.x] = best.i;
        return;
    }
    const float mx = best.v, T = r.temperature;
    const float u = zp_philox_uniform(r.seed, r.request_id, r.sample_index, r.step);
    const int k = r.top_k > 0 && r.top_k < V ? r.top_k : 0;
    if (!k && r.top_p >= 1.0f) { /* inverse CDF in id order over contiguous per-thread chunks */
        /* the sum in strided order, one value at a time: the order whose draws test_cuda_engine
         * checks against the host sampler (another order moves draws on token boundaries) */
        float s = 0.f;
        for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf((x[i] - mx) / T);
        const float sum = zp_block_sum(s, red);
        const int chunk = (V + blockDim.x - 1) / blockDim.x, lo = threadIdx.x * chunk, hi = lo + chunk < V ? lo + chunk : V;
        float part = 0.f;
        for (int i = lo; i < hi; i++) part += expf((x[i] - mx) / T);
        __syncthreads(); /* red[] is free again (zp_block_sum above has no trailing barrier) */
        float incl = part; /* inclusive scan of the chunk sums: warps, then warp totals */
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        for (int o = 1; o < 32; o <<= 1) { float y = __shfl_up_sync(0xffffffffu, incl, o); if (lane >= o) incl += y; }
        if (threadIdx.x == 0) found = 0x7fffffff;
        if (lane == 31) red[warp] = incl;
        __syncthreads();
        float base = 0.f;
        for (int w = 0; w < warp; w++) base += red[w];
        float acc = base + incl - part;
        const float target = u * sum;
        for (int i = lo; i < hi; i++) {
            acc += expf((x[i] - mx) / T);
            if (acc > target) { atomicMin(&found, i); break; }
        }
        __syncthreads();
        if (threadIdx.x == 0) ids[blockIdx.x] = found != 0x7fffffff ? found : best.i;
        return;
    }
    /* Top-k / top-p: the threshold is selected by radix on p's float pattern (monotone for
     * p >= 0), 11 bits at a time from the top, until the tokens at or above it hold k tokens or
     * top_p of the mass (with zp_sample_token's margin) and fit the candidate arrays. */
    const float want = r.top_p + 1e-3f < 1.0f ? r.top_p + 1e-3f : 1.0f;
    int *hcnt = cid; /* the histograms alias the candidate arrays (SAMPLE_BINS <= SAMPLE_CAP) */
    float *hmass = cp;
    const int use_mass = r.top_p < 1.0f;
    unsigned prefix = 0;
    int shift = 0, above_c = 0, total = SAMPLE_CAP + 1;
    float above_m = 0.f, sum = 0.f, need = INFINITY;
    for (int lvl = 0; lvl < 3; lvl++) {
        shift = RADIX_SHIFT(lvl);
        const int width = RADIX_WIDTH(lvl), nb = 1 << width;
        const unsigned hi_shift = (unsigned)(shift + width), low = (unsigned)nb - 1u;
        for (int i = threadIdx.x; i < SAMPLE_BINS; i += blockDim.x) { hcnt[i] = 0; hmass[i] = 0.f; }
        __syncthreads();
        float part = 0.f;
        for_row(x, V, [&](int, float v) {
            const float p = expf((v - mx) / T);
            part += p;
            const unsigned key = __float_as_uint(p);
            if ((key >> hi_shift) != prefix) return; /* outside the bin being refined (level 0: none) */
            const int d = (int)(low - ((key >> shift) & low));        /* bin 0: the most probable */
            atomicAdd(&hcnt[d], 1);
            if (use_mass) atomicAdd(&hmass[d], p);
        });
        if (lvl == 0) {
            sum = zp_block_sum(part, red);
            if (use_mass) need = want * sum;
        }
        __syncthreads();
        first_enough(hcnt, hmass, above_c, above_m, k, need, &sel, wcnt, red);
        if (sel.bin >= nb) break; /* the condition is met by no bin: every token is a candidate */
        prefix = (prefix << width) | (low - (unsigned)sel.bin);
        total = sel.before_cnt + sel.bin_cnt;
        if (total <= SAMPLE_CAP) break;
        above_c = sel.before_cnt;
        above_m = sel.before_mass;
    }
    if (total > SAMPLE_CAP) { /* left to the host sampler */
        if (threadIdx.x == 0) ids[blockIdx.x] = -1;
        return;
    }
    const unsigned cut = prefix << shift;
    if (threadIdx.x == 0) n_cand = 0;
    __syncthreads();
    for_row(x, V, [&](int i, float v) {
        const float p = expf((v - mx) / T);
        if (__float_as_uint(p) < cut) return;
        const int slot = atomicAdd(&n_cand, 1);
        if (slot < SAMPLE_CAP) { cp[slot] = p / sum; cid[slot] = i; }
    });
    __syncthreads();
    const int m = n_cand; /* = total; SAMPLE_CAP is a power of two: the padded sort fits */
    sort_candidates(cp, cid, m);
    if (threadIdx.x != 0) return;
    int n = k && k < m ? k : m;
    if (r.top_p < 1.0f) { /* smallest prefix whose mass reaches top_p (at least one token) */
        float acc = 0.f;
        int keep = 0;
        while (keep < n) { acc += cp[keep++]; if (acc >= r.top_p) break; }
        n = keep;
    }
    float mass = 0.f;
    for (int i = 0; i < n; i++) mass += cp[i];
    const float target = u * mass;
    float acc = 0.f;
    int tok = cid[n - 1];
    for (int i = 0; i < n; i++) { acc += cp[i]; if (acc > target) { tok = cid[i]; break; } }
    ids[blockIdx.x] = tok;
}

zp_status cuda_sample(zp_backend *be, const void *logits, int n, int V, const zp_sample_row *rows, int *ids) {
    cuda_ctx *c = CUDA_CTX(be);
    if (n <= 0) return ZP_OK;
    zp_prof_scope prof(c, ZP_OP_SAMPLING);
    const size_t rbytes = sizeof(zp_sample_row) * (size_t)n;
    ZP_TRY(cuda_grow(c, &c->srows, &c->srows_cap, rbytes + sizeof(int) * (size_t)n));
    int *dids = (int *)((char *)c->srows + rbytes);
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->srows, rows, rbytes, cudaMemcpyHostToDevice, c->stream));
    sample_kernel<<<n, SAMPLE_THREADS, 0, c->stream>>>((const float *)logits, V, (const zp_sample_row *)c->srows, dids);
    ZP_LAUNCH_CHECK("sample");
    ZP_CUDA_CHECK(cudaMemcpyAsync(ids, dids, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost, c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return ZP_OK;
}
