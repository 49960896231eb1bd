/* plan_cuda.cuh - the device executor of a score plan (scorers.h): the CUDA twin of
 * scorers/plan.c, run for many (request, layer, KV head) jobs in one launch per stage.
 * It scores and selects only; compaction is model/cuda/compress_cuda.cu's. */
#ifndef ZP_PLAN_CUDA_CUH
#define ZP_PLAN_CUDA_CUH

#include "cuda_common.cuh"

/* Jobs of one device compression, all arrays on the device. */
typedef struct {
    const int4 *jobs;  /* [n_jobs] (request, layer, KV head, off): off = first element of the job's rows below */
    const int *reqs;   /* [n_req][ZP_REQ_FIELDS] n, n_hist, qid, src table offset, dst table offset */
    const int *tables; /* block tables, at the offsets above */
    int n_jobs, max_n; /* max_n: the largest n of any request */
    float *S;          /* [sum n] new history score S (stored when the policy keeps history) */
    float *P;          /* [sum n] pooled score P */
    float *rs, *cl;    /* [sum n] redundancy row sums and the similarity each token gives away */
    int *last;         /* [sum n] latest partner above theta (-1: none) */
    uint8_t *keep;     /* [sum n] 1 for the budget kept tokens */
    int *order;        /* [sum n] with the plan's order_score: each job's kept tokens in cache order
                          (its first budget entries: candidates by descending score, then the recent) */
    const float *trig_stats, *trig_freqs; /* TriAttention's [L][Hq][3][D/2] statistics and the RoPE frequencies */
} zp_plan_jobs;

/* A request's fields: tokens, stored history, query slot, source and target tables' offsets,
 * the protected prompt tokens and the next token's position (TriAttention's). */
enum { ZP_REQ_N, ZP_REQ_NHIST, ZP_REQ_QID, ZP_REQ_SRC, ZP_REQ_DST, ZP_REQ_PROTECT, ZP_REQ_POS, ZP_REQ_FIELDS };

/* Runs `plan` for every job on `stream`: fills S, P, keep and (order_score) order. k_cache/q_cache/score_cache are
 * the whole caches (score_cache NULL: no history). Fails (naming the limit) when a request is
 * too long for the shared-memory rows of the kernels. */
zp_status cuda_plan_select(cudaStream_t stream, int fp32, const zp_attn_dims *d, const zp_score_plan *plan, int budget,
                           const zp_plan_jobs *j, const void *k_cache, const void *q_cache, const void *score_cache);

#endif
