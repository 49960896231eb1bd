/* decode_attention.cu - the decode-attention lab, in llm.c's dev/cuda manner: numbered variants
 * of the paged decode attention, each checked against the CPU reference backend and timed on
 * the same synthetic batch (S sequences of N tokens in blocks of B, Qwen3-8B's attention shape
 * by default, bf16 caches, one layer). Variant 0 is the mainline op (the CUDA backend's
 * attn_decode: model/cuda/decode_attn_cuda.cu, its kernels and its selection rule); the others
 * were measured and not taken into the mainline (bench/RESULTS.md, decode attention), and are kept here to be
 * measured again on other shapes and machines:
 *   1  the register-pipeline tensor-core kernel: the next tile's K and V wait in registers
 *      (one tile in flight) instead of the mainline's cp.async stages (two), sized for 2
 *      blocks per SM; partitions by the mainline rule (decode_parts_default)
 *   2  the same sized for 3 blocks per SM (a few registers spill)
 *   3  variant 1 with partitions by wave efficiency (decode_split.h)
 * Every variant must match the CPU reference within the GPU tests' bf16 tolerance (2e-2 of
 * max|ref| + 1e-3) or the program fails. Times: the median of 9 calls after a warm-up, wall
 * clock around the launch and a device synchronisation (a few microseconds of launch cost
 * included in every variant alike). A variant graduates to the mainline only with a measured
 * win recorded in bench/RESULTS.md and a parity case in tests/test_cuda_ops.c.
 * Without a GPU it says so and exits 77.
 * Usage: dev_decode_attention [VARIANT|all] [S N B] [--heads HQ HKV D] [--scatter]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../model/cuda/decode_frame.cuh"
#include "decode_split.h"
#include "../../bench/bench_clock.h"

/* ---------------------------------------------------------------- variants 1-3: the kernel */

/* As the mainline's cp.async kernel (same grid, partitions, warp merge and mma tile steps),
 * with a software pipeline through registers: a tile's K and V loads are issued while the
 * tile before it is being used. MINB: blocks per SM the registers are sized for. */
template <int D, int MINB>
__global__ static void __launch_bounds__(DEC_WARPS * 32, MINB)
mma_regs_kernel(float *out, bf16 *out_bf, float *part_acc, float *part_ml, const float *q, const bf16 *kc, const bf16 *vc,
                       const int *q_start, const int *kv_len, const int *tables, int max_blocks, int Hq, int Hkv, int bs, float scale,
                       int n_parts) {
    static_assert(D == 64 || D == 128, "mma_regs_kernel: D 64 or 128");
    constexpr int NC = D / 32, NH = D / 64; /* 16-byte K pieces per key and lane; 64-dim V halves */
    __shared__ float wml[DEC_WARPS * DEC_MAX_G * 2], wacc[DEC_WARPS * DEC_MAX_G * D];
    const int p = blockIdx.x, kh = blockIdx.y, s = blockIdx.z, G = Hq / Hkv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane >> 2, t = lane & 3;
    const int n = kv_len[s], row = q_start[s];
    const size_t head0 = (size_t)s * Hq + (size_t)kh * G;
    int t0, t1;
    decode_part_range(n, p, n_parts, &t0, &t1);
    if (t0 >= n) return decode_part_empty(part_ml, head0, p, n_parts, G);
    const int *bt = tables + (size_t)s * max_blocks;
    uint32_t qa[D / 16][2];
    float m, l, o[D / 8][2];
    mma_warp_begin<D>(qa, q + ((size_t)row * Hq + (size_t)kh * G + gq) * D, gq, G, t, m, l, o);
    const float sl2 = scale * 1.44269504088896341f; /* logits in log2 units */
    /* software pipeline: a tile's K and V loads are issued while the tile before it is being
     * used (K after its QK^T, V after its PV), and block-table rows two tiles ahead */
    constexpr int STRIDE = DEC_WARPS * DEC_MMA_TILE;
    auto phys_row = [&](int c) { return dec_phys_row(lane, c, t1, bt, bs); };
    uint4 kr[2][NC], vr[4][NH];
    auto load_k = [&](int prow) { /* K of key 8nt + gq of the tile; zero past the end */
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const int r = __shfl_sync(0xffffffffu, prow, 8 * nt + gq);
            const uint4 *src = (const uint4 *)(kc + ((size_t)(r < 0 ? 0 : r) * Hkv + kh) * D + 8 * t);
#pragma unroll
            for (int c = 0; c < NC; c++) kr[nt][c] = r >= 0 ? src[4 * c] : make_uint4(0u, 0u, 0u, 0u);
        }
    };
    auto load_v = [&](int prow) { /* V of keys 2t, 2t+1, 2t+8, 2t+9; zero past the end (0 * garbage would be NaN) */
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = __shfl_sync(0xffffffffu, prow, 2 * t + (i & 1) + 8 * (i >> 1));
            const uint4 *src = (const uint4 *)(vc + ((size_t)(r < 0 ? 0 : r) * Hkv + kh) * D + 8 * gq);
#pragma unroll
            for (int hd = 0; hd < NH; hd++) vr[i][hd] = r >= 0 ? src[8 * hd] : make_uint4(0u, 0u, 0u, 0u);
        }
    };
    int c0 = t0 + warp * DEC_MMA_TILE, prow_next = phys_row(c0 + STRIDE);
    {
        const int prow = phys_row(c0);
        load_k(prow);
        load_v(prow);
    }
    for (; c0 < t1; c0 += STRIDE) {
        const int nc = t1 - c0 < DEC_MMA_TILE ? t1 - c0 : DEC_MMA_TILE, prow_after = phys_row(c0 + 2 * STRIDE);
        float sc[2][4];
        mma_tile_scores<D>(sc, qa, kr);
        load_k(prow_next);
        mma_tile_update<D>(sc, nc, sl2, t, m, l, o, vr);
        load_v(prow_next);
        prow_next = prow_after;
    }
    mma_warp_store<D>(m, l, o, warp, gq, G, t, wml, wacc);
    __syncthreads();
    decode_block_finish(wml, wacc, G, D, out, out_bf, part_acc, part_ml, row, Hq, kh, head0, p, n_parts);
}

/* ---------------------------------------------------------------- the lab */

typedef struct {
    int S, N, B, HQ, HKV, D, scatter;
    zp_backend *cpu, *gpu;
    zp_attn_dims d;
    zp_batch b;                      /* the decode batch (host arrays below) */
    int *tables, *q0, *ql, *kl, *ids, *pos, max_blocks;
    int *dev_tables, *dev_q0, *dev_kl; /* the same arrays on the device, for the lab's own launches */
    void *kc[2], *vc[2], *q[2], *o[2]; /* [0] CPU, [1] CUDA */
    float *part;                     /* split partitions' partial outputs and statistics */
    size_t part_cap;
    int n_sms;
    float *ref;                      /* [S][HQ][D] the CPU reference's output */
} lab;

static void die(const char *what) {
    fprintf(stderr, "dev_decode_attention: %s: %s\n", what, zp_last_error());
    exit(1);
}
static void check_cuda(cudaError_t e, const char *what) {
    if (e != cudaSuccess) { fprintf(stderr, "dev_decode_attention: %s: %s\n", what, cudaGetErrorString(e)); exit(1); }
}
static uint32_t xorshift(uint32_t *r) { *r ^= *r << 13; *r ^= *r >> 17; *r ^= *r << 5; return *r; }

/* Fills both backends' caches with the same keys and values (written through qkv_rope_store,
 * one sequence at a time), then sets the decode batch and computes the CPU reference. */
static void lab_setup(lab *L) {
    const int per = (L->N + L->B - 1) / L->B, NB = L->S * per, row = (L->HQ + 2 * L->HKV) * L->D;
    L->max_blocks = per;
    L->d = zp_attn_dims{}; /* one layer, no query cache, the storage type's cache */
    L->d.n_layers = 1;
    L->d.n_heads = L->HQ;
    L->d.n_kv_heads = L->HKV;
    L->d.head_dim = L->D;
    L->d.block_size = L->B;
    L->d.num_blocks = NB;
    L->d.scale = 1.0f / sqrtf((float)L->D);
    L->d.qk_norm_eps = 1e-6f;
    L->tables = (int *)malloc(sizeof(int) * (size_t)NB);
    L->q0 = (int *)malloc(sizeof(int) * (size_t)L->S);
    L->ql = (int *)malloc(sizeof(int) * (size_t)L->S);
    L->kl = (int *)malloc(sizeof(int) * (size_t)L->S);
    L->ids = (int *)calloc((size_t)L->N, sizeof(int));
    L->pos = (int *)malloc(sizeof(int) * (size_t)L->N);
    int *slots = (int *)malloc(sizeof(int) * (size_t)L->N);
    float *qkv = (float *)malloc(sizeof(float) * (size_t)L->N * row), *qh = (float *)malloc(sizeof(float) * (size_t)L->S * L->HQ * L->D);
    if (!L->tables || !L->q0 || !L->ql || !L->kl || !L->ids || !L->pos || !slots || !qkv || !qh) die("host memory");
    uint32_t r = 2463534242u;
    for (int i = 0; i < NB; i++) L->tables[i] = i;
    for (int i = NB - 1; L->scatter && i > 0; i--) {
        const int j = (int)(xorshift(&r) % (uint32_t)(i + 1)), t = L->tables[i];
        L->tables[i] = L->tables[j];
        L->tables[j] = t;
    }
    for (int s = 0; s < L->S; s++) { L->q0[s] = s; L->ql[s] = 1; L->kl[s] = L->N; }
    for (int t = 0; t < L->N; t++) L->pos[t] = t;
    zp_backend *be[2] = {L->cpu, L->gpu};
    float inv[ZP_MAX_HEAD_DIM / 2];
    for (int i = 0; i < L->D / 2; i++) inv[i] = 1.0f / powf(10000.f, 2.f * i / L->D);
    void *QKV[2], *QF[2];
    const size_t ncache = (size_t)NB * L->B * L->HKV * L->D;
    for (int k = 0; k < 2; k++) {
        if (be[k]->alloc_cache(be[k], ncache, &L->kc[k]) || be[k]->alloc_cache(be[k], ncache, &L->vc[k]) ||
            be[k]->alloc(be[k], (size_t)L->N * row, ZP_ACT_OPERAND, &QKV[k]) || be[k]->alloc(be[k], (size_t)L->N * L->HQ * L->D, ZP_ACT_F32, &QF[k]) ||
            be[k]->alloc(be[k], (size_t)L->S * L->HQ * L->D, ZP_ACT_F32, &L->q[k]) ||
            be[k]->alloc(be[k], (size_t)L->S * L->HQ * L->D, ZP_ACT_OPERAND, &L->o[k]) || be[k]->rope_init(be[k], inv, L->D / 2, 1.0f))
            die("backend memory");
    }
    for (int s = 0; s < L->S; s++) { /* one sequence's keys and values */
        for (size_t i = 0; i < (size_t)L->N * row; i++) qkv[i] = (float)(xorshift(&r) >> 8) / 8388608.0f - 1.0f;
        for (int t = 0; t < L->N; t++) slots[t] = L->tables[s * per + t / L->B] * L->B + t % L->B;
        zp_batch fill = zp_batch{}; /* a prefill that only writes the sequence's K/V */
        fill.n_tokens = L->N;
        fill.token_ids = L->ids;
        fill.positions = L->pos;
        fill.slot_mapping = slots;
        fill.is_prefill = 1;
        for (int k = 0; k < 2; k++)
            if (be[k]->from_host(be[k], QKV[k], ZP_ACT_OPERAND, qkv, 0, (size_t)L->N * row) || be[k]->set_batch(be[k], &fill) ||
                be[k]->qkv_rope_store(be[k], &L->d, QKV[k], QF[k], NULL, NULL, L->kc[k], L->vc[k], 0))
                die("cache fill");
    }
    for (size_t i = 0; i < (size_t)L->S * L->HQ * L->D; i++) qh[i] = (float)(xorshift(&r) >> 8) / 16777216.0f - 0.5f;
    L->b = zp_batch{}; /* one decode row a sequence */
    L->b.n_tokens = L->b.n_seqs = L->S;
    L->b.token_ids = L->ids;
    L->b.positions = L->pos;
    L->b.slot_mapping = slots;
    L->b.seq_q_start = L->q0;
    L->b.seq_q_len = L->ql;
    L->b.seq_kv_len = L->kl;
    L->b.block_tables = L->tables;
    L->b.max_blocks = per;
    for (int s = 0; s < L->S; s++) slots[s] = -1; /* decode rows write no KV here */
    L->ref = (float *)malloc(sizeof(float) * (size_t)L->S * L->HQ * L->D);
    if (!L->ref) die("host memory");
    for (int k = 0; k < 2; k++)
        if (be[k]->from_host(be[k], L->q[k], ZP_ACT_F32, qh, 0, (size_t)L->S * L->HQ * L->D) || be[k]->set_batch(be[k], &L->b)) die("decode batch");
    if (L->cpu->attn_decode(L->cpu, &L->d, L->o[0], L->q[0], L->kc[0], L->vc[0], 0) ||
        L->cpu->to_host(L->cpu, L->ref, L->o[0], ZP_ACT_OPERAND, 0, (size_t)L->S * L->HQ * L->D))
        die("CPU reference");
    for (int k = 0; k < 2; k++) { be[k]->release(be[k], QKV[k]); be[k]->release(be[k], QF[k]); }
    check_cuda(cudaMalloc(&L->dev_tables, sizeof(int) * (size_t)NB), "device tables");
    check_cuda(cudaMalloc(&L->dev_q0, sizeof(int) * (size_t)L->S), "device q0");
    check_cuda(cudaMalloc(&L->dev_kl, sizeof(int) * (size_t)L->S), "device kv_len");
    check_cuda(cudaMemcpy(L->dev_tables, L->tables, sizeof(int) * (size_t)NB, cudaMemcpyHostToDevice), "tables");
    check_cuda(cudaMemcpy(L->dev_q0, L->q0, sizeof(int) * (size_t)L->S, cudaMemcpyHostToDevice), "q0");
    check_cuda(cudaMemcpy(L->dev_kl, L->kl, sizeof(int) * (size_t)L->S, cudaMemcpyHostToDevice), "kv_len");
    check_cuda(cudaDeviceGetAttribute(&L->n_sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    free(slots);
    free(qkv);
    free(qh);
}

/* Variants 1-3: the register-pipeline kernel, MINB blocks per SM, n_parts partitions (merged
 * by the mainline's merge kernel when more than one). */
template <int D, int MINB>
static void launch_regs(lab *L, int n_parts) {
    bf16 *out = (bf16 *)L->o[1];
    const size_t heads = (size_t)L->S * L->HQ * n_parts;
    if (n_parts > 1 && heads * (D + 2) * sizeof(float) > L->part_cap) {
        cudaFree(L->part);
        L->part_cap = heads * (D + 2) * sizeof(float);
        check_cuda(cudaMalloc(&L->part, L->part_cap), "partitions");
    }
    float *part_acc = n_parts > 1 ? L->part : NULL, *part_ml = n_parts > 1 ? L->part + heads * D : NULL;
    mma_regs_kernel<D, MINB><<<dim3(n_parts, L->HKV, L->S), DEC_WARPS * 32>>>(
        NULL, out, part_acc, part_ml, (const float *)L->q[1], (const bf16 *)L->kc[1], (const bf16 *)L->vc[1], L->dev_q0, L->dev_kl,
        L->dev_tables, L->max_blocks, L->HQ, L->HKV, L->B, L->d.scale, n_parts);
    if (n_parts > 1)
        decode_merge_kernel<<<dim3(L->S, L->HQ), D>>>(NULL, out, part_acc, part_ml, L->dev_q0, L->HQ, D, n_parts);
    check_cuda(cudaGetLastError(), "variant launch");
}

/* Runs variant v once (v 0: the backend's op on its stream), through to the device's end. */
static void run_variant(lab *L, int v) {
    const int max_parts = zp_ceil_div((long)L->max_blocks * L->B, DEC_GRAIN);
    const int parts = decode_parts_default((long)L->S * L->HKV, L->n_sms, max_parts);
    if (v == 0) {
        if (L->gpu->attn_decode(L->gpu, &L->d, L->o[1], L->q[1], L->kc[1], L->vc[1], 0)) die("variant 0");
    } else if (v == 3) {
        const int waves = zp_decode_parts_waves((long)L->S * L->HKV, 2L * L->n_sms, max_parts);
        if (L->D == 64) launch_regs<64, 2>(L, waves); else launch_regs<128, 2>(L, waves);
    } else if (L->D == 64) {
        if (v == 1) launch_regs<64, 2>(L, parts); else launch_regs<64, 3>(L, parts);
    } else {
        if (v == 1) launch_regs<128, 2>(L, parts); else launch_regs<128, 3>(L, parts);
    }
    check_cuda(cudaDeviceSynchronize(), "variant run");
}

static const char *const VARIANT_NAME[] = {"mainline attn_decode", "register pipeline, 2 blocks/SM", "register pipeline, 3 blocks/SM",
                                           "register pipeline, wave-efficiency partitions"};
enum { N_VARIANTS = 4 };

/* Checks variant v against the CPU reference and times it; returns 1 when it matches. */
static int lab_variant(lab *L, int v, double copy_bw) {
    const size_t n = (size_t)L->S * L->HQ * L->D;
    float *got = (float *)malloc(sizeof(float) * n);
    if (!got) die("host memory");
    check_cuda(cudaMemset(L->o[1], 0, n * sizeof(bf16)), "clear output");
    run_variant(L, v);
    if (L->gpu->to_host(L->gpu, got, L->o[1], ZP_ACT_OPERAND, 0, n)) die("output");
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - L->ref[i]);
        diff = e > diff || e != e ? e : diff; /* a NaN counts as a mismatch */
        scale = fabs(L->ref[i]) > scale ? fabs(L->ref[i]) : scale;
    }
    free(got);
    const int ok = diff <= 2e-2 * scale + 1e-3;
    double t[9];
    for (int i = 0; i < 9; i++) {
        const double t0 = zp_now();
        run_variant(L, v);
        t[i] = zp_now() - t0;
    }
    qsort(t, 9, sizeof *t, bench_cmp_double);
    const double kv = 2.0 * L->S * (double)L->N * L->HKV * L->D * sizeof(bf16);
    printf("  %d  %-46s %8.3f ms  %6.0f GB/s  %.2f of copy  max|diff| %.2e (of %.2e)  %s\n", v, VARIANT_NAME[v], 1e3 * t[4],
           kv / t[4] / 1e9, kv / t[4] / copy_bw, diff, scale, ok ? "ok" : "MISMATCH");
    return ok;
}

int main(int argc, char **argv) {
    lab L;
    memset(&L, 0, sizeof L);
    L.S = 256; L.N = 384; L.B = 256; L.HQ = 32; L.HKV = 8; L.D = 128;
    int only = -1, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scatter")) L.scatter = 1;
        else if (!strcmp(argv[i], "--heads") && i + 3 < argc) { L.HQ = atoi(argv[i + 1]); L.HKV = atoi(argv[i + 2]); L.D = atoi(argv[i + 3]); i += 3; }
        else if (i == 1 && strcmp(argv[i], "all")) only = atoi(argv[i]);
        else if (i == 1) only = -1;
        else if (pos < 3) { const int v = atoi(argv[i]); if (pos == 0) L.S = v; else if (pos == 1) L.N = v; else L.B = v; pos++; }
        else { fprintf(stderr, "usage: dev_decode_attention [VARIANT|all] [S N B] [--heads HQ HKV D] [--scatter]\n"); return 2; }
    }
    if (only < -1 || only >= N_VARIANTS || L.S < 1 || L.N < 1 || L.B < 1 || L.HKV < 1 || L.HQ % L.HKV || L.HQ / L.HKV > DEC_MAX_G ||
        (L.D != 64 && L.D != 128)) {
        fprintf(stderr, "dev_decode_attention: variant %d, S %d, N %d, B %d, heads %d/%d, D %d: not a case of the lab (variants 0-%d, "
                        "D 64 or 128, up to %d query heads per KV head)\n", only, L.S, L.N, L.B, L.HQ, L.HKV, L.D, N_VARIANTS - 1, DEC_MAX_G);
        return 2;
    }
    if (zp_backend_cuda_create(0, 0, NULL, &L.gpu) != ZP_OK) {
        printf("dev_decode_attention: skipped (%s)\n", zp_last_error());
        return 77;
    }
    if (zp_backend_cpu_create(0, &L.cpu) != ZP_OK) die("CPU backend");
    lab_setup(&L);
    double bw = 0.0;
    if (L.gpu->copy_bandwidth(L.gpu, &bw) != ZP_OK) die("copy bandwidth");
    printf("dev_decode_attention: %d sequences x %d tokens, block %d%s, heads %d/%d, D %d; copy bandwidth %.0f GB/s\n", L.S, L.N, L.B,
           L.scatter ? " (scattered)" : "", L.HQ, L.HKV, L.D, bw / 1e9);
    int ok = 1;
    for (int v = 0; v < N_VARIANTS; v++)
        if (only < 0 || v == only) ok &= lab_variant(&L, v, bw);
    return ok ? 0 : 1;
}
