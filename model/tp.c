/* tp.c - see tp.h. */
#include "tp.h"

#include <stdio.h>

/* "1, 2, 4" - the sizes in [1, 64] that divide every one of the counts. */
static void even_sizes(const int *counts, int n, char *out, size_t cap) {
    size_t len = 0;
    out[0] = 0;
    for (int p = 1; p <= 64; p++) {
        int ok = 1;
        for (int i = 0; i < n; i++) ok &= counts[i] % p == 0;
        if (ok && len < cap) len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? ", " : "", p);
    }
}

zp_status zp_tp_shard_of(const zp_model_config *c, int size, int rank, zp_tp_shard *out) {
    if (size < 1 || size > 64) return zp_fail(ZP_ERR_INVALID, "tensor parallel size %d: expected 1 to 64", size);
    if (rank < 0 || rank >= size) return zp_fail(ZP_ERR_INVALID, "tensor parallel rank %d: expected 0 to %d", rank, size - 1);
    const int counts[3] = {c->n_kv_heads, c->n_heads, c->intermediate};
    const char *what[3] = {"key-value heads (num_key_value_heads; a rank holds whole KV heads)", "query heads (num_attention_heads)",
                           "intermediate rows (intermediate_size)"};
    for (int i = 0; i < 3; i++)
        if (counts[i] % size) {
            char sizes[256];
            even_sizes(counts, 3, sizes, sizeof sizes);
            return zp_fail(ZP_ERR_INVALID, "tensor parallel size %d: the model's %d %s do not split into %d equal parts; sizes that split this model: %s",
                           size, counts[i], what[i], size, sizes);
        }
    if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads)
        return zp_fail(ZP_ERR_INVALID, "tensor parallel: %d query heads are not groups of the %d key-value heads", c->n_heads, c->n_kv_heads);
    zp_tp_shard s = {.size = size, .rank = rank, .nq = c->n_heads / size, .nkv = c->n_kv_heads / size, .ni = c->intermediate / size};
    s.q0 = rank * s.nq;
    s.kv0 = rank * s.nkv;
    s.i0 = rank * s.ni;
    *out = s;
    return ZP_OK;
}

zp_model_config zp_tp_shard_config(const zp_model_config *c, const zp_tp_shard *s) {
    zp_model_config r = *c;
    r.n_heads = s->nq;
    r.n_kv_heads = s->nkv;
    r.intermediate = s->ni;
    return r;
}
