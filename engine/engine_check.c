/* engine_check.c - consistency checks of the engine's bookkeeping, for tests and debugging:
 * block tables (and the sliding layers' rings) against ref counts and the free list, logical vs
 * physical lengths, the block cap, query slots. Costs O(requests x blocks); call it between steps, not in production. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* The ring (scheduler.h): a block per logical block of the computed tokens, those no next
 * query sees freed and no other, at most ceil(W / bs) + 1 held. */
static zp_status check_ring(const zp_engine *e, const zp_seq *q, int *refs) {
    const zp_scheduler *s = &e->sched;
    const int bs = s->block_size, id = (int)q->request_id, W = s->ring_window, seen = q->n_done + 1 - W;
    if (!W) return q->n_ring ? zp_fail(ZP_ERR_INVALID, "request %d: a ring without sliding layers", id) : ZP_OK;
    if (q->n_ring != (q->n_done + bs - 1) / bs && q->n_ring != (q->n_done + bs) / bs) /* a compressing one: its pending token's too */
        return zp_fail(ZP_ERR_INVALID, "request %d: a ring of %d blocks for %d computed tokens", id, q->n_ring, q->n_done);
    if ((q->ring_first + 1) * bs <= seen || (q->ring_first > 0 && q->ring_first * bs > seen))
        return zp_fail(ZP_ERR_INVALID, "request %d: the ring starts at block %d, the next query sees from %d", id, q->ring_first, seen);
    if (q->n_ring - q->ring_first > (W + bs - 1) / bs + 1)
        return zp_fail(ZP_ERR_INVALID, "request %d: the ring holds %d blocks for a window of %d", id, q->n_ring - q->ring_first, W);
    for (int i = 0; i < q->n_ring; i++) {
        const int b = q->ring[i];
        if (i < q->ring_first ? b != -1 : b < 0 || b >= e->pool.num_blocks)
            return zp_fail(ZP_ERR_INVALID, "request %d: ring entry %d is %d (freed before %d)", id, i, b, q->ring_first);
        if (b >= 0) refs[b]++;
    }
    return ZP_OK;
}

/* Head runs (head-wise budgets): each compacted layer's runs fill at most its heads' cells of
 * the budget's blocks; a layer left uniform is -1 for every head. */
static zp_status check_runs(const zp_engine *e, const zp_seq *q) {
    if (q->run_base <= 0) return ZP_OK;
    const int L = e->model->cfg.n_layers, H = e->model->cfg.n_kv_heads, id = (int)q->request_id;
    if (!q->runs || q->run_base != e->plan.geo.budget)
        return zp_fail(ZP_ERR_INVALID, "request %d: head runs over %d tokens (budget %d)", id, q->run_base, e->plan.geo.budget);
    for (int l = 0; l < L; l++) {
        const int *r = q->runs + (size_t)l * H;
        long sum = 0;
        for (int h = 0; h < H; h++) {
            if ((r[0] < 0) != (r[h] < 0)) return zp_fail(ZP_ERR_INVALID, "request %d, layer %d: head %d's run %d beside %d", id, l, h, r[h], r[0]);
            sum += r[h] > 0 ? r[h] : 0;
        }
        if (sum > (long)H * q->run_base)
            return zp_fail(ZP_ERR_INVALID, "request %d, layer %d: runs of %ld cells in %d", id, l, sum, H * q->run_base);
    }
    return ZP_OK;
}

static zp_status check_seq(const zp_engine *e, const zp_seq *q, int *refs) {
    const zp_scheduler *s = &e->sched;
    const int bs = s->block_size, id = (int)q->request_id;
    for (int i = 0; i < q->n_blocks; i++) {
        if (q->blocks[i] < 0 || q->blocks[i] >= e->pool.num_blocks)
            return zp_fail(ZP_ERR_INVALID, "request %d: block %d out of range", id, q->blocks[i]);
        for (int j = 0; j < i; j++)
            if (q->blocks[j] == q->blocks[i]) return zp_fail(ZP_ERR_INVALID, "request %d: block %d twice in its table", id, q->blocks[i]);
        refs[q->blocks[i]]++;
    }
    if (q->compressing) /* planned target blocks that are not in the table are owned too */
        for (int k = 0; k <= s->nmax; k++) {
            int in_table = 0;
            for (int i = 0; i < q->n_blocks; i++) in_table |= q->blocks[i] == q->target[k];
            if (!in_table) refs[q->target[k]]++;
        }
    if (q->status != ZP_SEQ_RUNNING) return zp_fail(ZP_ERR_INVALID, "request %d: in running with status %d", id, q->status);
    if (q->n_done != q->n_tokens - 1) return zp_fail(ZP_ERR_INVALID, "request %d: %d tokens computed of %d (one pending expected)", id, q->n_done, q->n_tokens);
    if (q->n_kv > q->n_blocks * bs || q->n_kv < (q->n_blocks - 1) * bs)
        return zp_fail(ZP_ERR_INVALID, "request %d: %d physical tokens in %d blocks of %d", id, q->n_kv, q->n_blocks, bs);
    if (!q->compressed && !q->n_compressions && q->n_kv != q->n_done)
        return zp_fail(ZP_ERR_INVALID, "request %d: uncompressed but physical %d != logical %d", id, q->n_kv, q->n_done);
    /* a compressed request holds its cap (N_max blocks and the growth block), or with the adaptive
     * budget grows back to it from the blocks its last compression kept */
    const int kept = q->keep_blocks > 0 ? q->keep_blocks : s->nmax;
    if (q->keep_blocks && (!e->plan.budget_adaptive || q->keep_blocks < e->plan.budget_floor || q->keep_blocks > s->nmax))
        return zp_fail(ZP_ERR_INVALID, "request %d: kept %d blocks (floor %d, nmax %d)", id, q->keep_blocks, e->plan.budget_floor, s->nmax);
    if (q->compressed && !q->compressing &&
        (q->n_blocks > s->cap_blocks || q->n_kv < kept * bs || (!e->plan.budget_adaptive && q->n_blocks != s->cap_blocks)))
        return zp_fail(ZP_ERR_INVALID, "request %d: compressed but holds %d blocks, %d tokens (kept %d)", id, q->n_blocks, q->n_kv, kept);
    if (q->compressed && q->qid < 0) return zp_fail(ZP_ERR_INVALID, "request %d: compressed without a query slot", id);
    if (s->kind == ZP_SCHED_STRICT && q->qid < 0) return zp_fail(ZP_ERR_INVALID, "request %d: strict scheduler, no slot", id);
    ZP_TRY(check_runs(e, q));
    return check_ring(e, q, refs);
}

zp_status zp_engine_check_invariants(const zp_engine *e) {
    const zp_scheduler *s = &e->sched;
    const zp_kv_pool *p = &e->pool;
    int *refs = calloc((size_t)p->num_blocks, sizeof *refs);
    uint8_t *slot_used = calloc((size_t)(s->n_qslots + 1), 1);
    ZP_CHECK_ALLOC(refs);
    zp_status st = slot_used ? ZP_OK : zp_fail(ZP_ERR_OOM, "check: out of memory");
    for (int i = 0; st == ZP_OK && i < s->running.n; i++) {
        const zp_seq *q = s->running.v[i];
        st = check_seq(e, q, refs);
        if (st == ZP_OK && q->qid >= 0) {
            if (q->qid >= s->n_qslots || slot_used[q->qid]) st = zp_fail(ZP_ERR_INVALID, "query slot %d held twice or out of range", q->qid);
            else slot_used[q->qid] = 1;
        }
    }
    for (int i = 0; st == ZP_OK && i < s->waiting.n; i++) {
        const zp_seq *q = s->waiting.v[i];
        if (q->n_blocks || q->qid >= 0 || q->n_kv || q->n_ring)
            st = zp_fail(ZP_ERR_INVALID, "waiting request %lld holds %d blocks / slot %d", (long long)q->request_id, q->n_blocks, q->qid);
    }
    int used = 0, slots_in_use = 0;
    for (int b = 0; st == ZP_OK && b < p->num_blocks; b++) {
        if (refs[b] != p->ref[b]) st = zp_fail(ZP_ERR_INVALID, "block %d: ref count %d but %d owners", b, p->ref[b], refs[b]);
        used += p->ref[b] > 0;
    }
    for (int q = 0; q < s->n_qslots; q++) slots_in_use += slot_used[q];
    if (st == ZP_OK && used + p->n_free != p->num_blocks)
        st = zp_fail(ZP_ERR_INVALID, "pool: %d blocks in use + %d free != %d (leak)", used, p->n_free, p->num_blocks);
    if (st == ZP_OK && s->nmax && slots_in_use + s->n_free_q != s->n_qslots)
        st = zp_fail(ZP_ERR_INVALID, "query slots: %d held + %d free != %d", slots_in_use, s->n_free_q, s->n_qslots);
    free(refs);
    free(slot_used);
    return st;
}
