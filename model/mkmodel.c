/* mkmodel.c - seeded random checkpoints of any supported config (see mkmodel.h). */
#include "mkmodel.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h" /* zp_config_parse, zp_model_config */
#include "safetensors.h" /* zp_st_write_begin, zp_st_entry */
#include "sampler.h"     /* zp_philox4x32 */
#include "paths.h"
#include "files.h"

zp_status zp_preset_config_path(const char *name, char *out, size_t out_len) {
    struct stat sb;
    if (stat(name, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) snprintf(out, out_len, "%s/config.json", name);
        else snprintf(out, out_len, "%s", name);
        return ZP_OK;
    }
    snprintf(out, out_len, "%s/%s/config.json", zp_path(ZP_PATH_MODELS), name);
    if (stat(out, &sb) == 0) return ZP_OK;
    return zp_fail(ZP_ERR_INVALID, "\"%s\" is neither a config file nor a preset in %s (e.g. tiny-qwen3, Qwen3-0.6B)", name,
                   zp_path(ZP_PATH_MODELS));
}

zp_status zp_preset_dir(const char *name, char *out, size_t out_len) {
    ZP_TRY(zp_preset_config_path(name, out, out_len));
    char *slash = strrchr(out, '/');
    if (slash) *slash = 0;
    else snprintf(out, out_len, ".");
    return ZP_OK;
}

static zp_status copy_text(const char *src, const char *dst) {
    char *txt;
    size_t n;
    ZP_TRY(zp_read_file(src, &txt, &n));
    FILE *f = fopen(dst, "wb");
    if (!f) { free(txt); return zp_fail(ZP_ERR_IO, "%s: cannot create: %s", dst, strerror(errno)); }
    int ok = fwrite(txt, 1, n, f) == n;
    free(txt);
    if (fclose(f) != 0 || !ok) return zp_fail(ZP_ERR_IO, "%s: write failed", dst);
    return ZP_OK;
}

static zp_status write_generation_config(const zp_model_config *c, const char *dst) {
    FILE *f = fopen(dst, "wb");
    if (!f) return zp_fail(ZP_ERR_IO, "%s: cannot create: %s", dst, strerror(errno));
    fprintf(f, "{\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d\n}\n", c->bos_id, c->n_eos ? c->eos_ids[0] : 0);
    if (fclose(f) != 0) return zp_fail(ZP_ERR_IO, "%s: write failed", dst);
    return ZP_OK;
}

/* ---------------------------------------------------------------- tensors */

/* INIT_FP4 and INIT_E8M0: bytes (U8 tensors whatever the file dtype): MXFP4 blocks of uniformly
 * random codes, and their scales around the power of two that gives the blocks the std. */
typedef enum { INIT_LINEAR, INIT_NORM, INIT_BIAS, INIT_EMBED, INIT_FP4, INIT_E8M0 } init_kind;

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[4];
    init_kind kind;
    float std;
} tensor_spec;

static size_t spec_numel(const tensor_spec *s) {
    size_t n = 1;
    for (int d = 0; d < s->ndim; d++) n *= (size_t)s->shape[d];
    return n;
}

static int spec_is_bytes(const tensor_spec *s) { return s->kind == INIT_FP4 || s->kind == INIT_E8M0; }

/* A tensor of ndim dimensions (1 to 4) of these sizes. */
static int add_spec_nd(tensor_spec *v, int n, const char *name, int ndim, const int64_t *shape, init_kind k, float std) {
    snprintf(v[n].name, sizeof v[n].name, "%s", name);
    v[n].ndim = ndim;
    for (int d = 0; d < 4; d++) v[n].shape[d] = d < ndim ? shape[d] : 0;
    v[n].kind = k;
    v[n].std = std;
    return n + 1;
}

/* [rows, cols], or [rows] when cols is 0. */
static int add_spec(tensor_spec *v, int n, const char *name, int64_t rows, int64_t cols, init_kind k, float std) {
    const int64_t shape[2] = {rows, cols};
    return add_spec_nd(v, n, name, cols ? 2 : 1, shape, k, std);
}

/* A 3-D [d0, rows, cols] tensor. */
static int add_spec3(tensor_spec *v, int n, const char *name, int64_t d0, int64_t rows, int64_t cols, init_kind k, float std) {
    const int64_t shape[3] = {d0, rows, cols};
    return add_spec_nd(v, n, name, 3, shape, k, std);
}

/* An expert weight [E][R outputs][C inputs] of that std as the MXFP4 pair base_blocks [E, R, C/32,
 * 16] and base_scales [E, R, C/32]. */
static int add_mxfp4(tensor_spec *v, int n, const char *base, int64_t E, int64_t R, int64_t C, float std) {
    char nm[128];
    const int64_t blocks[4] = {E, R, C / 32, 16}, scales[3] = {E, R, C / 32};
    snprintf(nm, sizeof nm, "%.110s_blocks", base);
    n = add_spec_nd(v, n, nm, 4, blocks, INIT_FP4, std);
    snprintf(nm, sizeof nm, "%.110s_scales", base);
    return add_spec_nd(v, n, nm, 3, scales, INIT_E8M0, std);
}

/* The most tensors build_specs writes for c: embedding, final norm, LM head, and per layer at
 * most 13 (attention, norms, biases, sinks) plus a dense MLP's 3, Qwen3-MoE's router and 3 per
 * expert, or gpt-oss's router, its bias and 4 fused expert tensors. */
static size_t spec_capacity(const zp_model_config *c) {
    return 3 + (size_t)c->n_layers * (16 + (c->n_experts > 0 ? 6 + 3 * (size_t)c->n_experts : 0));
}

/* gpt-oss's layer l beyond the shared attention: o_proj's bias, the sinks, the router and its
 * bias, and the fused experts as save_pretrained writes them (gate_up [E, H, 2I] interleaved,
 * down [E, I, H], their biases). */
static int gpt_oss_specs(const zp_model_config *c, int l, tensor_spec *v, int n) {
    const int64_t H = c->hidden, E = c->n_experts, I = c->moe_intermediate;
    char nm[128];
#define P(suffix) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), nm)
    n = add_spec(v, n, P("mlp.router.weight"), E, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
    n = add_spec(v, n, P("mlp.router.bias"), E, 0, INIT_BIAS, 0.1f);
    const int q = c->experts_mxfp4; /* as published checkpoints store them: [E, outputs, inputs / 32, 16] */
    if (q) n = add_mxfp4(v, n, P("mlp.experts.gate_up_proj"), E, 2 * I, H, 1.0f / sqrtf((float)H));
    else n = add_spec3(v, n, P("mlp.experts.gate_up_proj"), E, H, 2 * I, INIT_LINEAR, 1.0f / sqrtf((float)H));
    n = add_spec(v, n, P("mlp.experts.gate_up_proj_bias"), E, 2 * I, INIT_BIAS, 0.1f);
    if (q) n = add_mxfp4(v, n, P("mlp.experts.down_proj"), E, H, I, 1.0f / sqrtf((float)I));
    else n = add_spec3(v, n, P("mlp.experts.down_proj"), E, I, H, INIT_LINEAR, 1.0f / sqrtf((float)I));
    n = add_spec(v, n, P("mlp.experts.down_proj_bias"), E, H, INIT_BIAS, 0.1f);
#undef P
    return n;
}

static int build_specs(const zp_model_config *c, tensor_spec *v) {
    const int64_t H = c->hidden, D = c->head_dim, qd = (int64_t)c->n_heads * D, kd = (int64_t)c->n_kv_heads * D, I = c->intermediate;
    const float embed_std = 3.0f / sqrtf((float)H);
    int n = 0;
    char nm[128];
    n = add_spec(v, n, "model.embed_tokens.weight", c->vocab, H, INIT_EMBED, embed_std);
    for (int l = 0; l < c->n_layers; l++) {
#define P(suffix) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), nm)
        n = add_spec(v, n, P("input_layernorm.weight"), H, 0, INIT_NORM, 0.1f);
        n = add_spec(v, n, P("self_attn.q_proj.weight"), qd, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
        n = add_spec(v, n, P("self_attn.k_proj.weight"), kd, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
        n = add_spec(v, n, P("self_attn.v_proj.weight"), kd, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
        if (c->qkv_bias) {
            n = add_spec(v, n, P("self_attn.q_proj.bias"), qd, 0, INIT_BIAS, 0.1f);
            n = add_spec(v, n, P("self_attn.k_proj.bias"), kd, 0, INIT_BIAS, 0.1f);
            n = add_spec(v, n, P("self_attn.v_proj.bias"), kd, 0, INIT_BIAS, 0.1f);
        }
        if (c->qk_norm) {
            n = add_spec(v, n, P("self_attn.q_norm.weight"), D, 0, INIT_NORM, 0.1f);
            n = add_spec(v, n, P("self_attn.k_norm.weight"), D, 0, INIT_NORM, 0.1f);
        }
        n = add_spec(v, n, P("self_attn.o_proj.weight"), H, qd, INIT_LINEAR, 1.0f / sqrtf((float)qd));
        if (c->o_bias) n = add_spec(v, n, P("self_attn.o_proj.bias"), H, 0, INIT_BIAS, 0.1f);
        if (c->attn_sinks) n = add_spec(v, n, P("self_attn.sinks"), c->n_heads, 0, INIT_BIAS, 0.5f);
        n = add_spec(v, n, P("post_attention_layernorm.weight"), H, 0, INIT_NORM, 0.1f);
        if (c->gpt_oss_moe) {
            n = gpt_oss_specs(c, l, v, n);
            continue;
        }
        if (zp_config_layer_is_moe(c, l)) { /* the router, then each expert's gate, up and down */
            const int64_t Im = c->moe_intermediate;
            n = add_spec(v, n, P("mlp.gate.weight"), c->n_experts, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
            for (int e = 0; e < c->n_experts; e++) {
                char ex[96];
                snprintf(ex, sizeof ex, "mlp.experts.%d.gate_proj.weight", e);
                n = add_spec(v, n, P(ex), Im, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
                snprintf(ex, sizeof ex, "mlp.experts.%d.up_proj.weight", e);
                n = add_spec(v, n, P(ex), Im, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
                snprintf(ex, sizeof ex, "mlp.experts.%d.down_proj.weight", e);
                n = add_spec(v, n, P(ex), H, Im, INIT_LINEAR, 1.0f / sqrtf((float)Im));
            }
            continue;
        }
        n = add_spec(v, n, P("mlp.gate_proj.weight"), I, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
        n = add_spec(v, n, P("mlp.up_proj.weight"), I, H, INIT_LINEAR, 1.0f / sqrtf((float)H));
        n = add_spec(v, n, P("mlp.down_proj.weight"), H, I, INIT_LINEAR, 1.0f / sqrtf((float)I));
#undef P
    }
    n = add_spec(v, n, "model.norm.weight", H, 0, INIT_NORM, 0.1f);
    if (!c->tie_embeddings) n = add_spec(v, n, "lm_head.weight", c->vocab, H, INIT_LINEAR, 3.0f / sqrtf((float)H));
    return n;
}

/* Elements 2k and 2k+1 of tensor t: a deterministic pair of N(0,1) draws from one Philox
 * block (Box-Muller: r cos a, r sin a). */
static void normal_pair_at(uint64_t seed, uint32_t t, uint64_t k, float out[2]) {
    uint32_t ctr[4] = {(uint32_t)k, (uint32_t)(k >> 32), t, 0x6d6b6d64u}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, o[4];
    zp_philox4x32(ctr, key, o);
    float u1 = ((float)(o[0] >> 8) + 1.0f) * (1.0f / 16777216.0f), u2 = (float)(o[1] >> 8) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * logf(u1)), a = 6.2831853f * u2;
    out[0] = r * cosf(a);
    out[1] = r * sinf(a);
}

/* Values j0 .. j0+n-1 of spec s (tensor index t; j0 even): what mkmodel writes before rounding
 * to the file dtype. Parallel over pairs. */
static void spec_values(const tensor_spec *s, uint32_t t, uint64_t seed, size_t j0, size_t n, float *dst) {
    const int norm = s->kind == INIT_NORM;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < (n + 1) / 2; k++) {
        float v[2];
        normal_pair_at(seed, t, (j0 >> 1) + k, v);
        for (size_t e = 0; e < 2 && 2 * k + e < n; e++) {
            const float x = v[e] * s->std;
            dst[2 * k + e] = norm ? x + 1.0f : x;
        }
    }
}

/* Bytes j0 .. j0+n-1 (j0 a multiple of 16) of a byte spec: 16 per Philox block. FP4 blocks: two
 * uniform codes a byte (their values' rms is 2.93); E8M0 scales: the power of two that takes that
 * rms to the spec's std, one step up or down at random. */
static void spec_bytes(const tensor_spec *s, uint32_t t, uint64_t seed, size_t j0, size_t n, uint8_t *dst) {
    const int s0 = 127 + (int)lroundf(log2f(s->std / 2.926f));
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < (n + 15) / 16; k++) {
        const uint64_t blk = j0 / 16 + k;
        uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), t, 0x6d786634u}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, o[4];
        zp_philox4x32(ctr, key, o);
        for (size_t e = 0; e < 16 && 16 * k + e < n; e++) {
            const uint8_t b = (uint8_t)(o[e / 4] >> (8 * (e % 4)));
            dst[16 * k + e] = s->kind == INIT_FP4 ? b : (uint8_t)(s0 + (int)(b % 3) - 1);
        }
    }
}

typedef struct {
    const char *name; /* into the spec */
    int t;            /* its index in build_specs' order: it seeds the tensor's values */
} spec_ref;

struct zp_mkmodel_specs {
    tensor_spec *v;
    int n;
    spec_ref *by_name; /* sorted by name */
};

static int ref_cmp(const void *a, const void *b) { return strcmp(((const spec_ref *)a)->name, ((const spec_ref *)b)->name); }

zp_status zp_mkmodel_specs_build(const zp_model_config *c, zp_mkmodel_specs **out) {
    zp_mkmodel_specs *s = calloc(1, sizeof *s);
    if (s) s->v = calloc(spec_capacity(c), sizeof *s->v);
    if (!s || !s->v) {
        free(s);
        return zp_fail(ZP_ERR_OOM, "random weights: no memory for %zu tensor specs", spec_capacity(c));
    }
    s->n = build_specs(c, s->v);
    s->by_name = malloc(sizeof *s->by_name * (size_t)s->n);
    if (!s->by_name) {
        const int n = s->n;
        zp_mkmodel_specs_free(s);
        return zp_fail(ZP_ERR_OOM, "random weights: no memory for the index of %d tensors", n);
    }
    for (int i = 0; i < s->n; i++) s->by_name[i] = (spec_ref){.name = s->v[i].name, .t = i};
    qsort(s->by_name, (size_t)s->n, sizeof *s->by_name, ref_cmp);
    *out = s;
    return ZP_OK;
}

void zp_mkmodel_specs_free(zp_mkmodel_specs *s) {
    if (!s) return;
    free(s->v);
    free(s->by_name);
    free(s);
}

zp_status zp_mkmodel_values(const zp_mkmodel_specs *s, const char *name, uint64_t seed, float *dst, size_t n) {
    const spec_ref key = {.name = name}, *hit = bsearch(&key, s->by_name, (size_t)s->n, sizeof *s->by_name, ref_cmp);
    const int t = hit ? hit->t : -1;
    if (t < 0) return zp_fail(ZP_ERR_INVALID, "random weights: no tensor %s in this config", name);
    const tensor_spec *sp = &s->v[t];
    if (spec_numel(sp) != n || spec_is_bytes(sp))
        return zp_fail(ZP_ERR_INVALID, "random weights: tensor %s has %zu %s, asked for %zu floats", name, spec_numel(sp),
                       spec_is_bytes(sp) ? "bytes" : "values", n);
    spec_values(sp, (uint32_t)t, seed, 0, n, dst);
    return ZP_OK;
}

zp_status zp_mkmodel_bytes(const zp_mkmodel_specs *s, const char *name, uint64_t seed, uint8_t *dst, size_t n) {
    const spec_ref key = {.name = name}, *hit = bsearch(&key, s->by_name, (size_t)s->n, sizeof *s->by_name, ref_cmp);
    if (!hit) return zp_fail(ZP_ERR_INVALID, "random weights: no tensor %s in this config", name);
    const tensor_spec *sp = &s->v[hit->t];
    if (spec_numel(sp) != n || !spec_is_bytes(sp))
        return zp_fail(ZP_ERR_INVALID, "random weights: tensor %s has %zu %s, asked for %zu bytes", name, spec_numel(sp),
                       spec_is_bytes(sp) ? "bytes" : "values", n);
    spec_bytes(sp, (uint32_t)hit->t, seed, 0, n, dst);
    return ZP_OK;
}

static zp_status write_tensor(FILE *f, const tensor_spec *s, uint32_t t, uint64_t seed, zp_dtype dtype, const char *path) {
    const size_t n = spec_numel(s);
    if (spec_is_bytes(s)) dtype = ZP_DTYPE_U8;
    const size_t es = (size_t)zp_dtype_size(dtype);
    const size_t chunk = 1 << 20; /* even: every chunk starts a Philox pair */
    float *vals = malloc(chunk * sizeof(float));
    uint8_t *buf = malloc(chunk * es);
    if (!vals || !buf) { free(vals); free(buf); return zp_fail(ZP_ERR_OOM, "mkmodel: out of memory"); }
    zp_status st = ZP_OK;
    for (size_t base = 0; base < n && st == ZP_OK; base += chunk) {
        const size_t m = n - base < chunk ? n - base : chunk;
        if (dtype == ZP_DTYPE_U8) spec_bytes(s, t, seed, base, m, buf);
        else spec_values(s, t, seed, base, m, vals);
        for (size_t j = 0; dtype != ZP_DTYPE_U8 && j < m; j++) {
            if (dtype == ZP_DTYPE_F32) memcpy(buf + j * 4, &vals[j], 4);
            else {
                uint16_t h = dtype == ZP_DTYPE_BF16 ? zp_f32_to_bf16(vals[j]) : zp_f32_to_f16(vals[j]);
                memcpy(buf + j * 2, &h, 2);
            }
        }
        if (fwrite(buf, es, m, f) != m) st = zp_fail(ZP_ERR_IO, "%s: write failed (disk full?)", path);
    }
    free(vals);
    free(buf);
    return st;
}

static zp_status write_weights(const zp_model_config *c, const char *path, uint64_t seed, zp_dtype dtype) {
    const size_t max_specs = spec_capacity(c);
    tensor_spec *specs = calloc(max_specs, sizeof *specs);
    zp_st_entry *ents = calloc(max_specs, sizeof *ents);
    if (!specs || !ents) { free(specs); free(ents); return zp_fail(ZP_ERR_OOM, "mkmodel: out of memory"); }
    int n = build_specs(c, specs);
    for (int i = 0; i < n; i++) {
        ents[i].name = specs[i].name;
        ents[i].dtype = spec_is_bytes(&specs[i]) ? ZP_DTYPE_U8 : dtype;
        ents[i].ndim = specs[i].ndim;
        memcpy(ents[i].shape, specs[i].shape, sizeof specs[i].shape);
    }
    FILE *f = NULL;
    zp_status s = zp_st_write_begin(path, ents, n, &f);
    for (int i = 0; s == ZP_OK && i < n; i++) s = write_tensor(f, &specs[i], (uint32_t)i, seed, dtype, path);
    if (f && fclose(f) != 0 && s == ZP_OK) s = zp_fail(ZP_ERR_IO, "%s: write failed", path);
    free(specs);
    free(ents);
    return s;
}

zp_status zp_mkmodel(const char *preset_or_config, const char *out_dir, uint64_t seed, zp_dtype dtype) {
    char cfg_path[4096], dir[4096], dst[4096 + 64];
    ZP_TRY(zp_preset_config_path(preset_or_config, cfg_path, sizeof cfg_path));
    ZP_TRY(zp_preset_dir(preset_or_config, dir, sizeof dir));
    zp_model_config c;
    char *txt;
    ZP_TRY(zp_read_file(cfg_path, &txt, NULL));
    zp_status s = zp_config_parse(txt, cfg_path, &c);
    free(txt);
    ZP_TRY(s);
    if (c.experts_mxfp4 && (c.hidden % 32 || c.moe_intermediate % 32))
        return zp_fail(ZP_ERR_FORMAT, "%s: MXFP4 experts need hidden_size %d and intermediate_size %d in multiples of 32", cfg_path, c.hidden,
                       c.moe_intermediate);
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) return zp_fail(ZP_ERR_IO, "%s: cannot create folder: %s", out_dir, strerror(errno));
    snprintf(dst, sizeof dst, "%s/config.json", out_dir);
    ZP_TRY(copy_text(cfg_path, dst));
    char gen[4096 + 64];
    snprintf(gen, sizeof gen, "%s/generation_config.json", dir);
    snprintf(dst, sizeof dst, "%s/generation_config.json", out_dir);
    struct stat sb;
    if (stat(gen, &sb) == 0) ZP_TRY(copy_text(gen, dst));
    else ZP_TRY(write_generation_config(&c, dst));
    static const char *const tok_files[] = {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "tokenizer.model",
                                            "chat_template.jinja", "special_tokens_map.json", NULL};
    for (int i = 0; tok_files[i]; i++) { /* the preset's tokenizer travels with the checkpoint */
        char src[4096 + 64];
        snprintf(src, sizeof src, "%s/%s", dir, tok_files[i]);
        snprintf(dst, sizeof dst, "%s/%s", out_dir, tok_files[i]);
        if (stat(src, &sb) == 0) ZP_TRY(copy_text(src, dst));
    }
    snprintf(dst, sizeof dst, "%s/model.safetensors", out_dir);
    return write_weights(&c, dst, seed, dtype);
}
