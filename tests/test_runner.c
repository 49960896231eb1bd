/* test_runner.c - see test_runner.h. */
#include "test_runner.h"

#include <string.h>

#include "test_util.h"

run_spec run_spec_default(const char *preset) {
    run_spec rs;
    memset(&rs, 0, sizeof rs);
    rs.preset = preset;
    rs.ec = zp_engine_config_default();
    rs.ec.block_size = 16;
    rs.ec.num_blocks = 64;
    rs.ec.max_num_seqs = 64;
    rs.ec.n_threads = 2;
    rs.sp = zp_sampling_default();
    rs.sp.max_tokens = 40;
    rs.sp.ignore_eos = 1;
    rs.n_req = 6;
    rs.samples = 1;
    rs.prompt_len = 9;
    rs.prompt_step = 7;
    return rs;
}

run_spec run_spec_zipage(const char *preset) {
    run_spec rs = run_spec_default(preset);
    rs.ec.policy = "zipage";
    rs.ec.nmax = 2;
    rs.ec.window = 4;
    return rs;
}

static void make_prompt(const run_spec *rs, int r, int *ids, int *n, int vocab) {
    *n = rs->shared_prompt ? rs->prompt_len : rs->prompt_len + rs->prompt_step * r;
    if (rs->random_lengths) *n = 1 + (int)(zp_rng_uniform(rs->random_lengths, (uint64_t)r, 1, 0) * (float)rs->prompt_len) % rs->prompt_len;
    for (int i = 0; i < *n; i++) ids[i] = (int)(zp_rng_uniform(11, rs->shared_prompt ? 0 : (uint64_t)r, 0, (uint32_t)i) * vocab) % vocab;
}

void run_requests(const run_spec *rs, run_result *out) {
    memset(out, 0, sizeof *out);
    const int total = rs->n_req * rs->samples;
    out->n_req = rs->n_req;
    out->samples = rs->samples;
    out->tokens = calloc((size_t)total, sizeof *out->tokens);
    out->n = calloc((size_t)total, sizeof *out->n);
    out->finish = calloc((size_t)total, sizeof *out->finish);
    zp_engine_config ec = rs->ec;
    if (!ec.model_dir) ec.model_dir = zp_test_model(rs->preset);
    zp_engine *e = NULL;
    if (rs->engine && *rs->engine) {
        CHECK_OK(zp_engine_reinit(rs->engine, &ec));
        e = *rs->engine;
    } else {
        CHECK_OK(zp_engine_init(&ec, &e));
    }
    if (!e) return;
    if (rs->logits_hook) zp_engine_set_logits_hook(e, rs->logits_hook, rs->ctx);
    zp_engine_set_token_hook(e, rs->token_hook, rs->ctx); /* NULL also clears a reused engine's */
    const int V = zp_engine_model_config(e)->vocab;
    int *ids = malloc(sizeof(int) * (size_t)(rs->prompt_len + rs->prompt_step * rs->n_req + 1));
    for (int k = 0; k < rs->n_req; k++) {
        int r = rs->reverse ? rs->n_req - 1 - k : k, n;
        make_prompt(rs, r, ids, &n, V);
        zp_sampling_params sp = rs->sp;
        if (rs->random_lengths) sp.max_tokens = 1 + (int)(zp_rng_uniform(rs->random_lengths, (uint64_t)r, 2, 0) * (float)sp.max_tokens) % sp.max_tokens;
        for (int s = 0; s < rs->samples; s++) CHECK_OK(zp_engine_add_request(e, ids, n, &sp, r, s, 5));
    }
    free(ids);
    zp_status st = ZP_OK;
    while (zp_engine_has_unfinished(e) && out->steps < 200000 && st == ZP_OK) {
        st = zp_engine_step(e);
        CHECK_OK(st);
        out->steps++;
        if (e->sched.running.n > out->max_running) out->max_running = e->sched.running.n;
        if (rs->check_invariants) {
            zp_status c = zp_engine_check_invariants(e);
            if (c != ZP_OK) { CHECK_OK(c); break; }
        }
        if (rs->on_step) rs->on_step(e, rs->ctx);
    }
    CHECK(!zp_engine_has_unfinished(e));
    zp_output o[8];
    for (int n; (n = zp_engine_poll(e, o, 8)) > 0;)
        for (int i = 0; i < n; i++) {
            int k = (int)o[i].request_id * rs->samples + o[i].sample_index;
            out->tokens[k] = o[i].tokens; /* ownership moves to the result */
            out->n[k] = o[i].n_tokens;
            out->finish[k] = o[i].finish;
        }
    zp_engine_get_stats(e, &out->st);
    if (rs->check_invariants) CHECK(e->pool.n_free == e->pool.num_blocks); /* nothing leaked at the end */
    if (rs->engine) *rs->engine = e;
    else zp_engine_free(e);
}

void run_result_free(run_result *r) {
    for (int i = 0; r->tokens && i < r->n_req * r->samples; i++) free(r->tokens[i]);
    free(r->tokens);
    free(r->n);
    free(r->finish);
    memset(r, 0, sizeof *r);
}

int run_same_outputs(const run_result *a, const run_result *b) {
    if (a->n_req != b->n_req || a->samples != b->samples) return 0;
    for (int k = 0; k < a->n_req * a->samples; k++)
        if (a->n[k] != b->n[k] || a->n[k] == 0 || !a->tokens[k] || !b->tokens[k] ||
            memcmp(a->tokens[k], b->tokens[k], sizeof(int) * (size_t)a->n[k]))
            return 0;
    return 1;
}
