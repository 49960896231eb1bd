/* config_gptoss.c - the keys of a GptOssForCausalLM config.json beyond the dense ones, as
 * transformers 5.25's GptOssConfig reads them (docs/moe-port.md §2.1): num_local_experts (its
 * alias num_experts; 128), num_experts_per_tok (4), intermediate_size as each expert's width,
 * swiglu_alpha (1.702) and swiglu_limit (7.0), attention_bias (true: q, k, v and o biased),
 * layer_types (absent: sliding on even layers, full on odd, as GptOssConfig fills it) with
 * sliding_window (128), and quantization_config, accepted only as MXFP4 ({"quant_method":
 * "mxfp4"}, modules_to_not_convert and dequantize as transformers' Mxfp4Config knows them): the
 * experts' weights are then read as *_blocks and *_scales. Every layer's MLP is a mixture of
 * experts and every layer has attention sinks (no key: GptOssAttention always has them).
 * On other architectures the gpt-oss-only keys are refused by name; sliding layer types there
 * are refused by config.c. It does not read RoPE (rope.c, with GptOssConfig's yarn default below).
 */
#include <math.h>
#include <string.h>

#include "config_internal.h"

const zp_rope_config zp_gpt_oss_rope = {.type = ZP_ROPE_YARN,
                                        .theta = 150000.0,
                                        .factor = 32.0,
                                        .orig_max_pos = 4096,
                                        .beta_fast = 32.0,
                                        .beta_slow = 1.0,
                                        .truncate = 0};

static const char *const GPT_OSS_KEYS[] = {"swiglu_alpha", "swiglu_limit", NULL};

/* layer_types: each entry sliding_attention or full_attention; absent or null: GptOssConfig's
 * alternation (layer i slides when i + 1 is odd). */
static zp_status read_layer_types(const cJSON *root, const char *src, zp_model_config *c) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types"), *e;
    if (!lt || cJSON_IsNull(lt)) {
        for (int l = 0; l < c->n_layers; l++)
            if ((l + 1) % 2) c->sliding[l / 64] |= 1ull << (l % 64);
        return ZP_OK;
    }
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != c->n_layers)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"layer_types\" must list %d layers", src, c->n_layers);
    int l = 0;
    cJSON_ArrayForEach(e, lt) {
        const int full = cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention");
        const int slides = cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention");
        if (!full && !slides)
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"layer_types\" entry %d is \"%s\" (GptOssForCausalLM has sliding_attention and full_attention)",
                           src, l, cJSON_IsString(e) ? e->valuestring : "(not a string)");
        if (slides) c->sliding[l / 64] |= 1ull << (l % 64);
        l++;
    }
    return ZP_OK;
}

/* quantization_config: absent, null, or MXFP4 experts. */
static zp_status read_quantization(const cJSON *root, const char *src, zp_model_config *c) {
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    if (!q || cJSON_IsNull(q)) return ZP_OK;
    if (!cJSON_IsObject(q)) return zp_fail(ZP_ERR_FORMAT, "%s: \"quantization_config\" must be an object or null", src);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (!cJSON_IsString(m) || strcmp(m->valuestring, "mxfp4"))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"quantization_config\" quant_method \"%s\" is not supported (only mxfp4)", src,
                       cJSON_IsString(m) ? m->valuestring : "(missing)");
    for (const cJSON *e = q->child; e; e = e->next) {
        if (!strcmp(e->string, "quant_method")) continue;
        if (!strcmp(e->string, "dequantize") && (cJSON_IsBool(e) || cJSON_IsNull(e))) continue; /* a loading choice: we dequantise */
        if (!strcmp(e->string, "modules_to_not_convert") && (cJSON_IsArray(e) || cJSON_IsNull(e))) continue; /* the file says which */
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"quantization_config\" key \"%s\" is not supported (mxfp4 knows quant_method, "
                       "modules_to_not_convert, dequantize)", src, e->string);
    }
    c->experts_mxfp4 = 1;
    return ZP_OK;
}

static zp_status read_experts(const cJSON *root, const char *src, zp_model_config *c) {
    c->n_experts = 128;
    ZP_TRY(zp_cfg_int(root, "num_local_experts", src, 0, &c->n_experts));
    int alias = c->n_experts;
    ZP_TRY(zp_cfg_int(root, "num_experts", src, 0, &alias));
    if (cJSON_GetObjectItemCaseSensitive(root, "num_local_experts") && alias != c->n_experts)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"num_experts\" %d and \"num_local_experts\" %d disagree", src, alias, c->n_experts);
    c->n_experts = alias;
    c->n_experts_used = 4;
    ZP_TRY(zp_cfg_int(root, "num_experts_per_tok", src, 0, &c->n_experts_used));
    if (c->n_experts < 1 || c->n_experts_used < 1 || c->n_experts_used > c->n_experts)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"num_experts_per_tok\" %d must be in [1, num_local_experts %d]", src, c->n_experts_used, c->n_experts);
    c->moe_intermediate = c->intermediate;
    c->moe_step = 1;
    c->gpt_oss_moe = 1;
    c->swiglu_alpha = 1.702f, c->swiglu_limit = 7.0f;
    ZP_TRY(zp_cfg_float(root, "swiglu_alpha", src, 0, &c->swiglu_alpha));
    ZP_TRY(zp_cfg_float(root, "swiglu_limit", src, 0, &c->swiglu_limit));
    if (!isfinite(c->swiglu_alpha)) return zp_fail(ZP_ERR_FORMAT, "%s: \"swiglu_alpha\" must be finite", src);
    if (!(c->swiglu_limit > 0) || !isfinite(c->swiglu_limit)) return zp_fail(ZP_ERR_FORMAT, "%s: \"swiglu_limit\" must be above 0", src);
    return ZP_OK;
}

zp_status zp_config_parse_gpt_oss(const cJSON *root, const char *src, zp_model_config *c) {
    if (c->arch != ZP_ARCH_GPT_OSS) {
        for (int i = 0; GPT_OSS_KEYS[i]; i++) {
            const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, GPT_OSS_KEYS[i]);
            if (it && !cJSON_IsNull(it))
                return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"%s\" on %s (a GptOssForCausalLM key)", src, GPT_OSS_KEYS[i], zp_arch_name(c->arch));
        }
        return ZP_OK;
    }
    if (c->n_layers > ZP_MOE_MAX_LAYERS)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: %d layers: a mixture of experts of at most %d is supported", src, c->n_layers, ZP_MOE_MAX_LAYERS);
    int bias = 1;
    ZP_TRY(zp_cfg_bool(root, "attention_bias", src, 1, &bias));
    c->qkv_bias = c->o_bias = bias;
    c->attn_sinks = 1;
    ZP_TRY(read_experts(root, src, c));
    ZP_TRY(read_layer_types(root, src, c));
    c->sliding_window = 128;
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
    if (sw && cJSON_IsNull(sw)) c->sliding_window = 0;
    else ZP_TRY(zp_cfg_int(root, "sliding_window", src, 0, &c->sliding_window));
    if (zp_config_has_sliding(c) && c->sliding_window < 1)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"sliding_window\" must be at least 1 where \"layer_types\" has sliding_attention", src);
    return read_quantization(root, src, c);
}

int zp_config_layer_window(const zp_model_config *c, int l) {
    if (l < 0 || l >= c->n_layers || l >= ZP_MOE_MAX_LAYERS) return 0;
    return (c->sliding[l / 64] >> (l % 64) & 1) ? c->sliding_window : 0;
}

int zp_config_has_sliding(const zp_model_config *c) {
    int any = 0;
    for (int i = 0; i < ZP_MOE_MAX_LAYERS / 64; i++) any |= c->sliding[i] != 0;
    return any;
}

int zp_config_kv_rows(const zp_model_config *c, int *row) {
    int n[2] = {0, 0};
    for (int l = 0; l < c->n_layers; l++) {
        const int g = zp_config_layer_window(c, l) > 0;
        if (row) row[l] = n[g];
        n[g]++;
    }
    return n[0] > n[1] ? n[0] : n[1];
}
