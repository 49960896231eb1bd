/* trig_stats.c - see trig_stats.h. */
#include "trig_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

static const char *const field_names[3] = {"q_mean_real", "q_mean_imag", "q_abs_mean"};

/* Copies tensor layer.{l}.{name} of st into dst [n_heads][half], after its checks. */
static zp_status copy_field(const zp_safetensors *st, const char *path, int l, const char *name, const zp_trig_stats *s,
                            float *dst) {
    char tn[96];
    snprintf(tn, sizeof tn, "layer.%d.%s", l, name);
    const zp_st_tensor *t = zp_st_find(st, tn);
    if (!t)
        return zp_fail(ZP_ERR_INVALID, "%s: no tensor %s (the statistics cover fewer layers than the model's %d?)",
                       path, tn, s->n_layers);
    if (t->dtype != ZP_DTYPE_F32) return zp_fail(ZP_ERR_INVALID, "%s: %s must be F32", path, tn);
    if (t->ndim != 2 || t->shape[0] != s->n_heads || t->shape[1] != s->half)
        return zp_fail(ZP_ERR_INVALID,
                       "%s: %s has shape [%lld, %lld]; the model needs [%d, %d] (num_attention_heads, head_dim / 2)",
                       path, tn, (long long)t->shape[0], t->ndim > 1 ? (long long)t->shape[1] : 0LL, s->n_heads,
                       s->half);
    const size_t n = (size_t)s->n_heads * (size_t)s->half;
    memcpy(dst, t->data, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return zp_fail(ZP_ERR_INVALID, "%s: %s holds a value that is not finite (at %zu)", path, tn, i);
    return ZP_OK;
}

static zp_status load(const zp_safetensors *st, const char *path, zp_trig_stats *s) {
    for (int l = 0; l < s->n_layers; l++) {
        const size_t off = (size_t)l * (size_t)s->n_heads * (size_t)s->half;
        float *dst[3] = {s->mean_re + off, s->mean_im + off, s->abs_mean + off};
        for (int f = 0; f < 3; f++) ZP_TRY(copy_field(st, path, l, field_names[f], s, dst[f]));
    }
    for (int i = 0; i < st->n_tensors; i++) { /* nothing beyond the model, nothing unknown */
        int l = -1, end = 0;
        char name[32];
        if (sscanf(st->tensors[i].name, "layer.%d.%31[a-z_]%n", &l, name, &end) != 2 || st->tensors[i].name[end] ||
            (strcmp(name, field_names[0]) && strcmp(name, field_names[1]) && strcmp(name, field_names[2])))
            return zp_fail(
                ZP_ERR_INVALID,
                "%s: tensor %s is not a TriAttention statistic (layer.L.q_mean_real, q_mean_imag or q_abs_mean)", path,
                st->tensors[i].name);
        if (l < 0 || l >= s->n_layers)
            return zp_fail(ZP_ERR_INVALID,
                           "%s: tensor %s is beyond the model's %d layers (statistics of another model?)", path,
                           st->tensors[i].name, s->n_layers);
    }
    return ZP_OK;
}

zp_status zp_trig_stats_load(const char *path, const zp_model_config *mc, zp_trig_stats *out) {
    memset(out, 0, sizeof *out);
    if (mc->head_dim < 2 || mc->head_dim % 2)
        return zp_fail(ZP_ERR_INVALID, "%s: the model's head_dim %d has no RoPE pairs", path, mc->head_dim);
    zp_trig_stats s = {.n_layers = mc->n_layers, .n_heads = mc->n_heads, .half = mc->head_dim / 2};
    const size_t n = (size_t)s.n_layers * (size_t)s.n_heads * (size_t)s.half;
    s.mean_re = malloc(n * sizeof(float));
    s.mean_im = malloc(n * sizeof(float));
    s.abs_mean = malloc(n * sizeof(float));
    zp_safetensors st = {0};
    zp_status r = !s.mean_re || !s.mean_im || !s.abs_mean
                      ? zp_fail(ZP_ERR_OOM, "%s: no memory for the statistics", path)
                      : zp_st_open_file(&st, path);
    if (r == ZP_OK) r = load(&st, path, &s);
    zp_st_close(&st);
    if (r != ZP_OK) {
        zp_trig_stats_free(&s);
        return r;
    }
    *out = s;
    return ZP_OK;
}

void zp_trig_stats_free(zp_trig_stats *s) {
    free(s->mean_re);
    free(s->mean_im);
    free(s->abs_mean);
    memset(s, 0, sizeof *s);
}

zp_status zp_trig_stats_write(const char *path, const zp_trig_stats *s) {
    const int n = 3 * s->n_layers;
    zp_st_entry *e = calloc((size_t)n, sizeof *e);
    char(*names)[48] = calloc((size_t)n, sizeof *names);
    if (!e || !names) {
        free(e), free(names);
        return zp_fail(ZP_ERR_OOM, "%s: no memory for the statistics' header", path);
    }
    const float *fields[3] = {s->mean_re, s->mean_im, s->abs_mean};
    for (int i = 0; i < n; i++) {
        const int l = i / 3, f = i % 3;
        snprintf(names[i], sizeof names[i], "layer.%d.%s", l, field_names[f]);
        e[i] = (zp_st_entry){.name = names[i],
                             .dtype = ZP_DTYPE_F32,
                             .ndim = 2,
                             .shape = {s->n_heads, s->half},
                             .data = zp_trig_stats_row(fields[f], s, l, 0)};
    }
    zp_status st = zp_st_write(path, e, n);
    free(e), free(names);
    return st;
}
