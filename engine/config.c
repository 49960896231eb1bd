/* config.c - config.json / generation_config.json parsing with cJSON.
 * Every missing or ill-typed field is reported with the file and the key.
 */
#include "config.h"

#include <cjson/cJSON.h> /* cJSON_Parse, cJSON_GetObjectItemCaseSensitive, type checks */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arch_names[ZP_ARCH_COUNT] = {"Qwen3ForCausalLM", "Qwen2ForCausalLM",
                                                "LlamaForCausalLM"};

const char *zp_arch_name(zp_arch a) { return (a >= 0 && a < ZP_ARCH_COUNT) ? arch_names[a] : "?"; }

zp_status zp_read_file(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return zp_fail(ZP_ERR_IO, "%s: cannot seek", path); }
    long n = ftell(f);
    rewind(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf) { fclose(f); return zp_fail(ZP_ERR_OOM, "%s: cannot allocate %ld bytes", path, n); }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) { free(buf); return zp_fail(ZP_ERR_IO, "%s: short read", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = (size_t)n;
    return ZP_OK;
}

zp_status zp_read_json_object(const char *path, cJSON **out) {
    char *txt;
    ZP_TRY(zp_read_file(path, &txt, NULL));
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    if (!cJSON_IsObject(root)) { cJSON_Delete(root); return zp_fail(ZP_ERR_FORMAT, "%s: not a JSON object", path); }
    *out = root;
    return ZP_OK;
}

/* Integer field: required unless def_ok; must be a whole positive-or-zero number. */
static zp_status get_int(const cJSON *o, const char *key, const char *src, int required, int *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return zp_fail(ZP_ERR_FORMAT, "%s: missing required key \"%s\"", src, key);
        return ZP_OK;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble != (double)(long long)it->valuedouble ||
        it->valuedouble < 0 || it->valuedouble > 2147483647.0)
        return zp_fail(ZP_ERR_FORMAT, "%s: key \"%s\" must be a non-negative integer", src, key);
    *v = (int)it->valuedouble;
    return ZP_OK;
}

static zp_status get_float(const cJSON *o, const char *key, const char *src, int required, float *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return zp_fail(ZP_ERR_FORMAT, "%s: missing required key \"%s\"", src, key);
        return ZP_OK;
    }
    if (!cJSON_IsNumber(it)) return zp_fail(ZP_ERR_FORMAT, "%s: key \"%s\" must be a number", src, key);
    *v = (float)it->valuedouble;
    return ZP_OK;
}

static int get_bool(const cJSON *o, const char *key, int def) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(it)) return cJSON_IsTrue(it);
    return def;
}

/* eos_token_id may be an int or a list of ints. */
static zp_status get_eos(const cJSON *o, const char *src, zp_model_config *c) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "eos_token_id");
    if (!it || cJSON_IsNull(it)) return ZP_OK;
    if (cJSON_IsNumber(it)) {
        c->eos_ids[0] = it->valueint;
        c->n_eos = 1;
        return ZP_OK;
    }
    if (!cJSON_IsArray(it)) return zp_fail(ZP_ERR_FORMAT, "%s: \"eos_token_id\" must be an int or a list", src);
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it) {
        if (!cJSON_IsNumber(e)) return zp_fail(ZP_ERR_FORMAT, "%s: \"eos_token_id\" has a non-integer entry", src);
        if (n == ZP_MAX_EOS) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: more than %d eos ids", src, ZP_MAX_EOS);
        c->eos_ids[n++] = e->valueint;
    }
    c->n_eos = n;
    return ZP_OK;
}

static zp_status parse_rope_scaling(const cJSON *root, const char *src, zp_model_config *c) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    c->rope_type = ZP_ROPE_DEFAULT;
    if (!rs || cJSON_IsNull(rs)) return ZP_OK;
    if (!cJSON_IsObject(rs)) return zp_fail(ZP_ERR_FORMAT, "%s: \"rope_scaling\" must be an object or null", src);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t)) return zp_fail(ZP_ERR_FORMAT, "%s: rope_scaling has no \"rope_type\"", src);
    if (strcmp(t->valuestring, "default") == 0) return ZP_OK;
    if (strcmp(t->valuestring, "llama3") != 0)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: rope_scaling type \"%s\" is not supported (supported: default, llama3)",
                       src, t->valuestring);
    c->rope_type = ZP_ROPE_LLAMA3;
    ZP_TRY(get_float(rs, "factor", src, 1, &c->rope_factor));
    ZP_TRY(get_float(rs, "low_freq_factor", src, 1, &c->rope_low_freq));
    ZP_TRY(get_float(rs, "high_freq_factor", src, 1, &c->rope_high_freq));
    ZP_TRY(get_int(rs, "original_max_position_embeddings", src, 1, &c->rope_orig_max_pos));
    if (c->rope_factor <= 0 || c->rope_high_freq <= c->rope_low_freq || c->rope_orig_max_pos <= 0)
        return zp_fail(ZP_ERR_FORMAT, "%s: rope_scaling llama3 values are inconsistent (factor %g, low %g, high %g)",
                       src, c->rope_factor, c->rope_low_freq, c->rope_high_freq);
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
                   "%s: architecture \"%s\" is not supported (supported: Qwen3ForCausalLM, Qwen2ForCausalLM, LlamaForCausalLM)",
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
    if (!(c->rms_eps > 0)) return zp_fail(ZP_ERR_FORMAT, "%s: rms_norm_eps must be > 0", src);
    if (!(c->rope_theta > 0)) return zp_fail(ZP_ERR_FORMAT, "%s: rope_theta must be > 0", src);
    return ZP_OK;
}

static zp_status parse_root(const cJSON *root, const char *src, zp_model_config *c) {
    ZP_TRY(parse_arch(root, src, c));
    ZP_TRY(get_int(root, "hidden_size", src, 1, &c->hidden));
    ZP_TRY(get_int(root, "num_hidden_layers", src, 1, &c->n_layers));
    ZP_TRY(get_int(root, "num_attention_heads", src, 1, &c->n_heads));
    c->n_kv_heads = c->n_heads;
    ZP_TRY(get_int(root, "num_key_value_heads", src, 0, &c->n_kv_heads));
    ZP_TRY(get_int(root, "intermediate_size", src, 1, &c->intermediate));
    ZP_TRY(get_int(root, "vocab_size", src, 1, &c->vocab));
    c->max_pos = 4096;
    ZP_TRY(get_int(root, "max_position_embeddings", src, 0, &c->max_pos));
    c->head_dim = c->n_heads > 0 ? c->hidden / c->n_heads : 0;
    ZP_TRY(get_int(root, "head_dim", src, 0, &c->head_dim));
    c->rms_eps = 1e-6f;
    ZP_TRY(get_float(root, "rms_norm_eps", src, 0, &c->rms_eps));
    c->rope_theta = 10000.0f;
    ZP_TRY(get_float(root, "rope_theta", src, 0, &c->rope_theta));
    ZP_TRY(parse_rope_scaling(root, src, c));
    c->tie_embeddings = get_bool(root, "tie_word_embeddings", c->arch == ZP_ARCH_QWEN2 ? 0 : 0);
    c->qkv_bias = c->arch == ZP_ARCH_QWEN2 ? 1 : get_bool(root, "attention_bias", 0);
    c->qk_norm = c->arch == ZP_ARCH_QWEN3;
    if (c->arch == ZP_ARCH_LLAMA && get_bool(root, "mlp_bias", 0))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"mlp_bias\": true is not supported", src);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "silu") != 0)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: hidden_act \"%s\" is not supported (only silu)", src, act->valuestring);
    c->bos_id = -1;
    ZP_TRY(get_int(root, "bos_token_id", src, 0, &c->bos_id));
    ZP_TRY(get_eos(root, src, c));
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    snprintf(c->torch_dtype, sizeof c->torch_dtype, "%s", cJSON_IsString(dt) ? dt->valuestring : "bfloat16");
    return validate(c, src);
}

zp_status zp_config_parse(const char *json, const char *src, zp_model_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *root = cJSON_Parse(json);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zp_fail(ZP_ERR_FORMAT, "%s: not a valid JSON object", src);
    }
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
    zp_status s = get_int(root, "bos_token_id", src, 0, &c->bos_id);
    if (s == ZP_OK) s = get_eos(root, src, c);
    cJSON_Delete(root);
    return s;
}

zp_status zp_config_load(const char *dir, zp_model_config *c) {
    char path[4096];
    char *txt = NULL;
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
