/* test_compress.c - compression in the engine (CPU): a budget larger than every sequence is
 * token-identical to full KV for every policy; compaction op order and score movement; the
 * bookkeeping invariants after every step; logical RoPE positions after compaction; shared
 * prefix blocks never modified; preemption and suspension with compression give the same
 * greedy outputs; async = sync; hybrid runs more requests than strict; a seeded stress run. */
#include <math.h>
#include <string.h>

#include "rope.h"
#include "scorers.h"
#include "test_runner.h"
#include "test_util.h"

static run_spec zipage_spec(const char *preset) {
    run_spec rs = run_spec_zipage(preset);
    rs.sp.max_tokens = 120;
    rs.check_invariants = 1;
    return rs;
}

static void test_large_budget_is_full(void) {
    run_spec rs = run_spec_default("tiny-qwen3");
    run_result full;
    run_requests(&rs, &full);
    const zp_policy_ops *const *reg = policy_registry();
    for (int i = 0; reg[i]; i++) {
        if (!reg[i]->evicts || reg[i]->needs_stats)
            continue; /* TriAttention runs with its statistics file: its own tests (test_triattention_engine) */
        run_spec p = rs;
        p.ec.policy = reg[i]->name;
        p.ec.nmax = 8; /* (8 + 1) * 16 = 144 > the longest request (44 + 40) */
        p.ec.window = 4;
        p.check_invariants = 1;
        run_result r;
        run_requests(&p, &r);
        CHECK(r.st.compressions == 0);
        if (!run_same_outputs(&full, &r)) fprintf(stderr, "policy %s differs from full with a large budget\n", reg[i]->name);
        CHECK(run_same_outputs(&full, &r));
        run_result_free(&r);
    }
    run_result_free(&full);
}

/* StreamingLLM's position shift in compaction: a kept key moved from index t to i is the old row
 * re-rotated from t to i (zp_rope_shift_row), a key that stays is untouched, values only move;
 * refused with an order or without rope frequencies of the head size. */
static void test_compaction_shift(void) {
    enum { BS = 4, NB = 6, HKV = 2, D = 8, L = 1, N = 12 };
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = 4,
                      .n_kv_heads = HKV,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.f,
                      .qk_norm_eps = 1e-6f,
                      .window = 4,
                      .n_qslots = 1};
    float k[NB * BS * HKV * D], v[NB * BS * HKV * D], before[NB * BS * HKV * D];
    for (int i = 0; i < NB * BS * HKV * D; i++) { k[i] = (float)sin(0.37 * i); v[i] = (float)i; }
    memcpy(before, k, sizeof k);
    const int src[3] = {4, 1, 3}, dst[2] = {4, 1};
    uint8_t keep[HKV * N];
    for (int g = 0; g < HKV; g++)
        for (int t = 0; t < N; t++) keep[g * N + t] = t < 2 || t >= N - 6; /* 2 sinks + 6 recent */
    int order[HKV * N] = {0};
    CHECK_FAILS(be->kv_compact(be, &d, k, v, NULL, 0, src, N, dst, keep, NULL, NULL, 1), ZP_ERR_INVALID, "rope frequencies");
    const float inv[D / 2] = {1.0f, 0.1f, 0.01f, 0.001f};
    CHECK_OK(be->rope_init(be, inv, D / 2, 1.0f));
    CHECK_FAILS(be->kv_compact(be, &d, k, v, NULL, 0, src, N, dst, keep, NULL, order, 1), ZP_ERR_INVALID, "position order");
    CHECK(memcmp(k, before, sizeof k) == 0);
    CHECK_OK(be->kv_compact(be, &d, k, v, NULL, 0, src, N, dst, keep, NULL, NULL, 1));
    int good = 1, rotated = 0;
    for (int g = 0; g < HKV; g++)
        for (int i = 0; i < 8; i++) {
            const int t = i < 2 ? i : i + N - 8;
            const size_t from = ((size_t)src[t / BS] * BS + t % BS) * HKV + g, to = ((size_t)dst[i / BS] * BS + i % BS) * HKV + g;
            float want[D];
            memcpy(want, before + from * D, sizeof want);
            zp_rope_shift_row(want, inv, D / 2, t, i);
            good &= !memcmp(k + to * D, want, sizeof want) && v[to * D + 3] == (float)(from * D + 3);
            rotated += memcmp(want, before + from * D, sizeof want) != 0;
        }
    CHECK(good);
    CHECK(rotated == HKV * 6); /* the sinks stay where they are, the recent ones move by 4 */
    be->destroy(be);
}

/* Order-preserving compaction through scattered, partly shared block tables. */
static void test_compaction_op(void) {
    enum { BS = 4, NB = 10, HKV = 2, D = 3, L = 2, N = 12, LAYER = 1 };
    zp_backend *be;
    CHECK_OK(zp_backend_cpu_create(1, &be));
    zp_attn_dims d = {.n_layers = L,
                      .n_heads = 4,
                      .n_kv_heads = HKV,
                      .head_dim = D,
                      .block_size = BS,
                      .num_blocks = NB,
                      .scale = 1.f,
                      .qk_norm_eps = 1e-6f,
                      .window = 4,
                      .n_qslots = 1};
    float k[L * NB * BS * HKV * D], v[L * NB * BS * HKV * D], sc[L * NB * BS * HKV];
    for (int i = 0; i < L * NB * BS * HKV * D; i++) { k[i] = (float)i; v[i] = -(float)i; }
    for (int i = 0; i < L * NB * BS * HKV; i++) sc[i] = -1.f;
    const int src[3] = {7, 2, 5}, dst[3] = {9, 2, 5}; /* block 7 shared: replaced by fresh 9; 2 and 5 reused in place */
    uint8_t keep[HKV * N];
    float scores[HKV * N];
    for (int g = 0; g < HKV; g++)
        for (int t = 0; t < N; t++) { keep[g * N + t] = (t % 3 != g) && t != 11 - g; scores[g * N + t] = 100.f * g + t; }
    float before_k[L * NB * BS * HKV * D];
    memcpy(before_k, k, sizeof k);
    CHECK_OK(be->kv_compact(be, &d, k, v, sc, LAYER, src, N, dst, keep, scores, NULL, 0));
    const size_t lo = (size_t)LAYER * NB * BS * HKV * D;
    for (int g = 0; g < HKV; g++) {
        int i = 0;
        for (int t = 0; t < N; t++) {
            if (!keep[g * N + t]) continue;
            size_t from = ((size_t)src[t / BS] * BS + t % BS) * HKV + g, to = ((size_t)dst[i / BS] * BS + i % BS) * HKV + g;
            CHECK(k[lo + to * D] == before_k[lo + from * D] && v[lo + to * D + 2] == -before_k[lo + from * D + 2]);
            CHECK(sc[(size_t)LAYER * NB * BS * HKV + to] == scores[g * N + t]);
            i++;
        }
    }
    for (int i = 0; i < BS * HKV * D; i++) CHECK(k[lo + (size_t)7 * BS * HKV * D + i] == before_k[lo + (size_t)7 * BS * HKV * D + i]);
    CHECK(memcmp(k, before_k, sizeof(float) * lo) == 0); /* other layers untouched */
    be->destroy(be);
}

/* After each decode step: compressed requests used their logical position (with StreamingLLM's
 * position shift: their cache index) and attended their physical length. */
typedef struct {
    int seen, shift;
} position_watch;

static void check_positions(zp_engine *e, void *ctx) {
    position_watch *w = ctx;
    const zp_batch *b = &e->last_batch;
    if (b->is_prefill) return;
    for (int i = 0; i < b->n_seqs; i++) {
        const zp_seq *q = e->batch.seqs[i];
        if (!q->compressed || q->status == ZP_SEQ_FINISHED) continue; /* finished ones released their state */
        w->seen++;
        CHECK(b->positions[b->seq_q_start[i]] == (w->shift ? b->seq_kv_len[i] : q->n_done) - 1);
        CHECK(b->seq_kv_len[i] == q->n_kv && q->n_kv > e->cfg.nmax * e->cfg.block_size);
        if (!w->shift) CHECK(b->positions[b->seq_q_start[i]] >= b->seq_kv_len[i]);
    }
}

static void test_invariants_positions(void) {
    for (int kind = 0; kind < 3; kind++) {
        run_spec rs = zipage_spec("tiny-llama");
        rs.ec.scheduler = kind == 1 ? "strict" : "hybrid";
        position_watch w = {0, kind == 2};
        if (w.shift) {
            rs.ec.policy = "streaming";
            rs.ec.policy_params = "{\"position_shift\": true}";
        }
        rs.on_step = check_positions;
        rs.ctx = &w;
        run_result r;
        run_requests(&rs, &r);
        CHECK(r.st.compressions > 0 && w.seen > 0);
        for (int q = 0; q < rs.n_req; q++) CHECK(r.n[q] == rs.sp.max_tokens);
        run_result_free(&r);
    }
}

typedef struct {
    int block[256];
    uint64_t hash[256];
    float *data[256];
    int n, violations, checked;
} shared_watch;

static void watch_shared(zp_engine *e, void *ctx) {
    shared_watch *w = ctx;
    const size_t per_block = (size_t)e->pool.block_size * e->kv.dims.n_kv_heads * e->kv.dims.head_dim;
    const size_t layer = (size_t)e->pool.num_blocks * per_block;
    for (int i = 0; i < w->n; i++) { /* still the same registered block: content must be unchanged */
        int b = w->block[i];
        if (!w->data[i] || e->pool.ref[b] == 0 || e->pool.hash[b] != w->hash[i]) { free(w->data[i]); w->data[i] = NULL; continue; }
        for (int l = 0; l < e->kv.dims.n_layers; l++) {
            w->checked++;
            if (memcmp(w->data[i] + l * per_block, (float *)e->kv.k + l * layer + b * per_block, per_block * sizeof(float))) w->violations++;
        }
    }
    for (int b = 0; b < e->pool.num_blocks && w->n < 256; b++) {
        if (e->pool.ref[b] < 2) continue;
        int known = 0;
        for (int i = 0; i < w->n; i++) known |= w->block[i] == b && w->data[i];
        if (known) continue;
        w->block[w->n] = b;
        w->hash[w->n] = e->pool.hash[b];
        w->data[w->n] = malloc(per_block * sizeof(float) * (size_t)e->kv.dims.n_layers);
        for (int l = 0; l < e->kv.dims.n_layers; l++)
            memcpy(w->data[w->n] + l * per_block, (float *)e->kv.k + l * layer + b * per_block, per_block * sizeof(float));
        w->n++;
    }
}

static void test_shared_prefix_untouched(void) {
    run_spec rs = zipage_spec("tiny-qwen2");
    rs.shared_prompt = 1;
    rs.prompt_len = 40; /* two full shared blocks; first compression at 48 tokens */
    rs.samples = 3;
    rs.n_req = 2;
    rs.sp.temperature = 0.8f;
    shared_watch w;
    memset(&w, 0, sizeof w);
    rs.on_step = watch_shared;
    rs.ctx = &w;
    run_result r;
    run_requests(&rs, &r);
    CHECK(r.st.compressions > 0 && r.st.prefix_hit_tokens > 0);
    CHECK(w.n > 0 && w.checked > 0);
    CHECK(w.violations == 0);
    for (int i = 0; i < w.n; i++) free(w.data[i]);
    run_result_free(&r);
}

static void test_preemption_and_async(void) {
    const char *scheds[2] = {"hybrid", "strict"};
    for (int k = 0; k < 2; k++) {
        run_spec rs = zipage_spec("tiny-qwen3");
        rs.ec.scheduler = scheds[k];
        rs.ec.max_concurrency = 3;
        run_result big, tiny, async;
        run_requests(&rs, &big);
        rs.ec.num_blocks = 8; /* 6 requests x 3 blocks each do not fit: preempt or suspend */
        run_requests(&rs, &tiny);
        rs.ec.async_compress = 1;
        run_requests(&rs, &async);
        CHECK(tiny.st.preemptions + tiny.st.suspensions > 0);
        CHECK(run_same_outputs(&big, &tiny));
        CHECK(run_same_outputs(&big, &async));
        CHECK(async.st.compressions == big.st.compressions && async.st.compress_wait_steps > 0);
        run_result_free(&big);
        run_result_free(&tiny);
        run_result_free(&async);
    }
}

/* admission_reserve 1: a request is admitted only while every running request can still reach
 * its cap (N_max + 1 = 3 blocks) in a pool of 8, so two run at once and nothing is preempted,
 * where the reference's admission (a prompt's blocks) admits all six and preempts; both give
 * the unconstrained run's tokens. Half a reservation (2 blocks) lies between them. */
static void test_admission_reserve(void) {
    run_spec rs = zipage_spec("tiny-qwen3");
    rs.ec.max_concurrency = 3;
    run_result big, greedy, half, all;
    run_requests(&rs, &big);
    rs.ec.num_blocks = 8;
    run_requests(&rs, &greedy);
    rs.ec.admission_reserve = 0.5f;
    run_requests(&rs, &half);
    rs.ec.admission_reserve = 1.0f;
    run_requests(&rs, &all);
    printf("admission reserve 0 / 0.5 / 1: preemptions %lld / %lld / %lld, peak running %d / %d / %d\n", (long long)greedy.st.preemptions,
           (long long)half.st.preemptions, (long long)all.st.preemptions, greedy.st.peak_running, half.st.peak_running, all.st.peak_running);
    CHECK(greedy.st.preemptions > 0 && all.st.preemptions == 0);
    CHECK(all.st.peak_running == 2 && greedy.st.peak_running > 2);
    CHECK(half.st.peak_running >= all.st.peak_running && half.st.peak_running <= greedy.st.peak_running);
    CHECK(run_same_outputs(&big, &greedy) && run_same_outputs(&big, &half) && run_same_outputs(&big, &all));
    run_result_free(&big);
    run_result_free(&greedy);
    run_result_free(&half);
    run_result_free(&all);
}

/* admission_reserve 1 against compressed requests: a running request holds back the blocks it
 * may still take up to its reservation (N_max + 1 = 3 blocks), not up to its logical length, which
 * compression leaves far above its blocks. Watched after every step: when the waiting head's
 * reservation fits beside every running request's (free blocks less their remaining growth), a
 * query slot is free and the batch has room, the next step admits it (a prefill). Before the
 * fix a compressed request's length held back blocks no request could take, and admission
 * stalled with most of the pool free. */
typedef struct {
    int could, stalls, admitted;
} reserve_watch;

static void watch_reserve(zp_engine *e, void *ctx) {
    reserve_watch *w = ctx;
    const zp_scheduler *s = &e->sched;
    if (w->could) { /* the step just taken had to admit */
        w->stalls += !e->last_batch.is_prefill || e->last_batch.n_tokens == 0;
        w->admitted += e->last_batch.is_prefill;
    }
    w->could = 0;
    if (!s->waiting.n || s->running.n >= s->max_num_seqs || s->n_free_q == 0) return;
    int held = 0;
    for (int i = 0; i < s->running.n; i++) {
        const zp_seq *q = s->running.v[i];
        const int more = sched_blocks_needed(s, q->n_prompt, q->sp.max_tokens) - q->n_blocks; /* reserve 1: its most blocks */
        held += more > 0 ? more : 0;
    }
    const zp_seq *h = s->waiting.v[0];
    int want = sched_blocks_needed(s, h->n_prompt, h->sp.max_tokens);
    if (want < sched_blocks_for(s, h->n_tokens)) want = sched_blocks_for(s, h->n_tokens);
    w->could = kv_pool_num_free(s->pool) - held >= want;
}

static void test_admission_reserve_compressed(void) {
    run_spec rs = zipage_spec("tiny-qwen3");
    rs.n_req = 12;
    rs.random_lengths = 5; /* prompts 1..9 tokens, 1..120 tokens each: most compress well past the cap */
    rs.ec.num_blocks = 12; /* four requests at their cap */
    rs.ec.max_concurrency = 4;
    rs.ec.admission_reserve = 1.0f;
    reserve_watch w = {0, 0, 0};
    rs.on_step = watch_reserve;
    rs.ctx = &w;
    run_result r;
    run_requests(&rs, &r);
    printf("admission reserve 1, compressed requests: %d admissions due, %d stalled; %lld compressions, %lld preemptions, peak running %d\n",
           w.admitted + w.stalls, w.stalls, (long long)r.st.compressions, (long long)r.st.preemptions, r.st.peak_running);
    CHECK(r.st.compressions > 0 && w.admitted > 0 && w.stalls == 0 && r.st.peak_running >= 4);
    run_result_free(&r);
}

/* Async compression repeats token for token: 64 sampled continuations of one prompt in a pool
 * of 12 blocks (preemption and recompute under way), every evicting policy, prefix cache on,
 * three runs each (before the worker was joined at a fixed step, 13 of 56 such configurations
 * changed between reruns). Against sync the batches differ, so floating-point sums (and
 * sometimes a sampled token) may differ: only the run-to-run guarantee is asserted. */
static void test_async_reproducible(void) {
    const zp_policy_ops *const *reg = policy_registry();
    int checked = 0;
    for (int p = 0; reg[p]; p++) {
        if (!reg[p]->evicts || reg[p]->needs_stats)
            continue; /* TriAttention runs with its statistics file: its own tests (test_triattention_engine) */
        run_spec rs = run_spec_default("tiny-qwen3");
        rs.ec.policy = reg[p]->name;
        rs.ec.nmax = 1;
        rs.ec.window = 4;
        rs.ec.num_blocks = 12;
        rs.ec.async_compress = 1;
        rs.ec.enable_prefix_cache = 1;
        rs.n_req = 1;
        rs.samples = 64;
        rs.shared_prompt = 1;
        rs.prompt_len = 24;
        /* h2o's live history turns the prefix cache off: one-block prompts then keep the pool short */
        if (!strcmp(reg[p]->name, "h2o")) rs.prompt_len = 8;
        rs.sp.temperature = 0.8f;
        rs.sp.max_tokens = 48;
        run_result r[3];
        for (int k = 0; k < 3; k++) run_requests(&rs, &r[k]);
        if (!run_same_outputs(&r[0], &r[1]) || !run_same_outputs(&r[0], &r[2])) fprintf(stderr, "async %s: reruns differ\n", reg[p]->name);
        CHECK(run_same_outputs(&r[0], &r[1]) && run_same_outputs(&r[0], &r[2]));
        if (!(r[0].st.preemptions > 0 && r[0].st.compressions > 0))
            fprintf(stderr, "async %s: %lld preemptions, %lld compressions\n", reg[p]->name, (long long)r[0].st.preemptions,
                    (long long)r[0].st.compressions);
        CHECK(r[0].st.preemptions > 0 && r[0].st.compressions > 0);
        for (int k = 0; k < 3; k++) run_result_free(&r[k]);
        checked++;
    }
    CHECK(checked >= 6);
}

/* A running request without a query slot that has reached its window positions is stalled. */
static int stalled(const zp_engine *e, const zp_seq *q) {
    const int bs = e->cfg.block_size, blocks = (q->n_tokens + bs - 1) / bs, r = (q->n_tokens - 1) % bs + 1;
    return q->qid < 0 && !(blocks < e->cfg.nmax + 1 || r <= bs - e->cfg.window);
}

typedef struct {
    int admissions, violations;
} refill_watch;

/* After an admission step: no request admitted with a slot while an older running one stalls
 * without one (the Zipage reference refills running requests before it admits). */
static void watch_refill(zp_engine *e, void *ctx) {
    refill_watch *w = ctx;
    if (!e->batch.is_prefill) return;
    w->admissions++;
    int admitted_with_slot = 0, stalled_old = 0;
    for (int i = 0; i < e->sched.running.n; i++) {
        const zp_seq *q = e->sched.running.v[i];
        int in_batch = 0;
        for (int k = 0; k < e->batch.n; k++) in_batch |= e->batch.seqs[k] == q;
        if (in_batch && q->qid >= 0) admitted_with_slot = 1;
        if (!in_batch && stalled(e, q)) stalled_old = 1;
    }
    w->violations += admitted_with_slot && stalled_old;
}

static void test_refill_before_admission(void) {
    run_spec rs = zipage_spec("tiny-qwen3");
    rs.ec.scheduler = "hybrid";
    rs.ec.max_concurrency = 2;
    rs.ec.nmax = 1;
    rs.n_req = 10;
    rs.prompt_len = 5;
    rs.prompt_step = 3;
    rs.sp.max_tokens = 90;
    refill_watch w = {0, 0};
    rs.on_step = watch_refill;
    rs.ctx = &w;
    run_result r;
    run_requests(&rs, &r);
    if (w.violations) fprintf(stderr, "refill: %d of %d admissions gave slots past stalled running requests\n", w.violations, w.admissions);
    CHECK(w.admissions >= 2 && w.violations == 0 && r.st.compressions > 0);
    run_result_free(&r);
}

static void test_hybrid_beats_strict(void) {
    run_spec rs = zipage_spec("tiny-qwen3");
    rs.n_req = 12;
    rs.prompt_len = 5;
    rs.prompt_step = 1;
    rs.ec.max_concurrency = 3;
    rs.ec.num_blocks = 40;
    run_result h, s;
    rs.ec.scheduler = "hybrid";
    run_requests(&rs, &h);
    rs.ec.scheduler = "strict";
    run_requests(&rs, &s);
    CHECK(s.max_running <= 3);
    CHECK(h.max_running > s.max_running);
    CHECK(run_same_outputs(&h, &s)); /* scheduling changes throughput, not greedy tokens */
    run_result_free(&h);
    run_result_free(&s);
}

/* A prompt longer than the cap is prefilled whole and compressed at its first block boundary. */
static void test_long_prompt(void) {
    run_spec rs = zipage_spec("tiny-llama");
    rs.n_req = 3;
    rs.prompt_len = 100; /* 7 blocks of 16 with nmax 2 */
    rs.prompt_step = 13;
    rs.sp.max_tokens = 60;
    const char *policies[3] = {"zipage", "snapkv-d", "streaming"};
    for (int i = 0; i < 3; i++) {
        rs.ec.policy = policies[i];
        run_result r;
        run_requests(&rs, &r);
        CHECK(r.st.compressions >= rs.n_req);
        CHECK(r.st.peak_request_tokens <= 126 + 16); /* at most the longest prompt's blocks */
        for (int q = 0; q < rs.n_req; q++) CHECK(r.n[q] == rs.sp.max_tokens);
        run_result_free(&r);
    }
}

/* Pooling and the global score against their definitions on random data. */
static void test_pool_global_random(void) {
    enum { N = 37 };
    float x[N], h[N], out[N], S[N];
    for (int t = 0; t < N; t++) { x[t] = zp_rng_uniform(3, 1, 0, (uint32_t)t); h[t] = zp_rng_uniform(3, 2, 0, (uint32_t)t); }
    for (int k = 1; k <= 7; k += 2) {
        scorer_max_pool(x, N, k, out);
        for (int t = 0; t < N; t++) {
            float m = -1;
            for (int u = t - k / 2; u <= t + k / 2; u++)
                if (u >= 0 && u < N && x[u] > m) m = x[u];
            CHECK(out[t] == m);
        }
    }
    scorer_global(x, h, N, 20, 0.8f, 0, S);
    for (int t = 0; t < N; t++) CHECK(S[t] == (t < 20 ? fmaxf(x[t], 0.8f * h[t]) : x[t]));
    scorer_global(x, h, N, 20, 0.5f, 1, S);
    for (int t = 0; t < N; t++) CHECK_NEAR(S[t], t < 20 ? x[t] + 0.5f * h[t] : x[t], 1e-7);
    scorer_key_norm(x, 1, N, out);
    double ss = 0;
    for (int t = 0; t < N; t++) ss += (double)x[t] * x[t];
    CHECK_NEAR(out[0], sqrt(ss), 1e-5);
}

/* Seeded stress: random lengths, a tiny pool, every scheduler, prefix sharing on and off. */
static void test_stress(void) {
    const char *scheds[3] = {"full", "strict", "hybrid"};
    int total = 0;
    for (int k = 0; k < 3; k++)
        for (int prefix = 0; prefix < 2; prefix++) {
            run_spec rs = run_spec_default("tiny-qwen3");
            rs.ec.block_size = 4;
            rs.ec.num_blocks = 24;
            rs.ec.max_num_seqs = 16;
            rs.ec.enable_prefix_cache = prefix;
            rs.ec.scheduler = scheds[k];
            rs.ec.policy = k ? "zipage" : "full";
            rs.ec.nmax = 2;
            rs.ec.window = 2;
            rs.ec.async_compress = k == 2 && prefix;
            rs.n_req = 350;
            rs.samples = 1 + prefix; /* samples share their prompt blocks */
            rs.prompt_len = 14;
            rs.sp.max_tokens = 30;
            rs.sp.temperature = 1.0f;
            rs.random_lengths = 1234 + (uint32_t)k;
            rs.check_invariants = 1;
            run_result r;
            run_requests(&rs, &r);
            for (int i = 0; i < rs.n_req * rs.samples; i++) CHECK(r.n[i] > 0);
            CHECK(k == 0 || r.st.compressions > 0);
            total += rs.n_req * rs.samples;
            run_result_free(&r);
        }
    CHECK(total >= 3000);
}

int main(void) {
    test_compaction_op();
    test_compaction_shift();
    test_large_budget_is_full();
    test_invariants_positions();
    test_shared_prefix_untouched();
    test_preemption_and_async();
    test_admission_reserve();
    test_admission_reserve_compressed();
    test_async_reproducible();
    test_refill_before_admission();
    test_hybrid_beats_strict();
    test_long_prompt();
    test_pool_global_random();
    test_stress();
    return zp_test_finish("test_compress");
}
