/* test_engine.c - the full-KV engine loop end to end on tiny checkpoints: prefix-cache hits
 * give the same outputs with fewer prefill tokens, preemption under a tiny pool completes every
 * request with the same greedy output, sampled tokens do not depend on scheduling (batch cap,
 * pool size, arrival order, block size), stop tokens, and bad requests are refused clearly. */
#include <string.h>

#include "engine_internal.h"
#include "model.h"
#include "test_runner.h"
#include "test_util.h"

static void test_prefix_cache(void) {
    run_spec rs = run_spec_default("tiny-qwen2");
    rs.shared_prompt = 1; /* all 6 requests x 2 samples start with the same 37 tokens */
    rs.prompt_len = 37;
    rs.samples = 2;
    rs.check_invariants = 1;
    run_result on, off;
    run_requests(&rs, &on);
    rs.ec.enable_prefix_cache = 0;
    run_requests(&rs, &off);
    CHECK(run_same_outputs(&on, &off));
    CHECK(on.st.prefix_hit_tokens > 0 && off.st.prefix_hit_tokens == 0);
    CHECK(on.st.prefill_tokens < off.st.prefill_tokens);
    /* two full blocks of 16 are shared by the 11 later requests admitted after the first */
    CHECK(on.st.prefix_hit_tokens >= 11 * 32 - 32);
    run_result_free(&on);
    run_result_free(&off);
}

static void test_preemption(void) {
    run_spec rs = run_spec_default("tiny-llama");
    rs.check_invariants = 1;
    run_result big, tiny;
    run_requests(&rs, &big);
    rs.ec.num_blocks = 10; /* the 6 requests need 3..7 blocks each: far fewer than they hold together */
    run_requests(&rs, &tiny);
    CHECK(big.st.preemptions == 0);
    CHECK(tiny.st.preemptions > 0);
    CHECK(tiny.st.peak_blocks <= 10);
    /* the saturated phase (requests waiting at the start of a step): all of the big pool's run
     * is admitted at once, the tiny pool keeps requests waiting for part of its run, not all */
    const int64_t total = rs.n_req * (int64_t)rs.sp.max_tokens;
    CHECK(big.st.saturated_tokens < total / 2 && tiny.st.saturated_tokens > big.st.saturated_tokens);
    CHECK(tiny.st.saturated_tokens < tiny.st.generated_tokens && tiny.st.saturated_seconds > 0);
    CHECK(run_same_outputs(&big, &tiny));
    for (int r = 0; r < rs.n_req; r++) CHECK(tiny.n[r] == rs.sp.max_tokens && tiny.finish[r] == ZP_FINISH_LENGTH);
    run_result_free(&big);
    run_result_free(&tiny);
}

static void test_schedule_independent_sampling(void) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.sp.temperature = 0.9f;
    rs.sp.top_p = 0.95f;
    rs.samples = 2;
    run_result a, b, c;
    run_requests(&rs, &a);
    rs.ec.max_num_seqs = 3;
    rs.ec.num_blocks = 12;
    run_requests(&rs, &b);
    rs.ec.max_num_seqs = 5;
    rs.ec.num_blocks = 40;
    rs.ec.block_size = 32;
    rs.reverse = 1;
    run_requests(&rs, &c);
    CHECK(b.st.preemptions > 0 || b.st.decode_steps > a.st.decode_steps); /* really scheduled differently */
    CHECK(run_same_outputs(&a, &b));
    CHECK(run_same_outputs(&a, &c));
    int differ = 0; /* the two samples of a request draw different numbers */
    for (int r = 0; r < rs.n_req; r++) differ += memcmp(a.tokens[2 * r], a.tokens[2 * r + 1], sizeof(int) * (size_t)a.n[2 * r]) != 0;
    CHECK(differ >= rs.n_req - 1);
    run_result_free(&a);
    run_result_free(&b);
    run_result_free(&c);
}

static void test_stop_and_errors(void) {
    run_spec rs = run_spec_default("tiny-qwen2");
    run_result g, s;
    run_requests(&rs, &g);
    rs.sp.n_stop = 1;
    rs.sp.stop_ids[0] = g.tokens[2][10];
    run_requests(&rs, &s);
    int first = 0;
    while (g.tokens[2][first] != rs.sp.stop_ids[0]) first++;
    CHECK(s.finish[2] == ZP_FINISH_STOP && s.n[2] == first + 1);
    run_result_free(&g);
    run_result_free(&s);
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model("tiny-qwen2");
    ec.block_size = 16;
    ec.num_blocks = 4;
    ec.max_num_batched_tokens = 50;
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    zp_sampling_params sp = zp_sampling_default();
    int ids[60] = {1, 2, 5000};
    CHECK_FAILS(zp_engine_add_request(e, ids, 3, &sp, 7, 0, 0), ZP_ERR_INVALID, "token 5000 at index 2");
    ids[2] = 3;
    sp.max_tokens = 70;
    CHECK_FAILS(zp_engine_add_request(e, ids, 2, &sp, 8, 0, 0), ZP_ERR_CAPACITY, "the pool has 4");
    sp.max_tokens = 4;
    CHECK_FAILS(zp_engine_add_request(e, ids, 60, &sp, 9, 0, 0), ZP_ERR_CAPACITY, "max_num_batched_tokens 50");
    sp.top_p = 0;
    CHECK_FAILS(zp_engine_add_request(e, ids, 2, &sp, 10, 0, 0), ZP_ERR_INVALID, "top_p");
    CHECK(!zp_engine_has_unfinished(e));
    zp_engine_free(e);
    ec.device = "tpu";
    CHECK_FAILS(zp_engine_init(&ec, &e), ZP_ERR_UNSUPPORTED, "tpu");
}

/* The memory-sizing warm-up builds a consistent multi-sequence prefill of T rows (here on the
 * CPU reference, where the forward checks every row against its sequence). */
static void test_warm_up(void) {
    zp_backend *be;
    zp_model *m;
    CHECK_OK(zp_backend_cpu_create(2, &be));
    CHECK_OK(zp_model_load(zp_test_model("tiny-qwen3"), be, &m));
    CHECK_OK(engine_warm_up(m, 2500, 7, 16)); /* 3 sequences: 1024 + 1024 + 452 */
    CHECK(m->act_rows >= 2500 && m->out_rows_cap >= 7);
    CHECK_OK(engine_warm_up(m, 100, 100, 256));
    zp_model_free(m);
    be->destroy(be);
}

/* One engine reinitialised through a sweep (full KV at two pool sizes, then Zipage, SnapKV)
 * gives exactly the outputs and compression counts of fresh engines of the same settings;
 * reinit refuses another model or unfinished requests and leaves the engine usable. */
static void test_reinit(void) {
    run_spec rs = run_spec_default("tiny-qwen3");
    rs.sp.max_tokens = 40;
    rs.ec.block_size = 16;
    rs.ec.num_blocks = 0; /* the pool from kv_pool_tokens */
    rs.check_invariants = 1;
    struct { const char *policy; int64_t pool; } sweep[4] = {{"full", 4096}, {"full", 1024}, {"zipage", 2048}, {"snapkv-d", 2048}};
    zp_engine *kept = NULL;
    for (int i = 0; i < 4; i++) {
        rs.ec.policy = sweep[i].policy;
        rs.ec.kv_pool_tokens = sweep[i].pool;
        rs.ec.nmax = 2;
        rs.ec.window = 4;
        run_result fresh, reused;
        rs.engine = NULL;
        run_requests(&rs, &fresh);
        rs.engine = &kept;
        run_requests(&rs, &reused);
        CHECK(kept != NULL);
        CHECK(run_same_outputs(&fresh, &reused));
        CHECK(fresh.st.compressions == reused.st.compressions && fresh.st.num_blocks == reused.st.num_blocks);
        CHECK(fresh.st.num_blocks == (int)(sweep[i].pool / 16));
        CHECK(strcmp(sweep[i].policy, "full") ? reused.st.compressions > 0 : reused.st.compressions == 0);
        run_result_free(&fresh);
        run_result_free(&reused);
    }
    zp_engine_config other = zp_engine_config_default();
    other.model_dir = zp_test_model("tiny-llama");
    CHECK(zp_engine_reinit(&kept, &other) == ZP_ERR_INVALID && kept != NULL);
    CHECK(strstr(zp_last_error(), "must stay the same") != NULL);
    zp_engine_config same = zp_engine_config_default();
    same.model_dir = zp_test_model("tiny-qwen3");
    same.block_size = 16;
    int ids[4] = {1, 2, 3, 4};
    zp_sampling_params sp = zp_sampling_default();
    CHECK_OK(zp_engine_add_request(kept, ids, 4, &sp, 0, 0, 1));
    CHECK(zp_engine_reinit(&kept, &same) == ZP_ERR_INVALID && kept != NULL);
    CHECK(strstr(zp_last_error(), "unfinished") != NULL);
    zp_engine_free(kept);
}

/* abandon: a run cut mid-way (async compression in flight) drops its unfinished requests;
 * the engine refuses further steps, and reinit then gives an engine whose outputs equal a
 * fresh one's. */
static void test_abandon(void) {
    run_spec rs = run_spec_zipage("tiny-qwen3");
    rs.ec.async_compress = 1;
    rs.check_invariants = 1;
    zp_engine_config ec = rs.ec;
    ec.model_dir = zp_test_model("tiny-qwen3");
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    int ids[24] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28};
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 400;
    sp.ignore_eos = 1;
    for (int r = 0; r < 6; r++) /* staggered lengths: the batch keeps running while one compresses */
        CHECK_OK(zp_engine_add_request(e, ids, 3 + 4 * r, &sp, r, 0, 1));
    int steps = 0;
    while (!e->worker_running && steps < 1000 && zp_engine_step(e) == ZP_OK) steps++;
    CHECK(e->worker_running); /* cut while a compression is in flight */
    zp_engine_abandon(e);
    CHECK(!e->worker_running);
    CHECK(zp_engine_step(e) == ZP_ERR_INVALID && strstr(zp_last_error(), "abandon") != NULL);
    run_result fresh, reused;
    run_requests(&rs, &fresh);
    rs.engine = &e;
    run_requests(&rs, &reused);
    CHECK(e != NULL && run_same_outputs(&fresh, &reused) && reused.st.compressions == fresh.st.compressions);
    run_result_free(&fresh);
    run_result_free(&reused);
    zp_engine_free(e);
}

/* reset_stats (a benchmark's warm-up run left out): refused while requests are unfinished; after
 * it the counters are zero but the pool's size, and the same requests again count as the first
 * run did (Zipage, compressions included). */
static void test_reset_stats(void) {
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model("tiny-qwen3");
    ec.block_size = 16;
    ec.policy = "zipage";
    ec.nmax = 2;
    ec.window = 4;
    ec.enable_prefix_cache = 0; /* the second run computes what the first did */
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    int ids[12] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 120;
    sp.ignore_eos = 1;
    zp_engine_stats st[2];
    for (int run = 0; run < 2; run++) {
        for (int r = 0; r < 3; r++) CHECK_OK(zp_engine_add_request(e, ids, 4 + 4 * r, &sp, r, 0, 1));
        if (run == 0) CHECK(zp_engine_reset_stats(e) == ZP_ERR_INVALID && strstr(zp_last_error(), "unfinished") != NULL);
        while (zp_engine_has_unfinished(e)) CHECK_OK(zp_engine_step(e));
        zp_output out[3];
        const int n = zp_engine_poll(e, out, 3);
        CHECK(n == 3);
        for (int i = 0; i < n; i++) zp_output_free(&out[i]);
        zp_engine_get_stats(e, &st[run]);
        if (run == 0) {
            CHECK_OK(zp_engine_reset_stats(e));
            zp_engine_stats z;
            zp_engine_get_stats(e, &z);
            CHECK(z.generated_tokens == 0 && z.decode_steps == 0 && z.compressions == 0 && z.decode_seconds == 0.0);
            CHECK(z.num_blocks == st[0].num_blocks && z.kv_state_bytes == st[0].kv_state_bytes);
        }
    }
    CHECK(st[0].generated_tokens == 360 && st[1].generated_tokens == 360);
    CHECK(st[0].decode_steps == st[1].decode_steps && st[0].prefill_tokens == st[1].prefill_tokens);
    CHECK(st[0].compressions > 0 && st[0].compressions == st[1].compressions);
    zp_engine_free(e);
}

/* kv_pool_bytes: the same memory for every policy; an evicting one spends part of it on its
 * score cache and query slots, so it gets fewer blocks; one block more would not fit. */
static void test_pool_bytes(void) {
    run_spec rs = run_spec_default("tiny-qwen3");
    zp_engine_config c = rs.ec;
    c.model_dir = zp_test_model(rs.preset);
    c.block_size = 16;
    c.num_blocks = 0;
    c.kv_pool_tokens = 0;
    const double bytes = 3e6;
    c.kv_pool_bytes = bytes;
    zp_engine *full = NULL, *zip = NULL, *bad = NULL;
    zp_engine_stats sf, sz;
    CHECK_OK(zp_engine_init(&c, &full));
    zp_engine_get_stats(full, &sf);
    const double per_block = sf.kv_state_bytes / sf.num_blocks;
    CHECK(sf.num_blocks > 0 && sf.kv_state_bytes <= bytes && sf.kv_state_bytes + per_block > bytes && sf.n_qslots == 0);
    c.policy = "zipage";
    c.nmax = 2;
    c.window = 4;
    CHECK_OK(zp_engine_init(&c, &zip));
    zp_engine_get_stats(zip, &sz);
    CHECK(sz.n_qslots > 0 && sz.num_blocks < sf.num_blocks && sz.kv_state_bytes <= bytes);
    CHECK(engine_kv_state_bytes(zip, sz.num_blocks + 1) > bytes);
    CHECK(sz.kv_state_bytes == engine_kv_state_bytes(zip, sz.num_blocks));
    c.kv_pool_tokens = 1024; /* two pool sizes at once */
    CHECK(zp_engine_init(&c, &bad) == ZP_ERR_INVALID && strstr(zp_last_error(), "excludes"));
    c.kv_pool_tokens = 0;
    c.kv_pool_bytes = 1000; /* not one request's blocks */
    CHECK(zp_engine_init(&c, &bad) == ZP_ERR_CAPACITY && strstr(zp_last_error(), "kv_pool_bytes"));
    CHECK(bad == NULL);
    zp_engine_free(full);
    zp_engine_free(zip);
}

int main(void) {
    test_warm_up();
    test_pool_bytes();
    test_prefix_cache();
    test_preemption();
    test_schedule_independent_sampling();
    test_stop_and_errors();
    test_reinit();
    test_abandon();
    test_reset_stats();
    return zp_test_finish("test_engine");
}
