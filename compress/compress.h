/* compress.h - runs an eviction policy over requests that outgrew their block cap (or, for a
 * prompt-only policy, their budget at the end of the prefill).
 *
 * compressor_run checks each request (a query slot, more tokens than the budget, a planned
 * target table), builds the backend `compress` requests and calls the op in layer groups and
 * chunks that fit its work area. The op scores every (request, layer, KV head) with the
 * policy's plan and compacts K, V (and the score cache) into the target blocks, in position
 * order or, for a plan with order_score, in R-KV's score order: on the CPU backend on the
 * host (zp_compress_host, the reference), on CUDA on the device. The scheduler's bookkeeping
 * (release, new table) happens after, in sched_compress_done, on the engine thread.
 */
#ifndef ZP_COMPRESS_H
#define ZP_COMPRESS_H

#include <stdint.h>

#include "geometry.h"
#include "layer_budget.h"
#include "model.h"
#include "policy.h"

/* Device path: requests of one backend `compress` call are chunked so their score rows stay
 * under ZP_COMPRESS_DEVICE_ROWS (25 bytes each: five float rows, the order, the keep flags); the
 * memory sizing reserves the work area. */
#define ZP_COMPRESS_DEVICE_ROWS (8u << 20)
#define ZP_COMPRESS_DEVICE_BYTES ((size_t)ZP_COMPRESS_DEVICE_ROWS * 25u * 3u / 2u + (64u << 20))

typedef struct {
    int64_t compressions;     /* request compressions */
    int64_t tokens_evicted;   /* tokens dropped, summed over layers and KV heads */
    double score_seconds;     /* wall time of the compress calls: scoring, selection, compaction */
    double retained_sum;      /* tokens kept per request per compression (its mean over layers), summed */
} zp_compress_stats;

/* What the compressor reads of one request to compress (the engine copies it from its own record). */
typedef struct {
    int64_t request_id; /* for messages */
    const int *blocks;  /* its block table, n_blocks entries */
    int n_blocks;
    const int *target; /* the planned target table: the budget's blocks */
    int n_kv;          /* live tokens (every layer's view before dead blocks are left out) */
    int qid;           /* its query slot */
    int compressed;    /* compressed before: its layers' views leave their dead blocks out */
    int64_t next_pos;  /* the position of its next token */
    int n_prompt;      /* its prompt's tokens */
    /* head-wise budgets (the compressor's head_adakv): the runs its blocks hold now (run_base 0:
     * uniform; runs [L][Hkv]) and where the new ones go (new_runs [L][Hkv]) */
    int run_base;
    const int *runs;
    int *new_runs;
    /* adaptive budget (the compressor's adaptive): the blocks its last compression kept (0: the
     * budget's), and where the blocks this one keeps go */
    int kept_blocks;
    int *new_kept_blocks;
} zp_compress_item;

typedef struct {
    zp_policy policy;
    zp_kv_geometry geo; /* block size, budget (N_max blocks) and window of the engine */
    const zp_layer_plan *layers; /* each layer's budget and block-table view (the engine's; NULL: uniform) */
    int device;         /* 0: zp_compress_host even where the backend's `compress` runs on the device */
    int history_live;   /* the engine plan's history_live: the stored history covers every token */
    float *trig_stats,
        *trig_freqs; /* TriAttention's statistics [L][Hq][3][D/2], RoPE frequencies [D/2] (compressor_load_trig) */
    int trig_across; /* TriAttention in a mode across layers: every layer in one call (compressor_load_trig) */
    int head_adakv;     /* AdaKV's head-wise budgets (the engine's head_budget adakv), floor share head_floor */
    double head_floor;
    int adaptive;       /* the engine's budget adaptive: each request keeps the fewest blocks, from floor to
                           N_max, whose candidates hold tau of its attention mass (zp_compress_measure) */
    double tau;
    int floor;
    zp_compress_stats stats;
} zp_compressor;

/* A compressor of the policy ops (policy_find) with its JSON parameters, for geometry geo;
 * history_live as the engine's plan settled it (engine_plan.c: the policy's live history). */
zp_status compressor_init(zp_compressor *c, const zp_policy_ops *ops, const char *params_json,
                          const zp_kv_geometry *geo, int history_live);
void compressor_free(zp_compressor *c);
/* Where the policy's plan scores with TriAttention (ZP_KEYS_TRIG): loads its statistics file
 * (zp_trig_stats_load, checked against mc) and the model's RoPE frequencies; a no-op otherwise. */
zp_status compressor_load_trig(zp_compressor *c, const zp_model_config *mc);
/* Compacts every request in items (each with a planned target). With
 * per-layer budgets (c->layers) each run of layers of one budget is its own group: layer l
 * reads the request's blocks from its view's skip on (once the request was compressed) and
 * writes its budget into the last budget / bs blocks of the target. */
zp_status compressor_run(zp_compressor *c, zp_model *m, zp_kv_storage *kv, const zp_compress_item *items, int n);
/* The adaptive budget's measuring pass over request r (every full-attention layer, before any
 * compaction, through the backend's key_gather, query_read and score_read): the plan's score
 * stages at `budget` give each KV head's attention mass S (its new history, before pooling) and
 * final score C over its candidates, the tokens before the budget's recent ones; *count = the
 * fewest candidates at which the heads' mean top-k mass share reaches tau (scorers.h
 * scorer_mass_count). Plans that score across layers or share a budget across heads are refused. */
zp_status zp_compress_measure(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, const zp_compress_req *r,
                              const void *k_cache, const void *q_cache, const void *score_cache, double tau, int *count);
/* The `compress` op (backend.h) on the host for any backend, through its key_gather,
 * query_read, score_read and kv_compact: the CPU backend's `compress`, and the reference the
 * CUDA device path is tested against. Synchronous. */
zp_status zp_compress_host(zp_backend *be, const zp_attn_dims *d, const zp_score_plan *plan, int budget, int layer0, int layer1,
                           const zp_compress_req *reqs, int n_req, void *k_cache, void *v_cache, const void *q_cache, void *score_cache);

#endif
