/* config_moe.c - the mixture-of-experts keys of a Qwen3MoeForCausalLM config.json, as
 * transformers' Qwen3MoeConfig reads them (docs/moe-port.md §1.1-1.2): num_experts (its alias
 * num_local_experts, which save_pretrained writes), num_experts_per_tok, moe_intermediate_size,
 * norm_topk_prob, decoder_sparse_step and mlp_only_layers, with the class defaults where absent
 * (128 experts, top 8, width 768, no renormalisation, step 1, no dense layers). A dense
 * architecture carrying any of them is refused by name, so are values out of range. Qwen3-MoE has
 * no shared experts: a config naming them is refused as an unknown key (config.c). */
#include <string.h>

#include "config_internal.h"

static const char *const MOE_KEYS[] = {"num_experts", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                                       "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", NULL};

static zp_status read_mlp_only(const cJSON *root, const char *src, zp_model_config *c) {
    const cJSON *lst = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers"), *e;
    if (!lst || cJSON_IsNull(lst)) return ZP_OK;
    if (!cJSON_IsArray(lst)) return zp_fail(ZP_ERR_FORMAT, "%s: \"mlp_only_layers\" must be a list of layer indices", src);
    cJSON_ArrayForEach(e, lst) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < c->n_layers) || e->valuedouble != (double)(int)e->valuedouble)
            return zp_fail(ZP_ERR_FORMAT, "%s: \"mlp_only_layers\" has an entry that is not a layer index in [0, %d)", src, c->n_layers);
        const int l = (int)e->valuedouble;
        c->mlp_only[l / 64] |= 1ull << (l % 64);
    }
    return ZP_OK;
}

/* Qwen3-MoE's keys that gpt-oss does not read (its experts: config_gptoss.c) */
static const char *const QWEN_ONLY_KEYS[] = {"moe_intermediate_size", "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", NULL};

zp_status zp_config_parse_moe(const cJSON *root, const char *src, zp_model_config *c) {
    if (c->arch != ZP_ARCH_QWEN3_MOE) {
        const int gpt_oss = c->arch == ZP_ARCH_GPT_OSS;
        for (int i = 0; MOE_KEYS[i]; i++) {
            const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, MOE_KEYS[i]);
            int qwen_only = 0;
            for (int j = 0; QWEN_ONLY_KEYS[j]; j++) qwen_only |= !strcmp(QWEN_ONLY_KEYS[j], MOE_KEYS[i]);
            if (it && !cJSON_IsNull(it) && (!gpt_oss || qwen_only))
                return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"%s\" on %s, %s", src, MOE_KEYS[i], zp_arch_name(c->arch),
                               gpt_oss ? "which does not read it (a Qwen3MoeForCausalLM key)"
                                       : "a dense architecture (experts need Qwen3MoeForCausalLM or GptOssForCausalLM)");
        }
        return ZP_OK;
    }
    if (c->n_layers > ZP_MOE_MAX_LAYERS)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: %d layers: a mixture of experts of at most %d is supported", src, c->n_layers, ZP_MOE_MAX_LAYERS);
    c->n_experts = 128;
    ZP_TRY(zp_cfg_int(root, "num_experts", src, 0, &c->n_experts));
    int local = c->n_experts;
    ZP_TRY(zp_cfg_int(root, "num_local_experts", src, 0, &local));
    if (cJSON_GetObjectItemCaseSensitive(root, "num_experts") && local != c->n_experts)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"num_experts\" %d and \"num_local_experts\" %d disagree", src, c->n_experts, local);
    c->n_experts = local;
    c->n_experts_used = 8;
    ZP_TRY(zp_cfg_int(root, "num_experts_per_tok", src, 0, &c->n_experts_used));
    c->moe_intermediate = 768;
    ZP_TRY(zp_cfg_int(root, "moe_intermediate_size", src, 0, &c->moe_intermediate));
    ZP_TRY(zp_cfg_bool(root, "norm_topk_prob", src, 0, &c->norm_topk));
    c->moe_step = 1;
    ZP_TRY(zp_cfg_int(root, "decoder_sparse_step", src, 0, &c->moe_step));
    if (c->n_experts < 1 || c->n_experts_used < 1 || c->n_experts_used > c->n_experts)
        return zp_fail(ZP_ERR_FORMAT, "%s: \"num_experts_per_tok\" %d must be in [1, num_experts %d]", src, c->n_experts_used, c->n_experts);
    if (c->moe_intermediate < 1) return zp_fail(ZP_ERR_FORMAT, "%s: \"moe_intermediate_size\" must be positive", src);
    if (c->moe_step < 1) return zp_fail(ZP_ERR_FORMAT, "%s: \"decoder_sparse_step\" must be at least 1", src);
    return read_mlp_only(root, src, c);
}

int zp_config_layer_is_moe(const zp_model_config *c, int l) {
    if (c->n_experts <= 0 || l < 0 || l >= c->n_layers || l >= ZP_MOE_MAX_LAYERS) return 0;
    return !(c->mlp_only[l / 64] >> (l % 64) & 1) && (l + 1) % (c->moe_step > 0 ? c->moe_step : 1) == 0;
}
