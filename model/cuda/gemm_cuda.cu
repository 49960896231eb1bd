/* gemm_cuda.cu - every GEMM's one entry (cuda_gemm): bf16 operands and fp32 sums, the output
 * in fp32 or bf16 (an operand-typed buffer, backend.h zp_act_type), through cublasGemmEx, or
 * (the gemm_tune option, a benchmark knob, off by default) through cublasLt with a measured
 * choice of algorithm per shape: at the first call of an (M, N, K, output type) the
 * heuristic's best candidates are each timed on the real operands with the L2 cache flushed
 * before every timed run (in a model step the weights come cold from memory: a shape timed
 * with its weights in L2 picks algorithms that lose there), and the fastest is kept for that
 * shape unless it beats the heuristic's first by less than 2% (timing noise). cuBLAS's
 * default heuristic is tuned for typical shapes; the decode GEMMs (M = running requests, N and
 * K of one model) are few and repeat every step, so measuring them once is cheap. In fp32
 * storage (the parity mode) it is always cublasGemmEx, so the parity sums stay put.
 * Not here: the matmul op's bias (backend_cuda.cu), and tuning inside a CUDA graph capture (a
 * shape is tuned when first seen, and graphs record a shape at its second sighting; an
 * untuned shape met while capturing goes to cublasGemmEx).
 */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

/* ---------------------------------------------------------------- tuned GEMMs */

#define GEMM_CANDIDATES 8
#define GEMM_TUNE_MAX 512           /* shapes remembered; later ones use cublasGemmEx */
#define GEMM_WORKSPACE (32u << 20)  /* bytes */
#define GEMM_FLUSH (256u << 20)     /* bytes written between timed runs: several times any L2 */

struct cuda_gemm_entry {
    int M, N, K;
    cudaDataType_t out_type;        /* CUDA_R_32F, or CUDA_R_16BF (an operand-typed output) */
    int use;                        /* 0: no candidate ran; cublasGemmEx does this shape */
    cublasLtMatmulAlgo_t algo;
    cublasLtMatrixLayout_t a, b, d; /* w, x, out as below (NULL when !use) */
};

struct cuda_gemm_tuner {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    void *ws;                       /* [GEMM_WORKSPACE] device workspace */
    void *flush;                    /* [GEMM_FLUSH] scratch written to evict L2 while tuning */
    cudaEvent_t e0, e1;
    struct cuda_gemm_entry tab[GEMM_TUNE_MAX];
    int n;
};

static void gemm_entry_clear(struct cuda_gemm_entry *t) {
    if (t->a) cublasLtMatrixLayoutDestroy(t->a);
    if (t->b) cublasLtMatrixLayoutDestroy(t->b);
    if (t->d) cublasLtMatrixLayoutDestroy(t->d);
    t->a = t->b = t->d = NULL;
    t->use = 0;
}

zp_status cuda_gemm_tuner_create(cuda_ctx *c) {
    if (!c->knobs.gemm_tune || c->fp32) return ZP_OK;
    struct cuda_gemm_tuner *g = (struct cuda_gemm_tuner *)calloc(1, sizeof *g);
    if (!g) return zp_fail(ZP_ERR_OOM, "cuda gemm tuner: out of host memory");
    c->gemm = g;
    ZP_CUBLAS_CHECK(cublasLtCreate(&g->lt));
    ZP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    ZP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    ZP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    ZP_CUDA_CHECK(cudaMalloc(&g->ws, GEMM_WORKSPACE));
    ZP_CUDA_CHECK(cudaMalloc(&g->flush, GEMM_FLUSH));
    ZP_CUDA_CHECK(cudaEventCreate(&g->e0));
    ZP_CUDA_CHECK(cudaEventCreate(&g->e1));
    return ZP_OK;
}

void cuda_gemm_tuner_free(cuda_ctx *c) {
    struct cuda_gemm_tuner *g = c->gemm;
    if (!g) return;
    for (int i = 0; i < g->n; i++) gemm_entry_clear(&g->tab[i]);
    if (g->e0) cudaEventDestroy(g->e0);
    if (g->e1) cudaEventDestroy(g->e1);
    cudaFree(g->ws);
    cudaFree(g->flush);
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    if (g->lt) cublasLtDestroy(g->lt);
    free(g);
    c->gemm = NULL;
}

/* The layouts of out^T[N,M] = w[N,K] . x[M,K]^T in column-major terms (as cu_matmul). */
static zp_status gemm_layouts(int M, int N, int K, cudaDataType_t out_type, cublasLtMatrixLayout_t *a, cublasLtMatrixLayout_t *b,
                              cublasLtMatrixLayout_t *d) {
    ZP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(a, CUDA_R_16BF, K, N, K));
    ZP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(b, CUDA_R_16BF, K, M, K));
    ZP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(d, out_type, N, M, N));
    return ZP_OK;
}

static zp_status gemm_run(struct cuda_gemm_tuner *g, cudaStream_t st, const cublasLtMatmulAlgo_t *algo, void *out, const bf16 *w,
                          const bf16 *x, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d) {
    const float alpha = 1.f, beta = 0.f;
    ZP_CUBLAS_CHECK(cublasLtMatmul(g->lt, g->op, &alpha, w, a, x, b, &beta, out, d, out, d, algo, g->ws, GEMM_WORKSPACE, st));
    return ZP_OK;
}

/* Times each candidate (one warm run, then the best of 3, each after the L2 is flushed) and
 * returns the fastest in *best, or the heuristic's first when that one is within 2%. */
static zp_status gemm_pick(struct cuda_gemm_tuner *g, cudaStream_t st, void *out, const bf16 *w, const bf16 *x, cublasLtMatrixLayout_t a,
                           cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d, cublasLtMatmulAlgo_t *best, int *found) {
    cublasLtMatmulPreference_t pref;
    ZP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t wsb = GEMM_WORKSPACE;
    cublasStatus_t ps = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    cublasLtMatmulHeuristicResult_t res[GEMM_CANDIDATES];
    int nres = 0;
    if (ps == CUBLAS_STATUS_SUCCESS) ps = cublasLtMatmulAlgoGetHeuristic(g->lt, g->op, a, b, d, d, pref, GEMM_CANDIDATES, res, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    if (ps != CUBLAS_STATUS_SUCCESS) return zp_fail(ZP_ERR_BACKEND, "cublasLt: no heuristic (status %d)", (int)ps);
    float best_ms = 0.f, first_ms = -1.f;
    int first = -1;
    *found = 0;
    for (int i = 0; i < nres; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        if (gemm_run(g, st, &res[i].algo, out, w, x, a, b, d) != ZP_OK) continue; /* a candidate that cannot run is skipped */
        float ms = 0.f;
        for (int r = 0; r < 3; r++) {
            float t = 0.f;
            ZP_CUDA_CHECK(cudaMemsetAsync(g->flush, r + 1, GEMM_FLUSH, st)); /* weights and operands out of L2 */
            ZP_CUDA_CHECK(cudaEventRecord(g->e0, st));
            ZP_TRY(gemm_run(g, st, &res[i].algo, out, w, x, a, b, d));
            ZP_CUDA_CHECK(cudaEventRecord(g->e1, st));
            ZP_CUDA_CHECK(cudaEventSynchronize(g->e1));
            ZP_CUDA_CHECK(cudaEventElapsedTime(&t, g->e0, g->e1));
            ms = r == 0 || t < ms ? t : ms;
        }
        if (first < 0) { first = i; first_ms = ms; }
        if (!*found || ms < best_ms) { best_ms = ms; *best = res[i].algo; *found = 1; }
    }
    if (*found && best_ms > 0.98f * first_ms) *best = res[first].algo; /* no clear gain over the heuristic's choice */
    return ZP_OK;
}

/* With the tuner on: out = x . w^T by the fastest measured cublasLt algorithm for the shape and
 * output type (*done = 1), else *done = 0 (cublasGemmEx does it). */
static zp_status gemm_tuned(cuda_ctx *c, void *out, cudaDataType_t out_type, const bf16 *w, const bf16 *x, int M, int N, int K, int *done) {
    struct cuda_gemm_tuner *g = c->gemm;
    *done = 0;
    if (!g) return ZP_OK;
    struct cuda_gemm_entry *e = NULL;
    for (int i = 0; i < g->n && !e; i++)
        if (g->tab[i].M == M && g->tab[i].N == N && g->tab[i].K == K && g->tab[i].out_type == out_type) e = &g->tab[i];
    if (!e) {
        cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        ZP_CUDA_CHECK(cudaStreamIsCapturing(c->stream, &cap));
        if (cap != cudaStreamCaptureStatusNone || g->n == GEMM_TUNE_MAX) return ZP_OK; /* cublasGemmEx does it */
        struct cuda_gemm_entry *t = &g->tab[g->n];
        memset(t, 0, sizeof *t);
        zp_status s = gemm_layouts(M, N, K, out_type, &t->a, &t->b, &t->d);
        int found = 0;
        if (s == ZP_OK) s = gemm_pick(g, c->stream, out, w, x, t->a, t->b, t->d, &t->algo, &found);
        if (s != ZP_OK) { gemm_entry_clear(t); return s; }
        if (!found) gemm_entry_clear(t); /* remembered as a cublasGemmEx shape */
        t->use = found;
        t->M = M;
        t->N = N;
        t->K = K;
        t->out_type = out_type;
        e = &g->tab[g->n++];
    }
    if (!e->use) return ZP_OK;
    ZP_TRY(gemm_run(g, c->stream, &e->algo, out, w, x, e->a, e->b, e->d));
    *done = 1;
    return ZP_OK;
}

zp_status cuda_gemm(cuda_ctx *c, void *out, cudaDataType_t out_type, const void *w, const void *x, int M, int N, int K) {
    int done = 0;
    if (!c->fp32) ZP_TRY(gemm_tuned(c, out, out_type, (const bf16 *)w, (const bf16 *)x, M, N, K, &done));
    if (done) return ZP_OK;
    const float alpha = 1.f, beta = 0.f;
    const cudaDataType_t t = c->fp32 ? CUDA_R_32F : CUDA_R_16BF;
    /* row-major out[M,N] = x[M,K] . w[N,K]^T  ==  column-major out^T = w^T^T . x^T */
    ZP_CUBLAS_CHECK(cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, w, t, K, x, t, K, &beta, out, out_type, N,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return ZP_OK;
}
