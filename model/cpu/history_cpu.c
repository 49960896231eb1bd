/* history_cpu.c - the CPU reference of the backend op attn_history (backend.h): every batch
 * row's softmax attention over the keys it sees, summed per key into the fp32 score cache
 * (the running heavy-hitter score of H2O, counting every query, prompt rows included).
 * Two passes, as the CUDA twin (model/cuda/history_cuda.cu): each row's softmax maximum and
 * 1 / sum, then per key the sum over the rows that see it and the heads of its group. It does
 * not evict or select: compression reads the sums (policies/h2o.c).
 * Complexity: O(q_len * kv_len * Hq * D) per sequence, twice.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_ops.h"

static float dot(const float *a, const float *b, int D) {
    float s = 0.f;
    for (int i = 0; i < D; i++) s += a[i] * b[i];
    return s;
}

/* stats[t][h] = (max_j z, 1 / sum_j exp(z - max)), z = q . k_j * scale over the row's keys. */
static void row_stats(const zp_attn_dims *d, const zp_batch *b, int layer, int s, const float *q, const char *kc, float *stats) {
    const int D = d->head_dim, Hq = d->n_heads, Hkv = d->n_kv_heads, G = Hq / Hkv, bs = d->block_size;
    const int *bt = b->block_tables + (size_t)s * b->max_blocks, q0 = b->seq_q_start[s], base = b->seq_kv_len[s] - b->seq_q_len[s];
    const zp_head_runs hr = zp_batch_head_runs(b, d->n_layers, Hkv, s, layer);
    for (int i = 0; i < b->seq_q_len[s]; i++)
        for (int h = 0; h < Hq; h++) {
            const float *qh = q + ((size_t)(q0 + i) * Hq + h) * D;
            const size_t start = hr.run ? zp_head_start(&hr, h / G) : 0;
            float mx = -INFINITY, sum = 0.f, tmp[CPU_MAX_HEAD_DIM];
            for (int j = 0; j <= base + zp_head_delta(&hr, h / G) + i; j++) {
                const size_t at = zp_head_key_row(&hr, start, bt, bs, Hkv, h / G, j);
                const float z = dot(qh, cpu_kv_row(d, kc, at * D, cpu_k_scale(d, layer, h / G), tmp), D) * d->scale;
                if (z > mx) { sum *= expf(mx - z); mx = z; }
                sum += expf(z - mx);
            }
            stats[((size_t)(q0 + i) * Hq + h) * 2] = mx;
            stats[((size_t)(q0 + i) * Hq + h) * 2 + 1] = 1.0f / sum;
        }
}

/* sc[slot(j)][g] for every key j of sequence s: (new key ? 0 : stored) + sum / G. */
static void key_sums(const zp_attn_dims *d, const zp_batch *b, int layer, int s, int g, const float *q, const char *kc, const float *stats,
                     float *sc) {
    const int D = d->head_dim, Hq = d->n_heads, Hkv = d->n_kv_heads, G = Hq / Hkv, bs = d->block_size;
    const zp_head_runs hr = zp_batch_head_runs(b, d->n_layers, Hkv, s, layer);
    const size_t start = hr.run ? zp_head_start(&hr, g) : 0;
    const int *bt = b->block_tables + (size_t)s * b->max_blocks, q0 = b->seq_q_start[s];
    const int base = b->seq_kv_len[s] - b->seq_q_len[s] + zp_head_delta(&hr, g), n = b->seq_kv_len[s] + zp_head_delta(&hr, g);
    for (int j = 0; j < n; j++) {
        float tmp[CPU_MAX_HEAD_DIM];
        const size_t at = zp_head_key_row(&hr, start, bt, bs, Hkv, g, j);
        const float *k = cpu_kv_row(d, kc, at * D, cpu_k_scale(d, layer, g), tmp);
        float acc = 0.f;
        for (int i = j > base ? j - base : 0; i < b->seq_q_len[s]; i++)
            for (int h = g * G; h < (g + 1) * G; h++) {
                const float *st = stats + ((size_t)(q0 + i) * Hq + h) * 2;
                acc += expf(dot(q + ((size_t)(q0 + i) * Hq + h) * D, k, D) * d->scale - st[0]) * st[1];
            }
        float *out = sc + at;
        *out = (j >= base ? 0.f : *out) + acc / (float)G;
    }
}

zp_status cpu_attn_history(zp_backend *be, const zp_attn_dims *d, const void *q, const void *k_cache, void *score_cache, void *stats,
                           int layer) {
    const zp_batch view = zp_batch_layer(cpu_batch(be), layer), *b = &view; /* the layer's block-table view */
    const int Hkv = d->n_kv_heads;
    const char *kc = cpu_kv_layer(d, k_cache, layer);
    float *sc = (float *)score_cache + (size_t)zp_kv_row(d, layer) * d->num_blocks * d->block_size * Hkv;
    if (d->head_dim > CPU_MAX_HEAD_DIM) return zp_fail(ZP_ERR_INVALID, "attn_history: head_dim %d above %d", d->head_dim, CPU_MAX_HEAD_DIM);
    if (zp_attn_layer_of(d, layer))
        return zp_fail(ZP_ERR_UNSUPPORTED, "attn_history: layer %d has a sliding window or sinks, which the history does not weigh", layer);
#pragma omp parallel for schedule(dynamic, 1)
    for (int s = 0; s < b->n_seqs; s++) row_stats(d, b, layer, s, (const float *)q, kc, (float *)stats);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int s = 0; s < b->n_seqs; s++)
        for (int g = 0; g < Hkv; g++) key_sums(d, b, layer, s, g, (const float *)q, kc, (const float *)stats, sc);
    return ZP_OK;
}
