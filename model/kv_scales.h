/* kv_scales.h - the scales of an FP8 K/V cache (kv_dtype fp8, issue 39), one per (layer, KV head)
 * for keys and one for values: a write stores e4m3(x / scale), a read gives the byte's value x
 * scale (backend.h zp_attn_dims).
 * Where they come from (setting kv_scales):
 *   checkpoint (default): vLLM's per-tensor scales of each layer when the safetensors checkpoint
 *     has them (the names zp_kv_scales_read accepts), every head of the layer the same; else 1.0
 *     (vLLM's --kv-cache-dtype fp8 without checkpoint scales).
 *   prompt: calibrated per (layer, KV head) from the keys and values of the first forward that
 *     writes the cache (the first prefill batch): k_scale = max|k| / 200, v_scale = max|v| / 100,
 *     vLLM's formula for its dynamic per-tensor scales (its K_SCALE_CONSTANT and V_SCALE_CONSTANT
 *     defaults, which leave 448/200 and 448/100 of headroom), taken per head here; a head whose
 *     keys (or values) are all 0 keeps 1.0. Its cost: one pass over that batch's K/V, and later
 *     tokens past the headroom saturate at 448 x scale; the scales stay fixed after it.
 * Deliberately not here: the rounding (dtype.h) and the ops that apply the scales (backends). */
#ifndef ZP_KV_SCALES_H
#define ZP_KV_SCALES_H

#include "safetensors.h"
#include "status.h"

#define ZP_KV_K_RANGE 200.0f /* vLLM's K_SCALE_CONSTANT default */
#define ZP_KV_V_RANGE 100.0f /* vLLM's V_SCALE_CONSTANT default */

/* "checkpoint" (or NULL) -> 0, "prompt" -> 1; anything else is refused, naming it, as is prompt
 * for a cache that is not fp8 (kv_fp8 0). */
zp_status zp_kv_scales_parse(const char *kv_scales, int kv_fp8, int *calibrate);

/* The checkpoint's per-tensor K/V scales of layers [0, n_layers): *out [2][n_layers] (K, then V;
 * malloc'ed; 1.0 for a layer without any), or NULL when no layer has one. Per layer
 * (model.layers.L.self_attn. + name), as vLLM's loader remaps them: k_scale, attn.k_scale,
 * k_proj.k_scale, k_proj.output_scale, qkv_proj.k_scale, k_cache.scale (v likewise), or kv_scale
 * for both. Refused, naming the tensor: a scale of more than one element, not finite or not
 * above 0; a layer with a K scale and no V scale or the other way round (vLLM asserts); two
 * names for one scale. dir names the checkpoint in errors. */
zp_status zp_kv_scales_read(const zp_safetensors *st, const char *dir, int n_layers, float **out);

/* A calibrated scale: amax / range, or 1.0 when amax is 0; amax not finite is refused (what
 * names the layer and head). */
zp_status zp_kv_scale_from_amax(float amax, float range, const char *what, float *scale);

#endif
