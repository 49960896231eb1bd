/* mkmodel.h - writes a complete checkpoint folder with seeded random weights.
 *
 * From a preset name (models/<name>/config.json) or a config.json path: copies config.json
 * (and generation_config.json, or writes one from bos/eos), and streams model.safetensors
 * tensor by tensor, so even 8B shapes never sit in memory at once. Weights are scaled so
 * activations stay O(1) over thousands of tokens and logits are well separated
 * (linear weights N(0, 1/fan_in), norms 1 + N(0, 0.1^2), biases N(0, 0.1^2), embeddings
 * scaled so logits have std ~3). It does not produce a tokenizer.
 */
#ifndef ZP_MKMODEL_H
#define ZP_MKMODEL_H

#include <stdint.h>

#include "config.h"
#include "dtype.h"
#include "status.h"

/* Resolves a preset name or a path to a config.json (or a folder holding one). */
zp_status zp_preset_config_path(const char *name_or_path, char *out, size_t out_len);
/* The folder of that config.json (a preset's folder also holds its tokenizer files). */
zp_status zp_preset_dir(const char *name_or_path, char *out, size_t out_len);
zp_status zp_mkmodel(const char *preset_or_config, const char *out_dir, uint64_t seed, zp_dtype dtype);
/* The tensors mkmodel draws for a config, listed and indexed by name once (a mixture of experts
 * has tens of thousands), so a model can be built in memory without a checkpoint file. */
typedef struct zp_mkmodel_specs zp_mkmodel_specs;
zp_status zp_mkmodel_specs_build(const zp_model_config *c, zp_mkmodel_specs **out);
void zp_mkmodel_specs_free(zp_mkmodel_specs *s);
/* dst[n]: the fp32 values mkmodel draws for tensor `name` with this seed (what `--dtype f32`
 * writes); an unknown name or another size is refused. */
zp_status zp_mkmodel_values(const zp_mkmodel_specs *s, const char *name, uint64_t seed, float *dst, size_t n);
/* dst[n]: the bytes mkmodel writes for U8 tensor `name` (MXFP4 blocks and scales of a config whose
 * quantization_config is mxfp4); a float tensor or another size is refused. */
zp_status zp_mkmodel_bytes(const zp_mkmodel_specs *s, const char *name, uint64_t seed, uint8_t *dst, size_t n);

#endif
