/* cpu_ops.h - private to the CPU backend: the ops split out of backend_cpu.c. */
#ifndef ZP_CPU_OPS_H
#define ZP_CPU_OPS_H

#include <stdint.h>
#include <string.h>

#include "../backend.h"
#include "../dtype.h" /* zp_f32_to_e4m3, zp_e4m3_to_f32 */

enum { CPU_MAX_HEAD_DIM = 1024 }; /* a key row rotated on the stack */

/* The K/V cache's element type (backend.h zp_attn_dims.kv_fp8): fp32 here, or E4M3 bytes.
 * Offsets below count elements from the layer's base (cpu_kv_layer). */
static inline size_t cpu_kv_elem(const zp_attn_dims *d) { return d->kv_fp8 ? 1 : sizeof(float); }
static inline char *cpu_kv_layer(const zp_attn_dims *d, const void *cache, int layer) {
    return (char *)cache + (size_t)zp_kv_row(d, layer) * d->num_blocks * d->block_size * d->n_kv_heads * d->head_dim * cpu_kv_elem(d);
}
/* The scale of KV head g of layer `layer` (backend.h: [n_layers][n_kv_heads]). */
static inline float cpu_k_scale(const zp_attn_dims *d, int layer, int g) {
    return d->kv_fp8 && d->k_scale ? d->k_scale[(size_t)layer * d->n_kv_heads + g] : 1.0f;
}
static inline float cpu_v_scale(const zp_attn_dims *d, int layer, int g) {
    return d->kv_fp8 && d->v_scale ? d->v_scale[(size_t)layer * d->n_kv_heads + g] : 1.0f;
}
/* Row off (head_dim elements) as fp32: the cache's memory itself, or its bytes x scale decoded into tmp. */
static inline const float *cpu_kv_row(const zp_attn_dims *d, const char *layer_base, size_t off, float scale, float *tmp) {
    if (!d->kv_fp8) return (const float *)layer_base + off;
    const uint8_t *b = (const uint8_t *)layer_base + off;
    for (int i = 0; i < d->head_dim; i++) tmp[i] = zp_e4m3_to_f32(b[i]) * scale;
    return tmp;
}
/* Stores row x at off: copied, or each value / scale rounded to E4M3 (saturating). */
static inline void cpu_kv_store_row(const zp_attn_dims *d, char *layer_base, size_t off, float scale, const float *x) {
    if (!d->kv_fp8) { memcpy((float *)layer_base + off, x, sizeof(float) * (size_t)d->head_dim); return; }
    uint8_t *b = (uint8_t *)layer_base + off;
    for (int i = 0; i < d->head_dim; i++) b[i] = zp_f32_to_e4m3(x[i] / scale);
}
/* Moves row `from` to row `to` (the element type's bytes). */
static inline void cpu_kv_move_row(const zp_attn_dims *d, char *layer_base, size_t to, size_t from) {
    const size_t es = cpu_kv_elem(d);
    memmove(layer_base + to * es, layer_base + from * es, es * (size_t)d->head_dim);
}

const zp_batch *cpu_batch(zp_backend *be);
zp_status cpu_matmul(zp_backend *be, void *out, zp_act_type out_type, const void *x, const void *w, const void *bias, int M, int N,
                     int K);
zp_status cpu_silu_mul(zp_backend *be, void *out, const void *gu, int T, int inter);
zp_status cpu_moe(zp_backend *be, void *out, const void *x, const zp_moe_weights *w, const zp_moe_dims *m, int T);
/* rope_init's inv_freq [head_dim / 2], NULL when none was given for that width. */
const float *cpu_rope_frequencies(zp_backend *be, int head_dim);
zp_status cpu_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer);
zp_status cpu_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out);
zp_status cpu_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out);
zp_status cpu_attn_history(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache, void *stats,
                           int layer);
zp_status cpu_key_gather_runs(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n,
                              const zp_head_runs *runs, int stride, float *out);
zp_status cpu_score_read_runs(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n,
                              const zp_head_runs *runs, int stride, float *out);
zp_status cpu_kv_compact_runs(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                              const int *src, int n, const zp_head_runs *runs, int stride, const int *dst, const uint8_t *keep,
                              const float *scores, const int *order);
zp_status cpu_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out);
zp_status cpu_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                         const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift);

#endif
