/* serve_stream.c - `zipage serve`'s streamed answers (serve_http.h): server-sent events of each
 * choice's new text (held back while a stop string may be beginning; with a reasoning parser,
 * reasoning then content), its log-probabilities, its finish, usage and [DONE], as OpenAI streams
 * them; a client that leaves ends its choices. The next event is chosen under the server's mutex
 * and formatted after it is let go. Deliberately not here: whole answers (serve.c), the JSON of a
 * choice (serve_answer.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_http.h"

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
    cJSON *root = srv_answer_head(st->s, chat, 1, st->call_id), *choices = cJSON_AddArrayToObject(root, "choices");
    if (i >= 0) {
        char *t = malloc(n + 1);
        if (t) { memcpy(t, text, n); t[n] = 0; }
        const int parsed = chat && st->s->cfg.reasoning != SRV_REASONING_NONE;
        cJSON_AddItemToArray(choices, srv_choice_json(chat, 1, !st->started[i], i, is_reasoning ? NULL : t ? t : "", parsed,
                                                  is_reasoning ? (t ? t : "") : NULL, finish, lp));
        st->started[i] = 1;
        free(t);
        if (st->r.include_usage) cJSON_AddNullToObject(root, "usage");
    } else {
        srv_add_usage(root, st->jobs, st->n_jobs, st->r.n);
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
    stream_item it = {.kind = ITEM_TEXT, .i = i, .is_reasoning = is_reasoning, .text = malloc(n + 1), .n = n};
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
            stream_item it = {.kind = ITEM_FINAL, .i = i, .finish = srv_finish_reason(j->finish)};
            if (j->status != ZP_OK) it.kind = ITEM_ERROR, srv_job_error(j, &it.err);
            else take_logprobs(st, i, &it);
            return it;
        }
        all_final &= st->final[i];
    }
    if (!all_final) return (stream_item){.kind = ITEM_NONE};
    if (st->phase == 0 && st->r.include_usage) { st->phase = 1; return (stream_item){.kind = ITEM_USAGE}; }
    st->phase = 2;
    return (stream_item){.kind = ITEM_DONE};
}

/* The item's event (mutex not held: the choices it reads are done, or only its copy). */
static char *stream_format(srv_stream *st, stream_item *it) {
    char *ev = NULL;
    const int chat = st->r.endpoint == SRV_CHAT;
    cJSON *lp = st->lpsent && (it->kind == ITEM_TEXT || it->kind == ITEM_FINAL) && it->n_lp
                    ? srv_logprobs_json(st->s, it->lp_tok, it->lps, it->n_lp, chat, &st->lpoff[it->i]) : NULL;
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
        srv_idle_timeout(st->s, st->conn, 0);
        pthread_mutex_lock(&st->s->mu);
        while ((it = stream_next(st)).kind == ITEM_NONE) pthread_cond_wait(&st->call.cv, &st->s->mu);
        pthread_mutex_unlock(&st->s->mu);
        srv_idle_timeout(st->s, st->conn, 1);
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

enum MHD_Result srv_start_stream(srv_server *s, struct MHD_Connection *c, srv_request *r, srv_job *jobs, int n_jobs) {
    srv_error err;
    srv_stream *st = calloc(1, sizeof *st);
    size_t *sent = calloc((size_t)n_jobs, sizeof *sent), *rsent = calloc((size_t)n_jobs, sizeof *rsent);
    char *final = calloc((size_t)n_jobs, 1), *started = calloc((size_t)n_jobs, 1);
    if (!st || !sent || !rsent || !final || !started) {
        free(st), free(sent), free(rsent), free(final), free(started);
        srv_free_jobs(jobs, n_jobs, r->n);
        srv_request_free(r);
        return srv_refuse_with(c, 500, "server_error", NULL, "no memory for a stream");
    }
    *st = (srv_stream){.s = s, .r = *r, .jobs = jobs, .n_jobs = n_jobs, .sent = sent, .final = final, .started = started, .conn = c};
    if (r->logprobs && (!(st->lpsent = calloc((size_t)n_jobs, sizeof *st->lpsent)) || !(st->lpoff = calloc((size_t)n_jobs, sizeof *st->lpoff)))) {
        free(st->lpsent), free(st->lpoff), free(rsent);
        free(st), free(sent), free(final), free(started);
        srv_free_jobs(jobs, n_jobs, r->n);
        srv_request_free(r);
        return srv_refuse_with(c, 500, "server_error", NULL, "no memory for a stream");
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
        return srv_send_error(c, &err);
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
    if (!resp) { stream_free(st); return MHD_NO; }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}
