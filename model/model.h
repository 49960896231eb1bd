/* model.h - the Qwen3 / Qwen2 / Llama / Qwen3-MoE / gpt-oss decoder, backend-agnostic.
 *
 * Loads config.json + safetensors (weights converted to fp32 on the host once, fused into
 * [q;k;v] and [gate;up] matrices, then handed to the backend), and runs one forward step over
 * a zp_batch: prefill of many ragged requests or decode of many requests, each reading its own
 * block table. It knows nothing of scheduling, sampling or eviction.
 */
#ifndef ZP_MODEL_H
#define ZP_MODEL_H

#include "backend.h"
#include "comm.h"     /* zp_comm: the sums of a tensor-parallel rank */
#include "config.h"
#include "geometry.h"
#include "tp.h"       /* zp_tp_shard */

typedef struct {
    void *attn_norm;   /* [H] */
    void *wqkv;        /* [(Hq+2Hkv)*D, H] */
    void *bqkv;        /* [(Hq+2Hkv)*D] or NULL */
    void *q_norm;      /* [D] or NULL (Qwen3) */
    void *k_norm;      /* [D] or NULL */
    void *wo;          /* [H, Hq*D] */
    void *mlp_norm;    /* [H] */
    void *w_gate_up;   /* [2I, H]; a mixture-of-experts layer: [E][2I_moe, H] (each expert's gate rows, then up) */
    void *w_down;      /* [H, I]; a mixture-of-experts layer: [E][H, I_moe] */
    void *router;      /* [E, H] a mixture-of-experts layer's router; NULL: a dense MLP */
    /* gpt-oss (NULL elsewhere) */
    void *bo;          /* [H] o_proj's bias */
    void *sinks;       /* [Hq] attention sinks */
    void *router_bias; /* [E] */
    void *b_gate_up;   /* [E][2I_moe] (each expert's gate biases, then up) */
    void *b_down;      /* [E][H] */
} zp_layer_weights;

typedef struct {
    void *k, *v;       /* [L][num_blocks][block_size][H_kv][D] each */
    void *q;           /* query cache [L][n_qslots][window][H_q][D], or NULL */
    void *score;       /* score cache [L][num_blocks*block_size][H_kv] (fp32), or NULL */
    int history_live;  /* 1: every forward adds its queries' attention to score (attn_history) */
    float *scales;     /* kv_fp8: [2][L][H_kv] host, the K then the V scale of each (layer, KV head) (dims points here) */
    void *scales_dev;  /* kv_fp8: the same in the backend's memory (dims.dev_scales: what CUDA kernels read) */
    int calibrate;     /* kv_scales prompt: the scales are set by the next forward that writes the cache (kv_scales.h) */
    zp_attn_dims dims;
} zp_kv_storage;

typedef struct zp_model {
    zp_model_config cfg;
    zp_backend *be;
    void *embed;        /* [V, H] */
    void *final_norm;   /* [H] */
    void *lm_head;      /* [V, H]; == embed when tied */
    zp_layer_weights *layers;
    zp_attn_layer *attn_layers; /* [L] each layer's window and sinks (zp_attn_dims.layer_attn), or NULL: none has any */
    int *kv_row;                /* [L] each layer's cache row (zp_config_kv_rows), or NULL: one KV group */
    int n_kv_rows;              /* a cache block's rows: n_layers, or the larger KV group's layers */
    size_t n_params;
    /* tensor parallelism: this rank's share (size 1: the whole model) and its group's
     * communicator (may be NULL at size 1); cfg is the rank's shape (its heads, intermediate rows) */
    zp_tp_shard tp;
    zp_comm *comm;
    zp_model_config whole_cfg; /* the whole model's shape (cfg at size 1) */
    float *ckpt_kv_scales;     /* [2][L] the checkpoint's per-tensor K/V scales (kv_scales.h), or NULL: none */
    /* activations, grown on demand to act_rows / out_rows rows; each of one element type
     * (backend.h zp_act_type): f32 the residual x, q, xo, logits and hstats; the backend's
     * operand type the rows between the GEMMs (hn, qkv, att, gu, act, h) */
    int act_rows, out_rows_cap;
    void *x, *hn, *h, *qkv, *q, *att, *gu, *act, *xo, *xn, *logits;
    void *hstats;       /* [rows][Hq][2] attn_history's softmax statistics */
    /* when set: called after each layer's queries are normed and rotated (m->q, [T][Hq][D] f32 on
     * the backend), before attention; TriAttention's calibration reads them (trig_calibrate.c) */
    zp_status (*q_hook)(void *ctx, struct zp_model *m, int layer, int T);
    void *q_hook_ctx;
} zp_model;

/* Loads DIR (config.json, generation_config.json, safetensors) onto backend be. */
zp_status zp_model_load(const char *dir, zp_backend *be, zp_model **out);
/* A model of a preset name or config (file or folder) with mkmodel's seeded random weights
 * built in memory, tensor by tensor (no checkpoint file; for benchmarks of large shapes). */
zp_status zp_model_load_random(const char *preset_or_config, uint64_t seed, zp_backend *be, zp_model **out);
/* One rank of a tensor-parallel group (tp.h, comm.h): the slices of tp of source's weights (a
 * folder, or with random=1 a preset or config with mkmodel's weights of seed), summing after
 * the O and down projections through comm (which the caller owns; NULL at size 1 sums nothing).
 * tp NULL: the whole model. */
zp_status zp_model_load_rank(const char *source, int random, uint64_t seed, zp_backend *be, const zp_tp_shard *tp, zp_comm *comm,
                             zp_model **out);
void zp_model_free(zp_model *m);

zp_status zp_model_kv_alloc(zp_model *m, int num_blocks, int block_size, zp_kv_storage *kv);
/* The same with a K/V element type: kv_fp8 1 stores E4M3 bytes with the checkpoint's scales
 * (ckpt_kv_scales) or 1.0 (vLLM's --kv-cache-dtype fp8 without checkpoint scales); calibrate 1
 * (kv_scales prompt, kv_fp8 only) sets them per (layer, KV head) at the first forward that writes
 * the cache (kv_scales.h). */
zp_status zp_model_kv_alloc_typed(zp_model *m, int num_blocks, int block_size, int kv_fp8, int calibrate, zp_kv_storage *kv);
/* The same in the model's KV groups (the engine's pool): with sliding layers a block holds one
 * group's layers (zp_attn_dims.layer_row, zp_config_kv_rows), and every batch through it names
 * each view's group (zp_batch.view_group); the backend must have kv_groups. Without sliding
 * layers, as zp_model_kv_alloc_typed. */
zp_status zp_model_kv_alloc_grouped(zp_model *m, int num_blocks, int block_size, int kv_fp8, int calibrate, zp_kv_storage *kv);
/* kv_dtype's value: "auto" (or NULL) -> 0, "fp8" -> 1; anything else is refused, naming it. */
zp_status zp_kv_dtype_parse(const char *kv_dtype, int *kv_fp8);
/* Adds the compression state: a query cache of n_qslots x window rows, and a score cache. */
zp_status zp_model_kv_alloc_compression(zp_model *m, zp_kv_storage *kv, const zp_kv_geometry *geo, int n_qslots, int with_scores);
void zp_model_kv_free(zp_model *m, zp_kv_storage *kv);

/* One step: writes K/V of every batch row, returns logits [b->n_out][V] into host memory. */
zp_status zp_model_forward(zp_model *m, const zp_batch *b, zp_kv_storage *kv, float *logits);

/* Bytes of one KV block across its rows (K and V, fp32 on CPU; elem_size 1 for FP8): every layer,
 * or with KV groups the larger group's layers (zp_config_kv_rows). */
size_t zp_model_kv_block_bytes(const zp_model_config *c, int block_size, int elem_size);

#endif
