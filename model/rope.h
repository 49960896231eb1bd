/* rope.h - rotary position embedding as Hugging Face transformers computes it: the RoPE
 * fields of config.json in both styles, and the inverse frequencies and attention factor of
 * every rope type transformers ships for Llama, Qwen2 and Qwen3.
 *
 * Config styles: transformers >= 5 writes one "rope_parameters" object ({"rope_type",
 * "rope_theta", "factor", ...}); <= 4 wrote a top-level "rope_theta" and a "rope_scaling"
 * object ("rope_type" or legacy "type"). As transformers 5.17 reads them: a non-null,
 * non-empty rope_scaling replaces rope_parameters; theta is the object's rope_theta, else the
 * top-level rope_theta, else 10000; original_max_position_embeddings (yarn, llama3) is a
 * top-level key when present, else the object's, else max_position_embeddings.
 *
 * Types (modeling_rope_utils.py of transformers 5.17, op by op in fp32 as torch does it):
 * default, linear, dynamic (its frequencies change only past max_position_embeddings, which
 * the engine never reaches: requests stop there, so the init frequencies are exact), yarn
 * (attention factor from mscale / mscale_all_dim or 0.1 ln(factor) + 1, scaling cos and sin),
 * llama3. Refused with an error naming the key: longrope (its short/long switch depends on the
 * whole batch's longest sequence in transformers), any other type, partial_rotary_factor != 1
 * (transformers 5 ignores it for default and fails in the forward for the others), "type" and
 * "rope_type" both present and different (transformers 4 and 5 disagree which one wins).
 *
 * zp_rope_shift_row re-rotates a cached (post-RoPE) key from one position to another: the
 * CPU reference of StreamingLLM's position shift at compaction (the CUDA compaction's twin is
 * in model/cuda/compress_cuda.cu).
 *
 * Deliberately not here: applying the rotation to new tokens (the backends' qkv_rope_store)
 * and the rest of config.json (config.c).
 */
#ifndef ZP_ROPE_H
#define ZP_ROPE_H

#include "status.h"

typedef enum { ZP_ROPE_DEFAULT, ZP_ROPE_LINEAR, ZP_ROPE_DYNAMIC, ZP_ROPE_YARN, ZP_ROPE_LLAMA3, ZP_ROPE_COUNT } zp_rope_type;

typedef struct {
    zp_rope_type type;
    double theta;            /* rope_theta */
    double factor;           /* linear, dynamic, yarn, llama3 */
    double low_freq, high_freq; /* llama3 low_freq_factor, high_freq_factor */
    int orig_max_pos;        /* yarn, llama3: original_max_position_embeddings */
    int max_pos;             /* max_position_embeddings (dynamic) */
    double attention_factor; /* yarn: an explicit attention_factor, or 0 when computed */
    double mscale, mscale_all_dim; /* yarn (0 when absent) */
    double beta_fast, beta_slow;   /* yarn (32 and 1 when absent or 0) */
    int truncate;            /* yarn: floor/ceil the correction range (default 1) */
} zp_rope_config;

struct cJSON;
/* Reads the RoPE fields of a config.json root (src names the file in errors). max_pos is
 * max_position_embeddings as already resolved. absent: the model class's RoPE when config.json
 * carries no rope object (its theta also the default where an object gives none: GptOssConfig's
 * yarn and default_theta 150000); NULL: default RoPE, theta 10000 (Llama, Qwen). */
zp_status zp_rope_parse(const struct cJSON *root, const char *src, int max_pos, const zp_rope_config *absent, zp_rope_config *r);
/* inv_freq[dim/2] and the factor multiplying cos and sin, for a rotary width of dim. */
void zp_rope_frequencies(const zp_rope_config *r, int dim, float *inv_freq, float *attention_factor);
const char *zp_rope_type_name(zp_rope_type t);
/* x[2 half], rotate-halves layout, holding a key rotated at position `from` (the fp32 angles
 * from * inv_freq[i], times any attention factor): rotated in place to position `to`. The
 * rotation is by the exact difference of the two fp32 angles (to * inv_freq[i] as fp32 minus
 * from * inv_freq[i] as fp32, in double), its cosine and sine rounded to fp32 once, so the
 * result is the key rotated at `to` up to fp32 rounding of this one step; the attention
 * factor already in x is kept, not applied again. */
void zp_rope_shift_row(float *x, const float *inv_freq, int half, int from, int to);

#endif
