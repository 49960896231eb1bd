/* sample_cuda.cu - next-token sampling on the GPU, one thread block per logits row, by the
 * rule of zp_sample_token (engine/sampler.c) and with its random numbers (philox.h, drawn on
 * the device from (seed, request, sample, step)): greedy (first maximum), temperature over
 * the whole vocabulary by inverse CDF in id order, or top-k / top-p by bisection of a
 * probability threshold, then a sort of the few candidates above it. Only token ids go back
 * to the host. Not here: the repetition penalty (needs each request's history: such rows are
 * sampled on the host), and rows whose candidate set exceeds SAMPLE_CAP tokens (returned as
 * -1 for the host sampler; a near-uniform nucleus is the only way to get there).
 * Sums run in another order than on the host: a draw that lands within float rounding of a
 * token boundary may pick the neighbouring token.
 */
#include <math.h>

#include "cuda_common.cuh"
#include "../philox.h"

#define SAMPLE_THREADS 1024
#define SAMPLE_CAP 4096 /* candidates sorted in shared memory */

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

__global__ static void sample_kernel(const float *logits, int V, const zp_sample_row *rows, int *ids) {
    __shared__ float red[32];
    __shared__ arg_pair ared[32];
    __shared__ float cp[SAMPLE_CAP];
    __shared__ int cid[SAMPLE_CAP], n_cand, found;
    const zp_sample_row r = rows[blockIdx.x];
    const float *x = logits + (size_t)blockIdx.x * V;
    arg_pair best = {-INFINITY, 0x7fffffff};
    for (int i = threadIdx.x; i < V; i += blockDim.x)
        if (x[i] > best.v || best.i == 0x7fffffff) best = (arg_pair){x[i], i};
    best = block_argmax(best, ared);
    if (r.temperature <= 0.f || r.top_k == 1) {
        if (threadIdx.x == 0) ids[blockIdx.x] = best.i;
        return;
    }
    const float mx = best.v, T = r.temperature;
    float s = 0.f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf((x[i] - mx) / T);
    const float sum = zp_block_sum(s, red);
    const float u = zp_philox_uniform(r.seed, r.request_id, r.sample_index, r.step);
    const int k = r.top_k > 0 && r.top_k < V ? r.top_k : 0;
    if (!k && r.top_p >= 1.0f) { /* inverse CDF in id order over contiguous per-thread chunks */
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
    const float want = r.top_p + 1e-3f < 1.0f ? r.top_p + 1e-3f : 1.0f;
    float lo = 0.f, hi = 1.f;
    for (int it = 0; it < 24; it++) { /* the largest threshold that still holds k tokens or top_p of the mass */
        const float mid = 0.5f * (lo + hi), cut = mid * sum;
        float cnt = 0.f, mass = 0.f;
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            const float p = expf((x[i] - mx) / T);
            if (p >= cut) { cnt += 1.f; mass += p; }
        }
        cnt = zp_block_sum(cnt, red);
        mass = zp_block_sum(mass, red);
        const int enough = (k && cnt >= (float)k) || (r.top_p < 1.0f && mass >= want * sum);
        if (enough) lo = mid; else hi = mid;
    }
    const float cut = lo * sum;
    if (threadIdx.x == 0) n_cand = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        const float p = expf((x[i] - mx) / T);
        if (p < cut) continue;
        const int slot = atomicAdd(&n_cand, 1);
        if (slot < SAMPLE_CAP) { cp[slot] = p / sum; cid[slot] = i; }
    }
    __syncthreads();
    const int m = n_cand; /* SAMPLE_CAP is a power of two: the padded sort fits when m does */
    if (m > SAMPLE_CAP) {
        if (threadIdx.x == 0) ids[blockIdx.x] = -1;
        return;
    }
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
    ZP_TRY(cuda_grow(&c->srows, &c->srows_cap, rbytes + sizeof(int) * (size_t)n));
    int *dids = (int *)((char *)c->srows + rbytes);
    ZP_CUDA_CHECK(cudaMemcpyAsync(c->srows, rows, rbytes, cudaMemcpyHostToDevice, c->stream));
    sample_kernel<<<n, SAMPLE_THREADS, 0, c->stream>>>((const float *)logits, V, (const zp_sample_row *)c->srows, dids);
    ZP_LAUNCH_CHECK("sample");
    ZP_CUDA_CHECK(cudaMemcpyAsync(ids, dids, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost, c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return ZP_OK;
}
