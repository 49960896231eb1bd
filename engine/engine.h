/* engine.h - the public engine API: init, add requests, step, poll finished outputs, stats.
 *
 * One engine = one model on one backend (or, with tp > 1, a tensor-parallel group of model
 * shares on as many backends, each with its share of the pool's K/V), a paged KV pool, a
 * scheduler and the sampler.
 * Each step runs either a prefill batch or a decode batch and samples one token per
 * scheduled request. Requests are token ids; text and chat templates live outside.
 * The engine is opaque: this header shows none of its parts (the backend's op table, the
 * model, the scheduler, the compressor; engine_internal.h, for the engine's own files and its
 * white-box tests).
 */
#ifndef ZP_ENGINE_H
#define ZP_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "backend_options.h" /* zp_backend_options, ZP_OP_COUNT */
#include "config.h"          /* zp_model_config */
#include "sampler.h"         /* zp_sampling_params, zp_finish_reason */
#include "settings.h"        /* ZP_ENGINE_SETTINGS: the config's schema */
#include "status.h"

typedef struct {
    const char *model_dir;     /* checkpoint folder; with random_weights a preset name or config */
    int random_weights;        /* 1: mkmodel's seeded weights built in memory (benchmarks) */
    uint64_t weight_seed;
    int n_threads;             /* <= 0: OpenMP default */
    /* the schema's settings (settings.h ZP_ENGINE_SETTINGS: device, precision, block_size,
     * gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, enable_prefix_cache,
     * scheduler, async_compress, policy, nmax, window (0: the policy's), max_concurrency (0:
     * min(max_num_seqs, num_blocks / (nmax + 1))), kv_pool_tokens (0: CPU 32768 tokens, at most
     * 2 GiB; CUDA from free memory)), each with its default and range there */
    ZP_ENGINE_SETTINGS(ZP_SETTING_FIELD)
    int num_blocks;            /* KV pool blocks; 0: from kv_pool_tokens */
    double kv_pool_bytes;      /* or the KV state's memory in bytes: K/V blocks plus, with an evicting
                                  policy, its score cache and query slots, so every policy gets the
                                  same memory (excludes kv_pool_tokens); with tensor parallelism the group's,
                                  split evenly over its ranks; 0: unused */
    int host_only;             /* sample and score compression on the host even on CUDA (tests, debugging) */
    int tp_local;              /* tensor parallelism (tp > 1) with every rank on the one device named and the
                                  local communicator (tests of the group's code path on one GPU; the CPU always) */
    int cuda_graphs;           /* replay decode forwards as CUDA graphs, one per batch shape: -1 (default) where the
                                  backend has them, 0 off, 1 on (an error on a backend without them) */
    const char *policy_params; /* JSON object of policy parameters, NULL for defaults */
    int max_compress_blocks;   /* async: requests per compression task = this / (nmax + 1) (default 600) */
    zp_backend_options backend; /* the backend's tuning options (default: zp_engine_set_default_backend_options) */
} zp_engine_config;

/* The backend options every later zp_engine_config_default() starts from (initially
 * zp_backend_options_default()): the command line sets them once, from its flags and the
 * environment, so that every engine it creates (runs, fidelity, benchmarks) has them. */
void zp_engine_set_default_backend_options(const zp_backend_options *o);

typedef struct {
    int64_t request_id;
    int sample_index;
    int *tokens;               /* generated tokens only */
    int n_tokens;
    int n_prompt;
    zp_finish_reason finish;
    int n_preemptions;
    int n_compressions;
} zp_output;

typedef struct {
    int64_t prefill_tokens;    /* rows computed in prefill steps (prefix hits excluded) */
    int64_t prefix_hit_tokens; /* prompt tokens served from the prefix cache */
    int64_t decode_tokens;     /* rows computed in decode steps */
    int64_t generated_tokens;  /* tokens sampled */
    int64_t prefill_steps, decode_steps;
    double prefill_seconds, decode_seconds, sample_seconds;
    int peak_blocks, num_blocks, block_size;
    double kv_state_bytes;     /* memory of the K/V blocks, score cache and query slots allocated */
    int64_t preemptions;
    int peak_running;
    int64_t running_sum;       /* running requests summed over steps (mean = / steps) */
    int64_t suspensions;       /* request-steps skipped for lack of a block or a query slot */
    /* compression */
    int64_t compressions, tokens_evicted;
    double compress_seconds;   /* wall time of the compressions (scoring, selection, compaction) */
    int peak_request_tokens;   /* most physical tokens (K/V slots) one request held */
    double mean_retained;      /* tokens kept per request per compression (mean) */
    int64_t compress_wait_steps; /* request-steps spent waiting for (async) compression */
    double op_seconds[ZP_OP_COUNT]; /* device seconds per op kind (CUDA with ZIPAGE_PROFILE=1; else 0) */
    double decode_op_seconds[ZP_OP_COUNT]; /* the same, of decode steps only */
    int64_t graph_records, graph_replays; /* CUDA graphs of decode steps recorded / replayed */
    int64_t decode_kv_tokens;  /* K/V tokens attended, summed over the sequences of every decode step */
    /* steps that began with requests waiting for admission (the engine at its capacity, before
     * the drain of the last requests): their wall time and the tokens they sampled */
    double saturated_seconds;
    int64_t saturated_tokens;
    int n_qslots;
    int prefix_cache;          /* 1: the prefix cache is on (off for a policy with a live history, exact H2O) */
} zp_engine_stats;

typedef struct zp_engine zp_engine;

zp_engine_config zp_engine_config_default(void);
/* Bytes of one KV block on this engine's backend (K and V, all layers). */
size_t zp_engine_block_bytes(const zp_engine *e);
zp_status zp_engine_init(const zp_engine_config *cfg, zp_engine **out);
/* What zp_engine_init refuses before it loads anything: the policy, block size, N_max, window
 * and layer budget, the device's name. Whether the device exists, the pool fits and
 * the model splits over tp ranks is known only when they are opened. */
zp_status zp_engine_config_check(const zp_engine_config *cfg);
/* Replaces *e (no unfinished requests, unless abandoned) by an engine of cfg that keeps its
 * backend and weights: cfg must name the same model, weights, device, precision and threads;
 * the KV pool, scheduler, compression and statistics start afresh (a sweep over pool sizes or
 * policies loads the weights once). On an error about cfg *e is left as it was; on a later
 * one (e.g. no memory for the new pool) *e is freed and set to NULL. */
zp_status zp_engine_reinit(zp_engine **e, const zp_engine_config *cfg);
/* Stops e for good: waits for a compression in flight and discards it, and marks the engine
 * so that zp_engine_reinit may drop its unfinished requests (a run cut at a time limit); later
 * steps fail. Finished outputs can still be polled. */
void zp_engine_abandon(zp_engine *e);
void zp_engine_free(zp_engine *e);
const zp_model_config *zp_engine_model_config(const zp_engine *e);
/* What benchmarks ask of the device under an engine, without its backend: the bytes of a
 * cached element (4 fp32, 2 bf16), whether decode steps replay as CUDA graphs, the device
 * memory in use and in all (ZP_ERR_UNSUPPORTED where the backend cannot tell: CPU), and the
 * bandwidth of a large copy (bytes read + written per second). */
int zp_engine_cache_elem_bytes(const zp_engine *e);
/* Bytes of one K/V cache element: 1 with kv_dtype fp8, else the cache element's. */
int zp_engine_kv_elem_bytes(const zp_engine *e);
int zp_engine_uses_graphs(const zp_engine *e);
zp_status zp_engine_device_memory(zp_engine *e, size_t *used, size_t *total);
zp_status zp_engine_copy_bandwidth(zp_engine *e, double *bytes_per_s);
/* The dense rate of the backend's matmul op in the storage type (flops per second: a large
 * square product timed, median of several): the compute roof in benchmarks. */
zp_status zp_engine_matmul_rate(zp_engine *e, double *flops_per_s);
/* The shape of the last zp_engine_step: its decode rows and the K/V tokens they attended (both
 * 0 when it ran no decode forward: a prefill, compression only, or idle). */
void zp_engine_last_step(const zp_engine *e, int *decode_rows, int64_t *kv_tokens);
/* Its model's weight bytes as stored (with tensor parallelism rank 0's share: what one GPU holds and reads). */
size_t zp_engine_weight_bytes(const zp_engine *e);
/* The weight bytes one forward step reads beyond its tokens' embedding rows: every weight,
 * except an untied embedding table (a step gathers only its n_tokens rows of it, hidden values
 * each, which the caller adds; a tied table is read whole by the output head). */
size_t zp_engine_step_weight_bytes(const zp_engine *e);

/* The logits of one prompt's prefill through cfg's model alone (no pool, scheduler or
 * sampling; a private KV store of exactly its length, block 16): the last position's, or every
 * position's with all_positions. *logits [rows][vocab] is malloc'ed; the caller frees it. */
zp_status zp_prompt_logits(const zp_engine_config *cfg, const int *prompt, int n_prompt, int all_positions, float **logits, int *rows,
                           int *vocab);

/* Queues one sample of a prompt. (request_id, sample_index, seed) key its random numbers. */
zp_status zp_engine_add_request(zp_engine *e, const int *prompt, int n_prompt, const zp_sampling_params *sp,
                                int64_t request_id, int sample_index, uint64_t seed);
/* Called with the logits [vocab] each request's next token is drawn from (before sampling;
 * the fidelity probe compares them across engines). NULL removes the hook. */
typedef void (*zp_logits_hook)(void *ctx, int64_t request_id, int sample_index, int step, const float *logits, int vocab);
void zp_engine_set_logits_hook(zp_engine *e, zp_logits_hook fn, void *ctx);
/* Called on the engine thread with every token as it is sampled (streaming), in the step that
 * samples it; finish is the request's reason after this token (ZP_FINISH_NONE while it runs). It
 * must not call back into the engine: a caller that wants to end a request (a stop string seen
 * in the text) calls zp_engine_finish_request after the step. NULL removes the hook. Unlike
 * the logits hook, it leaves sampling on the device. */
typedef void (*zp_token_hook)(void *ctx, int64_t request_id, int sample_index, int token, zp_finish_reason finish,
                              const zp_token_logprobs *logprobs); /* logprobs: NULL unless the request's want_logprobs */
void zp_engine_set_token_hook(zp_engine *e, zp_token_hook fn, void *ctx);
/* Ends one unfinished request between steps, wherever it stands (waiting, running, a compression
 * planned or in flight): a planned compression is cancelled, one in flight is waited for, then its
 * blocks and query slot go back to the pool. Its output (the tokens sampled so far, finish `why`)
 * is polled as any other. why: ZP_FINISH_ABORT (the client left) or ZP_FINISH_STOP (the caller
 * matched a stop, e.g. a stop string across token boundaries). ZP_ERR_INVALID for another reason
 * or when no unfinished request has this (request_id, sample_index). */
zp_status zp_engine_finish_request(zp_engine *e, int64_t request_id, int sample_index, zp_finish_reason why);
/* Mean over running requests of the tokens attention reads / logical tokens (1.0 without eviction):
 * physical tokens, less each layer's dead blocks (per-layer budgets), averaged over the layers. */
double zp_engine_kv_share(const zp_engine *e);
/* Runs one prefill or decode step. */
zp_status zp_engine_step(zp_engine *e);
int zp_engine_has_unfinished(const zp_engine *e);
/* Moves up to max finished outputs into out (caller frees each with zp_output_free). */
int zp_engine_poll(zp_engine *e, zp_output *out, int max);
void zp_output_free(zp_output *o);
void zp_engine_get_stats(const zp_engine *e, zp_engine_stats *st);
/* Zeroes the counters and timings (pool size and KV memory stay), as after a benchmark's
 * untimed warm-up run; ZP_ERR_INVALID while requests are unfinished. */
zp_status zp_engine_reset_stats(zp_engine *e);
int zp_engine_num_running(const zp_engine *e);
/* Requests waiting for admission (preempted ones included); KV blocks held now (of stats' num_blocks). */
int zp_engine_num_waiting(const zp_engine *e);
int zp_engine_blocks_used(const zp_engine *e);
const char *zp_finish_name(zp_finish_reason r);

#endif
