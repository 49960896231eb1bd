/* scheduler.c - admission with prefix caching, decode block growth, preemption by recompute. */
#include "scheduler.h"

#include <math.h>
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

/* Grows a block table *t of capacity *cap to hold n entries (doubling). */
static zp_status table_reserve(int **t, int *cap, int n) {
    if (n <= *cap) return ZP_OK;
    int c = *cap ? *cap * 2 : 8;
    while (c < n) c *= 2;
    int *b = realloc(*t, sizeof *b * (size_t)c);
    ZP_CHECK_ALLOC(b);
    *t = b;
    *cap = c;
    return ZP_OK;
}
static zp_status seq_reserve_blocks(zp_seq *q, int n) { return table_reserve(&q->blocks, &q->blocks_cap, n); }

/* ---------------------------------------------------------------- the sliding layers' ring */

static int ring_on(const zp_scheduler *s) { return s->ring_window > 0; }
static int ring_held(const zp_seq *q) { return q->n_ring - q->ring_first; }
/* Blocks the ring must add to hold logical tokens [0, n_tokens). */
static int ring_need(const zp_scheduler *s, const zp_seq *q, int n_tokens) {
    const int more = ring_on(s) ? sched_blocks_for(s, n_tokens) - q->n_ring : 0;
    return more > 0 ? more : 0;
}
/* Most ring blocks a request holds: its prompt's during the prefill, then the blocks of the
 * W tokens a query sees (one more when they straddle a block boundary). */
static int ring_most(const zp_scheduler *s, int n_prompt, int total) {
    if (!ring_on(s)) return 0;
    const int decode = sched_blocks_for(s, s->ring_window) + 1, prompt = sched_blocks_for(s, n_prompt), all = sched_blocks_for(s, total);
    const int most = prompt > decode ? prompt : decode;
    return most < all ? most : all;
}
/* Takes the ring's blocks for logical tokens [0, n_tokens) (the caller made room). */
static zp_status ring_grow(zp_scheduler *s, zp_seq *q, int n_tokens) {
    const int nb = ring_on(s) ? sched_blocks_for(s, n_tokens) : 0;
    if (nb <= q->n_ring) return ZP_OK;
    ZP_TRY(table_reserve(&q->ring, &q->ring_cap, nb));
    while (q->n_ring < nb) {
        const int b = kv_pool_alloc_block(s->pool);
        if (b < 0) return zp_fail(ZP_ERR_CAPACITY, "scheduler: block pool exhausted for a sliding window (internal accounting error)");
        q->ring[q->n_ring++] = b;
    }
    return ZP_OK;
}
/* Frees the blocks no query can see any more: the next one, at logical position n_done, sees
 * positions from n_done + 1 - W. */
static void ring_slide(zp_scheduler *s, zp_seq *q) {
    const int bs = s->block_size, first_seen = q->n_done + 1 - s->ring_window;
    while (q->ring_first < q->n_ring && (q->ring_first + 1) * bs <= first_seen) {
        kv_pool_unref_block(s->pool, q->ring[q->ring_first]);
        q->ring[q->ring_first++] = -1;
    }
}
static void ring_release(zp_scheduler *s, zp_seq *q) {
    for (int i = q->n_ring - 1; i >= q->ring_first; i--) kv_pool_unref_block(s->pool, q->ring[i]);
    q->n_ring = q->ring_first = 0;
}

zp_status sched_enable_ring(zp_scheduler *s, int window) {
    if (window <= 0) return zp_fail(ZP_ERR_INVALID, "scheduler: a sliding window of %d tokens", window);
    s->ring_window = window;
    return ZP_OK;
}

/* ---------------------------------------------------------------- a request's tables: release, admission */

static void seq_release_blocks(zp_scheduler *s, zp_seq *q) {
    ring_release(s, q);
    for (int i = q->n_blocks - 1; i >= 0; i--) kv_pool_unref_block(s->pool, q->blocks[i]);
    q->n_blocks = 0;
    q->n_kv = 0;
    q->n_done = 0;
    q->n_hashed = 0;
    q->last_hash = ZP_HASH_NONE;
    q->views = 0;
    q->run_base = 0;
    q->keep_blocks = 0;
}

static void slot_give(zp_scheduler *s, zp_seq *q) {
    if (q->qid < 0 && s->n_free_q > 0) q->qid = s->free_q[--s->n_free_q];
}

static void slot_return(zp_scheduler *s, zp_seq *q) {
    if (q->qid >= 0) s->free_q[s->n_free_q++] = q->qid;
    q->qid = -1;
}

/* The ring's prefix-cache key of a block: its chain hash marked as the sliding layers' (a token
 * id no vocabulary has), so the two groups' blocks of one prefix are cached apart. */
static uint64_t ring_hash(uint64_t h) {
    const int mark = -1;
    return kv_hash_block(h, &mark, 1);
}
/* The first ring block that a request computing from physical token n_kv needs: its first
 * query's window. */
static int ring_first_needed(const zp_scheduler *s, int n_kv) {
    const int seen = n_kv + 1 - s->ring_window;
    return ring_on(s) && seen > 0 ? seen / s->block_size : 0;
}

/* Leading full blocks of q the prefix cache serves (hashes[i]: block i's chain hash, filled for
 * the n_full full ones). A hit never covers the last token: at least one row must be computed
 * for logits, and (with a cap) the last block's window queries must be recomputed. With a ring,
 * only as many as leave every block of the first computed query's window cached too. */
static int prefix_hits(const zp_scheduler *s, const zp_seq *q, uint64_t *hashes, int n_full) {
    const int bs = s->block_size;
    uint64_t h = ZP_HASH_NONE;
    int k = 0, miss = 0;
    for (int i = 0; i < n_full; i++) {
        const int *tok = q->tokens + (size_t)i * bs;
        hashes[i] = h = kv_hash_block(h, tok, bs);
        miss = miss || (i + 1) * bs >= q->n_tokens || kv_pool_lookup(s->pool, h, tok) < 0;
        k += !miss;
    }
    for (; k > 0 && ring_on(s); k--) {
        int cached = 1;
        for (int j = ring_first_needed(s, k * bs); j < k && cached; j++)
            cached = kv_pool_lookup(s->pool, ring_hash(hashes[j]), q->tokens + (size_t)j * bs) >= 0;
        if (cached) break;
    }
    return k;
}

/* The ring of a request admitted with k cached blocks: the cached blocks its first query sees
 * (those before freed), then fresh ones for the rest of its tokens. */
static zp_status ring_allocate(zp_scheduler *s, zp_seq *q, const uint64_t *hashes, int k) {
    const int bs = s->block_size, first = ring_first_needed(s, k * bs);
    ZP_TRY(table_reserve(&q->ring, &q->ring_cap, sched_blocks_for(s, q->n_tokens)));
    for (int j = 0; j < k; j++) {
        const int b = j < first ? -1 : kv_pool_lookup(s->pool, ring_hash(hashes[j]), q->tokens + (size_t)j * bs);
        if (b >= 0) kv_pool_ref_block(s->pool, b);
        q->ring[j] = b;
    }
    q->ring_first = first;
    q->n_ring = k;
    return ring_grow(s, q, q->n_tokens);
}

/* Allocates the block tables of a request being admitted, reusing cached full blocks of its
 * prefix (prefix_hits): the hits are taken first (a fresh block must not take a cached free
 * one), then fresh blocks; every full block is registered, a ring's too. */
static zp_status seq_allocate(zp_scheduler *s, zp_seq *q) {
    const int bs = s->block_size, nb = sched_blocks_for(s, q->n_tokens), n_full = s->enable_prefix_cache ? q->n_tokens / bs : 0;
    ZP_TRY(seq_reserve_blocks(q, nb));
    uint64_t *hashes = n_full ? malloc(sizeof *hashes * (size_t)n_full) : NULL;
    if (n_full && !hashes) return zp_fail(ZP_ERR_OOM, "scheduler: no memory for %d block hashes", n_full);
    const int k = n_full ? prefix_hits(s, q, hashes, n_full) : 0;
    for (int i = 0; i < k; i++) {
        const int b = kv_pool_lookup(s->pool, hashes[i], q->tokens + (size_t)i * bs);
        kv_pool_ref_block(s->pool, b);
        q->blocks[q->n_blocks++] = b;
    }
    zp_status st = ring_on(s) ? ring_allocate(s, q, hashes, k) : ZP_OK;
    while (st == ZP_OK && q->n_blocks < nb) {
        const int b = kv_pool_alloc_block(s->pool);
        if (b < 0) st = zp_fail(ZP_ERR_CAPACITY, "scheduler: block pool exhausted during admission (internal accounting error)");
        else q->blocks[q->n_blocks++] = b;
    }
    for (int i = 0; st == ZP_OK && i < n_full; i++) {
        const int *tok = q->tokens + (size_t)i * bs;
        kv_pool_register(s->pool, q->blocks[i], hashes[i], tok);
        if (ring_on(s) && i >= q->ring_first) kv_pool_register(s->pool, q->ring[i], ring_hash(hashes[i]), tok);
    }
    if (n_full) {
        q->last_hash = hashes[n_full - 1];
        q->n_hashed = n_full;
    }
    free(hashes);
    q->n_kv = q->n_done = k * bs;
    s->prefix_hit_tokens += (int64_t)k * bs;
    return st;
}

/* The scheduler's modes, each settled once by sched_enable_compression or
 * sched_enable_prompt_compression and named here:
 *   capped         an evicting policy under the N_max cap (compresses in decode)
 *   prompt_only    a prompt-only policy (SnapKV as published: compresses long prompts once)
 *   hybrid         Zipage's scheduler: requests run without a query slot while they need none */
static int capped(const zp_scheduler *s) { return s->nmax > 0; }
static int prompt_only(const zp_scheduler *s) { return s->prompt_budget > 0; }
static int hybrid(const zp_scheduler *s) { return s->kind == ZP_SCHED_HYBRID; }

/* Blocks a compression keeps: N_max, or the prompt budget's blocks of a prompt-only policy. */
static int target_blocks(const zp_scheduler *s) { return capped(s) ? s->nmax : s->prompt_budget / s->block_size; }

static int seq_needs_block(const zp_scheduler *s, const zp_seq *q) { return q->n_kv >= q->n_blocks * s->block_size; }

static int seq_preemptible(const zp_seq *q) { return !q->compressed && !q->compressing; }

static void seq_preempt(zp_scheduler *s, zp_seq *q) {
    seq_release_blocks(s, q);
    slot_return(s, q);
    q->status = ZP_SEQ_WAITING;
    q->n_preemptions++;
    s->n_preemptions++;
    seq_list_push_front(&s->waiting, q); /* capacity reserved in sched_add */
}

void sched_mark_computed(zp_scheduler *s, zp_seq *q) {
    const int bs = s->block_size;
    q->n_kv += q->n_tokens - q->n_done;
    q->n_done = q->n_tokens;
    if (ring_on(s)) ring_slide(s, q);
    if (!s->enable_prefix_cache || q->compressed) return;
    while ((q->n_hashed + 1) * bs <= q->n_kv) { /* register blocks filled during decode (a ring's too) */
        const int *tok = q->tokens + (size_t)q->n_hashed * bs;
        q->last_hash = kv_hash_block(q->last_hash, tok, bs);
        kv_pool_register(s->pool, q->blocks[q->n_hashed], q->last_hash, tok);
        if (ring_on(s) && q->n_hashed >= q->ring_first) kv_pool_register(s->pool, q->ring[q->n_hashed], ring_hash(q->last_hash), tok);
        q->n_hashed++;
    }
}

void sched_finish(zp_scheduler *s, zp_seq *q) {
    seq_list_remove(&s->running, q);
    seq_release_blocks(s, q);
    slot_return(s, q);
    q->status = ZP_SEQ_FINISHED;
}

/* A planned compression that will not run: the target's fresh blocks (those outside the table)
 * go back; the reused ones stay in the table and are released with it. */
static void cancel_compression(zp_scheduler *s, zp_seq *q) {
    const int nt = target_blocks(s) + 1;
    for (int k = 0; k < nt; k++) {
        int in_table = 0;
        for (int i = 0; i < q->n_blocks && !in_table; i++) in_table = q->blocks[i] == q->target[k];
        if (!in_table) kv_pool_unref_block(s->pool, q->target[k]);
    }
    q->n_release = 0;
    q->compressing = ZP_COMPRESS_NONE;
}

void sched_drop(zp_scheduler *s, zp_seq *q) {
    if (q->compressing == ZP_COMPRESS_PLANNED) cancel_compression(s, q);
    if (q->status == ZP_SEQ_WAITING) {
        seq_list_remove(&s->waiting, q);
        seq_release_blocks(s, q);
        slot_return(s, q);
        q->status = ZP_SEQ_FINISHED;
    } else {
        sched_finish(s, q);
    }
}

/* ---------------------------------------------------------------- setup */

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
    s->kind = ZP_SCHED_FULL;
    return ZP_OK;
}

static zp_status alloc_slots(zp_scheduler *s, int n_qslots) {
    s->free_q = malloc(sizeof(int) * (size_t)n_qslots);
    ZP_CHECK_ALLOC(s->free_q);
    for (int i = 0; i < n_qslots; i++) s->free_q[i] = n_qslots - 1 - i; /* pop gives 0 first */
    s->n_free_q = s->n_qslots = n_qslots;
    return ZP_OK;
}

/* geo is resolved and validated (zp_geometry_resolve); only that it fits this pool is checked. */
static zp_status check_geometry(const zp_scheduler *s, const zp_kv_geometry *geo, int n_qslots) {
    if (!geo->evicts || geo->block_size != s->block_size || n_qslots <= 0)
        return zp_fail(ZP_ERR_INVALID, "scheduler: a geometry of block %d for a pool of block %d, %d query slots", geo->block_size,
                       s->block_size, n_qslots);
    return ZP_OK;
}

zp_status sched_enable_compression(zp_scheduler *s, zp_sched_kind kind, const zp_kv_geometry *geo, int n_qslots) {
    if (kind == ZP_SCHED_FULL) return zp_fail(ZP_ERR_INVALID, "scheduler full runs no compression: use strict or hybrid with an evicting policy");
    ZP_TRY(check_geometry(s, geo, n_qslots));
    if (geo->cap_blocks > s->pool->num_blocks)
        return zp_fail(ZP_ERR_CAPACITY, "scheduler: one request needs nmax + 1 = %d blocks, the pool has %d", geo->cap_blocks, s->pool->num_blocks);
    ZP_TRY(alloc_slots(s, n_qslots));
    s->kind = kind;
    s->nmax = geo->nmax;
    s->cap_blocks = geo->cap_blocks;
    s->window = geo->window;
    return ZP_OK;
}

zp_status sched_enable_prompt_compression(zp_scheduler *s, const zp_kv_geometry *geo, int n_qslots) {
    ZP_TRY(check_geometry(s, geo, n_qslots));
    ZP_TRY(alloc_slots(s, n_qslots));
    s->prompt_budget = geo->budget;
    s->window = geo->window;
    return ZP_OK;
}

void sched_free(zp_scheduler *s) {
    free(s->waiting.v);
    free(s->running.v);
    free(s->free_q);
    memset(s, 0, sizeof *s);
}

int sched_blocks_needed(const zp_scheduler *s, int n_prompt, int max_tokens) {
    const int total = sched_blocks_for(s, n_prompt + max_tokens), ring = ring_most(s, n_prompt, n_prompt + max_tokens);
    if (!capped(s)) return total + ring;
    int capped = sched_blocks_for(s, n_prompt + 1);
    if (capped < s->cap_blocks) capped = s->cap_blocks;
    return (capped < total ? capped : total) + ring;
}

zp_status sched_add(zp_scheduler *s, zp_seq *q) {
    if (q->n_prompt > s->max_num_batched_tokens)
        return zp_fail(ZP_ERR_CAPACITY, "request %lld: prompt of %d tokens exceeds max_num_batched_tokens %d",
                       (long long)q->request_id, q->n_prompt, s->max_num_batched_tokens);
    int need = sched_blocks_needed(s, q->n_prompt, q->sp.max_tokens);
    if (need > s->pool->num_blocks)
        return zp_fail(ZP_ERR_CAPACITY, "request %lld: %d prompt + %d max tokens need %d blocks of %d, the pool has %d",
                       (long long)q->request_id, q->n_prompt, q->sp.max_tokens, need, s->block_size, s->pool->num_blocks);
    if (capped(s) || prompt_only(s)) {
        q->target = malloc(sizeof(int) * (size_t)(target_blocks(s) + 1));
        ZP_CHECK_ALLOC(q->target);
    }
    q->qid = -1;
    /* reserve room so preemption (push_front) can never fail */
    int all = s->waiting.n + s->running.n + 1;
    ZP_TRY(list_reserve(&s->waiting, all));
    ZP_TRY(list_reserve(&s->running, all));
    q->status = ZP_SEQ_WAITING;
    return seq_list_push_back(&s->waiting, q);
}

/* ---------------------------------------------------------------- query slots (hybrid) */

/* True when the token about to be processed needs no query slot: the request is not yet in
 * its (nmax+1)-th block, or the token is not in a window position (§4.4 needs_no_slot). */
static int needs_no_slot(const zp_scheduler *s, const zp_seq *q) {
    const int bs = s->block_size;
    int logical_blocks = (q->n_tokens + bs - 1) / bs, r = (q->n_tokens - 1) % bs + 1;
    return logical_blocks < s->cap_blocks || r <= bs - s->window;
}

static void refill_slots(zp_scheduler *s) {
    for (int i = 0; i < s->running.n && s->n_free_q > 0; i++) slot_give(s, s->running.v[i]);
}

/* ---------------------------------------------------------------- compression planning */

/* Target layout of a request whose growth block is full (§2.3, §2.4). Target block k is the
 * source block j = shared + k - front when that block is private (ref 1) and j <= k for the
 * blocks compaction writes (k < nmax), else a fresh block: shared blocks are never written, and
 * every write lands at or before its read. front = min(shared, nmax) fresh blocks replace the
 * leading shared ones. Returns the number of fresh blocks needed; fills plan[] (-1 = fresh). */
static int compression_layout(const zp_scheduler *s, const zp_seq *q, int *plan) {
    const int nk = target_blocks(s), nt = nk + 1;
    int shared = 0, fresh = 0;
    if (!q->compressed)
        while (shared < q->n_blocks && s->pool->ref[q->blocks[shared]] > 1) shared++;
    int front = shared < nk ? shared : nk;
    for (int k = 0; k < nt; k++) {
        int j = shared + k - front;
        int ok = k >= front && j < q->n_blocks && s->pool->ref[q->blocks[j]] == 1 && (j <= k || k == nk);
        plan[k] = ok ? j : -1;
        fresh += !ok;
    }
    return fresh;
}

static int plan_compression(zp_scheduler *s, zp_seq *q) {
    const int nt = target_blocks(s) + 1;
    int plan[nt];
    int fresh = compression_layout(s, q, plan);
    if (kv_pool_num_free(s->pool) < fresh) return 0;
    if (q->release_cap < q->n_blocks) {
        int *r = realloc(q->release, sizeof(int) * (size_t)q->n_blocks);
        if (!r) return 0;
        q->release = r;
        q->release_cap = q->n_blocks;
    }
    uint8_t reused[q->n_blocks];
    memset(reused, 0, (size_t)q->n_blocks);
    for (int k = 0; k < nt; k++) {
        if (plan[k] < 0) {
            q->target[k] = kv_pool_alloc_block(s->pool);
        } else {
            q->target[k] = q->blocks[plan[k]];
            reused[plan[k]] = 1;
            kv_pool_unregister(s->pool, q->target[k]); /* its content is about to change */
        }
    }
    q->n_release = 0;
    for (int i = 0; i < q->n_blocks; i++)
        if (!reused[i]) q->release[q->n_release++] = q->blocks[i];
    q->compressing = ZP_COMPRESS_PLANNED;
    return 1;
}

/* Drops the released blocks and installs the target table: the blocks the compression kept
 * (N_max, or fewer with the adaptive budget: the target's others go back too) and the growth
 * block. */
static void install_target(zp_scheduler *s, zp_seq *q) {
    const int nk = target_blocks(s), kb = q->new_keep_blocks > 0 && q->new_keep_blocks < nk ? q->new_keep_blocks : nk;
    for (int i = q->n_release - 1; i >= 0; i--) kv_pool_unref_block(s->pool, q->release[i]);
    q->n_release = 0;
    for (int k = kb; k < nk; k++) kv_pool_unref_block(s->pool, q->target[k]); /* written by no compaction, in no table */
    q->target[kb] = q->target[nk];
    if (seq_reserve_blocks(q, kb + 1) == ZP_OK) memcpy(q->blocks, q->target, sizeof(int) * (size_t)(kb + 1));
    q->n_blocks = kb + 1;
    q->n_kv = kb * s->block_size;
    q->keep_blocks = q->new_keep_blocks > 0 ? kb : 0;
    q->new_keep_blocks = 0;
    q->views = 1;
    if (q->new_runs) { /* the compaction's head runs become the table's */
        int *t = q->runs;
        q->runs = q->new_runs;
        q->new_runs = t;
        q->run_base = q->n_kv;
    }
    q->compressing = ZP_COMPRESS_NONE;
    q->n_compressions++;
}

void sched_compress_done(zp_scheduler *s, zp_seq *q) {
    install_target(s, q);
    q->compressed = 1;
}

int sched_plan_prompt_compression(zp_scheduler *s, zp_seq *q) { return plan_compression(s, q); }

void sched_prompt_compress_done(zp_scheduler *s, zp_seq *q) {
    install_target(s, q);
    slot_return(s, q);
}

/* ---------------------------------------------------------------- scheduling */

/* The blocks a waiting request's admission takes: its table's and its ring's for every token. */
static int admit_blocks(const zp_scheduler *s, const zp_seq *q) { return sched_blocks_for(s, q->n_tokens) + ring_need(s, q, q->n_tokens); }

/* admission_reserve of a request's most blocks (rounded up; capped by N_max: sched_blocks_needed). */
static int reservation(const zp_scheduler *s, const zp_seq *q) {
    const int most = sched_blocks_needed(s, q->n_prompt, q->sp.max_tokens);
    return (int)ceilf(s->admission_reserve * (float)most - 1e-4f);
}
/* The blocks admission holds for a waiting request: its reservation, at least the blocks its
 * (re)computation takes now (a preempted request recomputes all its tokens). */
static int reserve_blocks(const zp_scheduler *s, const zp_seq *q) {
    const int r = reservation(s, q), now = admit_blocks(s, q);
    return r > now ? r : now;
}
/* Blocks the running requests may still take before they reach their reservations: beyond the
 * blocks each holds, not beyond its logical length (a compressed request's tokens far outnumber
 * its blocks, which stay under the cap; counting its length held back blocks no request could
 * ever take, and admission stalled until the long requests finished). */
static int reserved_growth(const zp_scheduler *s) {
    int n = 0;
    for (int i = 0; i < s->running.n; i++) {
        const zp_seq *q = s->running.v[i];
        const int more = reservation(s, q) - q->n_blocks - ring_held(q);
        n += more > 0 ? more : 0;
    }
    return n;
}

static zp_status schedule_prefill(zp_scheduler *s, zp_sched_batch *out) {
    int held = s->admission_reserve > 0 && s->waiting.n ? reserved_growth(s) : 0;
    while (s->waiting.n && out->n < s->max_num_seqs) {
        zp_seq *q = s->waiting.v[0];
        /* the budget test uses the full length; a request alone is always admitted (prompts were
         * checked against the budget in sched_add; a preempted one may have grown past it) */
        if (out->n > 0 && out->n_tokens + q->n_tokens > s->max_num_batched_tokens) break;
        if (kv_pool_num_free(s->pool) < admit_blocks(s, q)) break;
        /* with a reservation, the blocks the running requests may still take are not free; the
         * first request of an empty engine is always admitted */
        const int want = s->admission_reserve > 0 ? reserve_blocks(s, q) : 0;
        if (want && s->running.n > 0 && kv_pool_num_free(s->pool) - held < want) break;
        /* a long prompt of a prompt-only policy needs a slot for its first prefill's window */
        const int prompt_slot = prompt_only(s) && q->n_prompt > s->prompt_budget && q->n_preemptions == 0;
        if (capped(s) && s->n_free_q == 0 && (!hybrid(s) || !needs_no_slot(s, q))) break;
        if (prompt_slot && s->n_free_q == 0) break;
        ZP_TRY(seq_allocate(s, q));
        if (want && want > q->n_blocks + ring_held(q)) held += want - q->n_blocks - ring_held(q);
        if (capped(s) || prompt_slot) slot_give(s, q);
        seq_list_pop_front(&s->waiting);
        q->status = ZP_SEQ_RUNNING;
        ZP_TRY(seq_list_push_back(&s->running, q));
        out->seqs[out->n++] = q;
        out->n_tokens += q->n_tokens - q->n_kv;
    }
    out->is_prefill = out->n > 0;
    return ZP_OK;
}

/* The newest request after index `after` in running that may be preempted for q. */
static int find_victim(const zp_scheduler *s, int after, int slot_holders_ok) {
    for (int i = s->running.n - 1; i > after; i--) {
        const zp_seq *v = s->running.v[i];
        if (seq_preemptible(v) && (slot_holders_ok || v->qid < 0)) return i;
    }
    return -1;
}

/* Makes `need` blocks free by preempting requests newer than index i; 0 when impossible. */
static int make_room(zp_scheduler *s, int i, int need, int slot_holders_ok) {
    while (kv_pool_num_free(s->pool) < need) {
        int v = find_victim(s, i, slot_holders_ok);
        if (v < 0) return 0;
        zp_seq *victim = s->running.v[v];
        seq_list_remove(&s->running, victim);
        seq_preempt(s, victim);
    }
    return 1;
}

/* What a decode step decides for a running request. */
typedef enum {
    DECODE_RUN,       /* in this step's batch (a compressing request too: the engine routes it) */
    DECODE_SUSPEND,   /* waits in its place: for a query slot, for blocks, for its compression's room */
    DECODE_PREEMPTED, /* gave its blocks back and went to the front of the waiting queue */
} decode_verdict;

/* Full KV: a request that needs blocks (one, and one for its ring) takes them, preempting the
 * newest others, or itself when none is left to preempt. */
static decode_verdict decide_full(zp_scheduler *s, int i, int need) {
    if (!need || make_room(s, i, need, 1)) return DECODE_RUN;
    zp_seq *q = s->running.v[i];
    seq_list_remove(&s->running, q);
    seq_preempt(s, q);
    return DECODE_PREEMPTED;
}

/* Under the cap: a request with a slot whose growth block is full is planned for compression
 * (room for its target made by preempting newer ones); a slot-less one runs while it needs no
 * window query; any other that needs a block takes one if room can be made. */
static decode_verdict decide_capped(zp_scheduler *s, int i, int need, int ring) {
    zp_seq *q = s->running.v[i];
    if (q->qid >= 0 && need && q->n_blocks >= s->cap_blocks) { /* its ring's block too: a synchronous compression decodes next */
        int plan[s->cap_blocks];
        return make_room(s, i, compression_layout(s, q, plan) + ring, s->enable_prefix_cache) && plan_compression(s, q) ? DECODE_RUN
                                                                                                                        : DECODE_SUSPEND;
    }
    if (q->qid < 0 && !needs_no_slot(s, q)) return DECODE_SUSPEND;
    if (need + ring && !make_room(s, i, need + ring, q->qid >= 0 ? s->enable_prefix_cache : 1)) return DECODE_SUSPEND;
    return DECODE_RUN;
}

/* Decides request running.v[i]; a request that runs and fills its last block gets a new one
 * (a request planned for compression has its target instead). */
static zp_status decode_one(zp_scheduler *s, int i, decode_verdict *verdict) {
    zp_seq *q = s->running.v[i];
    *verdict = DECODE_RUN;
    if (q->compressing) return ZP_OK; /* routed to compression by the engine */
    const int need = seq_needs_block(s, q), ring = ring_need(s, q, q->n_tokens);
    *verdict = capped(s) ? decide_capped(s, i, need, ring) : decide_full(s, i, need + ring);
    if (*verdict != DECODE_RUN) return ZP_OK;
    ZP_TRY(ring_grow(s, q, q->n_tokens)); /* the block of the token it decodes (after its compression when one was planned) */
    if (!need || q->compressing) return ZP_OK;
    ZP_TRY(seq_reserve_blocks(q, q->n_blocks + 1));
    q->blocks[q->n_blocks++] = kv_pool_alloc_block(s->pool);
    return ZP_OK;
}

static zp_status schedule_decode(zp_scheduler *s, zp_sched_batch *out) {
    for (int i = 0; i < s->running.n && out->n < s->max_num_seqs;) {
        decode_verdict verdict;
        ZP_TRY(decode_one(s, i, &verdict));
        if (verdict == DECODE_PREEMPTED) continue; /* removed itself; the next request moved into slot i */
        if (verdict == DECODE_RUN) {
            out->seqs[out->n++] = s->running.v[i];
            out->n_tokens += s->running.v[i]->compressing ? 0 : 1;
        } else {
            s->n_suspensions++;
        }
        i++;
    }
    return ZP_OK;
}

int sched_break_stall(zp_scheduler *s) {
    int v = find_victim(s, -1, 1);
    if (v < 0) return 0;
    zp_seq *victim = s->running.v[v];
    seq_list_remove(&s->running, victim);
    seq_preempt(s, victim);
    return 1;
}

zp_status sched_schedule(zp_scheduler *s, zp_sched_batch *out) {
    out->n = 0;
    out->n_tokens = 0;
    out->is_prefill = 0;
    /* as the Zipage reference (scheduler.py): freed query slots go to running requests first,
     * before waiting ones are admitted, so a slot-less request stalled at its window does not
     * wait while admissions take the slots */
    if (hybrid(s)) refill_slots(s);
    ZP_TRY(schedule_prefill(s, out));
    if (out->n) return ZP_OK;
    return schedule_decode(s, out);
}

static const char *kind_names[ZP_SCHED_COUNT] = {"full", "strict", "hybrid"};
const char *sched_kind_name(zp_sched_kind k) { return (k >= 0 && k < ZP_SCHED_COUNT) ? kind_names[k] : "?"; }
int sched_kind_parse(const char *name, zp_sched_kind *out) {
    for (int i = 0; i < ZP_SCHED_COUNT; i++)
        if (!strcmp(name, kind_names[i])) { *out = (zp_sched_kind)i; return 1; }
    return 0;
}
