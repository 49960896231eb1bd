/* trig_calibrate.c - see trig_calibrate.h. */
#include "trig_calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rope.h"

typedef struct {
    const int *positions;  /* of the chunk's rows */
    const float *inv_freq; /* [F] */
    double factor;         /* RoPE's attention factor (in the rotated query) */
    float *q;              /* [T][Hq][D] host copy */
    double *re, *im, *abs; /* [L][Hq][F] sums */
} calib;

/* The rotated queries of layer l back to before RoPE, added into the sums. */
static zp_status take_queries(void *ctx, zp_model *m, int l, int T) {
    calib *c = ctx;
    const int Hq = m->cfg.n_heads, D = m->cfg.head_dim, F = D / 2;
    ZP_TRY(m->be->to_host(m->be, c->q, m->q, ZP_ACT_F32, 0, (size_t)T * Hq * D));
    for (int t = 0; t < T; t++)
        for (int f = 0; f < F; f++) {
            const double a = (double)c->positions[t] * (double)c->inv_freq[f], cs = cos(a), sn = sin(a), g = c->factor;
            for (int h = 0; h < Hq; h++) {
                const float *x = c->q + ((size_t)t * Hq + h) * D;
                const double x1 = ((double)x[f] * cs + (double)x[f + F] * sn) / g,
                             x2 = ((double)x[f + F] * cs - (double)x[f] * sn) / g;
                const size_t at = ((size_t)l * Hq + h) * F + f;
                c->re[at] += x1;
                c->im[at] += x2;
                c->abs[at] += sqrt(x1 * x1 + x2 * x2);
            }
        }
    return ZP_OK;
}

/* Tokens [s, e) of the sequence as one prefill chunk (slot = position, blocks in order). */
static zp_status run_chunk(zp_model *m, zp_kv_storage *kv, const int *ids, int s, int e, int *positions,
                           const int *table, int max_blocks) {
    for (int i = 0; i < e - s; i++) positions[i] = s + i;
    zp_batch_one one;
    zp_batch_one_prefill(&one, ids + s, positions, positions, e - s, e, table, max_blocks);
    return zp_model_forward(m, &one.b, kv, NULL);
}

zp_status zp_trig_calibrate(zp_model *m, const int *ids, int n, int chunk, zp_trig_stats *out) {
    memset(out, 0, sizeof *out);
    const zp_model_config *mc = &m->cfg;
    if (n < 1 || chunk < 1) return zp_fail(ZP_ERR_INVALID, "calibrate: %d tokens in chunks of %d", n, chunk);
    if (n > mc->max_pos)
        return zp_fail(ZP_ERR_INVALID, "calibrate: %d tokens exceed the model's %d positions", n, mc->max_pos);
    const int L = mc->n_layers, Hq = mc->n_heads, D = mc->head_dim, F = D / 2, bs = 16, nb = (n + bs - 1) / bs;
    const size_t cells = (size_t)L * Hq * F;
    calib c = {.q = malloc(sizeof(float) * (size_t)chunk * Hq * D),
               .re = calloc(cells, sizeof(double)),
               .im = calloc(cells, sizeof(double)),
               .abs = calloc(cells, sizeof(double))};
    float *inv = malloc(sizeof(float) * (size_t)F), factor;
    int *positions = malloc(sizeof(int) * (size_t)chunk), *table = malloc(sizeof(int) * (size_t)nb);
    zp_kv_storage kv = {0};
    zp_status st =
        c.q && c.re && c.im && c.abs && inv && positions && table ? ZP_OK : zp_fail(ZP_ERR_OOM, "calibrate: no memory");
    if (st == ZP_OK) {
        zp_rope_frequencies(&mc->rope, D, inv, &factor);
        c.inv_freq = inv, c.factor = factor, c.positions = positions;
        for (int i = 0; i < nb; i++) table[i] = i;
        st = zp_model_kv_alloc(m, nb, bs, &kv);
    }
    m->q_hook = take_queries, m->q_hook_ctx = &c;
    for (int s = 0; st == ZP_OK && s < n; s += chunk)
        st = run_chunk(m, &kv, ids, s, s + chunk < n ? s + chunk : n, positions, table, nb);
    m->q_hook = NULL, m->q_hook_ctx = NULL;
    if (kv.k) zp_model_kv_free(m, &kv);
    zp_trig_stats s = {.n_layers = L, .n_heads = Hq, .half = F};
    if (st == ZP_OK) {
        s.mean_re = malloc(sizeof(float) * cells), s.mean_im = malloc(sizeof(float) * cells),
        s.abs_mean = malloc(sizeof(float) * cells);
        if (!s.mean_re || !s.mean_im || !s.abs_mean) st = zp_fail(ZP_ERR_OOM, "calibrate: no memory");
    }
    for (size_t i = 0; st == ZP_OK && i < cells; i++) {
        s.mean_re[i] = (float)(c.re[i] / n), s.mean_im[i] = (float)(c.im[i] / n), s.abs_mean[i] = (float)(c.abs[i] / n);
    }
    free(c.q), free(c.re), free(c.im), free(c.abs), free(inv), free(positions), free(table);
    if (st != ZP_OK) {
        zp_trig_stats_free(&s);
        return st;
    }
    *out = s;
    return ZP_OK;
}
