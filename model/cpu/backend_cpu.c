/* backend_cpu.c - the fp32 CPU reference backend: BLAS sgemm for projections, OpenMP loops
 * for the rest. It is the oracle the CUDA backend is tested against, so clarity beats speed:
 * attention is a plain per-(row, head) softmax over the paged KV, no tiling.
 * It does not sample (sampler.c works on host logits).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"    /* zp_now */
#include "cpu_ops.h"  /* zp_backend, zp_batch, zp_attn_dims, the compression ops */

#ifdef ZP_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    zp_batch b;           /* shallow copy; arrays owned by the caller for the step */
    float *inv_freq;      /* [D/2] */
    int half_dim;
    float rope_scale;     /* the rope's attention factor: multiplies cos and sin */
    float *cos_sin;       /* [T][2][D/2] RoPE table of the step's positions */
    size_t cos_sin_cap;
    int n_threads;
} cpu_ctx;

#define CTX(be) ((cpu_ctx *)(be)->ctx)

const zp_batch *cpu_batch(zp_backend *be) { return &CTX(be)->b; }
const float *cpu_rope_frequencies(zp_backend *be, int head_dim) {
    const cpu_ctx *c = CTX(be);
    return c->inv_freq && 2 * c->half_dim == head_dim ? c->inv_freq : NULL;
}

/* ---------------------------------------------------------------- memory */

/* Every buffer is fp32 here: the operand type is fp32 on the reference backend. */
static zp_status cpu_alloc_cache(zp_backend *be, size_t n, void **out) {
    (void)be;
    *out = calloc(n ? n : 1, sizeof(float));
    if (!*out) return zp_fail(ZP_ERR_OOM, "cpu backend: cannot allocate %zu floats (%.1f MiB)", n, n * 4.0 / 1048576);
    return ZP_OK;
}
static zp_status check_type(zp_act_type type, const char *who) {
    if (type != ZP_ACT_F32 && type != ZP_ACT_OPERAND) return zp_fail(ZP_ERR_INVALID, "cpu %s: activation type %d is not a zp_act_type", who, (int)type);
    return ZP_OK;
}
static zp_status cpu_alloc(zp_backend *be, size_t n, zp_act_type type, void **out) {
    ZP_TRY(check_type(type, "alloc"));
    return cpu_alloc_cache(be, n, out);
}
static void cpu_release(zp_backend *be, void *buf) { (void)be; free(buf); }
static zp_status cpu_from_host(zp_backend *be, void *dst, zp_act_type type, const float *src, size_t off, size_t n) {
    (void)be;
    ZP_TRY(check_type(type, "from_host"));
    memcpy((float *)dst + off, src, n * sizeof(float));
    return ZP_OK;
}
static zp_status cpu_weight_upload(zp_backend *be, float *host, size_t n, void **out) {
    (void)be; (void)n;
    *out = host;
    return ZP_OK;
}
static zp_status cpu_to_host(zp_backend *be, float *dst, const void *src, zp_act_type type, size_t off, size_t n) {
    (void)be;
    ZP_TRY(check_type(type, "to_host"));
    memcpy(dst, (const float *)src + off, n * sizeof(float));
    return ZP_OK;
}

static zp_status cpu_rope_init(zp_backend *be, const float *inv_freq, int half_dim, float attention_factor) {
    cpu_ctx *c = CTX(be);
    c->rope_scale = attention_factor;
    free(c->inv_freq);
    c->inv_freq = malloc(sizeof(float) * (size_t)half_dim);
    ZP_CHECK_ALLOC(c->inv_freq);
    memcpy(c->inv_freq, inv_freq, sizeof(float) * (size_t)half_dim);
    c->half_dim = half_dim;
    return ZP_OK;
}

/* Stores the batch and precomputes cos/sin of each row's position (fp32, as HF: pos * inv_freq),
 * times the rope's attention factor (yarn). */
static zp_status cpu_set_batch(zp_backend *be, const zp_batch *b) {
    cpu_ctx *c = CTX(be);
    c->b = *b;
    if (!c->inv_freq) return ZP_OK;
    size_t need = (size_t)b->n_tokens * 2 * (size_t)c->half_dim;
    if (need > c->cos_sin_cap) {
        free(c->cos_sin);
        c->cos_sin = malloc(sizeof(float) * need);
        ZP_CHECK_ALLOC(c->cos_sin);
        c->cos_sin_cap = need;
    }
    for (int t = 0; t < b->n_tokens; t++) {
        float *cs = c->cos_sin + (size_t)t * 2 * (size_t)c->half_dim;
        for (int i = 0; i < c->half_dim; i++) {
            float ang = (float)b->positions[t] * c->inv_freq[i]; /* fp32 angle, its cos/sin rounded once (as torch) */
            cs[i] = (float)cos((double)ang) * c->rope_scale;
            cs[c->half_dim + i] = (float)sin((double)ang) * c->rope_scale;
        }
    }
    return ZP_OK;
}

/* ---------------------------------------------------------------- elementwise and norms */

static zp_status cpu_embed(zp_backend *be, void *out, const void *table, int H) {
    const zp_batch *b = &CTX(be)->b;
    float *o = out;
    const float *tab = table;
    for (int t = 0; t < b->n_tokens; t++) memcpy(o + (size_t)t * H, tab + (size_t)b->token_ids[t] * H, sizeof(float) * (size_t)H);
    return ZP_OK;
}

static void rmsnorm_row(float *o, const float *x, const float *w, int H, float eps) {
    float ss = 0.f;
    for (int i = 0; i < H; i++) ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)H + eps);
    for (int i = 0; i < H; i++) o[i] = w[i] * (x[i] * inv);
}

static zp_status cpu_rmsnorm(zp_backend *be, void *out, const void *x, const void *w, int rows, int H, float eps) {
    (void)be;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) rmsnorm_row((float *)out + (size_t)r * H, (const float *)x + (size_t)r * H, w, H, eps);
    return ZP_OK;
}

static zp_status cpu_add_rmsnorm(zp_backend *be, void *out, void *x, const void *y, const void *w, int rows, int H, float eps) {
    (void)be;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        float *xr = (float *)x + (size_t)r * H;
        const float *yr = (const float *)y + (size_t)r * H;
        for (int i = 0; i < H; i++) xr[i] += yr[i];
        rmsnorm_row((float *)out + (size_t)r * H, xr, w, H, eps);
    }
    return ZP_OK;
}

static zp_status cpu_add(zp_backend *be, void *x, const void *y, size_t n) {
    (void)be;
    float *a = x;
    const float *bb = y;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] += bb[i];
    return ZP_OK;
}

zp_status cpu_silu_mul(zp_backend *be, void *out, const void *gu, int T, int inter) {
    (void)be;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *g = (const float *)gu + (size_t)t * 2 * inter, *u = g + inter;
        float *o = (float *)out + (size_t)t * inter;
        for (int i = 0; i < inter; i++) o[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
    return ZP_OK;
}

static zp_status cpu_gather_rows(zp_backend *be, void *out, const void *x, int H) {
    const zp_batch *b = &CTX(be)->b;
    for (int i = 0; i < b->n_out; i++)
        memcpy((float *)out + (size_t)i * H, (const float *)x + (size_t)b->out_rows[i] * H, sizeof(float) * (size_t)H);
    return ZP_OK;
}

/* ---------------------------------------------------------------- matmul */

zp_status cpu_matmul(zp_backend *be, void *out, zp_act_type out_type, const void *x, const void *w, const void *bias, int M, int N,
                     int K) {
    (void)be;
    ZP_TRY(check_type(out_type, "matmul"));
    float *o = out;
#ifdef ZP_HAVE_CBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f, o, N);
#else
#pragma omp parallel for collapse(2) schedule(static)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float *xr = (const float *)x + (size_t)m * K, *wr = (const float *)w + (size_t)n * K;
            float acc = 0.f;
            for (int k = 0; k < K; k++) acc += xr[k] * wr[k];
            o[(size_t)m * N + n] = acc;
        }
#endif
    if (bias) {
        const float *bb = bias;
#pragma omp parallel for schedule(static)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) o[(size_t)m * N + n] += bb[n];
    }
    return ZP_OK;
}

/* ---------------------------------------------------------------- rope + kv store */

/* Rotate-halves (NeoX) RoPE of one head vector x[D] in place, cos/sin [2][D/2]. */
static void rope_head(float *x, const float *cs, int half) {
    for (int i = 0; i < half; i++) {
        float x1 = x[i], x2 = x[i + half], c = cs[i], s = cs[half + i];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
}

/* Token t's key of KV head h as qkv_rope_store stores it (row: its qkv row): normed when k_norm
 * is not NULL, rotated at its position; k [head_dim] fp32. */
static void key_row(const cpu_ctx *c, const zp_attn_dims *d, const float *row, const void *k_norm, int t, int h, float *k) {
    const int D = d->head_dim;
    memcpy(k, row + (size_t)(d->n_heads + h) * D, sizeof(float) * (size_t)D);
    if (k_norm) rmsnorm_row(k, k, k_norm, D, d->qk_norm_eps);
    rope_head(k, c->cos_sin + (size_t)t * 2 * c->half_dim, c->half_dim);
}

/* amax[2][Hkv]: max |k| (as stored: key_row) and max |v| of each KV head over the rows that
 * write a slot. */
static zp_status cpu_kv_amax(zp_backend *be, const zp_attn_dims *d, const void *qkv, const void *k_norm, float *amax) {
    cpu_ctx *c = CTX(be);
    const zp_batch *b = &c->b;
    const int D = d->head_dim, Hq = d->n_heads, Hkv = d->n_kv_heads, W = (Hq + 2 * Hkv) * D;
    if (c->half_dim * 2 != D) return zp_fail(ZP_ERR_INVALID, "cpu kv_amax: rope_init half_dim %d != D/2 (%d)", c->half_dim, D / 2);
    if (D > CPU_MAX_HEAD_DIM) return zp_fail(ZP_ERR_INVALID, "cpu kv_amax: head_dim %d above %d", D, CPU_MAX_HEAD_DIM);
    for (int i = 0; i < 2 * Hkv; i++) amax[i] = 0.f;
    for (int t = 0; t < b->n_tokens; t++) {
        if (b->slot_mapping[t] < 0) continue;
        const float *row = (const float *)qkv + (size_t)t * W;
        for (int h = 0; h < Hkv; h++) {
            float k[CPU_MAX_HEAD_DIM];
            key_row(c, d, row, k_norm, t, h, k);
            const float *v = row + (size_t)(Hq + Hkv + h) * D;
            for (int i = 0; i < D; i++) { /* NaN kept: fmaxf would drop it */
                const float ak = fabsf(k[i]), av = fabsf(v[i]);
                if (ak > amax[h] || isnan(ak)) amax[h] = ak;
                if (av > amax[Hkv + h] || isnan(av)) amax[Hkv + h] = av;
            }
        }
    }
    return ZP_OK;
}

static zp_status cpu_qkv_rope_store(zp_backend *be, const zp_attn_dims *d, const void *qkv, void *q_out,
                                    const void *q_norm, const void *k_norm, void *k_cache, void *v_cache, int layer) {
    cpu_ctx *c = CTX(be);
    const zp_batch view = zp_batch_layer(&c->b, layer), *b = &view; /* the layer's group's slots */
    const int D = d->head_dim, Hq = d->n_heads, Hkv = d->n_kv_heads, W = (Hq + 2 * Hkv) * D;
    char *kl = cpu_kv_layer(d, k_cache, layer), *vl = cpu_kv_layer(d, v_cache, layer);
    if (c->half_dim * 2 != D) return zp_fail(ZP_ERR_INVALID, "cpu qkv_rope_store: rope_init half_dim %d != D/2 (%d)", c->half_dim, D / 2);
    if (D > CPU_MAX_HEAD_DIM) return zp_fail(ZP_ERR_INVALID, "cpu qkv_rope_store: head_dim %d above %d", D, CPU_MAX_HEAD_DIM);
#pragma omp parallel for schedule(static)
    for (int t = 0; t < b->n_tokens; t++) {
        const float *row = (const float *)qkv + (size_t)t * W;
        const float *cs = c->cos_sin + (size_t)t * 2 * c->half_dim;
        float *q = (float *)q_out + (size_t)t * Hq * D;
        memcpy(q, row, sizeof(float) * (size_t)Hq * D);
        for (int h = 0; h < Hq; h++) {
            if (q_norm) rmsnorm_row(q + h * D, q + h * D, q_norm, D, d->qk_norm_eps);
            rope_head(q + h * D, cs, c->half_dim);
        }
        int slot = b->slot_mapping[t];
        if (slot < 0) continue;
        for (int h = 0; h < Hkv; h++) { /* each head's key normed and rotated in fp32, then stored */
            float k[CPU_MAX_HEAD_DIM];
            const size_t at = ((size_t)slot * Hkv + h) * D;
            key_row(c, d, row, k_norm, t, h, k);
            cpu_kv_store_row(d, kl, at, cpu_k_scale(d, layer, h), k);
            cpu_kv_store_row(d, vl, at, cpu_v_scale(d, layer, h), row + (size_t)(Hq + Hkv + h) * D);
        }
    }
    return ZP_OK;
}

/* ---------------------------------------------------------------- paged attention */

/* Row r of sequence s, head h: softmax(q.K^T * scale) V over physical KV [j0, n_vis), j0 the
 * start of the layer's window (0 without one), the head's sink logit in the denominator when the
 * layer has sinks (transformers' eager_attention_forward of gpt-oss: the sink a column of the
 * max and the sum, with no value). kc, vc: layer `layer`'s caches (cpu_kv_layer); tmp: head_dim
 * floats. */
static void attend_row(const zp_attn_dims *d, const zp_batch *b, int layer, int s, int r, int h, const float *q, const char *kc,
                       const char *vc, float *out, float *scores, float *tmp) {
    const int D = d->head_dim, Hkv = d->n_kv_heads, bs = d->block_size, kh = h / (d->n_heads / Hkv);
    const float ks = cpu_k_scale(d, layer, kh), vs = cpu_v_scale(d, layer, kh);
    const zp_head_runs hr = zp_batch_head_runs(b, d->n_layers, Hkv, s, layer);
    const size_t start = hr.run ? zp_head_start(&hr, kh) : 0;
    const int n_vis = b->seq_kv_len[s] - b->seq_q_len[s] + r + 1 + zp_head_delta(&hr, kh);
    const zp_attn_layer *al = zp_attn_layer_of(d, layer);
    const int j0 = al && al->window > 0 && n_vis > al->window ? n_vis - al->window : 0;
    const int *bt = b->block_tables + (size_t)s * b->max_blocks;
    const float sink = al && al->sinks ? ((const float *)al->sinks)[h] : -INFINITY;
    float mx = sink;
    for (int j = j0; j < n_vis; j++) {
        const float *k = cpu_kv_row(d, kc, zp_head_key_row(&hr, start, bt, bs, Hkv, kh, j) * D, ks, tmp);
        float dot = 0.f;
        for (int i = 0; i < D; i++) dot += q[i] * k[i];
        scores[j] = dot * d->scale;
        if (scores[j] > mx) mx = scores[j];
    }
    float sum = isinf(sink) ? 0.f : expf(sink - mx);
    for (int j = j0; j < n_vis; j++) { scores[j] = expf(scores[j] - mx); sum += scores[j]; }
    float inv = 1.0f / sum;
    memset(out, 0, sizeof(float) * (size_t)D);
    for (int j = j0; j < n_vis; j++) {
        const float *v = cpu_kv_row(d, vc, zp_head_key_row(&hr, start, bt, bs, Hkv, kh, j) * D, vs, tmp);
        float p = scores[j] * inv;
        for (int i = 0; i < D; i++) out[i] += p * v[i];
    }
}

static zp_status cpu_attention(zp_backend *be, const zp_attn_dims *d, void *out, const void *q, const void *k_cache,
                               const void *v_cache, int layer) {
    const zp_batch view = zp_batch_layer(&CTX(be)->b, layer), *b = &view; /* the layer's block-table view */
    const int D = d->head_dim, Hq = d->n_heads;
    const char *kl = cpu_kv_layer(d, k_cache, layer), *vl = cpu_kv_layer(d, v_cache, layer);
    int max_kv = 1;
    for (int s = 0; s < b->n_seqs; s++) {
        const zp_head_runs hr = zp_batch_head_runs(b, d->n_layers, d->n_kv_heads, s, layer);
        for (int g = 0; g < d->n_kv_heads; g++) {
            const int n = b->seq_kv_len[s] + zp_head_delta(&hr, g);
            max_kv = n > max_kv ? n : max_kv;
        }
    }
    int *row_seq = malloc(sizeof(int) * (size_t)(b->n_tokens ? b->n_tokens : 1));
    ZP_CHECK_ALLOC(row_seq);
    for (int s = 0; s < b->n_seqs; s++)
        for (int i = 0; i < b->seq_q_len[s]; i++) row_seq[b->seq_q_start[s] + i] = s;
    zp_status st = ZP_OK;
#pragma omp parallel
    {
        float *scores = malloc(sizeof(float) * ((size_t)max_kv + (size_t)D)); /* then a decoded row */
        if (!scores) {
#pragma omp critical
            st = zp_fail(ZP_ERR_OOM, "cpu attention: no memory for %d scores", max_kv);
        }
#pragma omp for collapse(2) schedule(dynamic, 4)
        for (int t = 0; t < b->n_tokens; t++)
            for (int h = 0; h < Hq; h++) {
                if (!scores) continue;
                int s = row_seq[t];
                attend_row(d, b, layer, s, t - b->seq_q_start[s], h, (const float *)q + ((size_t)t * Hq + h) * D, kl, vl,
                           (float *)out + ((size_t)t * Hq + h) * D, scores, scores + max_kv);
            }
        free(scores);
    }
    free(row_seq);
    return st;
}

/* ---------------------------------------------------------------- public API */

static void cpu_destroy(zp_backend *be) {
    cpu_ctx *c = CTX(be);
    free(c->inv_freq);
    free(c->cos_sin);
    free(c);
    free(be);
}

/* The median of t[0, n) (sorted in place). */
static double median_sorted(double *t, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    return t[n / 2];
}

/* 256 MiB memcpy, median of 5 after a warm-up copy (bytes read + written per second). */
static zp_status cpu_copy_bandwidth(zp_backend *be, double *bytes_per_s) {
    const size_t n = (size_t)256 << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) { free(a); free(b); return zp_fail(ZP_ERR_OOM, "copy bandwidth: no host memory for 512 MiB"); }
    memset(a, 1, n);
    memcpy(b, a, n);
    double t[5];
    for (int i = 0; i < 5; i++) {
        const double t0 = zp_now();
        memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
        t[i] = zp_now() - t0;
    }
    free(a);
    free(b);
    *bytes_per_s = 2.0 * (double)n / median_sorted(t, 5);
    return ZP_OK;
}

/* A 512-square fp32 product through cpu_matmul, median of 3 after a warm-up one. */
static zp_status cpu_matmul_rate(zp_backend *be, double *flops_per_s) {
    enum { N = 512 };
    float *x = malloc(sizeof(float) * N * N), *w = malloc(sizeof(float) * N * N), *o = malloc(sizeof(float) * N * N);
    zp_status s = x && w && o ? ZP_OK : zp_fail(ZP_ERR_OOM, "matmul rate: no host memory for 3 MiB");
    for (int i = 0; s == ZP_OK && i < N * N; i++) { x[i] = (float)(i % 7) * 0.125f; w[i] = (float)(i % 5) * 0.25f; }
    double t[3];
    for (int i = -1; s == ZP_OK && i < 3; i++) {
        const double t0 = zp_now();
        s = cpu_matmul(be, o, ZP_ACT_F32, x, w, NULL, N, N, N);
        if (i >= 0) t[i] = zp_now() - t0;
    }
    free(x);
    free(w);
    free(o);
    if (s != ZP_OK) return s;
    const double med = median_sorted(t, 3);
    *flops_per_s = 2.0 * N * N * (double)N / (med > 0 ? med : 1e-9);
    return ZP_OK;
}

static zp_status cpu_compress_wait(zp_backend *be) { (void)be; return ZP_OK; } /* the host op is synchronous */

zp_status zp_backend_cpu_create(int n_threads, zp_backend **out) {
    zp_backend *be = calloc(1, sizeof *be);
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) { free(be); free(c); return zp_fail(ZP_ERR_OOM, "cpu backend: out of memory"); }
#ifdef _OPENMP
    if (n_threads > 0) omp_set_num_threads(n_threads);
#endif
    c->n_threads = n_threads;
    be->name = "cpu";
    be->cache_elem_bytes = sizeof(float);
    be->kv_groups = 1;
    be->ctx = c;
    be->destroy = cpu_destroy;
    be->alloc = cpu_alloc;
    be->alloc_cache = cpu_alloc_cache;
    be->from_host = cpu_from_host;
    be->release = cpu_release;
    be->weight_upload = cpu_weight_upload;
    be->to_host = cpu_to_host;
    be->rope_init = cpu_rope_init;
    be->set_batch = cpu_set_batch;
    be->embed = cpu_embed;
    be->rmsnorm = cpu_rmsnorm;
    be->add = cpu_add;
    be->add_rmsnorm = cpu_add_rmsnorm;
    be->matmul = cpu_matmul;
    be->qkv_rope_store = cpu_qkv_rope_store;
    be->kv_amax = cpu_kv_amax;
    be->attn_prefill = cpu_attention;
    be->attn_decode = cpu_attention;
    be->attn_history = cpu_attn_history;
    be->silu_mul = cpu_silu_mul;
    be->gather_rows = cpu_gather_rows;
    be->moe = cpu_moe;
    be->query_store = cpu_query_store;
    be->query_read = cpu_query_read;
    be->key_gather = cpu_key_gather;
    be->score_read = cpu_score_read;
    be->kv_compact = cpu_kv_compact;
    be->key_gather_runs = cpu_key_gather_runs;
    be->score_read_runs = cpu_score_read_runs;
    be->kv_compact_runs = cpu_kv_compact_runs;
    be->head_runs = 1;
    be->compress = NULL; /* the compressor runs the host plan through the ops above (zp_compress_host) */
    be->compress_wait = cpu_compress_wait;
    be->copy_bandwidth = cpu_copy_bandwidth;
    be->matmul_rate = cpu_matmul_rate;
    *out = be;
    return ZP_OK;
}

zp_backend_options zp_backend_options_default(void) {
    zp_backend_options o;
    memset(&o, 0, sizeof o);
    return o;
}

#ifndef ZP_HAVE_CUDA
zp_status zp_backend_cuda_create(int device, int fp32, const zp_backend_options *opt, zp_backend **out) {
    (void)device;
    (void)fp32;
    (void)opt;
    *out = NULL;
    return zp_fail(ZP_ERR_UNSUPPORTED, "device cuda: this build has no CUDA backend (configure with nvcc present, ZIPAGE_CUDA=ON)");
}
#endif

zp_status zp_backend_create(const char *device, const char *precision, int n_threads, const zp_backend_options *opt, zp_backend **out) {
    int fp32 = 0;
    if (precision && strcmp(precision, "bf16") && !(fp32 = !strcmp(precision, "fp32")))
        return zp_fail(ZP_ERR_INVALID, "precision \"%s\" is not supported (bf16, fp32)", precision);
    if (!device || !strcmp(device, "cpu")) return zp_backend_cpu_create(n_threads, out); /* always fp32 */
    if (!strcmp(device, "cuda")) return zp_backend_cuda_create(0, fp32, opt, out);
    if (!strncmp(device, "cuda:", 5)) {
        char *end;
        long d = strtol(device + 5, &end, 10);
        if (*end || d < 0 || d > 1024) return zp_fail(ZP_ERR_INVALID, "device \"%s\": expected cuda:N", device);
        return zp_backend_cuda_create((int)d, fp32, opt, out);
    }
    return zp_fail(ZP_ERR_UNSUPPORTED, "device \"%s\" is not supported (cpu, cuda, cuda:N)", device);
}
