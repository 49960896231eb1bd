/* config_internal.h - the typed readers of config.json keys that config.c, config_moe.c and
 * config_gptoss.c share (each failure names the file and the key), and the mixture-of-experts
 * and gpt-oss parts of the parse.
 * Not for other modules: they read a zp_model_config (config.h). */
#ifndef ZP_CONFIG_INTERNAL_H
#define ZP_CONFIG_INTERNAL_H

#include <cjson/cJSON.h>

#include "config.h"

/* An integer key: required or left as it is when absent or null; a whole number in [0, 2^31). */
zp_status zp_cfg_int(const cJSON *o, const char *key, const char *src, int required, int *v);
/* A number key: required or left as it is when absent or null. */
zp_status zp_cfg_float(const cJSON *o, const char *key, const char *src, int required, float *v);
/* A boolean key: true or false, absent or null for def; anything else ("yes", 1) is refused. */
zp_status zp_cfg_bool(const cJSON *o, const char *key, const char *src, int def, int *v);
/* The mixture-of-experts keys (config_moe.c): read for Qwen3MoeForCausalLM with its class
 * defaults, refused by name on a dense architecture. */
zp_status zp_config_parse_moe(const cJSON *root, const char *src, zp_model_config *c);
/* gpt-oss's keys (config_gptoss.c): layer_types and sliding_window, attention_bias, the
 * experts' count, top k and SwiGLU clamp, quantization_config; refused by name elsewhere. */
zp_status zp_config_parse_gpt_oss(const cJSON *root, const char *src, zp_model_config *c);
/* GptOssConfig's RoPE when config.json names none: yarn, factor 32, betas 32 and 1, no
 * truncation, original length 4096, theta 150000. */
extern const zp_rope_config zp_gpt_oss_rope;

#endif
