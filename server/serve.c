/* serve.c - see serve.h: the engine thread and its choices (srv_job), the HTTP handlers. */
#include "serve.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_request.h"
#include "tokenizer.h"

/* ---------------------------------------------------------------- choices and the engine thread */

typedef struct srv_call srv_call;
typedef struct {
    int64_t id;                /* the engine's request id */
    int sample;                /* the engine's sample index: which of the prompt's n */
    uint64_t seed;             /* the request's seed, else the id */
    int *prompt, n_prompt;
    zp_sampling_params sp;
    char *const *stop;         /* the call's stop strings */
    int n_stop;
    char *text;                /* decoded so far (cut at a stop string) */
    size_t len, cap;
    zp_detok_state dt;
    int stop_hit, in_engine, done;
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
} srv_metrics;

typedef struct {
    srv_config cfg;
    char name[256];
    int max_pos, vocab;
    zp_engine *e;
    zp_tokenizer *tok;
    pthread_mutex_t mu;
    pthread_mutex_t tok_mu;    /* encoding from the connection threads */
    pthread_cond_t wake;
    srv_job **waiting;         /* [cfg.max_waiting] not yet in the engine */
    int n_waiting;
    srv_job **live;            /* [live_cap] in the engine, at index id % live_cap */
    int live_cap;
    int64_t next_id, next_call;
    int stopping;              /* the engine thread ends once nothing is left */
    zp_status engine_status;
    srv_metrics m;             /* under mu: the engine's counters after its last step, the latencies */
} srv_server;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void hist_add(srv_hist *h, const double *le, int nb, double x) {
    int b = 0;
    while (b < nb && x > le[b]) b++;
    h->n[b]++;
    h->sum += x;
    h->count++;
}

static zp_status job_append(srv_job *j, const char *s, size_t n) {
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 256;
        while (cap < j->len + n + 1) cap *= 2;
        char *t = realloc(j->text, cap);
        if (!t) return zp_fail(ZP_ERR_OOM, "serve: no memory for a completion's text");
        j->text = t;
        j->cap = cap;
    }
    memcpy(j->text + j->len, s, n);
    j->len += n;
    j->text[j->len] = 0;
    return ZP_OK;
}

/* The earliest stop string ending in the text added from `from` on: the text is cut there. */
static void job_match_stop(srv_job *j, size_t from) {
    for (int i = 0; i < j->n_stop; i++) {
        const size_t k = strlen(j->stop[i]);
        const size_t start = from >= k ? from - k + 1 : 0;
        const char *hit = j->len >= k ? strstr(j->text + start, j->stop[i]) : NULL;
        if (hit) {
            j->len = (size_t)(hit - j->text);
            j->text[j->len] = 0;
            j->stop_hit = 1;
        }
    }
}

/* The engine's token hook (engine thread, mutex not held: jobs in the engine are the thread's). */
static void on_token(void *ctx, int64_t id, int sample, int token, zp_finish_reason finish) {
    srv_server *s = ctx;
    (void)sample;
    (void)finish;
    srv_job *j = s->live[id % s->live_cap];
    if (!j || j->id != id || j->stop_hit) return;
    const double t = now_s();
    char buf[512];
    const size_t n = zp_tokenizer_decode_stream(s->tok, token, &j->dt, buf, sizeof buf);
    pthread_mutex_lock(&s->mu); /* a stream's connection thread reads the text */
    if (j->n_tokens == 0) hist_add(&s->m.ttft, ttft_le, N_TTFT, t - j->t_arrival);
    else hist_add(&s->m.itl, itl_le, N_ITL, t - j->t_last);
    j->t_last = t;
    j->n_tokens++;
    const size_t from = j->len;
    if (n && job_append(j, buf, n) == ZP_OK && j->n_stop) job_match_stop(j, from);
    if (n) pthread_cond_broadcast(&j->call->cv);
    pthread_mutex_unlock(&s->mu);
}

static void job_done(srv_server *s, srv_job *j) {
    if (j->status == ZP_OK && j->finish > ZP_FINISH_NONE && j->finish < ZP_FINISH_COUNT) s->m.finished[j->finish]++;
    j->done = 1;
    j->call->n_done++;
    if (j->in_engine) s->live[j->id % s->live_cap] = NULL;
    j->in_engine = 0;
    pthread_cond_broadcast(&j->call->cv);
}

/* Moves waiting choices into the engine (mutex held). */
static void admit_waiting(srv_server *s) {
    for (int i = 0; i < s->n_waiting; i++) {
        srv_job *j = s->waiting[i];
        if (j->call->aborted) { /* its client left before it started */
            j->finish = ZP_FINISH_ABORT;
            job_done(s, j);
            continue;
        }
        if (s->live[j->id % s->live_cap]) { /* its slot is still taken: keep the rest for the next step */
            memmove(s->waiting, s->waiting + i, sizeof *s->waiting * (size_t)(s->n_waiting - i));
            s->n_waiting -= i;
            return;
        }
        j->status = zp_engine_add_request(s->e, j->prompt, j->n_prompt, &j->sp, j->id, j->sample, j->sp.has_rng_key ? j->seed : (uint64_t)j->id);
        if (j->status != ZP_OK) {
            snprintf(j->error, sizeof j->error, "%s", zp_last_error());
            job_done(s, j);
            continue;
        }
        s->live[j->id % s->live_cap] = j;
        j->in_engine = 1;
        s->m.prompt_tokens += j->n_prompt;
    }
    s->n_waiting = 0;
}

/* The engine's counters for /metrics (mutex held), taken before any choice of the step is
 * answered, so that a client that has its answer never reads an older page. */
static void snapshot(srv_server *s) {
    zp_engine_get_stats(s->e, &s->m.st);
    s->m.running = zp_engine_num_running(s->e);
    s->m.waiting = zp_engine_num_waiting(s->e);
    s->m.blocks_used = zp_engine_blocks_used(s->e);
}

/* After a step: stop strings end their requests; finished outputs complete their choices. */
static zp_status after_step(srv_server *s) {
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->live_cap; i++) {
        srv_job *j = s->live[i];
        if (!j || j->finish != ZP_FINISH_NONE || !(j->stop_hit || j->call->aborted)) continue;
        const zp_finish_reason why = j->stop_hit ? ZP_FINISH_STOP : ZP_FINISH_ABORT;
        zp_status st = zp_engine_finish_request(s->e, j->id, j->sample, why);
        if (st != ZP_OK && st != ZP_ERR_INVALID) { pthread_mutex_unlock(&s->mu); return st; }
        if (st == ZP_OK) j->finish = why; /* INVALID: it finished on its own in this step (its output says how) */
    }
    snapshot(s);
    pthread_mutex_unlock(&s->mu);
    zp_output o[64];
    for (int n; (n = zp_engine_poll(s->e, o, 64)) > 0;) {
        pthread_mutex_lock(&s->mu);
        for (int i = 0; i < n; i++) {
            srv_job *j = s->live[o[i].request_id % s->live_cap];
            if (j && j->id == o[i].request_id) {
                j->finish = j->stop_hit ? ZP_FINISH_STOP : j->finish == ZP_FINISH_ABORT ? ZP_FINISH_ABORT : o[i].finish;
                j->n_tokens = o[i].n_tokens;
                job_done(s, j);
            }
            zp_output_free(&o[i]);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return ZP_OK;
}

static void *engine_main(void *arg) {
    srv_server *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        admit_waiting(s);
        if (!zp_engine_has_unfinished(s->e)) {
            if (s->stopping) break;
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        zp_status st = zp_engine_step(s->e);
        if (st == ZP_OK) st = after_step(s);
        pthread_mutex_lock(&s->mu);
        if (st != ZP_OK) { /* the engine cannot go on: every choice in it fails */
            s->engine_status = st;
            fprintf(stderr, "serve: engine step failed: %s\n", zp_last_error());
            for (int i = 0; i < s->live_cap; i++)
                if (s->live[i]) {
                    s->live[i]->status = st;
                    snprintf(s->live[i]->error, sizeof s->live[i]->error, "the engine failed: %s", zp_last_error());
                    job_done(s, s->live[i]);
                }
            s->stopping = 1;
            break;
        }
    }
    for (int i = 0; i < s->n_waiting; i++) {
        s->waiting[i]->status = ZP_ERR_INVALID;
        snprintf(s->waiting[i]->error, sizeof s->waiting[i]->error, "the server is shutting down");
        job_done(s, s->waiting[i]);
    }
    s->n_waiting = 0;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---------------------------------------------------------------- responses */

typedef struct {
    char *body;
    size_t n, cap;
    int too_big;
} srv_conn;

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, char *json) {
    if (!json) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(json); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, const srv_error *err) {
    return send_json(c, (unsigned)err->http_status, srv_error_json(err));
}

static enum MHD_Result refuse_with(struct MHD_Connection *c, int status, const char *type, const char *param, const char *msg) {
    srv_error err;
    srv_error_set(&err, status, type, param, "%s", msg);
    return send_error(c, &err);
}

static const char *finish_reason(zp_finish_reason f) {
    return f == ZP_FINISH_LENGTH || f == ZP_FINISH_MAX_POS ? "length" : f == ZP_FINISH_ABORT ? "abort" : "stop";
}

static enum MHD_Result serve_models(srv_server *s, struct MHD_Connection *c) {
    cJSON *root = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(root, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON_AddStringToObject(m, "id", s->name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", 0);
    cJSON_AddStringToObject(m, "owned_by", "zipage");
    cJSON_AddNumberToObject(m, "max_model_len", s->max_pos);
    cJSON_AddItemToArray(data, m);
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return send_json(c, MHD_HTTP_OK, j);
}

/* ---------------------------------------------------------------- /metrics */

typedef struct {
    char *buf;
    size_t n, cap;
} text_buf;

static void out(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(text_buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = b->buf ? vsnprintf(b->buf + b->n, b->cap - b->n, fmt, ap) : -1;
        va_end(ap);
        if (k >= 0 && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        char *t = realloc(b->buf, cap);
        if (!t) return; /* out of memory: the page stays short */
        b->buf = t;
        b->cap = cap;
    }
}

static void metric(text_buf *b, const char *name, const char *type, const char *help, double v) {
    out(b, "# HELP zipage_%s %s\n# TYPE zipage_%s %s\nzipage_%s %.17g\n", name, help, name, type, name, v);
}

static void histogram(text_buf *b, const char *name, const char *help, const srv_hist *h, const double *le, int nb) {
    out(b, "# HELP zipage_%s %s\n# TYPE zipage_%s histogram\n", name, help, name);
    int64_t cum = 0;
    for (int i = 0; i < nb; i++) {
        cum += h->n[i];
        out(b, "zipage_%s_bucket{le=\"%g\"} %lld\n", name, le[i], (long long)cum);
    }
    out(b, "zipage_%s_bucket{le=\"+Inf\"} %lld\nzipage_%s_sum %.17g\nzipage_%s_count %lld\n", name, (long long)h->count, name, h->sum, name,
        (long long)h->count);
}

static enum MHD_Result serve_metrics(srv_server *s, struct MHD_Connection *c) {
    pthread_mutex_lock(&s->mu);
    const srv_metrics m = s->m;
    const int server_waiting = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
    text_buf b = {0};
    metric(&b, "requests_running", "gauge", "Requests in the engine's running list.", m.running);
    metric(&b, "requests_waiting", "gauge", "Requests waiting for admission, in the engine (preempted included) and the server's queue.",
           m.waiting + server_waiting);
    metric(&b, "kv_blocks_used", "gauge", "KV blocks held by requests.", m.blocks_used);
    metric(&b, "kv_blocks_total", "gauge", "KV blocks of the pool.", m.st.num_blocks);
    metric(&b, "kv_block_size", "gauge", "Tokens per KV block.", m.st.block_size);
    metric(&b, "compressions_total", "counter", "Compressions run (an evicting policy).", (double)m.st.compressions);
    metric(&b, "tokens_evicted_total", "counter", "Tokens evicted by compressions (summed over KV heads' views as the engine counts them).",
           (double)m.st.tokens_evicted);
    metric(&b, "preemptions_total", "counter", "Requests preempted (recomputed later).", (double)m.st.preemptions);
    metric(&b, "prompt_tokens_total", "counter", "Prompt tokens of the requests admitted.", (double)m.prompt_tokens);
    metric(&b, "prefill_tokens_total", "counter", "Rows computed in prefill steps (recomputation included, prefix-cache hits excluded).",
           (double)m.st.prefill_tokens);
    metric(&b, "generation_tokens_total", "counter", "Tokens sampled.", (double)m.st.generated_tokens);
    out(&b, "# HELP zipage_requests_finished_total Choices finished, by reason.\n# TYPE zipage_requests_finished_total counter\n");
    for (int f = ZP_FINISH_EOS; f < ZP_FINISH_COUNT; f++)
        out(&b, "zipage_requests_finished_total{finish_reason=\"%s\"} %lld\n", zp_finish_name((zp_finish_reason)f), (long long)m.finished[f]);
    histogram(&b, "time_to_first_token_seconds", "From a choice's arrival to its first token.", &m.ttft, ttft_le, N_TTFT);
    histogram(&b, "inter_token_latency_seconds", "Between consecutive tokens of a choice.", &m.itl, itl_le, N_ITL);
    if (!b.buf) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(b.n, b.buf, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(b.buf); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---------------------------------------------------------------- /v1/completions */

/* What this step of the server cannot honour yet: refused by name (serve.h). */
static int unsupported_yet(const srv_request *r, srv_error *err) {
    if (!r->logprobs) return 0;
    srv_error_set(err, 400, "invalid_request_error", "logprobs", "logprobs: not supported by this server yet");
    return 1;
}

/* The choices of a parsed request: tokenized, checked against the model, queued (mutex held by
 * none); fills err on a refusal. */
static int build_jobs(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, srv_error *err) {
    const int max_tokens = r->max_tokens > 0 ? r->max_tokens : 16;
    for (int p = 0; p < r->n_prompts; p++) {
        int *ids = NULL, n = 0;
        if (r->prompts[p].text) {
            pthread_mutex_lock(&s->tok_mu);
            zp_status st = zp_tokenizer_encode(s->tok, r->prompts[p].text, strlen(r->prompts[p].text), 1, &ids, &n);
            pthread_mutex_unlock(&s->tok_mu);
            if (st != ZP_OK) {
                srv_error_set(err, 400, "invalid_request_error", "prompt", "prompt %d: %s", p, zp_last_error());
                return 0;
            }
        } else {
            ids = malloc(sizeof(int) * (size_t)r->prompts[p].n_ids);
            if (!ids) { srv_error_set(err, 500, "server_error", NULL, "no memory"); return 0; }
            memcpy(ids, r->prompts[p].ids, sizeof(int) * (size_t)r->prompts[p].n_ids);
            n = r->prompts[p].n_ids;
        }
        for (int i = 0; i < n; i++)
            if (ids[i] >= s->vocab) {
                srv_error_set(err, 400, "invalid_request_error", "prompt", "prompt %d: token id %d at %d is outside the vocabulary (%d)", p, ids[i], i, s->vocab);
                free(ids);
                return 0;
            }
        if (n == 0 || n + max_tokens > s->max_pos) {
            srv_error_set(err, 400, "invalid_request_error", n ? "max_tokens" : "prompt",
                          "prompt %d: %d prompt tokens + max_tokens %d exceed the model's context of %d tokens", p, n, max_tokens, s->max_pos);
            free(ids);
            return 0;
        }
        for (int k = 0; k < r->n; k++) {
            srv_job *j = &jobs[p * r->n + k];
            j->prompt = k == 0 ? ids : jobs[p * r->n].prompt; /* the samples share their prompt (freed with sample 0) */
            j->n_prompt = n;
            j->sp = zp_sampling_default();
            j->sp.max_tokens = max_tokens;
            j->sp.temperature = r->temperature;
            j->sp.top_p = r->top_p;
            j->sp.top_k = r->top_k > 0 ? r->top_k : 0;
            j->sp.ignore_eos = r->ignore_eos;
            j->sample = k;
            if (r->has_seed) { /* draws keyed by (seed, prompt index, sample): a repeated request repeats */
                j->sp.has_rng_key = 1;
                j->sp.rng_key = (uint64_t)p;
                j->seed = (uint64_t)r->seed;
            }
            j->stop = r->stop;
            j->n_stop = r->n_stop;
        }
    }
    (void)n_jobs;
    return 1;
}

static char *completion_json(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, int64_t call_id) {
    cJSON *root = cJSON_CreateObject(), *choices = cJSON_AddArrayToObject(root, "choices"), *usage;
    char id[48];
    snprintf(id, sizeof id, "cmpl-%lld", (long long)call_id);
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object", "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)time(NULL));
    cJSON_AddStringToObject(root, "model", s->name);
    long prompt_tokens = 0, completion_tokens = 0;
    for (int i = 0; i < n_jobs; i++) {
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", i);
        cJSON_AddStringToObject(ch, "text", jobs[i].text ? jobs[i].text : "");
        cJSON_AddNullToObject(ch, "logprobs");
        cJSON_AddStringToObject(ch, "finish_reason", finish_reason(jobs[i].finish));
        cJSON_AddItemToArray(choices, ch);
        if (i % r->n == 0) prompt_tokens += jobs[i].n_prompt;
        completion_tokens += jobs[i].n_tokens;
    }
    usage = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)prompt_tokens);
    cJSON_AddNumberToObject(usage, "completion_tokens", (double)completion_tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)(prompt_tokens + completion_tokens));
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return j;
}

static void free_jobs(srv_job *jobs, int n_jobs, int per_prompt) {
    for (int i = 0; i < n_jobs; i++) {
        if (i % per_prompt == 0) free(jobs[i].prompt);
        free(jobs[i].text);
    }
    free(jobs);
}

/* Queues a call's choices (FIFO behind the others); 0 with err filled when the server is
 * stopping or the queue is full. */
static int enqueue(srv_server *s, srv_job *jobs, int n_jobs, srv_call *call, int64_t *call_id, srv_error *err) {
    pthread_mutex_lock(&s->mu);
    if (s->stopping || s->n_waiting + n_jobs > s->cfg.max_waiting) {
        pthread_mutex_unlock(&s->mu);
        srv_error_set(err, 503, "server_error", NULL, s->stopping ? "the server is shutting down" : "the waiting queue is full (%d choices); try again later",
                      s->cfg.max_waiting);
        return 0;
    }
    *call_id = s->next_call++;
    for (int i = 0; i < n_jobs; i++) {
        jobs[i].id = s->next_id++;
        jobs[i].call = call;
        jobs[i].t_arrival = now_s();
        s->waiting[s->n_waiting++] = &jobs[i];
    }
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    return 1;
}

static void job_error(const srv_job *j, srv_error *err) {
    const int capacity = j->status == ZP_ERR_CAPACITY;
    srv_error_set(err, capacity ? 400 : 500, capacity ? "invalid_request_error" : "server_error", NULL, "%s", j->error);
}

/* ---------------------------------------------------------------- streaming (server-sent events) */

typedef struct {
    srv_server *s;
    srv_request r;
    srv_job *jobs;
    int n_jobs;
    srv_call call;
    int64_t call_id;
    size_t *sent;              /* [n_jobs] bytes of each choice's text sent */
    char *final;               /* [n_jobs] its last chunk (finish_reason) sent */
    size_t max_stop;           /* the longest stop string: that much text is held back while it runs */
    int phase;                 /* 0 choices, 1 usage sent, 2 [DONE] sent */
    char *pend;                /* an event not yet handed to libmicrohttpd */
    size_t pend_n, pend_off;
} srv_stream;

/* "data: {chunk}\n\n" of choice i with text[0..n) (finish NULL while it runs), or the usage chunk
 * (i < 0), as OpenAI streams a completion. */
static char *stream_event(srv_stream *st, int i, const char *text, size_t n, const char *finish) {
    cJSON *root = cJSON_CreateObject(), *choices = cJSON_AddArrayToObject(root, "choices");
    char id[48];
    snprintf(id, sizeof id, "cmpl-%lld", (long long)st->call_id);
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object", "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)time(NULL));
    cJSON_AddStringToObject(root, "model", st->s->name);
    if (i >= 0) {
        char *t = malloc(n + 1);
        if (t) { memcpy(t, text, n); t[n] = 0; }
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", i);
        cJSON_AddStringToObject(ch, "text", t ? t : "");
        cJSON_AddNullToObject(ch, "logprobs");
        if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
        else cJSON_AddNullToObject(ch, "finish_reason");
        cJSON_AddItemToArray(choices, ch);
        free(t);
        if (st->r.include_usage) cJSON_AddNullToObject(root, "usage");
    } else {
        long prompt = 0, gen = 0;
        for (int k = 0; k < st->n_jobs; k++) {
            if (k % st->r.n == 0) prompt += st->jobs[k].n_prompt;
            gen += st->jobs[k].n_tokens;
        }
        cJSON *u = cJSON_AddObjectToObject(root, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
        cJSON_AddNumberToObject(u, "completion_tokens", (double)gen);
        cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + gen));
    }
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!j) return NULL;
    char *ev = malloc(strlen(j) + 9);
    if (ev) sprintf(ev, "data: %s\n\n", j);
    free(j);
    return ev;
}

/* Text of a running choice that may go out: a stop string may still begin in the last max_stop - 1
 * bytes, which wait (cut back to a UTF-8 character boundary). */
static size_t stream_ready(const srv_stream *st, const srv_job *j) {
    if (j->done || j->stop_hit || st->max_stop <= 1) return j->len;
    if (j->len < st->max_stop - 1) return 0;
    size_t k = j->len - (st->max_stop - 1);
    while (k > 0 && ((unsigned char)j->text[k] & 0xC0) == 0x80) k--;
    return k;
}

/* The next event (mutex held), NULL when there is none yet. */
static char *stream_next(srv_stream *st) {
    int all_final = 1;
    for (int i = 0; i < st->n_jobs; i++) {
        srv_job *j = &st->jobs[i];
        const size_t ready = stream_ready(st, j);
        if (j->status == ZP_OK && ready > st->sent[i]) {
            char *ev = stream_event(st, i, j->text + st->sent[i], ready - st->sent[i], NULL);
            st->sent[i] = ready;
            return ev;
        }
        if (j->done && !st->final[i]) {
            st->final[i] = 1;
            if (j->status != ZP_OK) {
                srv_error err;
                job_error(j, &err);
                char *e = srv_error_json(&err), *ev = e ? malloc(strlen(e) + 9) : NULL;
                if (ev) sprintf(ev, "data: %s\n\n", e);
                free(e);
                return ev;
            }
            return stream_event(st, i, "", 0, finish_reason(j->finish));
        }
        all_final &= st->final[i];
    }
    if (!all_final) return NULL;
    if (st->phase == 0 && st->r.include_usage) { st->phase = 1; return stream_event(st, -1, NULL, 0, NULL); }
    st->phase = 2;
    return strdup("data: [DONE]\n\n");
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    srv_stream *st = cls;
    (void)pos;
    if (st->pend_off == st->pend_n) {
        free(st->pend);
        st->pend = NULL;
        st->pend_n = st->pend_off = 0;
        if (st->phase == 2) return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&st->s->mu);
        while (!(st->pend = stream_next(st)) && st->phase != 2) pthread_cond_wait(&st->call.cv, &st->s->mu);
        pthread_mutex_unlock(&st->s->mu);
        if (!st->pend) return MHD_CONTENT_READER_END_WITH_ERROR; /* out of memory */
        st->pend_n = strlen(st->pend);
    }
    const size_t k = st->pend_n - st->pend_off < max ? st->pend_n - st->pend_off : max;
    memcpy(buf, st->pend + st->pend_off, k);
    st->pend_off += k;
    return (ssize_t)k;
}

/* The response is done or its client left: the engine ends what still runs, then all is freed. */
static void stream_free(void *cls) {
    srv_stream *st = cls;
    pthread_mutex_lock(&st->s->mu);
    if (st->call.n_done < st->call.n_jobs) {
        st->call.aborted = 1;
        pthread_cond_signal(&st->s->wake);
        while (st->call.n_done < st->call.n_jobs) pthread_cond_wait(&st->call.cv, &st->s->mu);
    }
    pthread_mutex_unlock(&st->s->mu);
    pthread_cond_destroy(&st->call.cv);
    free_jobs(st->jobs, st->n_jobs, st->r.n);
    srv_request_free(&st->r);
    free(st->sent);
    free(st->final);
    free(st->pend);
    free(st);
}

static enum MHD_Result start_stream(srv_server *s, struct MHD_Connection *c, srv_request *r, srv_job *jobs, int n_jobs) {
    srv_error err;
    srv_stream *st = calloc(1, sizeof *st);
    size_t *sent = calloc((size_t)n_jobs, sizeof *sent);
    char *final = calloc((size_t)n_jobs, 1);
    if (!st || !sent || !final) {
        free(st), free(sent), free(final);
        free_jobs(jobs, n_jobs, r->n);
        srv_request_free(r);
        return refuse_with(c, 500, "server_error", NULL, "no memory for a stream");
    }
    *st = (srv_stream){.s = s, .r = *r, .jobs = jobs, .n_jobs = n_jobs, .sent = sent, .final = final};
    pthread_cond_init(&st->call.cv, NULL);
    st->call.n_jobs = n_jobs;
    for (int i = 0; i < r->n_stop; i++)
        if (strlen(r->stop[i]) > st->max_stop) st->max_stop = strlen(r->stop[i]);
    memset(r, 0, sizeof *r); /* the stream owns the request now (and the choices' stop strings) */
    for (int i = 0; i < n_jobs; i++) jobs[i].stop = st->r.stop;
    if (!enqueue(s, jobs, n_jobs, &st->call, &st->call_id, &err)) {
        st->call.n_done = n_jobs; /* nothing queued */
        stream_free(st);
        return send_error(c, &err);
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
    if (!resp) { stream_free(st); return MHD_NO; }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result serve_completion(srv_server *s, struct MHD_Connection *c, const srv_conn *body) {
    srv_request r;
    srv_error err;
    if (srv_request_parse(body->body ? body->body : "", body->n, SRV_COMPLETIONS, &r, &err) != ZP_OK) return send_error(c, &err);
    enum MHD_Result ret;
    if (strcmp(r.model, s->name)) {
        char msg[512];
        snprintf(msg, sizeof msg, "The model `%.200s` does not exist (this server serves `%.150s`)", r.model, s->name);
        ret = refuse_with(c, 404, "NotFoundError", "model", msg);
        srv_request_free(&r);
        return ret;
    }
    if (unsupported_yet(&r, &err)) { srv_request_free(&r); return send_error(c, &err); }
    const int n_jobs = r.n_prompts * r.n;
    srv_job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
    if (!jobs || !build_jobs(s, &r, jobs, n_jobs, &err)) {
        if (!jobs) srv_error_set(&err, 500, "server_error", NULL, "no memory for %d choices", n_jobs);
        if (jobs) free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return send_error(c, &err);
    }
    if (r.stream) return start_stream(s, c, &r, jobs, n_jobs);
    srv_call call = {n_jobs, 0, 0, PTHREAD_COND_INITIALIZER};
    int64_t call_id;
    if (!enqueue(s, jobs, n_jobs, &call, &call_id, &err)) {
        free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return send_error(c, &err);
    }
    pthread_mutex_lock(&s->mu);
    while (call.n_done < call.n_jobs) pthread_cond_wait(&call.cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    pthread_cond_destroy(&call.cv);
    int failed = -1;
    for (int i = 0; i < n_jobs && failed < 0; i++)
        if (jobs[i].status != ZP_OK) failed = i;
    if (failed >= 0) {
        job_error(&jobs[failed], &err);
        ret = send_error(c, &err);
    } else {
        ret = send_json(c, MHD_HTTP_OK, completion_json(s, &r, jobs, n_jobs, call_id));
    }
    free_jobs(jobs, n_jobs, r.n);
    srv_request_free(&r);
    return ret;
}

/* ---------------------------------------------------------------- routing */

static int authorized(const srv_server *s, struct MHD_Connection *c) {
    if (!s->cfg.api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, s->cfg.api_key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls) {
    srv_server *s = cls;
    (void)version;
    srv_conn *b = *con_cls;
    if (!b) { /* the headers: a connection's state, then the body in pieces */
        b = calloc(1, sizeof *b);
        if (!b) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        if (b->n + *upload_size > s->cfg.max_body) b->too_big = 1;
        else {
            if (b->n + *upload_size + 1 > b->cap) {
                size_t cap = (b->n + *upload_size + 1) * 2;
                char *t = realloc(b->body, cap);
                if (!t) return MHD_NO;
                b->body = t;
                b->cap = cap;
            }
            memcpy(b->body + b->n, upload, *upload_size);
            b->n += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (!strcmp(url, "/health")) return send_json(c, MHD_HTTP_OK, strdup("{}"));
    if (!strcmp(url, "/metrics") && !strcmp(method, "GET")) return serve_metrics(s, c); /* as /health: no key (vLLM's too) */
    if (!authorized(s, c)) return refuse_with(c, 401, "invalid_request_error", NULL, "a valid API key is required (Authorization: Bearer KEY)");
    if (b->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body exceeds %zu bytes", s->cfg.max_body);
        return refuse_with(c, 413, "invalid_request_error", NULL, msg);
    }
    const int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/v1/models") && get) return serve_models(s, c);
    if (!strcmp(url, "/v1/completions") && post) return serve_completion(s, c, b);
    if (!strcmp(url, "/v1/chat/completions") && post)
        return refuse_with(c, 404, "NotFoundError", NULL, "/v1/chat/completions is not served yet by this server (issue 38)");
    if (!strcmp(url, "/v1/models") || !strcmp(url, "/v1/completions"))
        return refuse_with(c, 405, "invalid_request_error", NULL, "method not allowed on this path");
    return refuse_with(c, 404, "NotFoundError", NULL, "no such path");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)cls;
    (void)c;
    (void)why;
    srv_conn *b = *con_cls;
    if (b) free(b->body);
    free(b);
    *con_cls = NULL;
}

/* ---------------------------------------------------------------- the server's life */

static zp_status server_open(srv_server *s, const srv_config *cfg) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (cfg->max_waiting < 1) return zp_fail(ZP_ERR_INVALID, "serve: max_waiting %d must be positive", cfg->max_waiting);
    const char *slash = strrchr(cfg->ec.model_dir, '/');
    const char *base = cfg->served_name ? cfg->served_name : slash && slash[1] ? slash + 1 : cfg->ec.model_dir;
    snprintf(s->name, sizeof s->name, "%s", base);
    ZP_TRY(zp_tokenizer_load(cfg->ec.model_dir, &s->tok));
    ZP_TRY(zp_engine_init(&cfg->ec, &s->e));
    s->max_pos = zp_engine_model_config(s->e)->max_pos;
    s->vocab = zp_engine_model_config(s->e)->vocab;
    s->live_cap = cfg->max_waiting * 2;
    s->waiting = calloc((size_t)cfg->max_waiting, sizeof *s->waiting);
    s->live = calloc((size_t)s->live_cap, sizeof *s->live);
    if (!s->waiting || !s->live) return zp_fail(ZP_ERR_OOM, "serve: no memory for %d choices", cfg->max_waiting);
    zp_engine_set_token_hook(s->e, on_token, s);
    snapshot(s); /* /metrics before the first step */
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->tok_mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    return ZP_OK;
}

static void server_close(srv_server *s) {
    if (s->e) zp_engine_free(s->e);
    if (s->tok) zp_tokenizer_free(s->tok);
    free(s->waiting);
    free(s->live);
}

zp_status srv_run(const srv_config *cfg) {
    srv_server s;
    zp_status st = server_open(&s, cfg);
    if (st != ZP_OK) { server_close(&s); return st; }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread started from here leaves them to sigwait */
    pthread_t engine;
    if (pthread_create(&engine, NULL, engine_main, &s) != 0) { server_close(&s); return zp_fail(ZP_ERR_BACKEND, "serve: cannot start the engine thread"); }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)cfg->port);
    struct MHD_Daemon *d = NULL;
    if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) st = zp_fail(ZP_ERR_INVALID, "serve: --host \"%s\" is not an IPv4 address", cfg->host);
    else {
        d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, (uint16_t)cfg->port, NULL, NULL,
                             on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
                             MHD_OPTION_END);
        if (!d) st = zp_fail(ZP_ERR_IO, "serve: cannot listen on %s:%d (in use, or not allowed)", cfg->host, cfg->port);
    }
    if (st == ZP_OK) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        printf("serving %s on http://%s:%u\n", s.name, cfg->host, info ? (unsigned)info->port : (unsigned)cfg->port);
        fflush(stdout);
        int sig;
        sigwait(&sigs, &sig);
        fprintf(stderr, "serve: %s: no new connections; finishing the requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        MHD_quiesce_daemon(d);
    }
    pthread_mutex_lock(&s.mu);
    s.stopping = 1;
    pthread_cond_signal(&s.wake);
    pthread_mutex_unlock(&s.mu);
    pthread_join(engine, NULL);
    if (d) MHD_stop_daemon(d); /* the connection threads have their answers by now */
    if (st == ZP_OK && s.engine_status != ZP_OK) st = zp_fail(s.engine_status, "serve: the engine failed");
    server_close(&s);
    return st;
}
