/* config.h - model configuration read from a Hugging Face checkpoint folder.
 *
 * Reads config.json (and generation_config.json when present) of the architectures we run:
 * Qwen3ForCausalLM, Qwen2ForCausalLM (q/k/v biases), LlamaForCausalLM, Qwen3MoeForCausalLM
 * (Qwen3's attention, sparse MLP layers: config_moe.c) and GptOssForCausalLM (sliding and full
 * layers, attention sinks, biased experts, MXFP4 experts: config_gptoss.c), with transformers' class defaults for
 * absent keys (Qwen3 head_dim 128, Qwen key-value heads 32, max positions 32768 / 2048). Every key is known: read, accepted only at the value that keeps the math
 * implemented (sliding windows, layer types, biases, softcapping, interleaved or multimodal
 * RoPE, quantization, remote code: refused otherwise), or ignored because it does not change
 * the logits (ids, bookkeeping, training and generation settings); an unknown or duplicated
 * key is refused, naming it and the file. RoPE fields: rope.h. It does not read weights.
 */
#ifndef ZP_CONFIG_H
#define ZP_CONFIG_H

#include "rope.h"
#include "status.h"

#include <stdint.h>

typedef enum { ZP_ARCH_QWEN3, ZP_ARCH_QWEN2, ZP_ARCH_LLAMA, ZP_ARCH_QWEN3_MOE, ZP_ARCH_GPT_OSS, ZP_ARCH_COUNT } zp_arch;

#define ZP_MAX_EOS 8
/* the most layers a mixture-of-experts config may have (mlp_only_layers and layer_types as bit sets) */
#define ZP_MOE_MAX_LAYERS 256

typedef struct {
    zp_arch arch;
    char arch_name[64];     /* as written in "architectures" */
    int hidden;             /* hidden_size */
    int n_layers;           /* num_hidden_layers */
    int n_heads;            /* num_attention_heads (H_q) */
    int n_kv_heads;         /* num_key_value_heads (H_kv) */
    int head_dim;           /* head_dim, or hidden / n_heads when absent */
    int intermediate;       /* intermediate_size */
    int vocab;              /* vocab_size */
    int max_pos;            /* max_position_embeddings */
    float rms_eps;          /* rms_norm_eps */
    zp_rope_config rope;    /* rope_parameters (transformers >= 5) or rope_theta + rope_scaling (rope.h) */
    int tie_embeddings;     /* tie_word_embeddings */
    int qkv_bias;           /* q/k/v projections have biases (Qwen2, or attention_bias) */
    int qk_norm;            /* per-head RMSNorm on q and k (Qwen3) */
    int bos_id;             /* -1 when unknown */
    int eos_ids[ZP_MAX_EOS];
    int n_eos;
    char torch_dtype[16];
    /* mixture of experts (Qwen3MoeForCausalLM; n_experts 0: a dense model) */
    int n_experts;          /* num_experts (or num_local_experts) */
    int n_experts_used;     /* num_experts_per_tok: the top k of the router's softmax */
    int moe_intermediate;   /* moe_intermediate_size: each expert's SwiGLU width */
    int norm_topk;          /* norm_topk_prob: the k weights renormalised to sum 1 */
    int moe_step;           /* decoder_sparse_step: layer l is sparse when (l + 1) % step == 0 ... */
    uint64_t mlp_only[ZP_MOE_MAX_LAYERS / 64]; /* ... and l is not in mlp_only_layers (bit l) */
    /* gpt-oss (GptOssForCausalLM, config_gptoss.c) */
    int gpt_oss_moe;        /* the router has a bias, its k largest logits are softmaxed, experts have biases and
                               the clamped SwiGLU (up + 1) * g * sigmoid(alpha g) */
    float swiglu_alpha, swiglu_limit;
    int o_bias;             /* o_proj has a bias */
    int attn_sinks;         /* self_attn.sinks: a learned logit per query head in each softmax's denominator */
    int sliding_window;     /* W: a query of a sliding layer sees itself and the W - 1 positions before it */
    uint64_t sliding[ZP_MOE_MAX_LAYERS / 64]; /* bit l: layer l is a sliding_attention layer */
    int experts_mxfp4;      /* quantization_config mxfp4: the experts' weights as *_blocks and *_scales */
} zp_model_config;

/* Parse config.json text; `src` names the file in error messages. */
zp_status zp_config_parse(const char *json, const char *src, zp_model_config *c);
/* Parse generation_config.json text: overrides bos/eos when given. */
zp_status zp_config_parse_generation(const char *json, const char *src, zp_model_config *c);
/* Load DIR/config.json and, if present, DIR/generation_config.json. */
zp_status zp_config_load(const char *dir, zp_model_config *c);
int zp_config_is_eos(const zp_model_config *c, int token);
/* 1 when layer l's MLP is a mixture of experts (transformers' Qwen3MoeDecoderLayer rule; every
 * layer of gpt-oss), 0 when dense. */
int zp_config_layer_is_moe(const zp_model_config *c, int l);
/* Layer l's sliding window (0: full attention). */
int zp_config_layer_window(const zp_model_config *c, int l);
/* 1 when some layer slides (its cache keeps a window, never compressed). */
int zp_config_has_sliding(const zp_model_config *c);
/* KV groups: the full-attention layers (group 0) and the sliding ones (group 1) hold blocks of
 * their own, a block holding one group's layers. Returns the rows a block needs (the larger
 * group's layer count: n_layers without sliding layers) and, when row is not NULL, fills
 * row[l] with layer l's index in its group. */
int zp_config_kv_rows(const zp_model_config *c, int *row);
const char *zp_arch_name(zp_arch a);

#endif
