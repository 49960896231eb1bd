/* engine_memory.c - sizes the KV pool of a device backend from its free memory, as vLLM's
 * gpu_memory_utilization: a warm-up forward at the largest step the scheduler can build
 * (max_num_batched_tokens rows, in sequences of 1,024 tokens so attention stays cheap;
 * max_num_seqs logits rows) grows every activation and library
 * workspace to its peak; what is then in use, plus the compression state (query cache for
 * max_num_seqs slots, per-block score cache, the device compression work area), is subtracted
 * from gpu_memory_utilization x total, and the rest becomes KV blocks. The CPU pool is sized
 * in engine.c (a token count). kv_pool_bytes sizes the pool of any backend so that the KV
 * state of every policy (K/V blocks, and for an evicting one its score cache and query slots)
 * takes the same memory. With tensor parallelism every rank sizes its own device and the pool
 * has the fewest blocks of any rank.
 */
#include <stdlib.h>

#include "compress.h"
#include "engine_internal.h"

#define WARM_SEQ 1024 /* tokens per warm-up sequence: T rows, attention cost bounded */

zp_status engine_warm_up(zp_model *m, int T, int n_out, int bs) {
    const int S = (T + WARM_SEQ - 1) / WARM_SEQ, maxb = (WARM_SEQ + bs - 1) / bs, nbw = S * maxb;
    zp_kv_storage kv;
    ZP_TRY(zp_model_kv_alloc(m, nbw, bs, &kv));
    int *ids = calloc((size_t)T, sizeof(int)), *pos = malloc(sizeof(int) * (size_t)T * 2), *slots = pos + T;
    int *seq = malloc(sizeof(int) * (size_t)S * 3), *bt = malloc(sizeof(int) * (size_t)nbw);
    int *out_rows = malloc(sizeof(int) * (size_t)(n_out > 0 ? n_out : 1)); /* n_out 0: a rank without the LM head */
    zp_status s = ZP_OK;
    if (!ids || !pos || !seq || !bt || !out_rows) s = zp_fail(ZP_ERR_OOM, "memory sizing: no host memory for a %d-token warm-up", T);
    if (s == ZP_OK) {
        int *q0 = seq, *len = seq + S, *kvl = seq + 2 * S;
        for (int b = 0; b < nbw; b++) bt[b] = b; /* sequence k owns blocks [k*maxb, (k+1)*maxb) */
        for (int k = 0; k < S; k++) {
            q0[k] = k * WARM_SEQ;
            len[k] = kvl[k] = T - q0[k] < WARM_SEQ ? T - q0[k] : WARM_SEQ;
        }
        for (int t = 0; t < T; t++) {
            const int k = t / WARM_SEQ, i = t % WARM_SEQ;
            pos[t] = i;
            slots[t] = bt[k * maxb + i / bs] * bs + i % bs;
        }
        for (int i = 0; i < n_out; i++) out_rows[i] = (int)((int64_t)i * T / n_out);
        zp_batch b = {.n_tokens = T, .n_seqs = S, .token_ids = ids, .positions = pos, .slot_mapping = slots, .seq_q_start = q0,
                      .seq_q_len = len, .seq_kv_len = kvl, .block_tables = bt, .max_blocks = maxb, .n_out = n_out, .out_rows = out_rows,
                      .is_prefill = 1, .n_views = 1};
        s = zp_model_forward(m, &b, &kv, NULL);
    }
    free(ids); free(pos); free(seq); free(bt); free(out_rows);
    zp_model_kv_free(m, &kv);
    return s;
}

/* Bytes per KV block (with the score cache of a policy that keeps history) and per query slot
 * (0 without an evicting policy): K/V in their element size (fp8: 1 byte), queries in the backend's
 * cache element size, scores in fp32. */
static void kv_state_costs(const zp_engine *e, size_t *per_block, size_t *per_slot) {
    const zp_model_config *mc = &e->model->cfg;
    const zp_kv_geometry *g = &e->plan.geo;
    const int history = e->plan.stores_history; /* its parameters decide, e.g. use_global */
    const size_t es = (size_t)e->be->cache_elem_bytes, L = (size_t)mc->n_layers, bs = (size_t)g->block_size;
    const size_t rows = (size_t)e->model->n_kv_rows; /* the score cache has the K/V's rows */
    *per_block = zp_model_kv_block_bytes(mc, g->block_size, engine_kv_elem_bytes(e)) + (history ? rows * bs * mc->n_kv_heads * sizeof(float) : 0);
    *per_slot = g->evicts ? L * (size_t)g->window * mc->n_heads * mc->head_dim * es : 0;
}

/* One rank's blocks: its warm-up (every rank at once: the forward sums over the group), then
 * what its device's memory holds. */
static zp_status rank_num_blocks(zp_engine *e, int r, engine_rank *k, void *arg) {
    const zp_engine_config *c = &e->cfg;
    const double util = c->gpu_memory_utilization > 0 ? c->gpu_memory_utilization : 0.9;
    const int T = c->max_num_batched_tokens, n_out = c->max_num_seqs < T ? c->max_num_seqs : T;
    ZP_TRY(engine_warm_up(k->model, T, r == 0 ? n_out : 0, c->block_size));
    size_t free_b = 0, total_b = 0;
    ZP_TRY(k->be->mem_info(k->be, &free_b, &total_b));
    size_t per_block, per_slot;
    kv_state_costs(e, &per_block, &per_slot); /* every rank's share has the same shape */
    const int evicts = per_slot > 0;
    const size_t slots = e->plan.geo.prompt_only ? (size_t)engine_query_slots(e, 0) : (size_t)c->max_num_seqs;
    const size_t reserve = evicts ? per_slot * slots + ZP_COMPRESS_DEVICE_BYTES : 0;
    const double avail = util * (double)total_b - (double)(total_b - free_b) - (double)reserve;
    const double need = (double)per_block * (e->plan.geo.cap_blocks > 0 ? e->plan.geo.cap_blocks : 1);
    if (avail < need)
        return zp_fail(ZP_ERR_CAPACITY, "not enough device memory for the KV pool: %.2f GiB in use after the warm-up, %.2f GiB total, "
                       "gpu_memory_utilization %.2f leaves %.3f GiB, a request needs %.3f GiB (lower max_num_batched_tokens or "
                       "max_num_seqs, or raise gpu_memory_utilization)", (double)(total_b - free_b) / (1 << 30), (double)total_b / (1 << 30),
                       util, avail / (1 << 30), need / (1 << 30));
    const double nb = avail / (double)per_block;
    ((int *)arg)[r] = nb > 2e9 ? 2000000000 : (int)nb;
    return ZP_OK;
}

zp_status engine_device_num_blocks(zp_engine *e, int *num_blocks) {
    const zp_engine_config *c = &e->cfg;
    const double util = c->gpu_memory_utilization > 0 ? c->gpu_memory_utilization : 0.9;
    if (!(util <= 1.0))
        return zp_fail(ZP_ERR_INVALID, "gpu_memory_utilization %g must be in (0, 1]", c->gpu_memory_utilization);
    int *nb = calloc((size_t)e->tp, sizeof *nb);
    ZP_CHECK_ALLOC(nb);
    zp_status s = engine_ranks_run(e, rank_num_blocks, nb);
    *num_blocks = nb[0];
    for (int r = 1; r < e->tp; r++) *num_blocks = nb[r] < *num_blocks ? nb[r] : *num_blocks; /* the reference's MIN over ranks */
    free(nb);
    return s;
}

int engine_query_slots(const zp_engine *e, int nb) {
    const zp_engine_config *c = &e->cfg;
    const zp_kv_geometry *g = &e->plan.geo;
    if (!g->evicts) return 0;
    int m = g->prompt_only ? c->max_num_batched_tokens / (g->budget + 1) /* long prompts in one prefill */
            : c->max_concurrency > 0 ? c->max_concurrency : nb / g->cap_blocks;
    if (m > c->max_num_seqs) m = c->max_num_seqs;
    return m < 1 ? 1 : m;
}

double engine_kv_state_bytes(const zp_engine *e, int nb) {
    size_t per_block, per_slot;
    kv_state_costs(e, &per_block, &per_slot);
    return (double)per_block * nb + (double)per_slot * engine_query_slots(e, nb);
}

zp_status engine_bytes_num_blocks(const zp_engine *e, double bytes, int *num_blocks) {
    size_t per_block, per_slot;
    kv_state_costs(e, &per_block, &per_slot);
    double nb = bytes / (double)per_block;
    if (nb > 2e9) nb = 2e9;
    int n = (int)nb;
    for (double over; n > 0 && (over = engine_kv_state_bytes(e, n) - bytes) > 0;) { /* the query slots take their share */
        const int step = (int)(over / (double)per_block);
        n -= step > 1 ? step : 1;
    }
    const int need = e->plan.geo.cap_blocks > 0 ? e->plan.geo.cap_blocks : 1;
    if (n < need)
        return zp_fail(ZP_ERR_CAPACITY, "kv_pool_bytes %.0f holds %d blocks of %zu bytes%s; a request needs %d", bytes, n < 0 ? 0 : n,
                       per_block, per_slot ? " with their query slots" : "", need);
    *num_blocks = n;
    return ZP_OK;
}
