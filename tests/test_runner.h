/* test_runner.h - runs a set of requests through an engine for the end-to-end tests and
 * collects their outputs and stats; optionally checks the engine's invariants every step.
 * Request r's prompt has prompt_len + prompt_step * r tokens (all identical when shared). */
#ifndef ZP_TEST_RUNNER_H
#define ZP_TEST_RUNNER_H

#include "engine_internal.h"

typedef struct {
    const char *preset;
    zp_engine_config ec;     /* model_dir, when NULL, is filled from preset */
    zp_sampling_params sp;
    int n_req, samples;
    int prompt_len, prompt_step, shared_prompt, reverse;
    int check_invariants;
    uint32_t random_lengths; /* non-zero: seed; prompt 1..prompt_len and max_tokens 1..sp.max_tokens per request */
    /* called after every step when set (white-box checks) */
    void (*on_step)(zp_engine *e, void *ctx);
    void *ctx;
    /* installed with zp_engine_set_logits_hook when set (a hook also moves sampling to the host) */
    zp_logits_hook logits_hook;
    /* installed with zp_engine_set_token_hook when set (ctx as on_step's) */
    zp_token_hook token_hook;
    /* when set: run on *engine (reinitialised to ec with zp_engine_reinit when not NULL, else
     * created) and leave it there for the next run instead of freeing it */
    zp_engine **engine;
} run_spec;

typedef struct {
    int n_req, samples;
    int **tokens;            /* [n_req * samples] generated tokens */
    int *n;                  /* [n_req * samples] */
    zp_finish_reason *finish;
    zp_engine_stats st;
    int steps, max_running;
} run_result;

run_spec run_spec_default(const char *preset);
/* The default with Zipage at N_max 2, window 4 (blocks of 16): compressions within a few dozen tokens. */
run_spec run_spec_zipage(const char *preset);
void run_requests(const run_spec *rs, run_result *out);
void run_result_free(run_result *r);
/* 1 when both runs produced the same tokens for every request and sample. */
int run_same_outputs(const run_result *a, const run_result *b);

#endif
