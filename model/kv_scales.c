/* kv_scales.c - see kv_scales.h. The checkpoint names follow vLLM's loader (vllm 0.34.0,
 * model_executor/model_loader/weight_utils.py maybe_remap_kv_scale_name and
 * layers/quantization/base_config.py's cache-scale mapper; fp8.py's output_scale names;
 * layers/quantization/kv_cache.py: separate K and V scales, 1.0 when a layer has neither, a
 * lone kv_scale for both, one without the other refused). */
#include "kv_scales.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

zp_status zp_kv_scales_parse(const char *kv_scales, int kv_fp8, int *calibrate) {
    if (!kv_scales || !strcmp(kv_scales, "checkpoint")) *calibrate = 0;
    else if (!strcmp(kv_scales, "prompt")) *calibrate = 1;
    else return zp_fail(ZP_ERR_INVALID, "kv_scales \"%s\" is neither checkpoint nor prompt", kv_scales);
    if (*calibrate && !kv_fp8) return zp_fail(ZP_ERR_INVALID, "kv_scales prompt calibrates an fp8 cache's scales, and kv_dtype is not fp8");
    return ZP_OK;
}

/* The one value of tensor `name`, if present (*found). */
static zp_status scalar(const zp_safetensors *st, const char *dir, const char *name, float *v, int *found) {
    const zp_st_tensor *t = zp_st_find(st, name);
    *found = t != NULL;
    if (!t) return ZP_OK;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    if (n != 1) return zp_fail(ZP_ERR_FORMAT, "%s: K/V scale %s has %lld elements (a per-tensor scale has one)", dir, name, (long long)n);
    if (!zp_dtype_is_float(t->dtype)) return zp_fail(ZP_ERR_FORMAT, "%s: K/V scale %s is %s, not a float", dir, name, zp_dtype_name(t->dtype));
    zp_convert_to_f32(v, t->data, t->dtype, 1);
    if (!isfinite(*v) || *v <= 0)
        return zp_fail(ZP_ERR_FORMAT, "%s: K/V scale %s is %g (a scale must be finite and above 0)", dir, name, (double)*v);
    return ZP_OK;
}

/* Layer l's scale of side c ('k' or 'v') under any of vLLM's names; two names refused. */
static zp_status side(const zp_safetensors *st, const char *dir, int l, char c, float *v, int *found, char which[96]) {
    char names[6][96];
    const char *p = "model.layers.%d.self_attn.";
    char pre[48];
    snprintf(pre, sizeof pre, p, l);
    snprintf(names[0], 96, "%s%c_scale", pre, c);
    snprintf(names[1], 96, "%sattn.%c_scale", pre, c);
    snprintf(names[2], 96, "%s%c_proj.%c_scale", pre, c, c);
    snprintf(names[3], 96, "%s%c_proj.output_scale", pre, c);
    snprintf(names[4], 96, "%sqkv_proj.%c_scale", pre, c);
    snprintf(names[5], 96, "%s%c_cache.scale", pre, c);
    *found = 0;
    for (int i = 0; i < 6; i++) {
        float x;
        int f;
        ZP_TRY(scalar(st, dir, names[i], &x, &f));
        if (!f) continue;
        if (*found) return zp_fail(ZP_ERR_FORMAT, "%s: layer %d has two %c scales, %s and %s", dir, l, c == 'k' ? 'K' : 'V', which, names[i]);
        *v = x, *found = 1;
        memcpy(which, names[i], 96);
    }
    return ZP_OK;
}

zp_status zp_kv_scales_read(const zp_safetensors *st, const char *dir, int n_layers, float **out) {
    *out = NULL;
    float *s = malloc(sizeof(float) * 2 * (size_t)(n_layers > 0 ? n_layers : 1));
    if (!s) return zp_fail(ZP_ERR_OOM, "%s: no memory for %d layers' K/V scales", dir, n_layers);
    int any = 0;
    zp_status r = ZP_OK;
    for (int l = 0; r == ZP_OK && l < n_layers; l++) {
        char kn[96] = "", vn[96] = "", both[96];
        float k = 1.0f, v = 1.0f, kv = 1.0f;
        int fk, fv, fkv;
        r = side(st, dir, l, 'k', &k, &fk, kn);
        if (r == ZP_OK) r = side(st, dir, l, 'v', &v, &fv, vn);
        snprintf(both, sizeof both, "model.layers.%d.self_attn.kv_scale", l);
        if (r == ZP_OK) r = scalar(st, dir, both, &kv, &fkv);
        if (r != ZP_OK) break;
        if (fkv && (fk || fv)) r = zp_fail(ZP_ERR_FORMAT, "%s: layer %d has %s and %s (one scale for both, and another)", dir, l, both, fk ? kn : vn);
        else if (fk != fv) r = zp_fail(ZP_ERR_FORMAT, "%s: layer %d has %s but no %s scale", dir, l, fk ? kn : vn, fk ? "V" : "K");
        if (fkv) k = v = kv;
        s[l] = k, s[n_layers + l] = v;
        any |= fk | fkv;
    }
    if (r != ZP_OK || !any) { free(s); return r; }
    *out = s;
    return ZP_OK;
}

zp_status zp_kv_scale_from_amax(float amax, float range, const char *what, float *scale) {
    if (!isfinite(amax)) return zp_fail(ZP_ERR_BACKEND, "kv_scales prompt: %s: the calibration batch's largest |value| is %g", what, (double)amax);
    *scale = amax > 0 ? amax / range : 1.0f;
    return ZP_OK;
}
