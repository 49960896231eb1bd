/* compress_cpu.c - the CPU backend's compression ops: query-cache store/read, key and score
 * gathers through a block table, and compaction of K, V and scores (position order, or the
 * order a policy gives: R-KV's score order).
 * Plain loops (memcpy per token and head); part of the fp32 reference backend. */
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "rope.h"

#define SLOT(table, t, bs) ((size_t)(table)[(t) / (bs)] * (size_t)(bs) + (size_t)((t) % (bs)))

zp_status cpu_query_store(zp_backend *be, const zp_attn_dims *d, const void *q, void *qcache, int layer) {
    const zp_batch *b = cpu_batch(be);
    const size_t row = (size_t)d->n_heads * d->head_dim, layer_off = (size_t)layer * d->n_qslots * d->window * row;
    for (int i = 0; i < b->n_qstore; i++) {
        if (b->qstore_slots[i] < 0 || b->qstore_slots[i] >= d->n_qslots * d->window)
            return zp_fail(ZP_ERR_INVALID, "query_store: slot %d outside [0, %d)", b->qstore_slots[i], d->n_qslots * d->window);
        memcpy((float *)qcache + layer_off + (size_t)b->qstore_slots[i] * row, (const float *)q + (size_t)b->qstore_rows[i] * row,
               sizeof(float) * row);
    }
    return ZP_OK;
}

zp_status cpu_query_read(zp_backend *be, const zp_attn_dims *d, const void *qcache, int layer, int qid, float *out) {
    const size_t row = (size_t)d->n_heads * d->head_dim, n = (size_t)d->window * row;
    memcpy(out, (const float *)qcache + ((size_t)layer * d->n_qslots + (size_t)qid) * n, sizeof(float) * n);
    return ZP_OK;
}

zp_status cpu_key_gather_runs(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n,
                              const zp_head_runs *runs, int stride, float *out) {
    (void)be;
    const int D = d->head_dim, Hkv = d->n_kv_heads, bs = d->block_size;
    const char *kl = cpu_kv_layer(d, k_cache, layer);
    for (int g = 0; g < Hkv; g++) { /* dequantized in place when the cache is fp8 */
        const int m = n + zp_head_delta(runs, g);
        const size_t start = runs && runs->run ? zp_head_start(runs, g) : 0;
        if (m > stride) return zp_fail(ZP_ERR_INVALID, "key_gather: head %d holds %d tokens, above the stride %d", g, m, stride);
        for (int t = 0; t < m; t++) {
            float *o = out + ((size_t)g * stride + t) * D;
            const float *k = cpu_kv_row(d, kl, zp_head_key_row(runs, start, table, bs, Hkv, g, t) * D, cpu_k_scale(d, layer, g), o);
            if (k != o) memcpy(o, k, sizeof(float) * (size_t)D);
        }
    }
    return ZP_OK;
}

zp_status cpu_key_gather(zp_backend *be, const zp_attn_dims *d, const void *k_cache, int layer, const int *table, int n, float *out) {
    return cpu_key_gather_runs(be, d, k_cache, layer, table, n, NULL, n, out);
}

zp_status cpu_score_read_runs(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n,
                              const zp_head_runs *runs, int stride, float *out) {
    (void)be;
    const int Hkv = d->n_kv_heads, bs = d->block_size;
    const float *sc = (const float *)score_cache + (size_t)zp_kv_row(d, layer) * d->num_blocks * bs * Hkv;
    for (int g = 0; g < Hkv; g++) {
        const int m = n + zp_head_delta(runs, g);
        const size_t start = runs && runs->run ? zp_head_start(runs, g) : 0;
        if (m > stride) return zp_fail(ZP_ERR_INVALID, "score_read: head %d holds %d tokens, above the stride %d", g, m, stride);
        for (int t = 0; t < m; t++) out[(size_t)g * stride + t] = sc[zp_head_key_row(runs, start, table, bs, Hkv, g, t)];
    }
    return ZP_OK;
}

zp_status cpu_score_read(zp_backend *be, const zp_attn_dims *d, const void *score_cache, int layer, const int *table, int n, float *out) {
    return cpu_score_read_runs(be, d, score_cache, layer, table, n, NULL, n, out);
}

/* Rewrites positions [0, k) of head g's target so that position i holds the kept token
 * order[i] (they were compacted in position order: token t sits at pos[t], its rank among the
 * kept). Stages the k rows in host memory first (in place, any permutation is safe). */
static zp_status permute_head(const zp_attn_dims *d, char *kc, char *vc, float *sc, const int *dst, int g, int n, const uint8_t *keep,
                              const int *order) {
    const int D = d->head_dim, Hkv = d->n_kv_heads, bs = d->block_size;
    const size_t row = cpu_kv_elem(d) * (size_t)D; /* bytes of a row, moved as they are */
    int k = 0;
    int *pos = malloc(sizeof(int) * (size_t)n);
    if (!pos) return zp_fail(ZP_ERR_OOM, "kv_compact: no memory to order %d tokens", n);
    for (int t = 0; t < n; t++) pos[t] = keep[t] ? k++ : -1;
    char *tmp = malloc((size_t)2 * k * row + sizeof(float) * (size_t)k);
    if (!tmp) { free(pos); return zp_fail(ZP_ERR_OOM, "kv_compact: no memory to order %d tokens", k); }
    char *tk = tmp, *tv = tmp + (size_t)k * row;
    float *ts = (float *)(tmp + (size_t)2 * k * row);
    for (int i = 0; i < k; i++) {
        const size_t at = SLOT(dst, i, bs) * Hkv + g;
        memcpy(tk + (size_t)i * row, kc + at * row, row);
        memcpy(tv + (size_t)i * row, vc + at * row, row);
        ts[i] = sc ? sc[at] : 0.f;
    }
    zp_status st = ZP_OK;
    for (int i = 0; i < k && st == ZP_OK; i++) {
        const int t = order[i], j = t >= 0 && t < n ? pos[t] : -1;
        if (j < 0) { st = zp_fail(ZP_ERR_INVALID, "kv_compact: order entry %d (token %d) is not a kept token", i, t); break; }
        const size_t at = SLOT(dst, i, bs) * Hkv + g;
        memcpy(kc + at * row, tk + (size_t)j * row, row);
        memcpy(vc + at * row, tv + (size_t)j * row, row);
        if (sc) sc[at] = ts[j];
    }
    free(tmp);
    free(pos);
    return st;
}

zp_status cpu_kv_compact(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                         const int *src, int n, const int *dst, const uint8_t *keep, const float *scores, const int *order, int shift) {
    const int D = d->head_dim, Hkv = d->n_kv_heads, bs = d->block_size;
    const float *inv_freq = shift ? cpu_rope_frequencies(be, D) : NULL;
    if (shift && order) return zp_fail(ZP_ERR_INVALID, "kv_compact: a position shift needs position order (an order was given)");
    if (shift && !inv_freq) return zp_fail(ZP_ERR_INVALID, "kv_compact: a position shift needs the rope frequencies of head_dim %d (rope_init)", D);
    char *kc = cpu_kv_layer(d, k_cache, layer), *vc = cpu_kv_layer(d, v_cache, layer);
    float *sc = score_cache ? (float *)score_cache + (size_t)zp_kv_row(d, layer) * d->num_blocks * bs * Hkv : NULL;
    if (inv_freq && D > CPU_MAX_HEAD_DIM) return zp_fail(ZP_ERR_INVALID, "kv_compact: head_dim %d above %d", D, CPU_MAX_HEAD_DIM);
    for (int g = 0; g < Hkv; g++) {
        const float ks = cpu_k_scale(d, layer, g);
        int i = 0; /* next target position; i <= t always, so in-place is safe */
        for (int t = 0; t < n; t++) {
            if (!keep[(size_t)g * n + t]) continue;
            size_t from = SLOT(src, t, bs) * Hkv + g, to = SLOT(dst, i, bs) * Hkv + g;
            if (from != to) {
                cpu_kv_move_row(d, kc, to * D, from * D);
                cpu_kv_move_row(d, vc, to * D, from * D);
            }
            if (inv_freq) { /* an fp8 key: decoded, re-rotated, rounded again */
                float k[CPU_MAX_HEAD_DIM];
                const float *r = cpu_kv_row(d, kc, to * D, ks, k);
                if (r != k) memcpy(k, r, sizeof(float) * (size_t)D);
                zp_rope_shift_row(k, inv_freq, D / 2, t, i);
                cpu_kv_store_row(d, kc, to * D, ks, k);
            }
            if (sc && scores) sc[to] = scores[(size_t)g * n + t];
            i++;
        }
        if (order) ZP_TRY(permute_head(d, kc, vc, sc && scores ? sc : NULL, dst, g, n, keep + (size_t)g * n, order + (size_t)g * n));
    }
    return ZP_OK;
}

/* Head runs: every head's kept K/V rows (and scores) staged in host memory first, then written
 * as consecutive runs of cells of dst (kept[h] cells at the sum of the kept before head h). The
 * rows move as they are (an fp8 row keeps its bytes and its head's scale). */
zp_status cpu_kv_compact_runs(zp_backend *be, const zp_attn_dims *d, void *k_cache, void *v_cache, void *score_cache, int layer,
                              const int *src, int n, const zp_head_runs *runs, int stride, const int *dst, const uint8_t *keep,
                              const float *scores, const int *order) {
    (void)be;
    const int D = d->head_dim, Hkv = d->n_kv_heads, bs = d->block_size;
    const size_t row = cpu_kv_elem(d) * (size_t)D, per = (size_t)bs * (size_t)Hkv;
    char *kc = cpu_kv_layer(d, k_cache, layer), *vc = cpu_kv_layer(d, v_cache, layer);
    float *sc = score_cache ? (float *)score_cache + (size_t)zp_kv_row(d, layer) * d->num_blocks * bs * Hkv : NULL;
    size_t total = 0;
    for (int g = 0; g < Hkv; g++) {
        const int m = n + zp_head_delta(runs, g);
        if (m > stride) return zp_fail(ZP_ERR_INVALID, "kv_compact: head %d holds %d tokens, above the stride %d", g, m, stride);
        for (int t = 0; t < m; t++) total += keep[(size_t)g * stride + t] != 0;
    }
    char *tk = malloc(2 * (total ? total : 1) * row + sizeof(float) * (total ? total : 1));
    int *pos = malloc(sizeof(int) * (size_t)(stride > 0 ? stride : 1));
    if (!tk || !pos) { free(tk); free(pos); return zp_fail(ZP_ERR_OOM, "kv_compact: no memory to stage %zu rows", total); }
    char *tv = tk + total * row;
    float *ts = (float *)(tv + total * row);
    zp_status st = ZP_OK;
    size_t i = 0;
    for (int g = 0; g < Hkv && st == ZP_OK; g++) { /* staged in the order compaction writes them */
        const int m = n + zp_head_delta(runs, g);
        const size_t start = runs && runs->run ? zp_head_start(runs, g) : 0;
        const uint8_t *kg = keep + (size_t)g * stride;
        int k = 0;
        for (int t = 0; t < m; t++) pos[t] = kg[t] ? k++ : -1;
        for (int j = 0, next = 0; j < k; j++, i++) {
            int t;
            if (order) {
                t = order[(size_t)g * stride + j];
                if (t < 0 || t >= m || pos[t] < 0) { st = zp_fail(ZP_ERR_INVALID, "kv_compact: order entry %d of head %d (token %d) is not kept", j, g, t); break; }
            } else { /* position order: the next kept token */
                for (t = next; pos[t] < 0; t++) {}
                next = t + 1;
            }
            const size_t at = zp_head_key_row(runs, start, src, bs, Hkv, g, t);
            memcpy(tk + i * row, kc + at * row, row);
            memcpy(tv + i * row, vc + at * row, row);
            ts[i] = scores ? scores[(size_t)g * stride + t] : 0.f;
        }
    }
    for (size_t c = 0; c < total && st == ZP_OK; c++) {
        const size_t at = (size_t)dst[c / per] * per + c % per;
        memcpy(kc + at * row, tk + c * row, row);
        memcpy(vc + at * row, tv + c * row, row);
        if (sc && scores) sc[at] = ts[c];
    }
    free(tk);
    free(pos);
    return st;
}
