/* serve.c - the HTTP side of `zipage serve` (serve.h): libmicrohttpd's handlers, the answers of each
 * endpoint (whole and streamed), /metrics, and srv_run. The engine thread is in serve_engine.c. */
#include "serve_internal.h"

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
#include <unistd.h>
#include "clock.h"

/* ---------------------------------------------------------------- responses */

typedef struct {
    char *body;
    size_t n, cap;
} srv_conn;

/* A connection's idle timeout is off while its request waits for the engine (a long generation is
 * no idle client) and back on, counted afresh, before its answer goes out: a client that stops
 * reading its answer is closed after the timeout. */
static void idle_timeout(const srv_server *s, struct MHD_Connection *c, int on) {
    if (s->cfg.idle_timeout > 0) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, on ? (unsigned)s->cfg.idle_timeout : 0u);
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, char *json) {
    if (!json) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(json); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1"); /* full: a second later (vLLM's clients retry on 503) */
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
    metric(&b, "engine_steps_total", "counter", "Engine steps run.", (double)m.steps);
    metric(&b, "engine_step_seconds_total", "counter", "The engine thread's wall time inside its steps.", m.step_seconds);
    metric(&b, "engine_between_steps_seconds_total", "counter",
           "The engine thread's wall time between its steps while it had work: the steps' text handed to the choices, outputs, "
           "admission, waits for the server's lock.", m.between_seconds);
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
        if (n == 0 || n > s->max_pos || max_tokens > s->max_pos - n) { /* no sum: max_tokens may be near 2^31 */
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
            j->sp.want_logprobs = r->logprobs;
            j->sp.top_logprobs = r->top_logprobs;
            j->sample = k;
            if (r->has_seed) { /* draws keyed by (seed, prompt index, sample): a repeated request repeats */
                j->sp.has_rng_key = 1;
                j->sp.rng_key = (uint64_t)p;
                j->seed = (uint64_t)r->seed;
            }
            j->stop = r->stop;
            j->n_stop = r->n_stop;
            j->skip_special = r->skip_special;
        }
    }
    (void)n_jobs;
    return 1;
}

/* The fields every answer opens with: id, object, created, model (chat: chat.completion[.chunk]). */
static cJSON *answer_head(const srv_server *s, int chat, int chunk, int64_t call_id) {
    cJSON *root = cJSON_CreateObject();
    char id[48];
    snprintf(id, sizeof id, "%s-%lld", chat ? "chatcmpl" : "cmpl", (long long)call_id);
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)time(NULL));
    cJSON_AddStringToObject(root, "model", s->name);
    return root;
}

/* usage: the prompts once each (not per choice), the tokens of every choice. */
static void add_usage(cJSON *root, const srv_job *jobs, int n_jobs, int per_prompt) {
    long prompt = 0, gen = 0;
    for (int k = 0; k < n_jobs; k++) {
        if (k % per_prompt == 0) prompt += jobs[k].n_prompt;
        gen += jobs[k].n_tokens;
    }
    cJSON *u = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", (double)gen);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + gen));
}

/* One choice: completions' "text", chat's "message" (whole) or "delta" (streamed; the role in a
 * choice's first delta). With a reasoning parser a chat choice also carries reasoning_content:
 * reasoning NULL is null whole, absent streamed; text NULL likewise for content. finish NULL:
 * still running. */
static cJSON *choice_json(int chat, int stream, int first, int i, const char *text, int parsed, const char *reasoning, const char *finish,
                          cJSON *logprobs) {
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", i);
    if (!chat) cJSON_AddStringToObject(ch, "text", text);
    else {
        cJSON *m = cJSON_AddObjectToObject(ch, stream ? "delta" : "message");
        if (!stream || first) cJSON_AddStringToObject(m, "role", "assistant");
        if (text) cJSON_AddStringToObject(m, "content", text);
        else if (!stream) cJSON_AddNullToObject(m, "content");
        if (parsed && reasoning) cJSON_AddStringToObject(m, "reasoning_content", reasoning);
        else if (parsed && !stream) cJSON_AddNullToObject(m, "reasoning_content");
    }
    if (logprobs) cJSON_AddItemToObject(ch, "logprobs", logprobs);
    else cJSON_AddNullToObject(ch, "logprobs");
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    return ch;
}

/* A whole chat answer's content and reasoning (malloc'ed; NULL for null) by the server's parser. */
static void split_whole(const srv_server *s, const srv_job *j, char **content, char **reasoning) {
    const char *t = j->text ? j->text : "";
    const srv_reasoning_split sp = srv_reasoning_split_text(s->cfg.reasoning, t, strlen(t), 1);
    *content = sp.c1 > sp.c0 || !sp.has_reasoning ? strndup(t + sp.c0, sp.c1 - sp.c0) : NULL;
    *reasoning = sp.has_reasoning ? strndup(t + sp.r0, sp.r1 - sp.r0) : NULL;
}

/* A token as text (decoded alone: a cut character is U+FFFD) and as its bytes. */
static cJSON *token_text(const srv_server *s, int id) {
    char *t = NULL;
    size_t n = 0;
    cJSON *j = zp_tokenizer_decode(s->tok, &id, 1, &t, &n) == ZP_OK ? cJSON_CreateString(t) : cJSON_CreateString("");
    free(t);
    return j;
}
static cJSON *token_bytes(const srv_server *s, int id) {
    int n = 0;
    const unsigned char *b = (const unsigned char *)zp_tokenizer_token_bytes(s->tok, id, &n);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(b[i]));
    return a;
}
static size_t utf8_chars(const char *t) {
    size_t n = 0;
    for (; *t; t++) n += ((unsigned char)*t & 0xC0) != 0x80;
    return n;
}

/* Log-probabilities of n sampled tokens (a choice's every one, stop-cut text or not; streamed: those
 * since the last chunk, *offset carrying text_offset on): the completions
 * form {tokens, token_logprobs, top_logprobs (the alternatives and the sampled token), text_offset (characters
 * of the tokens decoded one by one)} or the chat form {content: [{token, logprob, bytes,
 * top_logprobs: [{token, logprob, bytes}]}], refusal}, as OpenAI's. */
static cJSON *logprobs_json(const srv_server *s, const int *tok, const zp_token_logprobs *lps, int n, int chat, size_t *offset) {
    cJSON *o = cJSON_CreateObject();
    if (chat) {
        cJSON *content = cJSON_AddArrayToObject(o, "content");
        for (int t = 0; t < n; t++) {
            const zp_token_logprobs *l = &lps[t];
            cJSON *e = cJSON_CreateObject(), *top;
            cJSON_AddItemToObject(e, "token", token_text(s, tok[t]));
            cJSON_AddNumberToObject(e, "logprob", l->logprob);
            cJSON_AddItemToObject(e, "bytes", token_bytes(s, tok[t]));
            top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int k = 0; k < l->n_top; k++) {
                cJSON *a = cJSON_CreateObject();
                cJSON_AddItemToObject(a, "token", token_text(s, l->top_id[k]));
                cJSON_AddNumberToObject(a, "logprob", l->top_logprob[k]);
                cJSON_AddItemToObject(a, "bytes", token_bytes(s, l->top_id[k]));
                cJSON_AddItemToArray(top, a);
            }
            cJSON_AddItemToArray(content, e);
        }
        cJSON_AddNullToObject(o, "refusal");
        return o;
    }
    cJSON *toks = cJSON_AddArrayToObject(o, "tokens"), *lpa = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offs = cJSON_AddArrayToObject(o, "text_offset");
    for (int t = 0; t < n; t++) {
        const zp_token_logprobs *l = &lps[t];
        cJSON *txt = token_text(s, tok[t]);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)*offset));
        *offset += txt && txt->valuestring ? utf8_chars(txt->valuestring) : 0;
        cJSON_AddItemToArray(toks, txt);
        cJSON_AddItemToArray(lpa, cJSON_CreateNumber(l->logprob));
        cJSON *d = cJSON_CreateObject(); /* the top alternatives and, as OpenAI's, the sampled token */
        for (int k = 0; k <= l->n_top; k++) {
            cJSON *key = token_text(s, k < l->n_top ? l->top_id[k] : tok[t]);
            const float v = k < l->n_top ? l->top_logprob[k] : l->logprob;
            if (key && key->valuestring && !cJSON_GetObjectItemCaseSensitive(d, key->valuestring)) cJSON_AddNumberToObject(d, key->valuestring, v); /* two tokens with one text: the likelier */
            cJSON_Delete(key);
        }
        cJSON_AddItemToArray(tops, d);
    }
    return o;
}

static char *completion_json(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, int64_t call_id) {
    const int chat = r->endpoint == SRV_CHAT;
    cJSON *root = answer_head(s, chat, 0, call_id), *choices = cJSON_AddArrayToObject(root, "choices");
    const int parsed = chat && s->cfg.reasoning != SRV_REASONING_NONE;
    for (int i = 0; i < n_jobs; i++) {
        char *content = NULL, *reasoning = NULL;
        if (parsed) split_whole(s, &jobs[i], &content, &reasoning);
        cJSON_AddItemToArray(choices, choice_json(chat, 0, 1, i, parsed ? content : jobs[i].text ? jobs[i].text : "", parsed, reasoning,
                                                  finish_reason(jobs[i].finish), r->logprobs ? logprobs_json(s, jobs[i].lp_tok, jobs[i].lps, jobs[i].n_lps, chat,
                                                                                                              &(size_t){0}) : NULL));
        free(content);
        free(reasoning);
    }
    add_usage(root, jobs, n_jobs, r->n);
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return j;
}

/* ---------------------------------------------------------------- streaming (server-sent events) */

typedef struct {
    srv_server *s;
    srv_request r;
    srv_job *jobs;
    int n_jobs;
    srv_call call;
    int64_t call_id;
    size_t *sent;              /* [n_jobs] bytes of each choice's text sent (with a reasoning parser: up to the content sent) */
    size_t *rsent;             /* [n_jobs] with a reasoning parser: up to the reasoning sent */
    int *lpsent;               /* [n_jobs] with logprobs: the tokens whose log-probabilities were sent */
    size_t *lpoff;             /* [n_jobs] and the text_offset reached */
    char *final;               /* [n_jobs] its last chunk (finish_reason) sent */
    char *started;             /* [n_jobs] its first chunk sent (chat: the role goes in it) */
    size_t max_stop;           /* the longest stop string: that much text is held back while it runs */
    int phase;                 /* 0 choices, 1 usage sent, 2 [DONE] sent */
    char *pend;                /* an event not yet handed to libmicrohttpd */
    size_t pend_n, pend_off;
    struct MHD_Connection *conn; /* its idle timeout is off while the next event is awaited */
} srv_stream;

/* "data: {chunk}\n\n" of choice i with text[0..n) (finish NULL while it runs), or the usage chunk
 * (i < 0), as OpenAI streams a completion or a chat completion. */
static char *stream_event(srv_stream *st, int i, const char *text, size_t n, int is_reasoning, const char *finish, cJSON *lp) {
    const int chat = st->r.endpoint == SRV_CHAT;
    cJSON *root = answer_head(st->s, chat, 1, st->call_id), *choices = cJSON_AddArrayToObject(root, "choices");
    if (i >= 0) {
        char *t = malloc(n + 1);
        if (t) { memcpy(t, text, n); t[n] = 0; }
        const int parsed = chat && st->s->cfg.reasoning != SRV_REASONING_NONE;
        cJSON_AddItemToArray(choices, choice_json(chat, 1, !st->started[i], i, is_reasoning ? NULL : t ? t : "", parsed,
                                                  is_reasoning ? (t ? t : "") : NULL, finish, lp));
        st->started[i] = 1;
        free(t);
        if (st->r.include_usage) cJSON_AddNullToObject(root, "usage");
    } else {
        add_usage(root, st->jobs, st->n_jobs, st->r.n);
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

/* What the next event says, taken under the mutex; the event's JSON is made after it is let go
 * (hundreds of streams format their chunks at once without holding up the engine thread). */
typedef struct {
    enum { ITEM_NONE, ITEM_TEXT, ITEM_FINAL, ITEM_ERROR, ITEM_USAGE, ITEM_DONE } kind;
    int i, is_reasoning;
    char *text;                /* ITEM_TEXT: a copy of the piece */
    size_t n;
    const char *finish;
    srv_error err;             /* ITEM_ERROR */
    zp_token_logprobs *lps;    /* ITEM_TEXT / ITEM_FINAL with logprobs: a copy of the tokens' since the last chunk */
    int *lp_tok, n_lp;
} stream_item;

/* The log-probabilities of choice i not yet sent, copied into it (mutex held). */
static void take_logprobs(srv_stream *st, int i, stream_item *it) {
    const srv_job *j = &st->jobs[i];
    const int n = st->lpsent ? j->n_lps - st->lpsent[i] : 0;
    if (n <= 0) return;
    it->lps = malloc(sizeof *it->lps * (size_t)n);
    it->lp_tok = malloc(sizeof *it->lp_tok * (size_t)n);
    if (!it->lps || !it->lp_tok) { free(it->lps), free(it->lp_tok); it->lps = NULL, it->lp_tok = NULL; return; } /* sent with the next */
    memcpy(it->lps, j->lps + st->lpsent[i], sizeof *it->lps * (size_t)n);
    memcpy(it->lp_tok, j->lp_tok + st->lpsent[i], sizeof *it->lp_tok * (size_t)n);
    it->n_lp = n;
    st->lpsent[i] = j->n_lps;
}

static stream_item text_item(srv_stream *st, int i, const char *t, size_t n, int is_reasoning) {
    stream_item it = {ITEM_TEXT, i, is_reasoning, malloc(n + 1), n, NULL, {0}, NULL, NULL, 0};
    if (it.text) memcpy(it.text, t, n), it.text[n] = 0, take_logprobs(st, i, &it);
    return it;
}

/* The next item (mutex held); ITEM_NONE when there is none yet. */
static stream_item stream_next(srv_stream *st) {
    int all_final = 1;
    for (int i = 0; i < st->n_jobs; i++) {
        srv_job *j = &st->jobs[i];
        const size_t ready = stream_ready(st, j);
        if (st->rsent && j->status == ZP_OK) { /* the reasoning, then the content, as far as they are known */
            const srv_reasoning_split sp = srv_reasoning_split_text(st->s->cfg.reasoning, j->text ? j->text : "", ready, j->done || j->stop_hit);
            const size_t r0 = st->rsent[i] > sp.r0 ? st->rsent[i] : sp.r0, c0 = st->sent[i] > sp.c0 ? st->sent[i] : sp.c0;
            if (sp.has_reasoning && sp.r1 > r0) {
                st->rsent[i] = sp.r1;
                return text_item(st, i, j->text + r0, sp.r1 - r0, 1);
            }
            if (sp.c1 > c0) {
                st->sent[i] = sp.c1;
                return text_item(st, i, j->text + c0, sp.c1 - c0, 0);
            }
        } else if (j->status == ZP_OK && ready > st->sent[i]) {
            stream_item it = text_item(st, i, j->text + st->sent[i], ready - st->sent[i], 0);
            st->sent[i] = ready;
            return it;
        }
        if (j->done && !st->final[i]) {
            st->final[i] = 1;
            stream_item it = {ITEM_FINAL, i, 0, NULL, 0, finish_reason(j->finish), {0}, NULL, NULL, 0};
            if (j->status != ZP_OK) it.kind = ITEM_ERROR, srv_job_error(j, &it.err);
            else take_logprobs(st, i, &it);
            return it;
        }
        all_final &= st->final[i];
    }
    if (!all_final) return (stream_item){ITEM_NONE, 0, 0, NULL, 0, NULL, {0}, NULL, NULL, 0};
    if (st->phase == 0 && st->r.include_usage) { st->phase = 1; return (stream_item){ITEM_USAGE, 0, 0, NULL, 0, NULL, {0}, NULL, NULL, 0}; }
    st->phase = 2;
    return (stream_item){ITEM_DONE, 0, 0, NULL, 0, NULL, {0}, NULL, NULL, 0};
}

/* The item's event (mutex not held: the choices it reads are done, or only its copy). */
static char *stream_format(srv_stream *st, stream_item *it) {
    char *ev = NULL;
    const int chat = st->r.endpoint == SRV_CHAT;
    cJSON *lp = st->lpsent && (it->kind == ITEM_TEXT || it->kind == ITEM_FINAL) && it->n_lp
                    ? logprobs_json(st->s, it->lp_tok, it->lps, it->n_lp, chat, &st->lpoff[it->i]) : NULL;
    switch (it->kind) {
    case ITEM_TEXT: /* stream_event owns lp (its chunk frees it) */
        if (it->text) ev = stream_event(st, it->i, it->text, it->n, it->is_reasoning, NULL, lp);
        else cJSON_Delete(lp);
        break;
    case ITEM_FINAL: ev = stream_event(st, it->i, "", 0, 0, it->finish, lp); break;
    case ITEM_USAGE: ev = stream_event(st, -1, NULL, 0, 0, NULL, NULL); break;
    case ITEM_DONE: ev = strdup("data: [DONE]\n\n"); break;
    case ITEM_ERROR: {
        char *e = srv_error_json(&it->err);
        ev = e ? malloc(strlen(e) + 9) : NULL;
        if (ev) sprintf(ev, "data: %s\n\n", e);
        free(e);
        break;
    }
    default: break;
    }
    free(it->text);
    free(it->lps);
    free(it->lp_tok);
    return ev;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    srv_stream *st = cls;
    (void)pos;
    if (st->pend_off == st->pend_n) {
        free(st->pend);
        st->pend = NULL;
        st->pend_n = st->pend_off = 0;
        if (st->phase == 2) return MHD_CONTENT_READER_END_OF_STREAM;
        stream_item it;
        idle_timeout(st->s, st->conn, 0);
        pthread_mutex_lock(&st->s->mu);
        while ((it = stream_next(st)).kind == ITEM_NONE) pthread_cond_wait(&st->call.cv, &st->s->mu);
        pthread_mutex_unlock(&st->s->mu);
        idle_timeout(st->s, st->conn, 1);
        if (!(st->pend = stream_format(st, &it))) return MHD_CONTENT_READER_END_WITH_ERROR; /* out of memory */
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
    srv_free_jobs(st->jobs, st->n_jobs, st->r.n);
    srv_request_free(&st->r);
    free(st->sent);
    free(st->rsent);
    free(st->lpsent);
    free(st->lpoff);
    free(st->final);
    free(st->started);
    free(st->pend);
    free(st);
}

static enum MHD_Result start_stream(srv_server *s, struct MHD_Connection *c, srv_request *r, srv_job *jobs, int n_jobs) {
    srv_error err;
    srv_stream *st = calloc(1, sizeof *st);
    size_t *sent = calloc((size_t)n_jobs, sizeof *sent), *rsent = calloc((size_t)n_jobs, sizeof *rsent);
    char *final = calloc((size_t)n_jobs, 1), *started = calloc((size_t)n_jobs, 1);
    if (!st || !sent || !rsent || !final || !started) {
        free(st), free(sent), free(rsent), free(final), free(started);
        srv_free_jobs(jobs, n_jobs, r->n);
        srv_request_free(r);
        return refuse_with(c, 500, "server_error", NULL, "no memory for a stream");
    }
    *st = (srv_stream){.s = s, .r = *r, .jobs = jobs, .n_jobs = n_jobs, .sent = sent, .final = final, .started = started, .conn = c};
    if (r->logprobs && (!(st->lpsent = calloc((size_t)n_jobs, sizeof *st->lpsent)) || !(st->lpoff = calloc((size_t)n_jobs, sizeof *st->lpoff)))) {
        free(st->lpsent), free(st->lpoff), free(rsent);
        free(st), free(sent), free(final), free(started);
        srv_free_jobs(jobs, n_jobs, r->n);
        srv_request_free(r);
        return refuse_with(c, 500, "server_error", NULL, "no memory for a stream");
    }
    if (r->endpoint == SRV_CHAT && s->cfg.reasoning != SRV_REASONING_NONE) st->rsent = rsent; /* else unused */
    else free(rsent);
    pthread_cond_init(&st->call.cv, NULL);
    st->call.n_jobs = n_jobs;
    st->call.stream = 1;
    for (int i = 0; i < r->n_stop; i++)
        if (strlen(r->stop[i]) > st->max_stop) st->max_stop = strlen(r->stop[i]);
    memset(r, 0, sizeof *r); /* the stream owns the request now (and the choices' stop strings) */
    for (int i = 0; i < n_jobs; i++) jobs[i].stop = st->r.stop;
    if (!srv_enqueue(s, jobs, n_jobs, &st->call, &st->call_id, &err)) {
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

/* A chat request's prompt: the conversation rendered by the model family's template (chat.h:
 * system, user and assistant turns as the family's Hugging Face template renders them; a
 * developer message is OpenAI's system message) and tokenized into r->prompts[0]. max_tokens
 * defaults to the rest of the context. */
static int chat_prompt(srv_server *s, srv_request *r, srv_error *err) {
    if (!s->has_chat) {
        srv_error_set(err, 400, "invalid_request_error", NULL, "this model's chat template is not one the server renders (Qwen3, R1, Llama-3, SmolLM2)");
        return 0;
    }
    zp_chat_msg *m = calloc((size_t)r->n_messages, sizeof *m);
    if (!m) {
        srv_error_set(err, 500, "server_error", NULL, "no memory for %d messages", r->n_messages);
        return 0;
    }
    for (int i = 0; i < r->n_messages; i++) {
        const char *role = r->messages[i].role;
        m[i].role = !strcmp(role, "user") ? ZP_CHAT_USER : !strcmp(role, "assistant") ? ZP_CHAT_ASSISTANT : ZP_CHAT_SYSTEM; /* system, developer */
        m[i].content = r->messages[i].content;
    }
    zp_chat_opts co = {s->family, r->enable_thinking != 0, NULL};
    char *text = NULL;
    int *ids = NULL, n = 0;
    zp_status st = zp_chat_render_messages(&co, m, r->n_messages, &text);
    free(m);
    if (st == ZP_OK) {
        pthread_mutex_lock(&s->tok_mu);
        st = zp_tokenizer_encode(s->tok, text, strlen(text), 1, &ids, &n);
        pthread_mutex_unlock(&s->tok_mu);
    }
    free(text);
    r->prompts = calloc(1, sizeof *r->prompts);
    if (st != ZP_OK || !r->prompts) {
        srv_error_set(err, 400, "invalid_request_error", "messages", "messages: %s", st != ZP_OK ? zp_last_error() : "no memory");
        free(ids);
        return 0;
    }
    r->prompts[0] = (srv_prompt){NULL, ids, n};
    r->n_prompts = 1;
    if (r->max_tokens < 0) r->max_tokens = s->max_pos - n > 0 ? s->max_pos - n : 1;
    return 1;
}

static enum MHD_Result serve_completion(srv_server *s, struct MHD_Connection *c, const srv_conn *body, srv_endpoint ep) {
    srv_request r;
    srv_error err;
    if (srv_request_parse(body->body ? body->body : "", body->n, ep, &r, &err) != ZP_OK) return send_error(c, &err);
    enum MHD_Result ret;
    if (strcmp(r.model, s->name)) {
        char msg[512];
        snprintf(msg, sizeof msg, "The model `%.200s` does not exist (this server serves `%.150s`)", r.model, s->name);
        ret = refuse_with(c, 404, "NotFoundError", "model", msg);
        srv_request_free(&r);
        return ret;
    }
    if (ep == SRV_CHAT && !chat_prompt(s, &r, &err)) { srv_request_free(&r); return send_error(c, &err); }
    const int n_jobs = r.n_prompts * r.n;
    srv_job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
    if (!jobs || !build_jobs(s, &r, jobs, n_jobs, &err)) {
        if (!jobs) srv_error_set(&err, 500, "server_error", NULL, "no memory for %d choices", n_jobs);
        if (jobs) srv_free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return send_error(c, &err);
    }
    if (r.stream) return start_stream(s, c, &r, jobs, n_jobs);
    srv_call call = {n_jobs, 0, 0, PTHREAD_COND_INITIALIZER, 0, 0};
    int64_t call_id;
    if (!srv_enqueue(s, jobs, n_jobs, &call, &call_id, &err)) {
        srv_free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return send_error(c, &err);
    }
    idle_timeout(s, c, 0);
    pthread_mutex_lock(&s->mu);
    while (call.n_done < call.n_jobs) pthread_cond_wait(&call.cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    idle_timeout(s, c, 1);
    pthread_cond_destroy(&call.cv);
    int failed = -1;
    for (int i = 0; i < n_jobs && failed < 0; i++)
        if (jobs[i].status != ZP_OK) failed = i;
    if (failed >= 0) {
        srv_job_error(&jobs[failed], &err);
        ret = send_error(c, &err);
    } else {
        ret = send_json(c, MHD_HTTP_OK, completion_json(s, &r, jobs, n_jobs, call_id));
    }
    srv_free_jobs(jobs, n_jobs, r.n);
    srv_request_free(&r);
    return ret;
}

/* ---------------------------------------------------------------- routing */

static int authorized(const srv_server *s, struct MHD_Connection *c) {
    if (!s->cfg.api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, s->cfg.api_key);
}

/* The first call, on the headers alone: a request without the key, or one that declares a body
 * over the limit, is answered before a byte of its body is read (libmicrohttpd then closes the
 * connection instead of reading the rest). NULL: go on to the body. */
static int refused_on_headers(srv_server *s, struct MHD_Connection *c, const char *url, const char *method, enum MHD_Result *ret) {
    const int open = !strcmp(url, "/health") || (!strcmp(url, "/metrics") && !strcmp(method, "GET")); /* no key (vLLM's too) */
    if (!open && !authorized(s, c)) {
        *ret = refuse_with(c, 401, "invalid_request_error", NULL, "a valid API key is required (Authorization: Bearer KEY)");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end = NULL;
    const unsigned long long declared = cl ? strtoull(cl, &end, 10) : 0;
    if (cl && declared > s->cfg.max_body) {
        char msg[160];
        snprintf(msg, sizeof msg, "the request body (Content-Length %llu) exceeds %zu bytes", declared, s->cfg.max_body);
        *ret = refuse_with(c, 413, "invalid_request_error", NULL, msg);
        return 1;
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls) {
    srv_server *s = cls;
    (void)version;
    srv_conn *b = *con_cls;
    if (!b) { /* the headers: refused at once, or a connection's state, then the body in pieces */
        enum MHD_Result ret;
        if (refused_on_headers(s, c, url, method, &ret)) return ret;
        b = calloc(1, sizeof *b);
        if (!b) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size) {
        /* a body without Content-Length (chunked) past the limit: libmicrohttpd takes no answer
         * while a body is coming in, so the connection is closed here, nothing more buffered */
        if (b->n + *upload_size > s->cfg.max_body) return MHD_NO;
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
    const int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/v1/models") && get) return serve_models(s, c);
    if (!strcmp(url, "/v1/completions") && post) return serve_completion(s, c, b, SRV_COMPLETIONS);
    if (!strcmp(url, "/v1/chat/completions") && post) return serve_completion(s, c, b, SRV_CHAT);
    if (!strcmp(url, "/v1/models") || !strcmp(url, "/v1/completions") || !strcmp(url, "/v1/chat/completions"))
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

zp_status srv_run(const srv_config *cfg) {
    srv_server s;
    zp_status st = srv_server_open(&s, cfg);
    if (st != ZP_OK) { srv_server_close(&s); return st; }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread started from here leaves them to sigwait */
    pthread_t engine;
    if (pthread_create(&engine, NULL, srv_engine_main, &s) != 0) { srv_server_close(&s); return zp_fail(ZP_ERR_BACKEND, "serve: cannot start the engine thread"); }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)cfg->port);
    struct MHD_Daemon *d = NULL;
    if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) st = zp_fail(ZP_ERR_INVALID, "serve: --host \"%s\" is not an IPv4 address", cfg->host);
    else {
        /* poll(), not select(): a load test holds more than select's 1,024 descriptors; one
         * connection per queued choice at most, and a margin for /metrics and refusals */
        d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG,
                             (uint16_t)cfg->port, NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                             MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)(cfg->max_waiting + cfg->ec.max_num_seqs) + 256u,
                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout, MHD_OPTION_END);
        if (!d) st = zp_fail(ZP_ERR_IO, "serve: cannot listen on %s:%d (in use, or not allowed)", cfg->host, cfg->port);
    }
    if (st == ZP_OK) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        printf("serving %s on http://%s:%u\n", s.name, cfg->host, info ? (unsigned)info->port : (unsigned)cfg->port);
        fflush(stdout);
        int sig;
        sigwait(&sigs, &sig);
        fprintf(stderr, "serve: %s: no new connections; finishing the requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        /* the listening socket closed: a new connection is refused at once, not left unanswered */
        const MHD_socket ls = MHD_quiesce_daemon(d);
        if (ls != MHD_INVALID_SOCKET) close(ls);
    }
    pthread_mutex_lock(&s.mu);
    s.stopping = 1;
    if (cfg->shutdown_timeout > 0) s.stop_deadline = zp_now() + cfg->shutdown_timeout;
    pthread_cond_signal(&s.wake);
    pthread_mutex_unlock(&s.mu);
    pthread_join(engine, NULL);
    /* A connection accepted before the signal whose request had not reached the queue gets its
     * answer (503: shutting down) rather than a closed socket: up to 2 s for the connections to end. */
    for (double t0 = zp_now(); d && zp_now() - t0 < 2.0; usleep(20000)) {
        const union MHD_DaemonInfo *ci = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!ci || ci->num_connections == 0) break;
    }
    if (d) MHD_stop_daemon(d);
    if (st == ZP_OK && s.engine_status != ZP_OK) st = zp_fail(s.engine_status, "serve: the engine failed");
    srv_server_close(&s);
    return st;
}
