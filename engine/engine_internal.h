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

struct zp_engine {
    zp_engine_config cfg;
    zp_kv_geometry geo;       /* resolved from cfg once: block size, N_max, budget, window */
    zp_backend *be;
    zp_model *model;
    zp_kv_storage kv;
    zp_kv_pool pool;
    zp_scheduler sched;
    zp_seq_list all;          /* every live request (owned) */
    zp_seq_list finished;     /* finished, not yet polled */
    zp_sched_batch batch;
    int64_t next_order;
    /* per-step host arrays, grown on demand */
    int *token_ids, *positions, *slots, *out_rows, rows_cap;
    int *q_start, *q_len, *kv_len, *block_tables, seq_cap, kvl_cap, bt_cap; /* kv_len, block_tables: every layer view */
    float *logits, *scratch;
    int logits_rows;
    zp_sample_row *srows;     /* device sampling: one row per scheduled request */
    int *sids;                /* its token ids */
    int *qstore_rows, *qstore_slots, qstore_cap;
    zp_engine_stats stats;
    zp_batch last_batch;      /* the batch of the last forward (tests) */
    zp_logits_hook logits_hook;
    void *logits_hook_ctx;
    /* compression */
    int compressing_enabled;
    int prompt_compress;     /* a prompt-only policy (SnapKV): long prompts compressed once after their prefill */
    zp_compressor comp;
    zp_layer_plan layers;     /* per-layer budgets and block-table views (n_views 0 without compression: one view) */
    zp_seq **ctask;           /* requests of the compression in flight (async) or of this step */
    int n_ctask;
    pthread_t worker;
    atomic_int worker_done;
    int worker_running;
    zp_status worker_status;
    char worker_error[512];
    int abandoned;            /* zp_engine_abandon: unfinished requests are dropped, no more steps */
};

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

/* Checks block tables, ref counts, free list, lengths, cap and query slots (tests). */
zp_status zp_engine_check_invariants(const zp_engine *e);

#endif
