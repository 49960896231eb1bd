/* test_abort.c - ending requests from outside the step loop (zp_engine_finish_request, what a
 * server does for a client that disconnects or a stop string it matched) and the token hook
 * (streaming), on the CPU engine: Zipage, asynchronous compression with one request per
 * compression task (so that planned compressions wait for a later step), a pool of 24 blocks for 24 requests (6 prompts x 4 samples)
 * (preemption under way). One request is ended in each state it can be in between steps:
 * waiting, running, a compression planned, a compression in flight. Checked: the invariants
 * after every step and an empty pool at the end (test_runner), every other request's tokens
 * equal to a run where nothing was ended, an ended request's tokens a prefix of its full run's,
 * the finish reasons, every sampled token seen once by the hook, and the refusals. */
#include <string.h>

#include "test_runner.h"
#include "test_util.h"

enum { N_REQ = 6, SAMPLES = 4, TOTAL = N_REQ * SAMPLES, N_STATES = 4 };
static const char *state_name[N_STATES] = {"waiting", "running", "compression planned", "compression in flight"};

typedef struct {
    int ended[TOTAL];       /* 1 + the state it was ended in; 0: never ended */
    int n_at_end[TOTAL];    /* generated tokens when it was ended */
    int hits[N_STATES];     /* requests ended in each state */
    int seen[TOTAL];        /* tokens the hook saw */
    int *seen_tok[TOTAL];   /* [max_tokens] */
    zp_finish_reason last[TOTAL];
    int after_end;          /* hook calls for a request after it was ended */
} abort_ctx;

static void on_token(void *ctx, int64_t id, int sample, int tok, zp_finish_reason finish, const zp_token_logprobs *lp) {
    (void)lp;
    abort_ctx *a = ctx;
    const int k = (int)id * SAMPLES + sample;
    if (a->ended[k]) a->after_end++;
    a->seen_tok[k][a->seen[k]++] = tok;
    a->last[k] = finish;
}

/* Blocks of a planned compression's target outside the request's table (fresh: they replace
 * shared prefix blocks); ending the request must give them back. */
static int fresh_targets(const zp_engine *e, const zp_seq *q) {
    int fresh = 0;
    for (int k = 0; k <= e->plan.geo.nmax; k++) {
        int in_table = 0;
        for (int i = 0; i < q->n_blocks; i++) in_table |= q->blocks[i] == q->target[k];
        fresh += !in_table;
    }
    return fresh;
}

static int state_of(const zp_seq *q) {
    if (q->status == ZP_SEQ_WAITING) return 0;
    if (q->compressing == ZP_COMPRESS_PLANNED) return 2;
    if (q->compressing == ZP_COMPRESS_IN_FLIGHT) return 3;
    return 1;
}

/* After every step: end a request in each state not yet covered (as STOP in the running state,
 * as ABORT in the others). Returns 1 when one was ended (the list changed: look again). */
static int end_first(zp_engine *e, abort_ctx *a) {
    for (int i = 0; i < e->all.n; i++) {
        zp_seq *q = e->all.v[i];
        const int st = state_of(q), k = (int)q->request_id * SAMPLES + q->sample_index;
        if (a->hits[st] || (st == 0 && q->n_tokens == q->n_prompt)) continue; /* waiting: a preempted one, tokens already sampled */
        if (st == 2 && !fresh_targets(e, q)) continue;                        /* planned: one that took fresh blocks */
        a->n_at_end[k] = q->n_tokens - q->n_prompt;
        CHECK_OK(zp_engine_finish_request(e, q->request_id, q->sample_index, st == 1 ? ZP_FINISH_STOP : ZP_FINISH_ABORT));
        CHECK_OK(zp_engine_check_invariants(e));
        a->ended[k] = 1 + st;
        a->hits[st]++;
        CHECK_FAILS(zp_engine_finish_request(e, q->request_id, q->sample_index, ZP_FINISH_ABORT), ZP_ERR_INVALID, "no unfinished request");
        return 1;
    }
    return 0;
}
static void end_some(zp_engine *e, void *ctx) {
    while (end_first(e, ctx)) {}
}

static run_spec abort_spec(void) {
    run_spec rs = run_spec_zipage("tiny-qwen3");
    rs.ec.max_concurrency = 3;
    rs.ec.num_blocks = 24;
    rs.ec.async_compress = 1;
    rs.ec.max_compress_blocks = 3; /* one request (N_max + 1 = 3 blocks) per compression task */
    rs.sp.max_tokens = 120;
    rs.n_req = N_REQ;
    rs.samples = SAMPLES;
    rs.check_invariants = 1;
    return rs;
}

static void test_finish_request(void) {
    run_spec rs = abort_spec();
    run_result full, cut;
    run_requests(&rs, &full);
    CHECK(full.st.preemptions > 0 && full.st.compressions > 0);
    abort_ctx a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < TOTAL; k++) a.seen_tok[k] = calloc((size_t)rs.sp.max_tokens, sizeof(int));
    rs.on_step = end_some;
    rs.token_hook = on_token;
    rs.ctx = &a;
    run_requests(&rs, &cut);
    for (int s = 0; s < N_STATES; s++) {
        printf("ended while %s: %d\n", state_name[s], a.hits[s]);
        CHECK(a.hits[s] == 1);
    }
    CHECK(a.after_end == 0);
    for (int k = 0; k < TOTAL; k++) {
        CHECK(a.seen[k] == cut.n[k] && !memcmp(a.seen_tok[k], cut.tokens[k], sizeof(int) * (size_t)cut.n[k]));
        if (!a.ended[k]) {
            CHECK(cut.n[k] == full.n[k] && !memcmp(cut.tokens[k], full.tokens[k], sizeof(int) * (size_t)full.n[k]));
            CHECK(cut.finish[k] == ZP_FINISH_LENGTH && a.last[k] == ZP_FINISH_LENGTH);
            continue;
        }
        CHECK(cut.finish[k] == (a.ended[k] == 2 ? ZP_FINISH_STOP : ZP_FINISH_ABORT));
        CHECK(a.last[k] == ZP_FINISH_NONE); /* the hook never saw it finish on its own */
        CHECK(cut.n[k] == a.n_at_end[k] && cut.n[k] < full.n[k]);
        CHECK(!memcmp(cut.tokens[k], full.tokens[k], sizeof(int) * (size_t)cut.n[k]));
    }
    CHECK(strcmp(zp_finish_name(ZP_FINISH_ABORT), "abort") == 0);
    for (int k = 0; k < TOTAL; k++) free(a.seen_tok[k]);
    run_result_free(&full);
    run_result_free(&cut);
}

static void test_refusals(void) {
    zp_engine_config ec = abort_spec().ec;
    ec.model_dir = zp_test_model("tiny-qwen3");
    zp_engine *e = NULL;
    CHECK_OK(zp_engine_init(&ec, &e));
    if (!e) return;
    const int prompt[4] = {1, 2, 3, 4};
    zp_sampling_params sp = zp_sampling_default();
    sp.max_tokens = 8;
    CHECK_OK(zp_engine_add_request(e, prompt, 4, &sp, 7, 0, 5));
    CHECK_FAILS(zp_engine_finish_request(e, 7, 1, ZP_FINISH_ABORT), ZP_ERR_INVALID, "no unfinished request 7, sample 1");
    CHECK_FAILS(zp_engine_finish_request(e, 7, 0, ZP_FINISH_LENGTH), ZP_ERR_INVALID, "not the caller's");
    CHECK_OK(zp_engine_finish_request(e, 7, 0, ZP_FINISH_ABORT)); /* still waiting: never scheduled */
    CHECK(!zp_engine_has_unfinished(e));
    zp_output o;
    CHECK(zp_engine_poll(e, &o, 1) == 1 && o.n_tokens == 0 && o.finish == ZP_FINISH_ABORT);
    zp_output_free(&o);
    CHECK(e->pool.n_free == e->pool.num_blocks);
    zp_engine_free(e);
}

int main(void) {
    test_finish_request();
    test_refusals();
    return zp_test_finish("test_abort");
}
