/* backend.h - the table of device ops the model forward (and later the policies) call.
 *
 * A backend is a context plus function pointers; the CPU backend (model/cpu/) is the fp32
 * reference, the CUDA backend (model/cuda/) implements the same table. Buffers are opaque
 * handles (`void *`) owned by the backend; ops never receive host pointers for tensors, only
 * the step's batch description (zp_batch, host arrays) through set_batch.
 * Layouts: row-major; "[T,H]" means T rows of H elements. KV cache per layer:
 * [num_blocks][block_size][H_kv][D], K and V separately, all layers in one buffer
 * ([L][num_blocks][block_size][H_kv][D]).
 * This header does not implement anything; see model/cpu/backend_cpu.c.
 */
#ifndef ZP_BACKEND_H
#define ZP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend_options.h" /* zp_backend_options, zp_op_kind */
#include "scorers.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest head size (head_dim, even) every backend runs; configs beyond it are refused. */
#define ZP_MAX_HEAD_DIM 512

/* One engine step, as host arrays. T = n_tokens rows, S = n_seqs sequences. */
typedef struct {
    int n_tokens;             /* T */
    int n_seqs;               /* S */
    const int *token_ids;     /* [T] input token ids */
    const int *positions;     /* [T] logical positions (RoPE); not slot indices */
    const int *slot_mapping;  /* [n_groups][T] physical slot block*bs+offset receiving the token's K/V
                                 (one row per KV group: view_group) */
    const int *seq_q_start;   /* [S] first row of each sequence in the batch */
    const int *seq_q_len;     /* [S] rows of each sequence */
    const int *seq_kv_len;    /* [n_views][S] physical KV length after this step's writes */
    const int *block_tables;  /* [n_views][S][max_blocks] physical block ids, -1 padded */
    int max_blocks;           /* row stride of block_tables */
    int n_out;                /* rows whose logits are computed */
    const int *out_rows;      /* [n_out] batch rows for the LM head */
    int is_prefill;           /* 1: some seq has q_len > 1 (prefill); 0: one query per seq */
    int n_qstore;             /* rows whose query goes to the query cache */
    const int *qstore_rows;   /* [n_qstore] batch rows */
    const int *qstore_slots;  /* [n_qstore] query-cache row: qid * window + window index */
    /* Per-layer budgets (layer_budget.h): layer l's attention and history read view
     * layer_view[l] of block_tables and seq_kv_len (a compressed request's table without the
     * layer's dead blocks). n_views 1 and layer_view NULL: one view for every layer. */
    int n_views;
    const int *layer_view;    /* [L] or NULL */
    /* KV groups (gpt-oss): the sliding layers hold blocks of their own, apart from the full
     * layers' (a block's rows belong to one group: zp_attn_dims.layer_row). View v's tables
     * and kv_len are group view_group[v]'s, and its writes go to row view_group[v] of
     * slot_mapping. NULL: one group. */
    const int *view_group;    /* [n_views] or NULL */
    /* Head-wise budgets (AdaKV, docs/budgets.md): sequence s's first head_base[s] tokens (0:
     * none, the uniform layout) are, in each layer l and KV head h with a run r =
     * head_run[(s L + l) Hkv + h] >= 0, r keys in consecutive cells (zp_head_key_row); its later
     * tokens are where the uniform layout puts them. r < 0: that layer is uniform. NULL: none. */
    const int *head_base;     /* [S] or NULL */
    const int *head_run;      /* [S][L][Hkv] or NULL */
} zp_batch;

/* One request's head runs in one layer (head-wise budgets): head h's first run[h] keys fill the
 * cells [start(h), start(h) + run[h]) of its first base / block_size blocks, start(h) the sum of
 * the runs before it, a cell c being row c mod (bs Hkv) of block table[c / (bs Hkv)] (a row is
 * one head's K or V of one slot, slot x Hkv + head in the uniform layout); the keys after them are
 * the uniform layout's tokens base, base + 1, ... NULL or base 0: the uniform layout. */
typedef struct {
    int base;
    const int *run; /* [Hkv] */
} zp_head_runs;

/* Layer l's runs of sequence s in the batch ({0, NULL} where uniform). */
static inline zp_head_runs zp_batch_head_runs(const zp_batch *b, int n_layers, int Hkv, int s, int l) {
    zp_head_runs r = {0, NULL};
    if (!b->head_run || !b->head_base || b->head_base[s] <= 0) return r;
    const int *run = b->head_run + ((size_t)s * n_layers + l) * Hkv;
    if (run[0] < 0) return r;
    r.base = b->head_base[s];
    r.run = run;
    return r;
}
/* Keys head h has beyond the uniform layout's: run[h] - base (0 when uniform). */
static inline int zp_head_delta(const zp_head_runs *r, int h) { return r && r->run ? r->run[h] - r->base : 0; }
/* The first cell of head h's run. */
static inline size_t zp_head_start(const zp_head_runs *r, int h) {
    size_t c = 0;
    for (int g = 0; g < h; g++) c += (size_t)r->run[g];
    return c;
}
/* The row (in units of one head's D elements of the layer) of head h's key j; start =
 * zp_head_start(r, h) (ignored when uniform). */
static inline size_t zp_head_key_row(const zp_head_runs *r, size_t start, const int *table, int bs, int Hkv, int h, int j) {
    if (r && r->run) {
        if (j < r->run[h]) {
            const size_t c = start + (size_t)j, per = (size_t)bs * (size_t)Hkv;
            return (size_t)table[c / per] * per + c % per;
        }
        j += r->base - r->run[h];
    }
    return ((size_t)table[j / bs] * (size_t)bs + (size_t)(j % bs)) * (size_t)Hkv + (size_t)h;
}

/* A prefill step of one sequence (rows are its tokens [kv_len - n_tokens, kv_len), one view, the
 * last row's logits): the batch and the one-sequence arrays it points into. */
typedef struct {
    int q_start, q_len, kv_len, out_row;
    zp_batch b;
} zp_batch_one;
/* Fills *o (which the batch points into: keep it alive while b is used). */
static inline void zp_batch_one_prefill(zp_batch_one *o, const int *ids, const int *positions, const int *slots,
                                        int n_tokens, int kv_len, const int *block_table, int max_blocks) {
    o->q_start = 0, o->q_len = n_tokens, o->kv_len = kv_len, o->out_row = n_tokens - 1;
    o->b = (zp_batch){.n_tokens = n_tokens,
                      .n_seqs = 1,
                      .token_ids = ids,
                      .positions = positions,
                      .slot_mapping = slots,
                      .seq_q_start = &o->q_start,
                      .seq_q_len = &o->q_len,
                      .seq_kv_len = &o->kv_len,
                      .block_tables = block_table,
                      .max_blocks = max_blocks,
                      .n_out = 1,
                      .out_rows = &o->out_row,
                      .is_prefill = 1,
                      .n_views = 1};
}

/* The view layer `layer` reads. */
static inline int zp_batch_view(const zp_batch *b, int layer) { return b->layer_view ? b->layer_view[layer] : 0; }
/* The step as layer `layer` sees it: block_tables and seq_kv_len of its view. */
static inline zp_batch zp_batch_layer(const zp_batch *b, int layer) {
    zp_batch v = *b;
    const int view = zp_batch_view(b, layer);
    if (view > 0) {
        v.block_tables += (size_t)view * b->n_seqs * b->max_blocks;
        v.seq_kv_len += (size_t)view * b->n_seqs;
    }
    if (b->view_group) v.slot_mapping += (size_t)b->view_group[view] * b->n_tokens;
    return v;
}

/* What one layer's attention adds to plain causal attention (gpt-oss): a sliding window, row i
 * of a sequence seeing only the last `window` physical positions up to its own (0: all of them),
 * and attention sinks, one learned logit per query head (sinks [Hq] f32 weights, NULL: none) that
 * joins each softmax's denominator with no value. */
typedef struct {
    int window;
    const void *sinks;
} zp_attn_layer;

/* Attention geometry shared by the attention and KV ops. */
typedef struct {
    int n_layers, n_heads, n_kv_heads, head_dim; /* L, H_q, H_kv, D */
    int block_size, num_blocks;                  /* paged pool geometry */
    float scale;                                 /* softmax scale, D^-0.5 */
    float qk_norm_eps;                           /* eps of the Qwen3 q/k RMSNorm */
    int window, n_qslots;                        /* query cache [L][n_qslots][window][H_q][D] */
    int kv_head0;                                /* the model's index of KV head 0 (a tensor-parallel
                                                    rank's first; 0 otherwise): seeded draws hash it */
    /* K/V cache element type: 0, the backend's cache type; 1, FP8 E4M3 bytes (kv_dtype fp8): a
     * write stores e4m3(x / scale) (round to nearest even, saturating), a read gives the byte's
     * value x scale, with a scale per (layer, KV head) (host memory, [n_layers][n_kv_heads] each;
     * kv_scales.h says where they come from) */
    int kv_fp8;
    const float *k_scale, *v_scale;
    const float *dev_scales; /* the same scales, [2][n_layers][n_kv_heads] (K then V), in the backend's memory: what
                                CUDA kernels read (NULL with kv_fp8 0) */
    const zp_attn_layer *layer_attn; /* [n_layers] (the model's), or NULL: plain causal attention on every layer */
    /* The cache's rows per block: n_rows layers' K/V ([n_rows][num_blocks][block_size][H_kv][D]),
     * layer l at row layer_row[l]. With KV groups (zp_config_kv_rows) a block belongs to one
     * group and holds its layers only; NULL: one group, n_rows = n_layers, layer l at row l. */
    int n_rows;
    const int *layer_row;     /* [n_layers] or NULL */
} zp_attn_dims;

/* The cache row of layer l (the score cache's too). */
static inline int zp_kv_row(const zp_attn_dims *d, int l) { return d->layer_row ? d->layer_row[l] : l; }

/* Layer l's window and sinks, or NULL when it attends plainly. */
static inline const zp_attn_layer *zp_attn_layer_of(const zp_attn_dims *d, int l) {
    const zp_attn_layer *a = d->layer_attn ? &d->layer_attn[l] : NULL;
    return a && (a->window > 0 || a->sinks) ? a : NULL;
}

/* One request of a device-side compression (backend op `compress`). */
typedef struct {
    const int *src; /* [n / block_size] the request's physical blocks now */
    const int *dst; /* [budget / block_size] target blocks (may share blocks with src) */
    int n;          /* physical tokens, above the budget (a prompt's last block may be partial) */
    int n_hist;     /* leading tokens whose stored history score is valid (0: none) */
    int qid;        /* query-cache slot holding the request's window queries */
    int64_t next_pos; /* the request's next RoPE position (TriAttention's R) */
    int protect;      /* leading tokens kept and never scored by TriAttention: the prompt, up to the budget */
    /* Head-wise budgets (plan.head_adakv): the runs src is read through (run_base 0 or runs NULL:
     * the uniform layout; runs [L][Hkv], a layer's first entry < 0: that layer uniform) and where
     * the compaction's runs go (new_runs [L][Hkv]: head h's kept tokens in each compacted layer) */
    int run_base;
    const int *runs;
    int *new_runs;
} zp_compress_req;

/* One logits row of device sampling (backend op `sample`): zp_sample_token's parameters
 * (no repetition penalty) and the counter of its random number. */
typedef struct {
    float temperature, top_p;
    int top_k;
    uint32_t sample_index, step;
    uint64_t seed, request_id;
} zp_sample_row;

/* The shape of a mixture-of-experts layer (backend op `moe`). */
typedef struct {
    int hidden, inter;   /* H, each expert's width I */
    int n_experts, top_k; /* E, k */
    int norm_topk;        /* renormalise the k weights to sum 1 */
    int topk_softmax;     /* gpt-oss: the softmax of the k largest logits (else the k largest of the softmax) */
    int clamped_swiglu;   /* gpt-oss: (clamp(u, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit) */
    float alpha, limit;
} zp_moe_dims;

/* A mixture-of-experts layer's weights (backend op `moe`); a bias NULL: none. */
typedef struct {
    const void *router, *router_bias;   /* [E,H], [E] */
    const void *gate_up, *gate_up_bias; /* [E][2I,H] (each expert's gate rows, then its up rows), [E][2I] likewise */
    const void *down, *down_bias;       /* [E][H,I], [E][H] */
} zp_moe_weights;

/* The element type of an activation buffer, declared when it is allocated; each op below names
 * the type of every buffer it reads or writes ("f32" or "op"). ZP_ACT_F32: fp32 (the residual
 * stream, q, logits, statistics, the score cache). ZP_ACT_OPERAND: the backend's GEMM operand
 * type, in which the rows between the GEMMs travel (normed rows, qkv, attention output, the MLP's
 * gate/up and activation, the GEMM outputs added to the residual): bf16 on CUDA in bf16 storage,
 * fp32 on the CPU and in CUDA's fp32 parity mode. */
typedef enum { ZP_ACT_F32 = 0, ZP_ACT_OPERAND = 1 } zp_act_type;

typedef struct zp_backend zp_backend;
struct zp_backend {
    const char *name;
    void *ctx;
    int cache_elem_bytes; /* bytes of one K/V or query cache element */
    int kv_groups;        /* 1: its ops honour KV groups (zp_attn_dims.layer_row, zp_batch.view_group) */
    int head_runs;        /* 1: its attention and history honour zp_batch.head_run, and it has the *_runs ops */
    void (*destroy)(zp_backend *be);
    /* makes be's device the calling thread's current one (CUDA: cudaSetDevice); NULL where a
     * backend has none (CPU). A thread that runs ops of a backend it did not create (a
     * tensor-parallel rank, the compression worker) calls it first. */
    zp_status (*bind)(zp_backend *be);

    /* memory: n elements of an activation buffer of the given type */
    zp_status (*alloc)(zp_backend *be, size_t n, zp_act_type type, void **out);
    /* n elements of the cache type (K/V and query caches: fp32 on CPU, bf16 on CUDA; the score
     * cache is a ZP_ACT_F32 `alloc` on both) */
    zp_status (*alloc_cache)(zp_backend *be, size_t n, void **out);
    void (*release)(zp_backend *be, void *buf);
    /* free and total device memory in bytes (NULL on the CPU backend: host memory) */
    zp_status (*mem_info)(zp_backend *be, size_t *free_bytes, size_t *total_bytes);
    /* weights: takes ownership of a malloc'ed fp32 host array of n elements */
    zp_status (*weight_upload)(zp_backend *be, float *host, size_t n, void **out);
    /* copy n elements starting at element off of an activation buffer of type `type` to host fp32 */
    zp_status (*to_host)(zp_backend *be, float *dst, const void *src, zp_act_type type, size_t off, size_t n);
    /* copy n host fp32 elements into an activation buffer of type `type` at element off (rounded
     * to the operand type where it is narrower) */
    zp_status (*from_host)(zp_backend *be, void *dst, zp_act_type type, const float *src, size_t off, size_t n);
    /* rotary inverse frequencies [D/2] (scaling already applied) */
    zp_status (*rope_init)(zp_backend *be, const float *inv_freq, int half_dim, float attention_factor);
    /* the step's batch; valid until the next set_batch */
    zp_status (*set_batch)(zp_backend *be, const zp_batch *b);

    /* out[T,H] (f32) = table[token_ids[t], :] */
    zp_status (*embed)(zp_backend *be, void *out, const void *table, int H);
    /* out[rows,H] (op) = x (f32) / rms(x) * w[H] */
    zp_status (*rmsnorm)(zp_backend *be, void *out, const void *x, const void *w, int rows, int H, float eps);
    /* x[n] (f32) += y[n] (op) */
    zp_status (*add)(zp_backend *be, void *x, const void *y, size_t n);
    /* x[rows,H] (f32) += y (op), then out (op) = x / rms(x) * w[H]: the residual add and the
     * next norm in one pass (out may alias y) */
    zp_status (*add_rmsnorm)(zp_backend *be, void *out, void *x, const void *y, const void *w, int rows, int H, float eps);
    /* out[M,N] (out_type) = x[M,K] (op) . w[N,K]^T (+ bias[N] when not NULL) */
    zp_status (*matmul)(zp_backend *be, void *out, zp_act_type out_type, const void *x, const void *w, const void *bias, int M, int N,
                        int K);
    /* qkv[T,(Hq+2Hkv)D] (op): optional per-head RMSNorm of q and k (q_norm/k_norm [D] or NULL),
     * RoPE at positions[t], q to q_out[T,Hq,D] (f32), k and v to the caches of `layer` at
     * slot_mapping[t]. */
    zp_status (*qkv_rope_store)(zp_backend *be, const zp_attn_dims *d, const void *qkv, void *q_out,
                                const void *q_norm, const void *k_norm, void *k_cache, void *v_cache, int layer);
    /* amax[2][Hkv] (host): the largest |k| (normed by k_norm when not NULL and rotated, as
     * qkv_rope_store stores it) and |v| of each KV head over the batch rows that write a slot
     * (slot_mapping >= 0): kv_scales prompt's calibration (kv_scales.h). A NaN is kept. NULL
     * where a backend has none. */
    zp_status (*kv_amax)(zp_backend *be, const zp_attn_dims *d, const void *qkv, const void *k_norm, float *amax);
    /* out[T,Hq*D] (op): causal attention of each row of q (f32) over its sequence's paged KV
     * (GQA). Row i of a sequence sees physical KV [0, kv_len - q_len + i], or its last `window`
     * positions, with the layer's sinks in the denominator (zp_attn_layer_of; a backend without
     * them refuses such a layer). Prefill: ragged q_len; decode: q_len 1. */
    zp_status (*attn_prefill)(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache,
                              const void *v_cache, int layer);
    zp_status (*attn_decode)(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache,
                             const void *v_cache, int layer);
    /* The live attention history of a policy whose history counts every query (H2O): for each
     * batch row t of sequence s, query head h of KV head g = h / G and physical key j it sees
     * (j < kv_len - q_len + i + 1 for its row i, as attn_prefill), p = softmax_j(q . k_j * scale);
     * score[layer][slot(j)][g] (f32) += the sum of p over the rows and heads of the group / G.
     * A key written in this step starts from 0. stats [T][Hq][2] (f32): each row's softmax
     * maximum and 1 / sum, scratch of the op. */
    zp_status (*attn_history)(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache,
                              void *stats, int layer);
    /* out[T,I] (op) = silu(gu[:, :I]) * gu[:, I:]   with gu [T,2I] (op) */
    zp_status (*silu_mul)(zp_backend *be, void *out, const void *gu, int T, int I);
    /* out[n_out,H] (f32) = x[out_rows[i], :] (f32) */
    zp_status (*gather_rows)(zp_backend *be, void *out, const void *x, int H);
    /* A mixture of experts over T rows (Qwen3-MoE's and gpt-oss's sparse MLP): out[T,H] (op) =
     * the sum, in expert order, of w_e . down_e(act(gate_e x, up_e x)) over the experts the router
     * picks for row x of x[T,H] (op), each projection plus its bias where given. Qwen3-MoE: logits
     * x . router^T, their softmax in fp32, the k largest (ties: the lower expert), renormalised
     * when norm_topk, act silu(g) * u. gpt-oss (topk_softmax, clamped_swiglu): logits plus the
     * router's bias, the k largest, their softmax; act as zp_moe_dims says. NULL where the backend
     * has none. */
    zp_status (*moe)(zp_backend *be, void *out, const void *x, const zp_moe_weights *w, const zp_moe_dims *m, int T);

    /* ---- compression (host outputs: the CPU reference scores on the host) ---- */
    /* qcache[layer][qstore_slots[i]] = q[qstore_rows[i]]  (q [T,Hq,D], f32) */
    zp_status (*query_store)(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer);
    /* out[w][Hq][D] = qcache[layer][qid] */
    zp_status (*query_read)(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out);
    /* out[Hkv][n][D]: keys of physical tokens 0..n-1 of a block table (table[t/bs], t%bs) */
    zp_status (*key_gather)(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n,
                            float *out);
    /* out[Hkv][n]: score cache [L][num_blocks*bs][Hkv] at the same tokens */
    zp_status (*score_read)(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n,
                            float *out);
    /* Compaction of one layer: for each KV head, the tokens t of src (n tokens) with
     * keep[head][t] are written to positions 0.. of dst, in position order, or, when order is
     * not NULL, in the order order[head][0..kept) gives (order [Hkv][n]: R-KV's score order).
     * src and dst may share blocks. When score_cache is not NULL, scores[head][t] of the kept
     * tokens go to the same target positions. shift (position order only): a key moved from
     * index t to i is re-rotated from position t to i (zp_rope_shift_row; StreamingLLM's position
     * shift), with the rope_init frequencies. */
    zp_status (*kv_compact)(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                            const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift);
    /* The three ops above for a request with head runs (head-wise budgets; NULL where a backend has
     * none): head h holds n_h = n + zp_head_delta(runs, h) tokens, read through runs (NULL:
     * uniform) at stride `stride` (out [Hkv][stride][D], [Hkv][stride]; keep, scores and order
     * [Hkv][stride]); compaction writes head h's kept tokens (kept[h] of them) as the run of
     * kept[h] cells at the sum of the kept before it in dst, position order or `order`'s, all
     * heads staged first (src and dst may share blocks). No position shift. */
    zp_status (*key_gather_runs)(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n,
                                 const zp_head_runs *runs, int stride, float *out);
    zp_status (*score_read_runs)(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n,
                                 const zp_head_runs *runs, int stride, float *out);
    zp_status (*kv_compact_runs)(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                                 const int *src, int n, const zp_head_runs *runs, int stride, const int *dst, const uint8_t *keep,
                                 const float *scores, const int *order);

    /* ---- compression ---- */
    /* For layers [layer0, layer1) of n_req requests and every KV head: runs `plan` (scores
     * from the K cache, the query cache and, when score_cache, the stored history), keeps
     * `budget` tokens and compacts K, V (and the new history into score_cache) into each
     * request's dst table. CUDA: on the device, ordered after the model work already issued and
     * asynchronous to the caller; NULL on the CPU backend, where the compressor runs the plan on
     * the host through the ops above (zp_compress_host, compress/compress.h: the reference).
     * compress_wait blocks until all of it has finished. */
    zp_status (*compress)(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                          const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache,
                          void *score_cache);
    zp_status (*compress_wait)(zp_backend *be);

    /* ---- device-side sampling (NULL on the CPU backend, which samples host logits) ---- */
    /* ids[n] (host): a token per row of logits [n][V] (f32), by
     * zp_sample_token's rule with zp_rng_uniform's numbers drawn on the device; -1 for a row
     * the device cannot finish (a candidate set too large to sort), to sample on the host. */
    zp_status (*sample)(zp_backend *be, const void *logits, int n, int V, const zp_sample_row *rows, int *ids);
    /* Device seconds per zp_op_kind since creation (model stream only), measured with events
     * around every op when the backend was created with ZIPAGE_PROFILE=1 set; zeros otherwise.
     * seconds NULL: restart the counts (the engine does after its memory-sizing warm-up). */
    zp_status (*op_seconds)(zp_backend *be, double *seconds /* [ZP_OP_COUNT] */);
    /* Memory bandwidth of a large buffer copy on this device (bytes read + bytes written per
     * second, median of several copies): the roofline's denominator in benchmarks. */
    zp_status (*copy_bandwidth)(zp_backend *be, double *bytes_per_s);
    /* The dense rate of this backend's matmul in the storage type (2 M N K flops per second of a
     * large square product, median of several): the compute roof in benchmarks. */
    zp_status (*matmul_rate)(zp_backend *be, double *flops_per_s);

    /* ---- graphs of decode forwards (NULL on the CPU backend; used when use_graphs) ----
     * graph_begin, after set_batch: when a graph was recorded under `key` (the model's batch
     * shape and buffers; the backend adds its own), launches it and sets *hit; otherwise it
     * may begin recording the ops that follow (*recording set; a shape is recorded the second
     * time it is seen, so its buffers have reached their size). graph_end(ok) ends a
     * recording: instantiates and launches the graph when ok, discards it otherwise. */
    int use_graphs;
    int64_t graph_records, graph_replays; /* counts, written by the backend */
    zp_status (*graph_begin)(zp_backend *be, uint64_t key, int *hit, int *recording);
    zp_status (*graph_end)(zp_backend *be, int ok);
};

/* The CPU reference backend (fp32, BLAS sgemm, OpenMP). n_threads <= 0: OpenMP default. */
zp_status zp_backend_cpu_create(int n_threads, zp_backend **out);
/* The CUDA backend on device `device`: bf16 weights and caches with fp32 activations and
 * accumulation, or fp32 storage and fp32 GEMMs when fp32 (the parity mode that the GPU tests
 * compare token for token against the CPU reference); opt NULL: the defaults. Fails with
 * ZP_ERR_UNSUPPORTED in a build without CUDA or without a usable GPU. */
zp_status zp_backend_cuda_create(int device, int fp32, const zp_backend_options *opt, zp_backend **out);
/* Creates "cpu", "cuda" or "cuda:N"; precision "bf16" (default) or "fp32" (CUDA only); opt
 * NULL: the defaults. */
zp_status zp_backend_create(const char *device, const char *precision, int n_threads, const zp_backend_options *opt, zp_backend **out);

#ifdef __cplusplus
}
#endif

#endif
