/* cpu_ops.h - private to the CPU backend: the ops split out of backend_cpu.c. */
#ifndef ZP_CPU_OPS_H
#define ZP_CPU_OPS_H

#include <stdint.h>

#include "../backend.h"

const zp_batch *cpu_batch(zp_backend *be);
/* rope_init's inv_freq [head_dim / 2], NULL when none was given for that width. */
const float *cpu_rope_frequencies(zp_backend *be, int head_dim);
zp_status cpu_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer);
zp_status cpu_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out);
zp_status cpu_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out);
zp_status cpu_attn_history(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache, void *stats,
                           int layer);
zp_status cpu_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out);
zp_status cpu_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                         const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift);

#endif
