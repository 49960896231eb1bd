/* model.c - weight loading and the decoder forward pass through the backend table. */
#include "model.h"

#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include "gguf.h"        /* zp_gguf_open, zp_gguf_find, zp_gguf_dequantize */
#include "mkmodel.h"     /* zp_mkmodel_values, zp_preset_dir */
#include "mxfp4.h"       /* zp_mxfp4_dequant */
#include "kv_scales.h"   /* zp_kv_scales_read, zp_kv_scale_from_amax */
#include "safetensors.h" /* zp_st_open_dir, zp_st_find, zp_st_close */
#include "tp.h"          /* zp_tp_shard_config */

/* ---------------------------------------------------------------- loading */

typedef struct {
    const zp_safetensors *st; /* one of st / gg */
    const zp_gguf *gg;
    int gg_permuted;          /* llama.cpp permuted q/k rows for its interleaved RoPE */
    const char *dir;
    zp_model *m;
    const zp_mkmodel_specs *random; /* not NULL: mkmodel's seeded values instead of a file */
    uint64_t seed;
    const zp_tp_shard *tp;    /* this rank's share (size 1: the whole model) */
} loader;

/* Hugging Face tensor name -> llama.cpp GGUF name; *heads > 0 when the rows must be
 * un-permuted (q and k of the llama architecture). */
static void gguf_name(const loader *ld, const char *hf, char *out, size_t n, int *heads) {
    static const char *const map[][2] = {{"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.weight", "attn_q.weight"},
                                         {"self_attn.k_proj.weight", "attn_k.weight"}, {"self_attn.v_proj.weight", "attn_v.weight"},
                                         {"self_attn.o_proj.weight", "attn_output.weight"}, {"self_attn.q_proj.bias", "attn_q.bias"},
                                         {"self_attn.k_proj.bias", "attn_k.bias"}, {"self_attn.v_proj.bias", "attn_v.bias"},
                                         {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"},
                                         {"post_attention_layernorm.weight", "ffn_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
                                         {"mlp.up_proj.weight", "ffn_up.weight"}, {"mlp.down_proj.weight", "ffn_down.weight"}};
    *heads = 0;
    if (!strcmp(hf, "model.embed_tokens.weight")) { snprintf(out, n, "token_embd.weight"); return; }
    if (!strcmp(hf, "model.norm.weight")) { snprintf(out, n, "output_norm.weight"); return; }
    if (!strcmp(hf, "lm_head.weight")) { snprintf(out, n, "output.weight"); return; }
    int layer, off;
    if (sscanf(hf, "model.layers.%d.%n", &layer, &off) == 1)
        for (size_t i = 0; i < sizeof map / sizeof *map; i++)
            if (!strcmp(hf + off, map[i][0])) {
                snprintf(out, n, "blk.%d.%s", layer, map[i][1]);
                if (ld->gg_permuted && i == 1) *heads = ld->m->cfg.n_heads;
                if (ld->gg_permuted && i == 2) *heads = ld->m->cfg.n_kv_heads;
                return;
            }
    snprintf(out, n, "%s", hf);
}

/* Inverse of llama.cpp's permute: GGUF row h*D + 2i + a holds HF row h*D + a*D/2 + i. */
static zp_status unpermute_rows(float *w, int64_t rows, int64_t cols, int heads) {
    const int64_t D = rows / heads, half = D / 2;
    float *tmp = malloc(sizeof(float) * (size_t)(D * cols));
    ZP_CHECK_ALLOC(tmp);
    for (int h = 0; h < heads; h++) {
        float *blk = w + (size_t)h * D * cols;
        for (int64_t i = 0; i < half; i++)
            for (int a = 0; a < 2; a++) memcpy(tmp + (size_t)(a * half + i) * cols, blk + (size_t)(2 * i + a) * cols, sizeof(float) * (size_t)cols);
        memcpy(blk, tmp, sizeof(float) * (size_t)(D * cols));
    }
    free(tmp);
    return ZP_OK;
}

static zp_status load_from_gguf(loader *ld, const char *name, int64_t rows, int64_t cols, float *dst) {
    char gname[160];
    int heads;
    gguf_name(ld, name, gname, sizeof gname, &heads);
    const zp_gguf_tensor *t = zp_gguf_find(ld->gg, gname);
    if (!t) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s (%s) is missing from the GGUF file", ld->gg->path, gname, name);
    int64_t want_cols = cols ? cols : rows, want_rows = cols ? rows : 1;
    if (t->ne[0] != want_cols || (cols ? t->ne[1] : 1) != want_rows || t->ne[2] != 1)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s has shape [%lld,%lld], expected [%lld,%lld] from config.json", ld->gg->path, gname,
                       (long long)t->ne[1], (long long)t->ne[0], (long long)want_rows, (long long)want_cols);
    ZP_TRY(zp_gguf_dequantize(ld->gg, t, dst));
    if (heads > 0) ZP_TRY(unpermute_rows(dst, rows, cols, heads));
    ld->m->n_params += (size_t)(want_rows * want_cols);
    return ZP_OK;
}

/* Converts tensor `name` of shape [rows, cols] (cols 0: 1-D [rows]) into dst (fp32). */
static zp_status load_into(loader *ld, const char *name, int64_t rows, int64_t cols, float *dst) {
    if (ld->gg) return load_from_gguf(ld, name, rows, cols, dst);
    if (ld->random) {
        const size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
        ld->m->n_params += n;
        return zp_mkmodel_values(ld->random, name, ld->seed, dst, n);
    }
    const zp_st_tensor *t = zp_st_find(ld->st, name);
    if (!t) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is missing from the checkpoint", ld->dir, name);
    if (!zp_dtype_is_float(t->dtype)) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is %s, not a float tensor", ld->dir, name, zp_dtype_name(t->dtype));
    int want_nd = cols ? 2 : 1;
    if (t->ndim != want_nd || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got[96] = "", *p = got;
        for (int d = 0; d < t->ndim; d++) p += snprintf(p, (size_t)(got + sizeof got - p), d ? ",%lld" : "%lld", (long long)t->shape[d]);
        if (cols)
            return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s has shape [%s], expected [%lld,%lld] from config.json", ld->dir, name,
                           got, (long long)rows, (long long)cols);
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s has shape [%s], expected [%lld] from config.json", ld->dir, name, got,
                       (long long)rows);
    }
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    zp_convert_to_f32(dst, t->data, t->dtype, n);
    ld->m->n_params += n;
    return ZP_OK;
}

/* Part of a tensor: rows [r0, r0 + rn) and columns [c0, c0 + cn) of its [rows, cols] (cols 0:
 * a vector); the whole tensor unless a tensor-parallel rank takes a slice. */
typedef struct {
    const char *name;
    int64_t rows, cols, r0, rn, c0, cn;
} part;

/* Rows [r0, r0 + rn) of a [rows, cols] tensor, every column (a column-parallel split). */
static part row_part(const char *name, int64_t rows, int64_t cols, int64_t r0, int64_t rn) {
    return (part){.name = name, .rows = rows, .cols = cols, .r0 = r0, .rn = rn, .c0 = 0, .cn = cols};
}
/* Columns [c0, c0 + cn) of a [rows, cols] tensor, every row (a row-parallel split). */
static part col_part(const char *name, int64_t rows, int64_t cols, int64_t c0, int64_t cn) {
    return (part){.name = name, .rows = rows, .cols = cols, .r0 = 0, .rn = rows, .c0 = c0, .cn = cn};
}

static part whole(const char *name, int64_t rows, int64_t cols) { return row_part(name, rows, cols, 0, rows); }

/* Loads p's tensor into dst ([rn, cn] floats, NaN and Inf refused): directly when p is the
 * whole tensor, else through a host copy of the whole. */
static zp_status load_part(loader *ld, const part *p, float *dst) {
    const size_t per = (size_t)(p->cols ? p->cols : 1), cn = (size_t)(p->cols ? p->cn : 1);
    const int sliced = p->rn != p->rows || cn != per;
    float *full = sliced ? malloc(sizeof(float) * (size_t)p->rows * per) : dst;
    if (!full) return zp_fail(ZP_ERR_OOM, "%s: no host memory for %s (%lld x %lld)", ld->dir, p->name, (long long)p->rows, (long long)p->cols);
    zp_status s = load_into(ld, p->name, p->rows, p->cols, full);
    for (size_t k = 0; s == ZP_OK && k < (size_t)p->rows * per; k++) /* a NaN or Inf weight would generate silently */
        if (!isfinite(full[k])) s = zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: value %zu is %s", ld->dir, p->name, k, isnan(full[k]) ? "NaN" : "infinite");
    for (int64_t r = 0; s == ZP_OK && sliced && r < p->rn; r++)
        memcpy(dst + (size_t)r * cn, full + (size_t)(p->r0 + r) * per + (size_t)p->c0, sizeof(float) * cn);
    if (sliced) free(full);
    return s;
}

/* Loads up to 3 tensor parts stacked along rows into one backend weight. */
static zp_status load_stacked(loader *ld, const part *parts, int n, void **out) {
    size_t total = 0;
    const size_t cn = (size_t)(parts[0].cols ? parts[0].cn : 1);
    for (int i = 0; i < n; i++) total += (size_t)parts[i].rn * cn;
    float *host = malloc(sizeof(float) * total);
    if (!host) return zp_fail(ZP_ERR_OOM, "%s: no host memory for %s (%zu values)", ld->dir, parts[0].name, total);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        zp_status s = load_part(ld, &parts[i], host + off);
        if (s != ZP_OK) { free(host); return s; }
        off += (size_t)parts[i].rn * cn;
    }
    zp_status s = ld->m->be->weight_upload(ld->m->be, host, total, out);
    if (s != ZP_OK) free(host);
    return s;
}

static zp_status load_one(loader *ld, const char *name, int64_t rows, int64_t cols, void **out) {
    const part p = whole(name, rows, cols);
    return load_stacked(ld, &p, 1, out);
}

/* A mixture-of-experts layer's router [E, H] and its experts, stacked: [E][gate; up][I, H] and
 * [E][H, I] (the checkpoint's per-expert tensors, transformers' save_pretrained names). The
 * whole layer: a mixture of experts runs on one rank (model_finish_load refuses more). */
static zp_status load_experts(loader *ld, int l, zp_layer_weights *w) {
    const zp_model_config *c = &ld->m->cfg;
    const int E = c->n_experts;
    const int64_t H = c->hidden, I = c->moe_intermediate;
    char name[160];
    snprintf(name, sizeof name, "model.layers.%d.mlp.gate.weight", l);
    ZP_TRY(load_one(ld, name, E, H, &w->router));
    char(*names)[96] = malloc(sizeof *names * 2 * (size_t)E);
    part *parts = malloc(sizeof *parts * 2 * (size_t)E);
    if (!names || !parts) {
        free(names);
        free(parts);
        return zp_fail(ZP_ERR_OOM, "layer %d: no memory for %d experts' names", l, E);
    }
    for (int e = 0; e < E; e++) {
        snprintf(names[2 * e], sizeof names[0], "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
        snprintf(names[2 * e + 1], sizeof names[0], "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
        parts[2 * e] = row_part(names[2 * e], I, H, 0, I);
        parts[2 * e + 1] = row_part(names[2 * e + 1], I, H, 0, I);
    }
    zp_status s = load_stacked(ld, parts, 2 * E, &w->w_gate_up);
    for (int e = 0; e < E; e++) {
        snprintf(names[e], sizeof names[0], "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
        parts[e] = row_part(names[e], H, I, 0, H);
    }
    if (s == ZP_OK) s = load_stacked(ld, parts, E, &w->w_down);
    free(names);
    free(parts);
    return s;
}

/* ---------------------------------------------------------------- gpt-oss experts */

/* Checkpoint tensor `name` of shape [d0, d1, d2] (element type float, or U8 when bytes) found
 * and checked. */
static zp_status find_3d(const loader *ld, const char *name, int64_t d0, int64_t d1, int64_t d2, int bytes, const zp_st_tensor **out) {
    const zp_st_tensor *t = zp_st_find(ld->st, name);
    if (!t) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is missing from the checkpoint", ld->dir, name);
    const int64_t want[3] = {d0, d1, d2};
    int ok = t->ndim == (d2 ? 3 : 2) && (bytes ? t->dtype == ZP_DTYPE_U8 : zp_dtype_is_float(t->dtype));
    for (int i = 0; ok && i < t->ndim; i++) ok = t->shape[i] == want[i];
    if (!ok)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s is %s of %d dimensions [%lld, %lld, ...], expected %s [%lld, %lld%s%.0lld]", ld->dir,
                       name, zp_dtype_name(t->dtype), t->ndim, (long long)t->shape[0], (long long)(t->ndim > 1 ? t->shape[1] : 0),
                       bytes ? "U8" : "a float", (long long)d0, (long long)d1, d2 ? ", " : "", (long long)d2);
    *out = t;
    return ZP_OK;
}

/* A [d0, d1, d2] float tensor into dst (fp32, NaN and Inf refused): the checkpoint's or mkmodel's. */
static zp_status load_3d(loader *ld, const char *name, int64_t d0, int64_t d1, int64_t d2, float *dst) {
    const size_t n = (size_t)d0 * (size_t)d1 * (size_t)d2;
    ld->m->n_params += n;
    if (ld->random) return zp_mkmodel_values(ld->random, name, ld->seed, dst, n);
    const zp_st_tensor *t;
    ZP_TRY(find_3d(ld, name, d0, d1, d2, 0, &t));
    zp_convert_to_f32(dst, t->data, t->dtype, n);
    for (size_t k = 0; k < n; k++)
        if (!isfinite(dst[k])) return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s: value %zu is %s", ld->dir, name, k, isnan(dst[k]) ? "NaN" : "infinite");
    return ZP_OK;
}

/* The MXFP4 tensor pair base_blocks [E, R, C/32, 16] and base_scales [E, R, C/32] dequantised into
 * dst [E][R][C] (Linear orientation: R outputs of C inputs). */
static zp_status load_mxfp4(loader *ld, const char *base, int64_t E, int64_t R, int64_t C, float *dst) {
    char nb[192], ns[192];
    snprintf(nb, sizeof nb, "%s_blocks", base);
    snprintf(ns, sizeof ns, "%s_scales", base);
    if (C % 32) return zp_fail(ZP_ERR_FORMAT, "%s: %s: MXFP4 needs inputs in groups of 32 (%lld)", ld->dir, base, (long long)C);
    ld->m->n_params += (size_t)(E * R * C);
    if (ld->random) { /* mkmodel's bytes */
        const size_t n_groups = (size_t)(E * R * (C / 32));
        uint8_t *bytes = malloc(n_groups * 17);
        if (!bytes) return zp_fail(ZP_ERR_OOM, "%s: no host memory for %s", ld->dir, base);
        zp_status s = zp_mkmodel_bytes(ld->random, nb, ld->seed, bytes, n_groups * 16);
        if (s == ZP_OK) s = zp_mkmodel_bytes(ld->random, ns, ld->seed, bytes + n_groups * 16, n_groups);
        if (s == ZP_OK) zp_mxfp4_dequant(bytes, bytes + n_groups * 16, (size_t)(E * R), (size_t)C, dst);
        free(bytes);
        return s;
    }
    const zp_st_tensor *b, *sc;
    ZP_TRY(find_3d(ld, ns, E, R, C / 32, 1, &sc));
    b = zp_st_find(ld->st, nb);
    if (!b || b->ndim != 4 || b->dtype != ZP_DTYPE_U8 || b->shape[0] != E || b->shape[1] != R || b->shape[2] != C / 32 || b->shape[3] != 16)
        return zp_fail(ZP_ERR_FORMAT, "%s: tensor %s %s (expected U8 [%lld, %lld, %lld, 16])", ld->dir, nb, b ? "has another type or shape" : "is missing",
                       (long long)E, (long long)R, (long long)(C / 32));
    zp_mxfp4_dequant(b->data, sc->data, (size_t)(E * R), (size_t)C, dst);
    for (size_t k = 0; k < (size_t)(E * R * C); k++) /* a scale byte of 255 overflows to Inf, as transformers' ldexp does */
        if (!isfinite(dst[k])) return zp_fail(ZP_ERR_FORMAT, "%s: %s: value %zu is not finite (a scale byte of 255?)", ld->dir, base, k);
    return ZP_OK;
}

/* Interleaved rows or columns (gate 0, up 0, gate 1, ...) to ours (each expert's gate block, then
 * up): dst[e][half * I + i][c] = src[e][2i + half][c] over n_cols trailing values. */
static void deinterleave_rows(float *dst, const float *src, int64_t E, int64_t I, int64_t n_cols) {
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < 2 * I; r++)
            memcpy(dst + ((size_t)e * 2 * I + (size_t)((r & 1) * I + r / 2)) * n_cols, src + ((size_t)e * 2 * I + r) * n_cols,
                   sizeof(float) * (size_t)n_cols);
}

/* dst[e][c][r] = src[e][r][c] of [E][R][C]. */
static void transpose_experts(float *dst, const float *src, int64_t E, int64_t R, int64_t C) {
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) dst[((size_t)e * C + c) * R + r] = src[((size_t)e * R + r) * C + c];
}

static zp_status upload(loader *ld, float *host, size_t n, void **out) {
    zp_status s = ld->m->be->weight_upload(ld->m->be, host, n, out);
    if (s != ZP_OK) free(host);
    return s;
}

/* gpt-oss's fused experts of layer l into the op's layout (backend.h zp_moe_weights): gate_up
 * [E, H, 2I] (x @ W, interleaved columns) or its MXFP4 pair [E, 2I, H] (interleaved rows) to
 * [E][gate I; up I][H]; down [E, I, H] or MXFP4 [E, H, I] to [E][H][I]; the biases likewise. */
static zp_status load_gpt_oss_experts(loader *ld, int l, zp_layer_weights *w) {
    const zp_model_config *c = &ld->m->cfg;
    const int64_t E = c->n_experts, H = c->hidden, I = c->moe_intermediate;
    const size_t n = (size_t)(E * 2 * I * H) > (size_t)(E * H * I) ? (size_t)(E * 2 * I * H) : (size_t)(E * H * I);
    char name[160];
    snprintf(name, sizeof name, "model.layers.%d.mlp.router.weight", l);
    ZP_TRY(load_one(ld, name, E, H, &w->router));
    snprintf(name, sizeof name, "model.layers.%d.mlp.router.bias", l);
    ZP_TRY(load_one(ld, name, E, 0, &w->router_bias));
    float *tmp = malloc(sizeof(float) * n), *gu = malloc(sizeof(float) * (size_t)(E * 2 * I * H));
    float *down = malloc(sizeof(float) * (size_t)(E * H * I)), *bgu = malloc(sizeof(float) * (size_t)(E * 2 * I));
    zp_status s = tmp && gu && down && bgu ? ZP_OK : zp_fail(ZP_ERR_OOM, "layer %d: no host memory for %lld experts", l, (long long)E);
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj", l);
    if (s == ZP_OK && c->experts_mxfp4) s = load_mxfp4(ld, name, E, 2 * I, H, tmp);
    else if (s == ZP_OK) {
        s = load_3d(ld, name, E, H, 2 * I, gu);
        transpose_experts(tmp, gu, E, H, 2 * I); /* [E][2I][H], rows interleaved */
    }
    if (s == ZP_OK) deinterleave_rows(gu, tmp, E, I, H);
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.down_proj", l);
    if (s == ZP_OK && c->experts_mxfp4) s = load_mxfp4(ld, name, E, H, I, down);
    else if (s == ZP_OK) {
        s = load_3d(ld, name, E, I, H, tmp);
        transpose_experts(down, tmp, E, I, H);
    }
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj_bias", l);
    const part pb = whole(name, E, 2 * I);
    if (s == ZP_OK) s = load_part(ld, &pb, tmp);
    if (s == ZP_OK) deinterleave_rows(bgu, tmp, E, I, 1);
    free(tmp);
    if (s == ZP_OK) s = upload(ld, gu, (size_t)(E * 2 * I * H), &w->w_gate_up), gu = NULL;
    if (s == ZP_OK) s = upload(ld, down, (size_t)(E * H * I), &w->w_down), down = NULL;
    if (s == ZP_OK) s = upload(ld, bgu, (size_t)(E * 2 * I), &w->b_gate_up), bgu = NULL;
    free(gu), free(down), free(bgu);
    snprintf(name, sizeof name, "model.layers.%d.mlp.experts.down_proj_bias", l);
    return s == ZP_OK ? load_one(ld, name, E, H, &w->b_down) : s;
}

/* Layer l's weights, or this rank's slices of them: the rows of its query and KV heads in
 * [q;k;v] (and the bias), the columns of its query heads in O, its intermediate rows in
 * [gate;up] and columns in down; the norms whole. */
static zp_status load_layer(loader *ld, int l) {
    const zp_model_config *c = &ld->m->cfg; /* the whole model's shape while loading */
    zp_layer_weights *w = &ld->m->layers[l];
    const int64_t H = c->hidden, D = c->head_dim, qd = (int64_t)c->n_heads * D, kd = (int64_t)c->n_kv_heads * D, I = c->intermediate;
    const zp_tp_shard *t = ld->tp; /* the whole model at size 1 */
    const int64_t q0 = t->q0 * D, qn = t->nq * D, k0 = t->kv0 * D, kn = t->nkv * D;
    char n0[160], n1[160], n2[160];
#define LNAME(buf, suffix) snprintf(buf, sizeof buf, "model.layers.%d.%s", l, suffix)
    LNAME(n0, "input_layernorm.weight");
    ZP_TRY(load_one(ld, n0, H, 0, &w->attn_norm));
    LNAME(n0, "self_attn.q_proj.weight"); LNAME(n1, "self_attn.k_proj.weight"); LNAME(n2, "self_attn.v_proj.weight");
    const part qkv[3] = {row_part(n0, qd, H, q0, qn), row_part(n1, kd, H, k0, kn), row_part(n2, kd, H, k0, kn)};
    ZP_TRY(load_stacked(ld, qkv, 3, &w->wqkv));
    if (c->qkv_bias) {
        LNAME(n0, "self_attn.q_proj.bias"); LNAME(n1, "self_attn.k_proj.bias"); LNAME(n2, "self_attn.v_proj.bias");
        const part bias[3] = {row_part(n0, qd, 0, q0, qn), row_part(n1, kd, 0, k0, kn), row_part(n2, kd, 0, k0, kn)};
        ZP_TRY(load_stacked(ld, bias, 3, &w->bqkv));
    }
    if (c->qk_norm) {
        LNAME(n0, "self_attn.q_norm.weight");
        ZP_TRY(load_one(ld, n0, D, 0, &w->q_norm));
        LNAME(n0, "self_attn.k_norm.weight");
        ZP_TRY(load_one(ld, n0, D, 0, &w->k_norm));
    }
    LNAME(n0, "self_attn.o_proj.weight");
    const part o = col_part(n0, H, qd, q0, qn);
    ZP_TRY(load_stacked(ld, &o, 1, &w->wo));
    if (c->o_bias) { /* one rank (model_finish_load): added once */
        LNAME(n0, "self_attn.o_proj.bias");
        ZP_TRY(load_one(ld, n0, H, 0, &w->bo));
    }
    if (c->attn_sinks) {
        LNAME(n0, "self_attn.sinks");
        ZP_TRY(load_one(ld, n0, c->n_heads, 0, &w->sinks));
    }
    LNAME(n0, "post_attention_layernorm.weight");
    ZP_TRY(load_one(ld, n0, H, 0, &w->mlp_norm));
    if (zp_config_layer_is_moe(c, l)) return c->gpt_oss_moe ? load_gpt_oss_experts(ld, l, w) : load_experts(ld, l, w);
    LNAME(n0, "mlp.gate_proj.weight"); LNAME(n1, "mlp.up_proj.weight");
    const part gu[2] = {row_part(n0, I, H, t->i0, t->ni), row_part(n1, I, H, t->i0, t->ni)};
    ZP_TRY(load_stacked(ld, gu, 2, &w->w_gate_up));
    LNAME(n0, "mlp.down_proj.weight");
    const part down = col_part(n0, H, I, t->i0, t->ni);
    ZP_TRY(load_stacked(ld, &down, 1, &w->w_down));
#undef LNAME
    return ZP_OK;
}

/* The one *.gguf file of a folder, if any. */
static int find_gguf(const char *dir, char *out, size_t n) {
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".gguf")) { snprintf(out, n, "%s/%s", dir, e->d_name); found++; }
    }
    if (d) closedir(d);
    return found;
}

static zp_status check_gguf_config(const zp_gguf *g, const zp_model_config *c) {
    const zp_gguf_kv *arch = zp_gguf_get(g, "general.architecture");
    if (!arch || !arch->s) return zp_fail(ZP_ERR_FORMAT, "%s: no general.architecture", g->path);
    static const char *const gguf_arch[ZP_ARCH_COUNT] = {"qwen3", "qwen2", "llama", "qwen3moe", "gpt-oss"}; /* by zp_arch */
    if (c->n_experts > 0)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: a mixture of experts from GGUF is not supported (the safetensors checkpoint is)", g->path);
    int known = -1;
    for (int a = 0; a < ZP_ARCH_COUNT; a++)
        if (!strcmp(arch->s, gguf_arch[a])) known = a;
    if (known < 0)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: general.architecture \"%s\" is not supported (qwen3, qwen2, llama)", g->path, arch->s);
    if (known != (int)c->arch)
        return zp_fail(ZP_ERR_FORMAT, "%s: general.architecture \"%s\" but config.json says %s", g->path, arch->s, zp_arch_name(c->arch));
    char rkey[128];
    snprintf(rkey, sizeof rkey, "%s.rope.freq_base", arch->s);
    const zp_gguf_kv *fb = zp_gguf_get(g, rkey);
    if (fb && fabs(fb->f - c->rope.theta) > 1e-6 * c->rope.theta)
        return zp_fail(ZP_ERR_FORMAT, "%s: %s is %g but config.json's rope_theta is %g", g->path, rkey, fb->f, c->rope.theta);
    const char *keys[3] = {"block_count", "embedding_length", "attention.head_count"};
    const int want[3] = {c->n_layers, c->hidden, c->n_heads};
    for (int i = 0; i < 3; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s.%s", arch->s, keys[i]);
        const zp_gguf_kv *kv = zp_gguf_get(g, key);
        if (kv && kv->i != want[i])
            return zp_fail(ZP_ERR_FORMAT, "%s: %s is %lld but config.json says %d", g->path, key, (long long)kv->i, want[i]);
    }
    return ZP_OK;
}

static zp_status load_all(loader *ld);

static zp_status load_weights(zp_model *m, const char *dir, const zp_tp_shard *tp) {
    zp_safetensors st;
    zp_gguf gg;
    char gpath[4200], sp[4200];
    struct stat sb;
    loader ld = {.dir = dir, .m = m, .tp = tp};
    snprintf(sp, sizeof sp, "%s/model.safetensors", dir);
    int has_st = stat(sp, &sb) == 0 || (snprintf(sp, sizeof sp, "%s/model.safetensors.index.json", dir), stat(sp, &sb) == 0);
    if (!has_st && find_gguf(dir, gpath, sizeof gpath) == 1) {
        ZP_TRY(zp_gguf_open(gpath, &gg));
        const zp_gguf_kv *arch = zp_gguf_get(&gg, "general.architecture");
        ld.gg = &gg;
        ld.gg_permuted = arch && arch->s && !strcmp(arch->s, "llama");
        zp_status s = check_gguf_config(&gg, &m->cfg);
        if (s == ZP_OK) s = load_all(&ld);
        zp_gguf_close(&gg);
        return s;
    }
    ZP_TRY(zp_st_open_dir(dir, &st));
    ld.st = &st;
    zp_status s = load_all(&ld);
    if (s == ZP_OK) s = zp_kv_scales_read(&st, dir, m->cfg.n_layers, &m->ckpt_kv_scales);
    zp_st_close(&st);
    return s;
}

static zp_status load_all(loader *ld) {
    zp_model *m = ld->m;
    const zp_model_config *c = &m->cfg;
    loader *lp = ld;
    zp_status s = load_one(lp, "model.embed_tokens.weight", c->vocab, c->hidden, &m->embed);
    if (s == ZP_OK) s = load_one(lp, "model.norm.weight", c->hidden, 0, &m->final_norm);
    if (s == ZP_OK) {
        if (c->tie_embeddings) m->lm_head = m->embed;
        else s = load_one(lp, "lm_head.weight", c->vocab, c->hidden, &m->lm_head);
    }
    for (int l = 0; s == ZP_OK && l < c->n_layers; l++) s = load_layer(lp, l);
    return s;
}

/* Shared tail of the loads: config already parsed into m->cfg; weights (this rank's slices
 * when tp is not NULL, after which m->cfg is the rank's shape), then the rope table. */
static zp_status model_finish_load(zp_model *m, const char *dir, int random, uint64_t seed, const zp_tp_shard *tp) {
    if (m->cfg.n_experts > 0 && tp && tp->size > 1)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: a mixture of experts (%s) under tensor parallelism is not supported yet", dir, m->cfg.arch_name);
    if (m->cfg.n_experts > 0 && !m->be->moe)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: the %s backend has no mixture-of-experts op yet (%s runs on --device cpu)", dir,
                       m->be->name, m->cfg.arch_name);
    m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
    if (!m->layers) return zp_fail(ZP_ERR_OOM, "no memory for %d layers", m->cfg.n_layers);
    ZP_TRY(zp_tp_shard_of(&m->cfg, tp ? tp->size : 1, tp ? tp->rank : 0, &m->tp)); /* of this model, whatever the caller computed */
    if (random) {
        zp_mkmodel_specs *specs;
        ZP_TRY(zp_mkmodel_specs_build(&m->cfg, &specs));
        loader ld = {.dir = dir, .m = m, .random = specs, .seed = seed, .tp = &m->tp};
        zp_status s = load_all(&ld);
        zp_mkmodel_specs_free(specs);
        ZP_TRY(s);
    } else {
        ZP_TRY(load_weights(m, dir, &m->tp));
    }
    m->whole_cfg = m->cfg;
    m->cfg = zp_tp_shard_config(&m->cfg, &m->tp);
    if (zp_config_has_sliding(&m->cfg) || m->cfg.attn_sinks) { /* gpt-oss: each layer's window and sinks for the attention ops */
        m->attn_layers = calloc((size_t)m->cfg.n_layers, sizeof *m->attn_layers);
        ZP_CHECK_ALLOC(m->attn_layers);
        for (int l = 0; l < m->cfg.n_layers; l++)
            m->attn_layers[l] = (zp_attn_layer){.window = zp_config_layer_window(&m->cfg, l), .sinks = m->layers[l].sinks};
    }
    m->n_kv_rows = m->cfg.n_layers;
    if (zp_config_has_sliding(&m->cfg)) { /* the sliding layers' blocks apart from the full layers' */
        m->kv_row = malloc(sizeof(int) * (size_t)m->cfg.n_layers);
        ZP_CHECK_ALLOC(m->kv_row);
        m->n_kv_rows = zp_config_kv_rows(&m->cfg, m->kv_row);
    }
    float *inv = malloc(sizeof(float) * (size_t)(m->cfg.head_dim / 2));
    ZP_CHECK_ALLOC(inv);
    float attention_factor;
    zp_rope_frequencies(&m->cfg.rope, m->cfg.head_dim, inv, &attention_factor);
    zp_status s = m->be->rope_init(m->be, inv, m->cfg.head_dim / 2, attention_factor);
    free(inv);
    return s;
}

zp_status zp_model_load_rank(const char *source, int random, uint64_t seed, zp_backend *be, const zp_tp_shard *tp, zp_comm *comm,
                             zp_model **out) {
    char path[4096];
    if (random) ZP_TRY(zp_preset_dir(source, path, sizeof path));
    else snprintf(path, sizeof path, "%s", source);
    const int size = tp ? tp->size : 1, rank = tp ? tp->rank : 0;
    if ((size > 1 && !comm) || (comm && (comm->size != size || comm->rank != rank)))
        return zp_fail(ZP_ERR_INVALID, "tensor parallel rank %d of %d: needs a communicator of its group (got %s)", rank, size,
                       comm ? "one of another size or rank" : "none");
    zp_model *m = calloc(1, sizeof *m);
    ZP_CHECK_ALLOC(m);
    m->be = be;
    m->comm = comm; /* at size 1 too: a group of one still sums through it */
    zp_status s = zp_config_load(path, &m->cfg);
    if (s == ZP_OK) s = model_finish_load(m, path, random, seed, tp);
    if (s != ZP_OK) { zp_model_free(m); return s; }
    *out = m;
    return ZP_OK;
}

zp_status zp_model_load(const char *dir, zp_backend *be, zp_model **out) { return zp_model_load_rank(dir, 0, 0, be, NULL, NULL, out); }

zp_status zp_model_load_random(const char *preset_or_config, uint64_t seed, zp_backend *be, zp_model **out) {
    return zp_model_load_rank(preset_or_config, 1, seed, be, NULL, NULL, out);
}

static void release(zp_backend *be, void **p) {
    if (*p) be->release(be, *p);
    *p = NULL;
}

static void free_activations(zp_model *m) {
    void **bufs[] = {&m->x, &m->hn, &m->h, &m->qkv, &m->q, &m->att, &m->gu, &m->act, &m->hstats, &m->xo, &m->xn, &m->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) release(m->be, bufs[i]);
    m->act_rows = m->out_rows_cap = 0;
}

void zp_model_free(zp_model *m) {
    if (!m) return;
    free_activations(m);
    for (int l = 0; m->layers && l < m->cfg.n_layers; l++) {
        zp_layer_weights *w = &m->layers[l];
        void **ws[] = {&w->attn_norm, &w->wqkv,   &w->bqkv,  &w->q_norm, &w->k_norm,      &w->wo,        &w->mlp_norm,
                       &w->w_gate_up, &w->w_down, &w->router, &w->bo,    &w->sinks, &w->router_bias, &w->b_gate_up, &w->b_down};
        for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) release(m->be, ws[i]);
    }
    if (m->lm_head != m->embed) release(m->be, &m->lm_head);
    release(m->be, &m->embed);
    release(m->be, &m->final_norm);
    free(m->layers);
    free(m->attn_layers);
    free(m->kv_row);
    free(m->ckpt_kv_scales);
    free(m);
}

/* ---------------------------------------------------------------- kv storage */

size_t zp_model_kv_block_bytes(const zp_model_config *c, int block_size, int elem_size) {
    return 2ull * (size_t)zp_config_kv_rows(c, NULL) * (size_t)block_size * (size_t)c->n_kv_heads * (size_t)c->head_dim * (size_t)elem_size;
}

zp_status zp_kv_dtype_parse(const char *kv_dtype, int *kv_fp8) {
    if (!kv_dtype || !strcmp(kv_dtype, "auto")) *kv_fp8 = 0;
    else if (!strcmp(kv_dtype, "fp8")) *kv_fp8 = 1;
    else return zp_fail(ZP_ERR_INVALID, "kv_dtype \"%s\" is neither auto nor fp8", kv_dtype);
    return ZP_OK;
}

static zp_status kv_alloc(zp_model *m, int num_blocks, int block_size, int kv_fp8, int calibrate, int groups, zp_kv_storage *kv) {
    const zp_model_config *c = &m->cfg;
    const int split = groups && m->kv_row, rows = split ? m->n_kv_rows : c->n_layers;
    memset(kv, 0, sizeof *kv);
    if (num_blocks <= 0 || block_size <= 0)
        return zp_fail(ZP_ERR_INVALID, "kv cache: num_blocks %d and block_size %d must be positive", num_blocks, block_size);
    if (calibrate && !kv_fp8) return zp_fail(ZP_ERR_INVALID, "kv cache: calibration without an fp8 cache"); /* zp_kv_scales_parse names it */
    if (calibrate && !m->be->kv_amax)
        return zp_fail(ZP_ERR_UNSUPPORTED, "kv_scales prompt: the %s backend cannot calibrate (no kv_amax op)", m->be->name);
    kv->dims = (zp_attn_dims){.n_layers = c->n_layers,
                              .n_heads = c->n_heads,
                              .n_kv_heads = c->n_kv_heads,
                              .head_dim = c->head_dim,
                              .block_size = block_size,
                              .num_blocks = num_blocks,
                              .scale = 1.0f / sqrtf((float)c->head_dim),
                              .qk_norm_eps = c->rms_eps,
                              .kv_head0 = m->tp.kv0,
                              .layer_attn = m->attn_layers,
                              .n_rows = rows,
                              .layer_row = split ? m->kv_row : NULL};
    if (split && !m->be->kv_groups)
        return zp_fail(ZP_ERR_UNSUPPORTED, "kv cache: %s's sliding layers hold blocks of their own, which the %s backend does not run", c->arch_name,
                       m->be->name);
    size_t n = (size_t)rows * num_blocks * block_size * c->n_kv_heads * c->head_dim;
    if (kv_fp8) { /* n bytes each, held as f32 elements (4 bytes on every backend), zeroed */
        const int L = c->n_layers, G = c->n_kv_heads;
        kv->scales = malloc(sizeof(float) * 2 * (size_t)L * G);
        if (!kv->scales) return zp_fail(ZP_ERR_OOM, "kv cache: no memory for %d layers' scales", L);
        for (int side = 0; side < 2; side++) /* a checkpoint's per-tensor scale for every head of its layer */
            for (int l = 0; l < L; l++)
                for (int g = 0; g < G; g++) kv->scales[((size_t)side * L + l) * G + g] = m->ckpt_kv_scales ? m->ckpt_kv_scales[side * L + l] : 1.0f;
        kv->calibrate = calibrate;
        kv->dims.kv_fp8 = 1;
        kv->dims.k_scale = kv->scales;
        kv->dims.v_scale = kv->scales + (size_t)L * G;
        zp_status s = m->be->alloc(m->be, 2 * (size_t)L * G, ZP_ACT_F32, &kv->scales_dev);
        if (s == ZP_OK) s = m->be->from_host(m->be, kv->scales_dev, ZP_ACT_F32, kv->scales, 0, 2 * (size_t)L * G);
        kv->dims.dev_scales = kv->scales_dev;
        if (s == ZP_OK) s = m->be->alloc(m->be, (n + 3) / 4, ZP_ACT_F32, &kv->k);
        if (s == ZP_OK) s = m->be->alloc(m->be, (n + 3) / 4, ZP_ACT_F32, &kv->v);
        if (s != ZP_OK) zp_model_kv_free(m, kv);
        return s;
    }
    ZP_TRY(m->be->alloc_cache(m->be, n, &kv->k));
    zp_status s = m->be->alloc_cache(m->be, n, &kv->v);
    if (s != ZP_OK) { m->be->release(m->be, kv->k); kv->k = NULL; }
    return s;
}

zp_status zp_model_kv_alloc_typed(zp_model *m, int num_blocks, int block_size, int kv_fp8, int calibrate, zp_kv_storage *kv) {
    return kv_alloc(m, num_blocks, block_size, kv_fp8, calibrate, 0, kv);
}
zp_status zp_model_kv_alloc_grouped(zp_model *m, int num_blocks, int block_size, int kv_fp8, int calibrate, zp_kv_storage *kv) {
    return kv_alloc(m, num_blocks, block_size, kv_fp8, calibrate, 1, kv);
}

zp_status zp_model_kv_alloc(zp_model *m, int num_blocks, int block_size, zp_kv_storage *kv) {
    return zp_model_kv_alloc_typed(m, num_blocks, block_size, 0, 0, kv);
}

zp_status zp_model_kv_alloc_compression(zp_model *m, zp_kv_storage *kv, const zp_kv_geometry *geo, int n_qslots, int with_scores) {
    const zp_model_config *c = &m->cfg;
    zp_attn_dims *d = &kv->dims;
    const int window = geo->window; /* validated by zp_geometry_resolve */
    if (!geo->evicts || geo->block_size != d->block_size || n_qslots <= 0)
        return zp_fail(ZP_ERR_INVALID, "query cache: a geometry of block %d for a pool of block %d, %d slots", geo->block_size, d->block_size,
                       n_qslots);
    d->window = window;
    d->n_qslots = n_qslots;
    ZP_TRY(m->be->alloc_cache(m->be, (size_t)c->n_layers * n_qslots * window * c->n_heads * c->head_dim, &kv->q));
    /* the score cache is fp32 on every backend: a running sum keeps its small increments */
    if (with_scores) ZP_TRY(m->be->alloc(m->be, (size_t)d->n_rows * d->num_blocks * d->block_size * c->n_kv_heads, ZP_ACT_F32, &kv->score));
    return ZP_OK;
}

void zp_model_kv_free(zp_model *m, zp_kv_storage *kv) {
    release(m->be, &kv->k);
    release(m->be, &kv->v);
    release(m->be, &kv->q);
    release(m->be, &kv->score);
    release(m->be, &kv->scales_dev);
    free(kv->scales);
    kv->scales = NULL;
    kv->dims.k_scale = kv->dims.v_scale = kv->dims.dev_scales = NULL;
}

/* ---------------------------------------------------------------- forward */

static zp_status ensure_activations(zp_model *m, int rows, int out_rows) {
    const zp_model_config *c = &m->cfg;
    zp_backend *be = m->be;
    const zp_act_type F = ZP_ACT_F32, OP = ZP_ACT_OPERAND;
    if (rows > m->act_rows) {
        void **bufs[] = {&m->x, &m->hn, &m->h, &m->qkv, &m->q, &m->att, &m->gu, &m->act, &m->hstats};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) release(be, bufs[i]);
        size_t r = (size_t)rows, qd = (size_t)c->n_heads * c->head_dim, kd = (size_t)c->n_kv_heads * c->head_dim;
        ZP_TRY(be->alloc(be, r * c->hidden, F, &m->x));
        ZP_TRY(be->alloc(be, r * c->hidden, OP, &m->hn));
        ZP_TRY(be->alloc(be, r * c->hidden, OP, &m->h));
        ZP_TRY(be->alloc(be, r * (qd + 2 * kd), OP, &m->qkv));
        ZP_TRY(be->alloc(be, r * qd, F, &m->q));
        ZP_TRY(be->alloc(be, r * qd, OP, &m->att));
        ZP_TRY(be->alloc(be, r * 2 * (size_t)c->intermediate, OP, &m->gu));
        ZP_TRY(be->alloc(be, r * (size_t)c->intermediate, OP, &m->act));
        ZP_TRY(be->alloc(be, r * (size_t)c->n_heads * 2, F, &m->hstats));
        m->act_rows = rows;
    }
    if (out_rows > m->out_rows_cap) {
        void **bufs[] = {&m->xo, &m->xn, &m->logits};
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) release(be, bufs[i]);
        ZP_TRY(be->alloc(be, (size_t)out_rows * c->hidden, F, &m->xo));
        ZP_TRY(be->alloc(be, (size_t)out_rows * c->hidden, OP, &m->xn));
        ZP_TRY(be->alloc(be, (size_t)out_rows * c->vocab, F, &m->logits));
        m->out_rows_cap = out_rows;
    }
    return ZP_OK;
}

/* kv_scales prompt: layer l's scales from this batch's keys and values (kv_scales.h), before
 * they are stored, and copied to where the backend's kernels read them (the layer's K/V
 * writes that follow use them). */
static zp_status calibrate_layer(zp_model *m, const zp_layer_weights *w, zp_kv_storage *kv, int l) {
    const int G = kv->dims.n_kv_heads, L = kv->dims.n_layers;
    float *amax = malloc(sizeof(float) * 2 * (size_t)G);
    if (!amax) return zp_fail(ZP_ERR_OOM, "kv_scales prompt: no memory for %d heads' maxima", G);
    zp_status s = m->be->kv_amax(m->be, &kv->dims, m->qkv, w->k_norm, amax);
    for (int side = 0; side < 2; side++)
        for (int g = 0; s == ZP_OK && g < G; g++) {
            char what[64];
            snprintf(what, sizeof what, "layer %d, KV head %d's %s", l, kv->dims.kv_head0 + g, side ? "values" : "keys");
            s = zp_kv_scale_from_amax(amax[side * G + g], side ? ZP_KV_V_RANGE : ZP_KV_K_RANGE, what, &kv->scales[((size_t)side * L + l) * G + g]);
        }
    free(amax);
    for (int side = 0; s == ZP_OK && side < 2; side++) {
        const size_t off = ((size_t)side * L + l) * G;
        s = m->be->from_host(m->be, kv->scales_dev, ZP_ACT_F32, kv->scales + off, off, (size_t)G);
    }
    return s;
}

/* One decoder layer over T rows: x (f32) is the residual stream; the MLP output of the layer
 * before waits in h and is added by this layer's first norm (the last one's by the final add). */
static zp_status layer_forward(zp_model *m, const zp_layer_weights *w, zp_kv_storage *kv, int l, int T, int prefill) {
    const zp_model_config *c = &m->cfg;
    zp_backend *be = m->be;
    const int H = c->hidden, qd = c->n_heads * c->head_dim, nqkv = qd + 2 * c->n_kv_heads * c->head_dim, I = c->intermediate;
    const zp_act_type OP = ZP_ACT_OPERAND;
    if (l == 0) ZP_TRY(be->rmsnorm(be, m->hn, m->x, w->attn_norm, T, H, c->rms_eps));
    else ZP_TRY(be->add_rmsnorm(be, m->hn, m->x, m->h, w->attn_norm, T, H, c->rms_eps));
    ZP_TRY(be->matmul(be, m->qkv, OP, m->hn, w->wqkv, w->bqkv, T, nqkv, H));
    if (kv->calibrate) ZP_TRY(calibrate_layer(m, w, kv, l));
    ZP_TRY(be->qkv_rope_store(be, &kv->dims, m->qkv, m->q, w->q_norm, w->k_norm, kv->k, kv->v, l));
    if (m->q_hook) ZP_TRY(m->q_hook(m->q_hook_ctx, m, l, T));
    if (kv->q) ZP_TRY(be->query_store(be, &kv->dims, m->q, kv->q, l));
    if (kv->history_live) ZP_TRY(be->attn_history(be, &kv->dims, m->q, kv->k, kv->score, m->hstats, l));
    if (prefill) ZP_TRY(be->attn_prefill(be, &kv->dims, m->att, m->q, kv->k, kv->v, l));
    else ZP_TRY(be->attn_decode(be, &kv->dims, m->att, m->q, kv->k, kv->v, l));
    ZP_TRY(be->matmul(be, m->h, OP, m->att, w->wo, w->bo, T, H, qd));
    if (m->comm) ZP_TRY(m->comm->all_reduce(m->comm, be, m->h, OP, (size_t)T * H)); /* row-parallel O: the ranks' partial sums */
    ZP_TRY(be->add_rmsnorm(be, m->hn, m->x, m->h, w->mlp_norm, T, H, c->rms_eps));
    if (w->router) { /* one rank (model_finish_load): no sum across ranks */
        const zp_moe_dims md = {.hidden = H,
                                .inter = c->moe_intermediate,
                                .n_experts = c->n_experts,
                                .top_k = c->n_experts_used,
                                .norm_topk = c->norm_topk,
                                .topk_softmax = c->gpt_oss_moe,
                                .clamped_swiglu = c->gpt_oss_moe,
                                .alpha = c->swiglu_alpha,
                                .limit = c->swiglu_limit};
        const zp_moe_weights mw = {.router = w->router,
                                   .router_bias = w->router_bias,
                                   .gate_up = w->w_gate_up,
                                   .gate_up_bias = w->b_gate_up,
                                   .down = w->w_down,
                                   .down_bias = w->b_down};
        return be->moe(be, m->h, m->hn, &mw, &md, T);
    }
    ZP_TRY(be->matmul(be, m->gu, OP, m->hn, w->w_gate_up, NULL, T, 2 * I, H));
    ZP_TRY(be->silu_mul(be, m->act, m->gu, T, I));
    ZP_TRY(be->matmul(be, m->h, OP, m->act, w->w_down, NULL, T, H, I));
    return m->comm ? m->comm->all_reduce(m->comm, be, m->h, OP, (size_t)T * H) : ZP_OK; /* row-parallel down */
}

/* The model's part of a decode graph's key: the batch shape, every buffer the forward passes
 * to the backend (activations are reallocated only when they grow) and the KV geometry (a new
 * pool may land at the same address with another size). Not the number of rows whose query is
 * stored this step (n_qstore): the query store launches over every row, so its graphs replay
 * at any count (a window policy's count changes nearly every step). */
static uint64_t graph_key(const zp_model *m, const zp_batch *b, const zp_kv_storage *kv) {
    const uint64_t parts[] = {(uint64_t)b->n_tokens, (uint64_t)b->n_seqs, (uint64_t)b->max_blocks, (uint64_t)b->n_out, (uint64_t)b->n_views,
                              (uint64_t)(uintptr_t)m->x, (uint64_t)(uintptr_t)m->h,
                              (uint64_t)(uintptr_t)m->qkv, (uint64_t)(uintptr_t)m->q, (uint64_t)(uintptr_t)m->att,
                              (uint64_t)(uintptr_t)m->gu, (uint64_t)(uintptr_t)m->act, (uint64_t)(uintptr_t)m->xo,
                              (uint64_t)(uintptr_t)m->hn, (uint64_t)(uintptr_t)m->xn,
                              (uint64_t)(uintptr_t)m->logits, (uint64_t)(uintptr_t)m->hstats, (uint64_t)kv->history_live,
                              (uint64_t)(uintptr_t)kv->k, (uint64_t)(uintptr_t)kv->v,
                              (uint64_t)(uintptr_t)kv->q, (uint64_t)(uintptr_t)kv->score, (uint64_t)kv->dims.num_blocks,
                              (uint64_t)kv->dims.block_size, (uint64_t)kv->dims.window, (uint64_t)kv->dims.n_qslots,
                              (uint64_t)kv->dims.kv_fp8, (uint64_t)(uintptr_t)kv->scales_dev};
    uint64_t h = 0x5a17a9e5ull;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) h = (h ^ parts[i]) * 0x100000001b3ull;
    return h;
}

/* Everything of a forward after set_batch: embedding, layers, last norm and LM head. */
static zp_status forward_body(zp_model *m, const zp_batch *b, zp_kv_storage *kv) {
    const zp_model_config *c = &m->cfg;
    zp_backend *be = m->be;
    ZP_TRY(be->embed(be, m->x, m->embed, c->hidden));
    for (int l = 0; l < c->n_layers; l++) ZP_TRY(layer_forward(m, &m->layers[l], kv, l, b->n_tokens, b->is_prefill));
    ZP_TRY(be->add(be, m->x, m->h, (size_t)b->n_tokens * c->hidden)); /* the last layer's residual */
    if (b->n_out == 0) return ZP_OK;
    ZP_TRY(be->gather_rows(be, m->xo, m->x, c->hidden));
    ZP_TRY(be->rmsnorm(be, m->xn, m->xo, m->final_norm, b->n_out, c->hidden, c->rms_eps));
    return be->matmul(be, m->logits, ZP_ACT_F32, m->xn, m->lm_head, NULL, b->n_out, c->vocab, c->hidden);
}

zp_status zp_model_forward(zp_model *m, const zp_batch *b, zp_kv_storage *kv, float *logits) {
    const zp_model_config *c = &m->cfg;
    zp_backend *be = m->be;
    if (b->n_tokens <= 0) return zp_fail(ZP_ERR_INVALID, "model forward: empty batch");
    for (int t = 0; t < b->n_tokens; t++)
        if (b->token_ids[t] < 0 || b->token_ids[t] >= c->vocab)
            return zp_fail(ZP_ERR_INVALID, "model forward: token id %d at row %d is outside the vocabulary [0,%d)",
                           b->token_ids[t], t, c->vocab);
    ZP_TRY(ensure_activations(m, b->n_tokens, b->n_out > 0 ? b->n_out : 1));
    ZP_TRY(be->set_batch(be, b));
    int hit = 0, recording = 0;
    /* a tensor-parallel rank's sums leave the stream (comm.h): no graphs */
    /* (not while kv_scales prompt waits for its first cache write: the calibration copies to the device) */
    if (be->use_graphs && be->graph_begin && !b->is_prefill && !m->comm && !kv->calibrate)
        ZP_TRY(be->graph_begin(be, graph_key(m, b, kv), &hit, &recording));
    if (!hit) {
        /* kv_scales prompt: only a forward that writes the cache calibrates, and only once (a
         * failed one leaves it to the next) */
        const int pending = kv->calibrate;
        int writes = 0;
        for (int t = 0; pending && t < b->n_tokens && !writes; t++) writes = b->slot_mapping[t] >= 0;
        kv->calibrate = pending && writes;
        zp_status s = forward_body(m, b, kv); /* each layer's calibrated scales reach the device before its writes */
        kv->calibrate = pending && !(writes && s == ZP_OK);
        if (recording) {
            zp_status e = be->graph_end(be, s == ZP_OK);
            if (s == ZP_OK) s = e;
        }
        ZP_TRY(s);
    }
    return logits && b->n_out > 0 ? be->to_host(be, logits, m->logits, ZP_ACT_F32, 0, (size_t)b->n_out * c->vocab) : ZP_OK;
}
