/* config.c - config.json / generation_config.json parsing with cJSON.
 * Every missing or ill-typed field is reported with the file and the key.
 */
#include "config.h"

#include "backend.h"
#include "config_internal.h" /* the readers shared with config_moe.c; cJSON */
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arch_names[ZP_ARCH_COUNT] = {"Qwen3ForCausalLM", "Qwen2ForCausalLM", "LlamaForCausalLM",
                                                "Qwen3MoeForCausalLM", "GptOssForCausalLM"};

const char *zp_arch_name(zp_arch a) { return (a >= 0 && a < ZP_ARCH_COUNT) ? arch_names[a] : "?"; }

zp_status zp_cfg_int(const cJSON *o, const char *key, const char *src, int required, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return zp_fail(ZP_ERR_FORMAT, "%s: missing required key \"%s\"", src, key);
        return ZP_OK;
    }
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0 && it->valuedouble <= 2147483647.0) || /* range first: then the cast is defined */
        it->valuedouble != (double)(long long)it->valuedouble)
        return zp_fail(ZP_ERR_FORMAT, "%s: key \"%s\" must be a non-negative integer", src, key);
    *v = (int)it->valuedouble;
    return ZP_OK;
}

zp_status zp_cfg_float(const cJSON *o, const char *key, const char *src, int required, float *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return zp_fail(ZP_ERR_FORMAT, "%s: missing required key \"%s\"", src, key);
        return ZP_OK;
    }
    if (!cJSON_IsNumber(it)) return zp_fail(ZP_ERR_FORMAT, "%s: key \"%s\" must be a number", src, key);
    *v = (float)it->valuedouble;
    return ZP_OK;
}

zp_status zp_cfg_bool(const cJSON *o, const char *key, const char *src, int def, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (it && !cJSON_IsNull(it) && !cJSON_IsBool(it)) return zp_fail(ZP_ERR_FORMAT, "%s: \"%s\" must be true or false", src, key);
    *v = cJSON_IsBool(it) ? cJSON_IsTrue(it) : def;
    return ZP_OK;
}

/* A token id: a whole number in [0, 2^31) (checked before any conversion). */
static int is_token_id(const cJSON *e) {
    return cJSON_IsNumber(e) && e->valuedouble >= 0 && e->valuedouble < 2147483648.0 && e->valuedouble == (double)(long long)e->valuedouble;
}

/* eos_token_id may be an int or a list of ints. */
static zp_status get_eos(const cJSON *o, const char *src, zp_model_config *c) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "eos_token_id");
    if (!it || cJSON_IsNull(it)) return ZP_OK;
    if (cJSON_IsNumber(it)) {
        if (!is_token_id(it))
            return zp_fail(ZP_ERR_FORMAT, "%s: \"eos_token_id\" must be a non-negative integer (got %g)", src, it->valuedouble);
        c->eos_ids[0] = it->valueint;
        c->n_eos = 1;
        return ZP_OK;
    }
    if (!cJSON_IsArray(it)) return zp_fail(ZP_ERR_FORMAT, "%s: \"eos_token_id\" must be an int or a list", src);
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it) {
        if (!is_token_id(e))
            return zp_fail(ZP_ERR_FORMAT, "%s: \"eos_token_id\" has an entry that is not a non-negative integer", src);
        if (n == ZP_MAX_EOS) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: more than %d eos ids", src, ZP_MAX_EOS);
        c->eos_ids[n++] = e->valueint;
    }
    c->n_eos = n;
    return ZP_OK;
}

/* config.json keys by what they do to the computation. Read: used as described in config.h.
 * Checked: accepted only at the value that leaves the math as implemented (refused otherwise).
 * Ignored: no effect on the logits at inference (ids, bookkeeping, training-only settings).
 * Anything else is refused: a key we do not know may change the computation. */
static const char *const KEYS_READ[] = {"architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads", "intermediate_size", "vocab_size", "max_position_embeddings",
                                        "head_dim", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
                                        "partial_rotary_factor", "original_max_position_embeddings", "tie_word_embeddings",
                                        "attention_bias", "mlp_bias", "hidden_act", "bos_token_id", "eos_token_id",
                                        "torch_dtype", "dtype", "use_sliding_window", "sliding_window", "max_window_layers",
                                        "layer_types", "rope_interleaved", "use_mrope", "final_logit_softcapping",
                                        "attn_logit_softcapping", "quantization_config", "auto_map", "num_experts",
                                        "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
                                        "decoder_sparse_step", "mlp_only_layers", "swiglu_limit", "swiglu_alpha", NULL};
static const char *const KEYS_IGNORED[] = {"output_router_logits", "router_aux_loss_coef", "experts_per_token",
                                           "initial_context_length", "model_type", "transformers_version", "use_cache", "initializer_range",
                                           "pad_token_id", "attention_dropout", "_name_or_path", "is_llama_config",
                                           "transformers.js_config", "pretraining_tp", "output_attentions",
                                           "output_hidden_states", "return_dict", "torchscript", "use_bfloat16",
                                           "tie_encoder_decoder", "is_encoder_decoder", "is_decoder", "add_cross_attention",
                                           "chunk_size_feed_forward", "pruned_heads", "id2label", "label2id",
                                           "problem_type", "tokenizer_class", "task_specific_params", "finetuning_task",
                                           "sep_token_id", "decoder_start_token_id", "prefix", "tf_legacy_loss",
                                           "cross_attention_hidden_size", "bad_words_ids", "begin_suppress_tokens",
                                           "forced_bos_token_id", "forced_eos_token_id", "suppress_tokens",
                                           "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
                                           "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p",
                                           "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
                                           "encoder_no_repeat_ngram_size", "num_return_sequences", "output_scores",
                                           "return_dict_in_generate", "remove_invalid_values",
                                           "exponential_decay_length_penalty", "architectures_version", NULL};

static int listed(const char *const *list, const char *key) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], key)) return 1;
    return 0;
}

/* Every key known, none duplicated (transformers keeps the last value, cJSON would see the first). */
static zp_status check_keys(const cJSON *root, const char *src) {
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!listed(KEYS_READ, e->string) && !listed(KEYS_IGNORED, e->string))
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: unknown key \"%s\" (it may change the computation; refused)", src, e->string);
        for (const cJSON *f = e->next; f; f = f->next)
            if (!strcmp(e->string, f->string)) return zp_fail(ZP_ERR_FORMAT, "%s: key \"%s\" appears twice", src, e->string);
    }
    return ZP_OK;
}

/* Keys whose other values change the math in a way not implemented: refused by name. */
static zp_status check_math_keys(const cJSON *root, const char *src, const zp_model_config *c) {
    static const char *const must_be_false[] = {"use_sliding_window", "rope_interleaved", "use_mrope", NULL};
    for (int i = 0; must_be_false[i]; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, must_be_false[i]);
        if (it && !cJSON_IsNull(it) && !cJSON_IsFalse(it))
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"%s\": %s is not supported", src, must_be_false[i], cJSON_IsTrue(it) ? "true" : "(not false)");
    }
    static const char *const must_be_null[] = {"final_logit_softcapping", "attn_logit_softcapping", "auto_map", "quantization_config", NULL};
    const int gpt_oss = c->arch == ZP_ARCH_GPT_OSS; /* its layer_types, quantization_config and biases: config_gptoss.c */
    for (int i = 0; must_be_null[i] && !(gpt_oss && !strcmp(must_be_null[i], "quantization_config")); i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, must_be_null[i]);
        if (it && !cJSON_IsNull(it)) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"%s\" is not supported (must be absent or null)", src, must_be_null[i]);
    }
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(root, "layer_types"), *e;
    if (lt && !cJSON_IsNull(lt) && !gpt_oss) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != c->n_layers)
            return zp_fail(ZP_ERR_FORMAT, "%s: \"layer_types\" must list %d layers", src, c->n_layers);
        cJSON_ArrayForEach(e, lt) if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention"))
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"layer_types\" has \"%s\" (only full_attention is supported)", src,
                           cJSON_IsString(e) ? e->valuestring : "?");
    }
    int attention_bias = 0, mlp_bias = 0;
    ZP_TRY(zp_cfg_bool(root, "attention_bias", src, 0, &attention_bias));
    ZP_TRY(zp_cfg_bool(root, "mlp_bias", src, 0, &mlp_bias));
    if (c->arch != ZP_ARCH_QWEN2 && !gpt_oss && attention_bias) /* Qwen2 ignores it (q/k/v always biased) */
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"attention_bias\": true (biases on q, k, v and o_proj) is not supported for %s", src,
                       arch_names[c->arch]);
    if (mlp_bias && c->arch == ZP_ARCH_LLAMA)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"mlp_bias\": true is not supported", src);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && !(cJSON_IsString(act) && (!strcmp(act->valuestring, "silu") || !strcmp(act->valuestring, "swish"))))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: hidden_act \"%s\" is not supported (only silu)", src, cJSON_IsString(act) ? act->valuestring : "?");
    return ZP_OK;
}

static zp_status parse_arch(const cJSON *root, const char *src, zp_model_config *c) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!cJSON_IsString(a0)) return zp_fail(ZP_ERR_FORMAT, "%s: missing \"architectures\" list", src);
    snprintf(c->arch_name, sizeof c->arch_name, "%s", a0->valuestring);
    for (int a = 0; a < ZP_ARCH_COUNT; a++)
        if (strcmp(a0->valuestring, arch_names[a]) == 0) { c->arch = (zp_arch)a; return ZP_OK; }
    return zp_fail(ZP_ERR_UNSUPPORTED,
                   "%s: architecture \"%s\" is not supported (supported: Qwen3ForCausalLM, Qwen2ForCausalLM, LlamaForCausalLM, "
                   "Qwen3MoeForCausalLM, GptOssForCausalLM)",
                   src, a0->valuestring);
}

static zp_status validate(const zp_model_config *c, const char *src) {
    if (c->hidden <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 || c->vocab <= 0 ||
        c->intermediate <= 0 || c->head_dim <= 0)
        return zp_fail(ZP_ERR_FORMAT, "%s: sizes must be positive (hidden %d, layers %d, heads %d, kv heads %d, "
                       "head_dim %d, intermediate %d, vocab %d)", src, c->hidden, c->n_layers, c->n_heads,
                       c->n_kv_heads, c->head_dim, c->intermediate, c->vocab);
    if (c->n_heads % c->n_kv_heads != 0)
        return zp_fail(ZP_ERR_FORMAT, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", src,
                       c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2 != 0) return zp_fail(ZP_ERR_FORMAT, "%s: head_dim %d must be even for RoPE", src, c->head_dim);
    /* the largest head the CUDA kernels take, so that both backends run the same models (the
     * largest of any supported family is 256) */
    if (c->head_dim > ZP_MAX_HEAD_DIM)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: head_dim %d: at most %d is supported", src, c->head_dim, ZP_MAX_HEAD_DIM);
    if (!(c->rms_eps > 0)) return zp_fail(ZP_ERR_FORMAT, "%s: rms_norm_eps must be > 0", src);
    return ZP_OK;
}

static zp_status parse_root(const cJSON *root, const char *src, zp_model_config *c) {
    ZP_TRY(check_keys(root, src));
    ZP_TRY(parse_arch(root, src, c));
    const int qwen = c->arch != ZP_ARCH_LLAMA, moe = c->arch == ZP_ARCH_QWEN3_MOE, gpt_oss = c->arch == ZP_ARCH_GPT_OSS;
    ZP_TRY(zp_cfg_int(root, "hidden_size", src, 1, &c->hidden));
    ZP_TRY(zp_cfg_int(root, "num_hidden_layers", src, 1, &c->n_layers));
    ZP_TRY(zp_cfg_int(root, "num_attention_heads", src, 1, &c->n_heads));
    c->n_kv_heads = moe ? 4 : gpt_oss ? 8 : qwen ? 32 : c->n_heads; /* transformers' class defaults */
    ZP_TRY(zp_cfg_int(root, "num_key_value_heads", src, 0, &c->n_kv_heads));
    ZP_TRY(zp_cfg_int(root, "intermediate_size", src, 1, &c->intermediate));
    ZP_TRY(zp_cfg_int(root, "vocab_size", src, 1, &c->vocab));
    c->max_pos = gpt_oss ? 131072 : qwen ? 32768 : 2048;
    ZP_TRY(zp_cfg_int(root, "max_position_embeddings", src, 0, &c->max_pos));
    /* Qwen3Config and GptOssConfig: 128 and 64 */
    c->head_dim = c->arch == ZP_ARCH_QWEN3 ? 128 : gpt_oss ? 64 : c->n_heads > 0 ? c->hidden / c->n_heads : 0;
    ZP_TRY(zp_cfg_int(root, "head_dim", src, 0, &c->head_dim));
    c->rms_eps = gpt_oss ? 1e-5f : 1e-6f;
    ZP_TRY(zp_cfg_float(root, "rms_norm_eps", src, 0, &c->rms_eps));
    ZP_TRY(zp_rope_parse(root, src, c->max_pos, gpt_oss ? &zp_gpt_oss_rope : NULL, &c->rope));
    ZP_TRY(zp_cfg_bool(root, "tie_word_embeddings", src, 0, &c->tie_embeddings));
    c->qkv_bias = c->arch == ZP_ARCH_QWEN2;
    c->qk_norm = c->arch == ZP_ARCH_QWEN3 || moe;
    ZP_TRY(check_math_keys(root, src, c));
    ZP_TRY(zp_config_parse_moe(root, src, c));
    ZP_TRY(zp_config_parse_gpt_oss(root, src, c));
    c->bos_id = -1;
    ZP_TRY(zp_cfg_int(root, "bos_token_id", src, 0, &c->bos_id));
    ZP_TRY(get_eos(root, src, c));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!cJSON_IsString(dt)) dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    static const char *const dtypes[] = {"float32", "float16", "bfloat16", "auto", NULL}; /* what transformers writes */
    int known = !dt || cJSON_IsNull(dt);
    for (int i = 0; dtypes[i] && cJSON_IsString(dt); i++) known |= !strcmp(dt->valuestring, dtypes[i]);
    if (!known)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"%s\" %s%.40s%s is not a dtype this loader knows (float32, float16, bfloat16 or auto)", src, dt->string,
                       cJSON_IsString(dt) ? "\"" : "", cJSON_IsString(dt) ? dt->valuestring : "(not a string)", cJSON_IsString(dt) ? "\"" : "");
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", cJSON_IsString(dt) ? dt->valuestring : "bfloat16");
    return validate(c, src);
}

zp_status zp_config_parse(const char *json, const char *src, zp_model_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *root;
    ZP_TRY(zp_json_parse_strict(json, src, &root));
    zp_status s = parse_root(root, src, c);
    cJSON_Delete(root);
    return s;
}

zp_status zp_config_parse_generation(const char *json, const char *src, zp_model_config *c) {
    cJSON *root = cJSON_Parse(json);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zp_fail(ZP_ERR_FORMAT, "%s: not a valid JSON object", src);
    }
    zp_status s = zp_cfg_int(root, "bos_token_id", src, 0, &c->bos_id);
    if (s == ZP_OK) s = get_eos(root, src, c);
    cJSON_Delete(root);
    return s;
}

zp_status zp_config_load(const char *dir, zp_model_config *c) {
    char path[4096];
    char *txt = NULL;
    ZP_TRY(zp_model_dir_check(dir, 1));
    snprintf(path, sizeof path, "%s/config.json", dir);
    ZP_TRY(zp_read_file(path, &txt, NULL));
    zp_status s = zp_config_parse(txt, path, c);
    free(txt);
    if (s != ZP_OK) return s;
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return ZP_OK; /* optional */
    fclose(f);
    ZP_TRY(zp_read_file(path, &txt, NULL));
    s = zp_config_parse_generation(txt, path, c);
    free(txt);
    return s;
}

int zp_config_is_eos(const zp_model_config *c, int token) {
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == token) return 1;
    return 0;
}
