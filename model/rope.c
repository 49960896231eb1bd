/* rope.c - see rope.h. The frequencies follow transformers 5.17's modeling_rope_utils.py
 * (_compute_linear/_dynamic/_yarn/_llama3_parameters) and the models' default function, with
 * torch's fp32 rounding after every tensor op and Python's double arithmetic for scalars; the
 * power is the correctly rounded fp32 pow (torch's SLEEF powf is within 1 ulp of it). Built
 * with -ffp-contract=off so that no product is fused into a sum. */
#include "rope.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static const char *const type_names[ZP_ROPE_COUNT] = {"default", "linear", "dynamic", "yarn", "llama3"};
const char *zp_rope_type_name(zp_rope_type t) { return (t >= 0 && t < ZP_ROPE_COUNT) ? type_names[t] : "?"; }

/* Keys transformers knows in a rope object (RopeParameters); anything else is refused. */
static const char *const KNOWN_KEYS[] = {"rope_type", "type", "rope_theta", "partial_rotary_factor", "factor",
                                         "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
                                         "mscale", "mscale_all_dim", "truncate", "low_freq_factor", "high_freq_factor",
                                         "short_factor", "long_factor", NULL};

/* A number at o[key]: 1 found, 0 absent or null, -1 wrong type (error set). */
static int number(const cJSON *o, const char *key, const char *src, const char *where, double *v) {
    const cJSON *it = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!it || cJSON_IsNull(it)) return 0;
    if (!cJSON_IsNumber(it)) {
        zp_fail(ZP_ERR_FORMAT, "%s: %s \"%s\" must be a number", src, where, key);
        return -1;
    }
    *v = it->valuedouble;
    return 1;
}

/* The object that carries RoPE: a non-empty rope_scaling, else rope_parameters, else none. */
static zp_status rope_object(const cJSON *root, const char *src, const cJSON **obj, const char **where) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling"), *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    if (rs && !cJSON_IsNull(rs) && !cJSON_IsObject(rs)) return zp_fail(ZP_ERR_FORMAT, "%s: \"rope_scaling\" must be an object or null", src);
    if (rp && !cJSON_IsNull(rp) && !cJSON_IsObject(rp)) return zp_fail(ZP_ERR_FORMAT, "%s: \"rope_parameters\" must be an object or null", src);
    *obj = NULL;
    *where = "rope_parameters";
    if (cJSON_IsObject(rs) && rs->child) *obj = rs, *where = "rope_scaling";
    else if (cJSON_IsObject(rp)) *obj = rp;
    for (const cJSON *e = *obj ? (*obj)->child : NULL; e; e = e->next) {
        int known = 0;
        for (int i = 0; KNOWN_KEYS[i] && !known; i++) known = !strcmp(KNOWN_KEYS[i], e->string);
        if (!known) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: %s key \"%s\" is not a RoPE parameter transformers knows", src, *where, e->string);
    }
    return ZP_OK;
}

static zp_status parse_type(const cJSON *obj, const char *src, const char *where, zp_rope_type *t) {
    const cJSON *a = obj ? cJSON_GetObjectItemCaseSensitive(obj, "rope_type") : NULL, *b = obj ? cJSON_GetObjectItemCaseSensitive(obj, "type") : NULL;
    if ((a && !cJSON_IsString(a)) || (b && !cJSON_IsString(b)))
        return zp_fail(ZP_ERR_FORMAT, "%s: %s \"rope_type\" and \"type\" must be strings", src, where);
    if (a && b && strcmp(a->valuestring, b->valuestring))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: %s has \"rope_type\": \"%s\" and \"type\": \"%s\" (transformers 4 runs the second, 5 the first)",
                       src, where, a->valuestring, b->valuestring);
    const char *name = a ? a->valuestring : b ? b->valuestring : "default";
    for (int i = 0; i < ZP_ROPE_COUNT; i++)
        if (!strcmp(name, type_names[i])) { *t = (zp_rope_type)i; return ZP_OK; }
    return zp_fail(ZP_ERR_UNSUPPORTED, "%s: %s rope_type \"%s\" is not supported (supported: default, linear, dynamic, yarn, llama3%s)", src,
                   where, name, !strcmp(name, "longrope") ? "; longrope switches frequencies on the batch's longest sequence" : "");
}

/* A required positive number of the rope object. */
static zp_status need_positive(const cJSON *obj, const char *key, const char *src, const char *where, const char *type, double *v) {
    int got = number(obj, key, src, where, v);
    if (got < 0) return ZP_ERR_FORMAT;
    if (got == 0) return zp_fail(ZP_ERR_FORMAT, "%s: %s rope_type \"%s\" needs \"%s\"", src, where, type, key);
    if (!(*v > 0) || !isfinite(*v)) return zp_fail(ZP_ERR_FORMAT, "%s: %s \"%s\" must be > 0 (got %g)", src, where, key, *v);
    return ZP_OK;
}

static zp_status parse_yarn(const cJSON *obj, const char *src, const char *where, zp_rope_config *r) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "factor");
    if (!f) return zp_fail(ZP_ERR_FORMAT, "%s: %s rope_type \"yarn\" needs \"factor\"", src, where);
    if (cJSON_IsNull(f)) r->factor = (double)r->max_pos / r->orig_max_pos; /* transformers' implicit factor */
    else ZP_TRY(need_positive(obj, "factor", src, where, "yarn", &r->factor));
    double v = 0;
    int got;
    if ((got = number(obj, "attention_factor", src, where, &v)) < 0) return ZP_ERR_FORMAT;
    if (got && !(v > 0)) return zp_fail(ZP_ERR_FORMAT, "%s: %s \"attention_factor\" must be > 0", src, where);
    r->attention_factor = got ? v : 0;
    if (number(obj, "mscale", src, where, &r->mscale) < 0 || number(obj, "mscale_all_dim", src, where, &r->mscale_all_dim) < 0)
        return ZP_ERR_FORMAT;
    r->beta_fast = 32, r->beta_slow = 1; /* `get(...) or 32`: absent, null and 0 all fall back */
    if ((got = number(obj, "beta_fast", src, where, &v)) < 0) return ZP_ERR_FORMAT;
    if (got && v != 0) r->beta_fast = v;
    if ((got = number(obj, "beta_slow", src, where, &v)) < 0) return ZP_ERR_FORMAT;
    if (got && v != 0) r->beta_slow = v;
    if (!(r->beta_fast > 0) || !(r->beta_slow > 0)) return zp_fail(ZP_ERR_FORMAT, "%s: %s yarn betas must be > 0", src, where);
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(obj, "truncate");
    if (tr && !cJSON_IsNull(tr) && !cJSON_IsBool(tr)) return zp_fail(ZP_ERR_FORMAT, "%s: %s \"truncate\" must be true or false", src, where);
    r->truncate = !cJSON_IsFalse(tr);
    return ZP_OK;
}

zp_status zp_rope_parse(const cJSON *root, const char *src, int max_pos, const zp_rope_config *absent, zp_rope_config *r) {
    memset(r, 0, sizeof *r);
    r->max_pos = max_pos;
    const cJSON *obj = NULL;
    const char *where = "rope_parameters";
    ZP_TRY(rope_object(root, src, &obj, &where));
    ZP_TRY(parse_type(obj, src, where, &r->type));
    r->theta = absent ? absent->theta : 10000.0;
    int got = number(obj, "rope_theta", src, where, &r->theta);
    if (got < 0 || (got == 0 && number(root, "rope_theta", src, "top-level", &r->theta) < 0)) return ZP_ERR_FORMAT;
    if (!obj && absent) { /* the class's own RoPE (the theta as read) */
        const double theta = r->theta;
        *r = *absent;
        r->theta = theta;
        r->max_pos = max_pos;
    }
    if (!(r->theta > 0) || !isfinite(r->theta)) return zp_fail(ZP_ERR_FORMAT, "%s: rope_theta must be > 0 (got %g)", src, r->theta);
    double prf = 1;
    if (number(obj, "partial_rotary_factor", src, where, &prf) < 0 || number(root, "partial_rotary_factor", src, "top-level", &prf) < 0)
        return ZP_ERR_FORMAT;
    if (prf != 1)
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: \"partial_rotary_factor\" %g is not supported (Llama and Qwen rotate the whole head)", src, prf);
    if (!obj && absent) return ZP_OK;
    const char *type = type_names[r->type];
    if (r->type == ZP_ROPE_YARN || r->type == ZP_ROPE_LLAMA3) { /* top-level key > the object's > max_position_embeddings */
        double om = max_pos;
        if (number(root, "original_max_position_embeddings", src, "top-level", &om) == 0 &&
            number(obj, "original_max_position_embeddings", src, where, &om) < 0)
            return ZP_ERR_FORMAT;
        if (!(om >= 1 && om <= 1e9) || om != (double)(int)om)
            return zp_fail(ZP_ERR_FORMAT, "%s: \"original_max_position_embeddings\" must be a positive integer (got %g)", src, om);
        r->orig_max_pos = (int)om;
    }
    switch (r->type) {
    case ZP_ROPE_DEFAULT: return ZP_OK;
    case ZP_ROPE_LINEAR:
    case ZP_ROPE_DYNAMIC: return need_positive(obj, "factor", src, where, type, &r->factor);
    case ZP_ROPE_YARN: return parse_yarn(obj, src, where, r);
    case ZP_ROPE_LLAMA3:
        ZP_TRY(need_positive(obj, "factor", src, where, type, &r->factor));
        ZP_TRY(need_positive(obj, "low_freq_factor", src, where, type, &r->low_freq));
        ZP_TRY(need_positive(obj, "high_freq_factor", src, where, type, &r->high_freq));
        if (!(r->high_freq > r->low_freq))
            return zp_fail(ZP_ERR_FORMAT, "%s: llama3 high_freq_factor %g must exceed low_freq_factor %g", src, r->high_freq, r->low_freq);
        return ZP_OK;
    default: return zp_fail(ZP_ERR_UNSUPPORTED, "%s: rope type %d", src, (int)r->type);
    }
}

/* ---------------------------------------------------------------- frequencies */

/* base ** e for fp32 operands, correctly rounded. */
static float pow_f32(float base, float e) { return (float)pow((double)base, (double)e); }

/* transformers' get_mscale (double). */
static double yarn_mscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0; }

/* find_correction_dim (double): the dimension whose wavelength makes r rotations over omax. */
static double yarn_correction_dim(double rotations, int dim, double base, double omax) {
    return (dim * log(omax / (rotations * 2 * M_PI))) / (2 * log(base));
}

static void yarn(const zp_rope_config *r, int dim, float base, float *inv, double *att) {
    if (r->attention_factor > 0) *att = r->attention_factor;
    else if (r->mscale != 0 && r->mscale_all_dim != 0) *att = yarn_mscale(r->factor, r->mscale) / yarn_mscale(r->factor, r->mscale_all_dim);
    else *att = yarn_mscale(r->factor, 1);
    double low = yarn_correction_dim(r->beta_fast, dim, r->theta, r->orig_max_pos);
    double high = yarn_correction_dim(r->beta_slow, dim, r->theta, r->orig_max_pos);
    if (r->truncate) low = floor(low), high = ceil(high);
    low = fmax(low, 0), high = fmin(high, dim - 1);
    if (low == high) high += 0.001;
    const float lo = (float)low, span = (float)(high - low), factor = (float)r->factor;
    for (int i = 0; i < dim / 2; i++) {
        float ramp = ((float)i - lo) / span;
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        const float p = pow_f32(base, (float)(2 * i) / (float)dim);
        const float extra = 1.0f / p, inter = 1.0f / (factor * p), ef = 1.0f - ramp;
        inv[i] = inter * (1.0f - ef) + extra * ef;
    }
}

static void llama3(const zp_rope_config *r, int half, float *inv) {
    const float old = (float)r->orig_max_pos, factor = (float)r->factor, lo = (float)r->low_freq;
    const float span = (float)(r->high_freq - r->low_freq), two_pi = (float)(2 * M_PI);
    const float low_wl = (float)(r->orig_max_pos / r->low_freq), high_wl = (float)(r->orig_max_pos / r->high_freq);
    for (int i = 0; i < half; i++) {
        const float wavelen = (1.0f / inv[i]) * two_pi; /* `2 * math.pi / inv_freq`: reciprocal, then product */
        const float f = wavelen > low_wl ? inv[i] / factor : inv[i];
        const float smooth = ((1.0f / wavelen) * old - lo) / span;
        const float smoothed = (1.0f - smooth) * f / factor + smooth * f;
        const int medium = !(wavelen < high_wl) && !(wavelen > low_wl);
        inv[i] = medium ? smoothed : f;
    }
}

void zp_rope_frequencies(const zp_rope_config *r, int dim, float *inv, float *attention_factor) {
    double base = r->theta, att = 1.0;
    if (r->type == ZP_ROPE_DYNAMIC) { /* the init value (seq_len = max_position_embeddings), in double */
        const double seq = r->max_pos;
        base = r->theta * pow(r->factor * seq / r->max_pos - (r->factor - 1), (double)dim / (dim - 2));
    }
    const float b = (float)base;
    if (r->type == ZP_ROPE_YARN) {
        yarn(r, dim, b, inv, &att);
    } else {
        for (int i = 0; i < dim / 2; i++) inv[i] = 1.0f / pow_f32(b, (float)(2 * i) / (float)dim);
        if (r->type == ZP_ROPE_LINEAR)
            for (int i = 0; i < dim / 2; i++) inv[i] = inv[i] / (float)r->factor;
        if (r->type == ZP_ROPE_LLAMA3) llama3(r, dim / 2, inv);
    }
    *attention_factor = (float)att;
}

void zp_rope_shift_row(float *x, const float *inv_freq, int half, int from, int to) {
    if (from == to) return;
    for (int i = 0; i < half; i++) {
        const float a_from = (float)from * inv_freq[i], a_to = (float)to * inv_freq[i]; /* as the rows were rotated */
        const double da = (double)a_to - (double)a_from; /* exact: two fp32 values */
        const float c = (float)cos(da), s = (float)sin(da), x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
}
