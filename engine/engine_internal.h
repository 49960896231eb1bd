/* engine_internal.h - the engine's state, shared by engine.c, engine_check.c and white-box
 * tests. Not part of the public API (engine.h). */
#ifndef ZP_ENGINE_INTERNAL_H
#define ZP_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "compress.h"  /* the compressor, policies */
#include "engine.h"
#include "geometry.h"
#include "layer_budget.h"
#include "model.h"     /* the model, the backend's op table */
#include "scheduler.h" /* requests, the pool, the scheduler */

/* A tensor-parallel rank beyond rank 0 (whose parts are the engine's be, model, kv and comp). */
typedef struct {
    zp_backend *be;
    zp_model *model;
    zp_kv_storage kv;
    zp_compressor comp;
} zp_engine_peer;

/* The host arrays of one step (build_batch fills them and the zp_batch points into them; the
 * sampler reads and writes the rest), grown by reserve_step to the largest step so far. */
typedef struct {
    int *token_ids, *positions, rows_cap;           /* [rows] */
    int *slots, slots_cap;                          /* [KV groups][rows] */
    int *q_start, *q_len, *out_rows, seq_cap;       /* [seqs] */
    int *kv_len, kvl_cap, *block_tables, bt_cap;    /* [views][seqs], [views][seqs][max_blocks] */
    int *qstore_rows, *qstore_slots, qstore_cap;    /* rows whose queries go to the query cache */
    int *head_base, hb_cap, *head_run, hr_cap;      /* head-wise budgets: [seqs], [seqs][L][Hkv] */
    float *logits;                                  /* [logits_rows][vocab] host logits */
    int logits_rows;
    zp_sample_row *srows;                           /* device sampling: one row per scheduled request ... */
    int *sids;                                      /* ... and its token */
    float *scratch;                                 /* the host sampler's 3 x vocab floats */
} engine_step_arrays;

/* What the settings decide, resolved once before anything is loaded (engine_plan.c) and read,
 * never changed, by the engine, its scheduler and its compressor. */
typedef struct {
    const zp_policy_ops *ops;          /* the policy (full when unset) */
    zp_kv_geometry geo;                /* block size, N_max, budget, cap, window (the authors' when unset) */
    zp_sched_kind sched;               /* full, strict or hybrid */
    int stores_history;                /* the policy keeps a stored (global) history score: a score cache */
    int history_live;                  /* it keeps exact H2O's live history */
    int shift_positions;               /* StreamingLLM's position shift */
    int head_scores;                   /* its plan scores each KV head (attention, keys or a history) */
    int across_layers;                 /* its plan keeps one set across layers (TriAttention's modes) */
    int kv_fp8, kv_calibrate;          /* K/V in E4M3; its scales calibrated on the first prefill */
    zp_layer_budget_kind layer_budget; /* uniform or pyramid */
    int head_adakv;                    /* AdaKV's head-wise budgets (head_budget adakv), floor share head_floor */
    double head_floor;
    int budget_adaptive;               /* budget adaptive: each compression keeps the blocks budget_tau of the
                                          attention mass needs, budget_floor to N_max of them */
    double budget_tau;
    int budget_floor;
    int attention_score;               /* its plan scores tokens by attention (its window's or a live history): a mass */
    int prefix_cache;                  /* the prefix cache serves (off for a live history and compressed prompts) */
} engine_plan;
zp_status engine_plan_resolve(const zp_engine_config *cfg, engine_plan *p);

struct zp_engine {
    zp_engine_config cfg;     /* as given; what it decides is the plan's */
    engine_plan plan;
    zp_model_config model_cfg; /* the whole model's shape (with tensor parallelism rank 0's model holds its share) */
    int tp;                   /* tensor-parallel ranks (engine_tp.c), 1 without */
    zp_engine_peer *peers;    /* [tp - 1] ranks 1.. */
    zp_comm **comms;          /* [n_comms] the group's communicators, rank r's at r (NULL at tp 1) */
    int n_comms;
    atomic_int tp_stopped;    /* a rank failed: the group was aborted (comm.h), no more steps */
    atomic_int tp_failed_rank; /* the first rank that failed */
    struct engine_rank_pool *rank_pool; /* the ranks' persistent threads (engine_tp.c), NULL at tp 1 */
    zp_backend *be;
    zp_model *model;
    zp_kv_storage kv;
    zp_kv_pool pool;
    zp_scheduler sched;
    zp_seq_list all;          /* every live request (owned) */
    zp_seq_list finished;     /* finished, not yet polled */
    zp_sched_batch batch;
    int64_t next_order;
    engine_step_arrays step;  /* the step's host arrays */
    zp_engine_stats stats;
    zp_batch last_batch;      /* the batch of the last forward (tests) */
    int last_decode_rows;     /* the last step's decode rows (0: it ran no decode forward) ... */
    int64_t last_decode_kv;   /* ... and the K/V tokens they attended (zp_engine_last_step) */
    zp_logits_hook logits_hook;
    void *logits_hook_ctx;
    zp_token_hook token_hook;
    void *token_hook_ctx;
    /* compression */
    int compressing_enabled;
    int prompt_compress;     /* a prompt-only policy (SnapKV): long prompts compressed once after their prefill */
    zp_compressor comp;
    zp_layer_plan layers;     /* per-layer budgets and block-table views (n_views 0 without compression: one view) */
    /* The step's views: the layer plan's (one without), then with a ring (sliding layers' own
     * blocks, scheduler.h) one more that every sliding layer reads, in KV group 1 */
    int n_views, ring_view;   /* ring_view: its index, 0 without a ring */
    int *layer_view;          /* [L] the view each layer reads, NULL with one view */
    int *view_group;          /* [n_views] each view's KV group, NULL without a ring */
    zp_seq **ctask;           /* requests of the compression in flight (async) or of this step */
    int n_ctask;
    pthread_t worker;
    atomic_int worker_done;
    int worker_running;
    zp_status worker_status;
    char worker_error[512];
    int abandoned;            /* zp_engine_abandon: unfinished requests are dropped, no more steps */
};

typedef struct engine_rank_pool engine_rank_pool;
/* One rank's parts (engine_tp.c): rank 0 the engine's own, r > 0 peers[r - 1]. */
typedef struct {
    zp_backend *be;
    zp_model *model;
    zp_kv_storage *kv;
    zp_compressor *comp;
} engine_rank;
engine_rank engine_rank_of(zp_engine *e, int r);
/* Runs fn for every rank at once (rank 0 on the calling thread, the others each on a thread of
 * its own, its backend bound to it), returning the first rank's error; at tp 1 just fn(rank 0).
 * A rank that fails aborts the group's communicators at once (the others' sums fail rather than
 * wait for it) and stops the group: later calls fail. */
typedef zp_status (*engine_rank_fn)(zp_engine *e, int rank, engine_rank *k, void *arg);
zp_status engine_ranks_run(zp_engine *e, engine_rank_fn fn, void *arg);
/* The group of e->cfg.tp ranks: backends, communicators and model shares (rank 0 last, so the
 * engine thread's device is rank 0's), and e->model_cfg. */
zp_status engine_tp_open(zp_engine *e);
/* Frees the peers (their compressors, KV storage, models, backends); then, after rank 0's
 * model, engine_tp_free_comms the communicators. */
void engine_tp_close(zp_engine *e);
void engine_tp_free_comms(zp_engine *e);
/* zp_engine_reinit: `to` takes `from`'s group (backends, models, peers, communicators); from's
 * KV storage and peers' compressors go. */
void engine_tp_move(zp_engine *to, zp_engine *from);
/* Every rank: the step's forward (only rank 0 computes logits), the compaction of seqs, the KV
 * pool, the compression state (peers' compressors as rank 0's: compressor_init first). */
zp_status engine_tp_forward(zp_engine *e, const zp_batch *b, float *logits);
zp_status engine_tp_compress(zp_engine *e, zp_seq *const *seqs, int n);
zp_status engine_tp_kv_alloc(zp_engine *e, int num_blocks, int block_size);
void engine_tp_kv_free(zp_engine *e);
zp_status engine_tp_compression(zp_engine *e, int n_qslots, int with_scores, int history_live);
/* The group's compression counts: rank 0's, with the tokens evicted of every rank's heads. */
void engine_tp_compress_stats(const zp_engine *e, zp_compress_stats *out);
void engine_tp_reset_compress_stats(zp_engine *e);

/* One prefill step of T rows (sequences of up to 1,024 tokens) with n_out logits rows on a
 * temporary pool: grows activations and workspaces to their peak (engine_memory.c). */
zp_status engine_warm_up(zp_model *m, int T, int n_out, int bs);
/* KV blocks that fit a device backend's free memory (engine_memory.c). */
zp_status engine_device_num_blocks(zp_engine *e, int *num_blocks);
/* Query slots of an evicting policy for a pool of nb blocks (0 without one), the bytes of the
 * KV state (blocks, score cache, query slots) they take, and the most blocks whose state fits
 * `bytes` (engine_memory.c). */
int engine_query_slots(const zp_engine *e, int nb);
double engine_kv_state_bytes(const zp_engine *e, int nb);
zp_status engine_bytes_num_blocks(const zp_engine *e, double bytes, int *num_blocks);
/* Bytes of one K/V cache element: 1 with kv_dtype fp8, else the backend's cache type. */
int engine_kv_elem_bytes(const zp_engine *e);

/* Checks block tables, ref counts, free list, lengths, cap and query slots (tests). */
zp_status zp_engine_check_invariants(const zp_engine *e);
/* The GPU of device "cuda" / "cuda:N" (base N), -1 for "cpu"; any other name is refused. */
zp_status engine_device_base(const char *device, int *base);

#endif
