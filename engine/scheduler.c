/* scheduler.c - admission with prefix caching, decode block growth, preemption by recompute. */
#include "scheduler.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- lists */

static zp_status list_reserve(zp_seq_list *l, int n) {
    if (n <= l->cap) return ZP_OK;
    int cap = l->cap ? l->cap * 2 : 16;
    while (cap < n) cap *= 2;
    zp_seq **v = realloc(l->v, sizeof *v * (size_t)cap);
    ZP_CHECK_ALLOC(v);
    l->v = v;
    l->cap = cap;
    return ZP_OK;
}
zp_status seq_list_push_back(zp_seq_list *l, zp_seq *x) {
    ZP_TRY(list_reserve(l, l->n + 1));
    l->v[l->n++] = x;
    return ZP_OK;
}
zp_status seq_list_push_front(zp_seq_list *l, zp_seq *x) {
    ZP_TRY(list_reserve(l, l->n + 1));
    memmove(l->v + 1, l->v, sizeof *l->v * (size_t)l->n);
    l->v[0] = x;
    l->n++;
    return ZP_OK;
}
zp_seq *seq_list_pop_front(zp_seq_list *l) {
    if (!l->n) return NULL;
    zp_seq *x = l->v[0];
    memmove(l->v, l->v + 1, sizeof *l->v * (size_t)--l->n);
    return x;
}
zp_seq *seq_list_pop_back(zp_seq_list *l) { return l->n ? l->v[--l->n] : NULL; }
void seq_list_remove(zp_seq_list *l, zp_seq *x) {
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == x) {
            memmove(l->v + i, l->v + i + 1, sizeof *l->v * (size_t)(l->n - i - 1));
            l->n--;
            return;
        }
}

/* ---------------------------------------------------------------- blocks of one request */

int sched_blocks_for(const zp_scheduler *s, int n_tokens) { return (n_tokens + s->block_size - 1) / s->block_size; }

static zp_status seq_reserve_blocks(zp_seq *q, int n) {
    if (n <= q->blocks_cap) return ZP_OK;
    int cap = q->blocks_cap ? q->blocks_cap * 2 : 8;
    while (cap < n) cap *= 2;
    int *b = realloc(q->blocks, sizeof *b * (size_t)cap);
    ZP_CHECK_ALLOC(b);
    q->blocks = b;
    q->blocks_cap = cap;
    return ZP_OK;
}

static void seq_release_blocks(zp_scheduler *s, zp_seq *q) {
    for (int i = q->n_blocks - 1; i >= 0; i--) kv_pool_unref_block(s->pool, q->blocks[i]);
    q->n_blocks = 0;
    q->n_kv = 0;
    q->n_hashed = 0;
    q->last_hash = ZP_HASH_NONE;
}

/* Allocates the block table of a request being admitted, reusing cached full blocks of its
 * prefix. A hit never covers the last token: at least one row must be computed for logits. */
static zp_status seq_allocate(zp_scheduler *s, zp_seq *q) {
    const int bs = s->block_size, nb = sched_blocks_for(s, q->n_tokens);
    ZP_TRY(seq_reserve_blocks(q, nb));
    uint64_t h = ZP_HASH_NONE;
    int miss = !s->enable_prefix_cache;
    q->n_kv = 0;
    for (int i = 0; i < nb; i++) {
        const int *tok = q->tokens + (size_t)i * bs;
        int full = (i + 1) * bs <= q->n_tokens, b = -1;
        if (full && s->enable_prefix_cache) h = kv_hash_block(h, tok, bs);
        if (!miss && full && (i + 1) * bs < q->n_tokens) b = kv_pool_lookup(s->pool, h, tok);
        if (b >= 0) {
            kv_pool_ref_block(s->pool, b);
            q->n_kv += bs;
            s->prefix_hit_tokens += bs;
        } else {
            miss = 1;
            b = kv_pool_alloc_block(s->pool);
            if (b < 0) return zp_fail(ZP_ERR_CAPACITY, "scheduler: block pool exhausted during admission (internal accounting error)");
        }
        if (full && s->enable_prefix_cache) {
            kv_pool_register(s->pool, b, h, tok);
            q->last_hash = h;
            q->n_hashed = i + 1;
        }
        q->blocks[q->n_blocks++] = b;
    }
    return ZP_OK;
}

static int seq_needs_block(const zp_scheduler *s, const zp_seq *q) { return q->n_kv >= q->n_blocks * s->block_size; }

static void seq_preempt(zp_scheduler *s, zp_seq *q) {
    seq_release_blocks(s, q);
    q->status = ZP_SEQ_WAITING;
    q->n_preemptions++;
    s->n_preemptions++;
    seq_list_push_front(&s->waiting, q); /* capacity reserved in sched_add */
}

void sched_mark_computed(zp_scheduler *s, zp_seq *q) {
    const int bs = s->block_size;
    q->n_kv = q->n_tokens;
    if (!s->enable_prefix_cache) return;
    while ((q->n_hashed + 1) * bs <= q->n_kv) { /* register blocks filled during decode */
        const int *tok = q->tokens + (size_t)q->n_hashed * bs;
        q->last_hash = kv_hash_block(q->last_hash, tok, bs);
        kv_pool_register(s->pool, q->blocks[q->n_hashed], q->last_hash, tok);
        q->n_hashed++;
    }
}

void sched_finish(zp_scheduler *s, zp_seq *q) {
    seq_list_remove(&s->running, q);
    seq_release_blocks(s, q);
    q->status = ZP_SEQ_FINISHED;
}

/* ---------------------------------------------------------------- scheduling */

zp_status sched_init(zp_scheduler *s, zp_kv_pool *pool, int max_num_seqs, int max_num_batched_tokens, int prefix_cache) {
    memset(s, 0, sizeof *s);
    if (max_num_seqs <= 0 || max_num_batched_tokens <= 0)
        return zp_fail(ZP_ERR_INVALID, "scheduler: max_num_seqs %d and max_num_batched_tokens %d must be positive",
                       max_num_seqs, max_num_batched_tokens);
    s->pool = pool;
    s->block_size = pool->block_size;
    s->max_num_seqs = max_num_seqs;
    s->max_num_batched_tokens = max_num_batched_tokens;
    s->enable_prefix_cache = prefix_cache;
    return ZP_OK;
}

void sched_free(zp_scheduler *s) {
    free(s->waiting.v);
    free(s->running.v);
    memset(s, 0, sizeof *s);
}

zp_status sched_add(zp_scheduler *s, zp_seq *q) {
    int total = q->n_prompt + q->sp.max_tokens;
    if (q->n_prompt > s->max_num_batched_tokens)
        return zp_fail(ZP_ERR_CAPACITY, "request %lld: prompt of %d tokens exceeds max_num_batched_tokens %d",
                       (long long)q->request_id, q->n_prompt, s->max_num_batched_tokens);
    if (sched_blocks_for(s, total) > s->pool->num_blocks)
        return zp_fail(ZP_ERR_CAPACITY, "request %lld: %d prompt + %d max tokens need %d blocks of %d, the pool has %d",
                       (long long)q->request_id, q->n_prompt, q->sp.max_tokens, sched_blocks_for(s, total),
                       s->block_size, s->pool->num_blocks);
    /* reserve room so preemption (push_front) can never fail */
    int all = s->waiting.n + s->running.n + 1;
    ZP_TRY(list_reserve(&s->waiting, all));
    ZP_TRY(list_reserve(&s->running, all));
    q->status = ZP_SEQ_WAITING;
    return seq_list_push_back(&s->waiting, q);
}

static zp_status schedule_prefill(zp_scheduler *s, zp_sched_batch *out) {
    while (s->waiting.n && out->n < s->max_num_seqs) {
        zp_seq *q = s->waiting.v[0];
        /* the budget test uses the full length; a request alone is always admitted (prompts were
         * checked against the budget in sched_add; a preempted one may have grown past it) */
        if (out->n > 0 && out->n_tokens + q->n_tokens > s->max_num_batched_tokens) break;
        if (kv_pool_num_free(s->pool) < sched_blocks_for(s, q->n_tokens)) break;
        ZP_TRY(seq_allocate(s, q));
        seq_list_pop_front(&s->waiting);
        q->status = ZP_SEQ_RUNNING;
        ZP_TRY(seq_list_push_back(&s->running, q));
        out->seqs[out->n++] = q;
        out->n_tokens += q->n_tokens - q->n_kv;
    }
    out->is_prefill = out->n > 0;
    return ZP_OK;
}

static zp_status schedule_decode(zp_scheduler *s, zp_sched_batch *out) {
    int n_taken = 0;
    while (s->running.n > n_taken && out->n < s->max_num_seqs) {
        zp_seq *q = s->running.v[n_taken];
        int self_preempted = 0;
        while (seq_needs_block(s, q) && kv_pool_num_free(s->pool) == 0) {
            if (s->running.n - 1 > n_taken) { /* a newer request than q is still untaken: evict the newest */
                seq_preempt(s, seq_list_pop_back(&s->running));
            } else {
                seq_list_remove(&s->running, q);
                seq_preempt(s, q);
                self_preempted = 1;
                break;
            }
        }
        if (self_preempted) continue;
        if (seq_needs_block(s, q)) {
            ZP_TRY(seq_reserve_blocks(q, q->n_blocks + 1));
            q->blocks[q->n_blocks++] = kv_pool_alloc_block(s->pool);
        }
        out->seqs[out->n++] = q;
        out->n_tokens += 1;
        n_taken++;
    }
    return ZP_OK;
}

zp_status sched_schedule(zp_scheduler *s, zp_sched_batch *out) {
    out->n = 0;
    out->n_tokens = 0;
    out->is_prefill = 0;
    ZP_TRY(schedule_prefill(s, out));
    if (out->n) return ZP_OK;
    return schedule_decode(s, out);
}
