/* test_engine.c - the engine loop end to end on tiny checkpoints: prefix-cache hits give the
 * same outputs with fewer prefill tokens, preemption under a tiny pool completes every request
 * with the same greedy output, sampled tokens do not depend on scheduling (batch cap, pool
 * size, arrival order), stop tokens, and bad requests are refused with a clear error. */
#include <string.h>

#include "engine.h"
#include "test_util.h"

enum { NREQ = 6, MAXG = 40 };

typedef struct {
    int tokens[NREQ][2][MAXG + 1];
    int n[NREQ][2];
    zp_finish_reason finish[NREQ][2];
    zp_engine_stats st;
} run_result;

typedef struct {
    const char *preset;
    int block_size, num_blocks, max_num_seqs, prefix_cache, reverse, samples, shared_prompt;
    zp_sampling_params sp;
} run_spec;

static void make_prompt(int r, int shared, int *ids, int *n, int vocab) {
    *n = shared ? 37 : 9 + 7 * r;
    for (int i = 0; i < *n; i++) ids[i] = (int)(zp_rng_uniform(11, shared ? 0 : (uint64_t)r, 0, (uint32_t)i) * vocab) % vocab;
}

static void run(const run_spec *rs, run_result *out) {
    memset(out, 0, sizeof *out);
    zp_engine_config ec = zp_engine_config_default();
    ec.model_dir = zp_test_model(rs->preset);
    ec.block_size = rs->block_size;
    ec.num_blocks = rs->num_blocks;
    ec.max_num_seqs = rs->max_num_seqs;
    ec.enable_prefix_cache = rs->prefix_cache;
    ec.n_threads = 2;
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    const int V = zp_engine_model_config(e)->vocab;
    for (int k = 0; k < NREQ; k++) {
        int r = rs->reverse ? NREQ - 1 - k : k, ids[64], n;
        make_prompt(r, rs->shared_prompt, ids, &n, V);
        for (int s = 0; s < rs->samples; s++) CHECK_OK(zp_engine_add_request(e, ids, n, &rs->sp, 100 + r, s, 5));
    }
    int guard = 0;
    while (zp_engine_has_unfinished(e) && guard++ < 10000) CHECK_OK(zp_engine_step(e));
    CHECK(!zp_engine_has_unfinished(e));
    zp_output o[4];
    for (int n; (n = zp_engine_poll(e, o, 4)) > 0;)
        for (int i = 0; i < n; i++) {
            int r = (int)o[i].request_id - 100, s = o[i].sample_index;
            out->n[r][s] = o[i].n_tokens;
            out->finish[r][s] = o[i].finish;
            memcpy(out->tokens[r][s], o[i].tokens, sizeof(int) * (size_t)o[i].n_tokens);
            zp_output_free(&o[i]);
        }
    zp_engine_get_stats(e, &out->st);
    zp_engine_free(e);
}

static int same_outputs(const run_result *a, const run_result *b, int samples) {
    for (int r = 0; r < NREQ; r++)
        for (int s = 0; s < samples; s++)
            if (a->n[r][s] != b->n[r][s] || a->n[r][s] == 0 || memcmp(a->tokens[r][s], b->tokens[r][s], sizeof(int) * (size_t)a->n[r][s]))
                return 0;
    return 1;
}

static run_spec base_spec(const char *preset) {
    run_spec rs = {preset, 16, 64, 64, 1, 0, 1, 0, zp_sampling_default()};
    rs.sp.max_tokens = MAXG;
    rs.sp.ignore_eos = 1;
    return rs;
}

static void test_prefix_cache(void) {
    run_spec rs = base_spec("tiny-qwen2");
    rs.shared_prompt = 1; /* all 6 requests x 2 samples start with the same 37 tokens */
    rs.samples = 2;
    static run_result on, off;
    run(&rs, &on);
    rs.prefix_cache = 0;
    run(&rs, &off);
    CHECK(same_outputs(&on, &off, 2));
    CHECK(on.st.prefix_hit_tokens > 0 && off.st.prefix_hit_tokens == 0);
    CHECK(on.st.prefill_tokens < off.st.prefill_tokens);
    /* two full blocks of 16 are shared by the 11 later requests admitted after the first */
    CHECK(on.st.prefix_hit_tokens >= 11 * 32 - 32);
}

static void test_preemption(void) {
    run_spec rs = base_spec("tiny-llama");
    static run_result big, tiny;
    run(&rs, &big);
    rs.num_blocks = 10; /* the 6 requests need 3..7 blocks each: far fewer than they hold together */
    run(&rs, &tiny);
    CHECK(big.st.preemptions == 0);
    CHECK(tiny.st.preemptions > 0);
    CHECK(tiny.st.peak_blocks <= 10);
    CHECK(same_outputs(&big, &tiny, 1));
    for (int r = 0; r < NREQ; r++) CHECK(tiny.n[r][0] == MAXG && tiny.finish[r][0] == ZP_FINISH_LENGTH);
}

static void test_schedule_independent_sampling(void) {
    run_spec rs = base_spec("tiny-qwen3");
    rs.sp.temperature = 0.9f;
    rs.sp.top_p = 0.95f;
    rs.samples = 2;
    static run_result a, b, c;
    run(&rs, &a);
    rs.max_num_seqs = 3;
    rs.num_blocks = 12;
    run(&rs, &b);
    rs.max_num_seqs = 5;
    rs.num_blocks = 40;
    rs.reverse = 1;
    rs.block_size = 32;
    run(&rs, &c);
    CHECK(b.st.preemptions > 0 || b.st.decode_steps > a.st.decode_steps); /* really scheduled differently */
    CHECK(same_outputs(&a, &b, 2));
    CHECK(same_outputs(&a, &c, 2));
    int differ = 0; /* the two samples of a request draw different numbers */
    for (int r = 0; r < NREQ; r++) differ += memcmp(a.tokens[r][0], a.tokens[r][1], sizeof(int) * MAXG) != 0;
    CHECK(differ >= NREQ - 1);
}

static void test_stop_and_errors(void) {
    run_spec rs = base_spec("tiny-qwen2");
    static run_result g, s;
    run(&rs, &g);
    rs.sp.n_stop = 1;
    rs.sp.stop_ids[0] = g.tokens[2][0][10];
    run(&rs, &s);
    int first = 0;
    while (g.tokens[2][0][first] != rs.sp.stop_ids[0]) first++;
    CHECK(s.finish[2][0] == ZP_FINISH_STOP && s.n[2][0] == first + 1);
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

int main(void) {
    test_prefix_cache();
    test_preemption();
    test_schedule_independent_sampling();
    test_stop_and_errors();
    return zp_test_finish("test_engine");
}
