/* trig_stats.h - TriAttention's calibration statistics for one model (docs/triattention.md): per
 * layer and query head, over the RoPE pairs f < head_dim / 2 (dims f and f + head_dim / 2), the
 * mean pre-RoPE query E q_f (real and imaginary parts) and the mean of its modulus E|q_f|. Read
 * from the harness's safetensors layout (tensors `layer.{l}.q_mean_real`, `q_mean_imag`,
 * `q_abs_mean`, F32 [num_attention_heads, head_dim / 2]; tools/triattention_stats.py converts the
 * authors' .pt) and checked against the model's config before any use: every layer present and
 * none beyond, the query heads and head dim of the model, F32, finite values, each mismatch one
 * error naming the file and the tensor. Deliberately not here: the scores (scorers/trig.c) and
 * calibration. */
#ifndef ZP_TRIG_STATS_H
#define ZP_TRIG_STATS_H

#include "config.h"
#include "status.h"

typedef struct {
    int n_layers, n_heads, half;         /* the model's layers, query heads and head_dim / 2 */
    float *mean_re, *mean_im, *abs_mean; /* [n_layers][n_heads][half] each */
} zp_trig_stats;

/* The statistics of `path` for the model of config mc (zeroed *out on error). */
zp_status zp_trig_stats_load(const char *path, const zp_model_config *mc, zp_trig_stats *out);
void zp_trig_stats_free(zp_trig_stats *s);
/* Writes s as the harness's statistics file (trig_stats.h's tensors; the writer's metadata). */
zp_status zp_trig_stats_write(const char *path, const zp_trig_stats *s);
/* Layer l, query head h's three rows of `half` floats. */
static inline const float *zp_trig_stats_row(const float *field, const zp_trig_stats *s, int l, int h) {
    return field + ((size_t)l * (size_t)s->n_heads + (size_t)h) * (size_t)s->half;
}

#endif
