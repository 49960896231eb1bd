/* serve_internal.h - what the two halves of `zipage serve` share: a choice (srv_job) and its call,
 * the server's state and its /metrics counters; the engine side (serve_engine.c: the engine thread,
 * the queue, the server's life) and the HTTP side (serve.c) include it. Not a public header. */
#ifndef ZP_SERVE_INTERNAL_H
#define ZP_SERVE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "chat.h"
#include "serve.h"
#include "serve_request.h"
#include "tokenizer.h"

typedef struct srv_call srv_call;
enum { SRV_STAGE_LPS = 2 }; /* log-probabilities staged per step (the engine samples one token a request a step) */
typedef struct {
    int64_t id;                /* the engine's request id */
    int sample;                /* the engine's sample index: which of the prompt's n */
    uint64_t seed;             /* the request's seed, else the id */
    int *prompt, n_prompt;
    zp_sampling_params sp;
    char *const *stop;         /* the call's stop strings */
    int n_stop;
    int skip_special;          /* special tokens (EOS, end of turn) sampled but not in the text */
    char *text;                /* decoded so far (cut at a stop string) */
    size_t len, cap;
    zp_detok_state dt;
    zp_token_logprobs *lps;    /* want_logprobs: [n_lps] each sampled token's, and the token itself (under */
    int *lp_tok;               /* the mutex, moved there from the stage after each step) */
    int n_lps, cap_lps;
    zp_token_logprobs stage_lps[SRV_STAGE_LPS]; /* the engine thread's: this step's (one token a step) */
    int stage_lp_tok[SRV_STAGE_LPS], n_stage_lps;
    char *stage;               /* the engine thread's: text of the step's tokens, moved to text after the step */
    size_t stage_len, stage_cap;
    int stage_tokens;          /* tokens sampled in this step */
    double t_stage;            /* when the last of them was sampled */
    int stop_hit, in_engine, done;
    int active_ix;             /* its index in the server's active list while in_engine */
    int n_tokens;
    double t_arrival, t_last;  /* monotonic seconds: queued, the last token */
    zp_finish_reason finish;
    zp_status status;          /* not ZP_OK: the engine refused it (message in error) */
    char error[256];
    srv_call *call;
} srv_job;

struct srv_call {
    int n_jobs, n_done;
    int aborted;               /* the client left (a stream's connection closed): the engine ends its choices */
    pthread_cond_t cv;         /* a choice finished, or (streaming) has new text */
    int stream;                /* 1: woken for new text too (a whole answer waits only for n_done) */
    int to_wake;               /* the engine thread's: in srv_server.wake_calls for the step's new text */
};

/* Prometheus histograms of the time to first token and between tokens (vLLM's buckets). */
static const double ttft_le[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560};
static const double itl_le[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80};
enum { N_TTFT = sizeof ttft_le / sizeof *ttft_le, N_ITL = sizeof itl_le / sizeof *itl_le };
typedef struct {
    int64_t n[32];             /* per bucket, then +Inf at the bucket count */
    double sum;
    int64_t count;
} srv_hist;

typedef struct {
    zp_engine_stats st;
    int running, waiting, blocks_used;
    int64_t prompt_tokens, finished[ZP_FINISH_COUNT];
    srv_hist ttft, itl;
    /* the engine thread's time while it has work: inside zp_engine_step, and outside it (the
     * step's text moved to the choices, outputs polled, waits for the mutex, admission) */
    int64_t steps;
    double step_seconds, between_seconds;
} srv_metrics;

typedef struct {
    srv_config cfg;
    char name[256];
    int max_pos, vocab;
    zp_engine *e;
    zp_tokenizer *tok;
    unsigned char *special;    /* [vocab] 1: a special token (left out of the text unless skip_special_tokens is false) */
    int has_chat;              /* the model's chat template is one of chat.h's families */
    zp_chat_family family;
    pthread_mutex_t mu;
    pthread_mutex_t tok_mu;    /* encoding from the connection threads */
    pthread_cond_t wake;
    srv_job **waiting;         /* [cfg.max_waiting + max_num_seqs] not yet in the engine */
    int n_waiting;
    srv_job **live;            /* [live_cap] in the engine, at index id % live_cap (the token hook's look-up) */
    int live_cap;              /* the engine's max_num_seqs */
    int *free_slots, n_free_slots; /* [live_cap] slots of live no choice holds */
    srv_job **active;          /* [live_cap] the same choices, dense (what a step's end walks) */
    int n_active;
    srv_job **touched;         /* [live_cap] the engine thread's: choices that sampled in this step */
    int n_touched;
    srv_call **wake_calls;     /* [live_cap] the engine thread's: streams with new text, woken after the mutex is let go */
    int n_wake_calls;
    int64_t next_id, next_call;
    int stopping;              /* the engine thread ends once nothing is left */
    double stop_deadline;      /* stopping: when what is still unfinished is ended (0: never; --shutdown-timeout) */
    int cut;                   /* stopping: the deadline passed, the unfinished ended */
    zp_status engine_status;
    srv_metrics m;             /* under mu: the engine's counters after its last step, the latencies */
    pthread_mutex_t arrival_mu;
    struct srv_arrival *arrivals; /* under arrival_mu: every open connection (serve_arrival.c) */
} srv_server;

/* The server's engine, tokenizer, queue and counters from cfg (srv_server_close frees them). */
zp_status srv_server_open(srv_server *s, const srv_config *cfg);
void srv_server_close(srv_server *s);
/* The engine thread (arg: the server): admits queued choices between steps, steps while any is
 * unfinished, ends stopped and abandoned ones, answers finished ones; returns once stopping is
 * set and nothing is left. */
void *srv_engine_main(void *arg);
/* Queues a call's choices (FIFO behind the others); 0 with err filled when the server is
 * stopping or the queue is full. */
int srv_enqueue(srv_server *s, srv_job *jobs, int n_jobs, srv_call *call, int64_t *call_id, srv_error *err);
/* The error a failed choice answers with (a request the engine refused: 400; else 500). */
void srv_job_error(const srv_job *j, srv_error *err);
/* Frees n_jobs choices (their prompts are shared per prompt: freed with each prompt's first). */
void srv_free_jobs(srv_job *jobs, int n_jobs, int per_prompt);

#endif
