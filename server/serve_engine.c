/* serve_engine.c - the engine side of `zipage serve` (serve_internal.h): the engine thread that
 * steps continuously, the choices' text as tokens arrive (stop strings cut it and end the request),
 * requests whose client left ended through zp_engine_finish_request, the /metrics counters, the
 * queue, and the server's state. Deliberately not here: HTTP (serve.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_internal.h"
#include "clock.h"
#include "mkmodel.h" /* zp_preset_dir */

static void hist_add(srv_hist *h, const double *le, int nb, double x) {
    int b = 0;
    while (b < nb && x > le[b]) b++;
    h->n[b]++;
    h->sum += x;
    h->count++;
}

/* Appends n bytes to a growable buffer (text or stage). */
static zp_status buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        while (c < *len + n + 1) c *= 2;
        char *t = realloc(*buf, c);
        if (!t) return zp_fail(ZP_ERR_OOM, "serve: no memory for a completion's text");
        *buf = t;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return ZP_OK;
}
static zp_status job_append(srv_job *j, const char *s, size_t n) { return buf_append(&j->text, &j->len, &j->cap, s, n); }

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

/* The engine's token hook (engine thread, mutex not held): the token's text is staged in the
 * choice, which only this thread touches until the step ends; after_step then moves every staged
 * text under one lock, instead of a lock and a wake-up per token while the connection threads
 * contend for the mutex. */
static void on_token(void *ctx, int64_t id, int sample, int token, zp_finish_reason finish, const zp_token_logprobs *lp) {
    srv_server *s = ctx;
    (void)sample;
    (void)finish;
    srv_job *j = s->live[id % s->live_cap];
    if (!j || j->id != id || j->stop_hit) return;
    if (lp && j->n_stage_lps < SRV_STAGE_LPS) j->stage_lps[j->n_stage_lps] = *lp, j->stage_lp_tok[j->n_stage_lps++] = token;
    char buf[8192]; /* 3 x the longest token's bytes + 3 (checked at open) */
    const int skip = j->skip_special && token >= 0 && token < s->vocab && s->special[token];
    const size_t n = skip ? 0 : zp_tokenizer_decode_stream(s->tok, token, &j->dt, buf, sizeof buf);
    if (!j->stage_tokens) s->touched[s->n_touched++] = j;
    j->stage_tokens++;
    j->t_stage = zp_now();
    if (n && buf_append(&j->stage, &j->stage_len, &j->stage_cap, buf, n) != ZP_OK) j->stage_len = 0; /* out of memory: the text is lost, not the request */
}

/* The step's staged tokens into the choices' text, latencies and stop strings (mutex held). */
static void flush_staged(srv_server *s) {
    for (int i = 0; i < s->n_touched; i++) {
        srv_job *j = s->touched[i];
        for (int k = 0; k < j->stage_tokens; k++) {
            if (j->n_tokens == 0) hist_add(&s->m.ttft, ttft_le, N_TTFT, j->t_stage - j->t_arrival);
            else hist_add(&s->m.itl, itl_le, N_ITL, j->t_stage - j->t_last);
            j->t_last = j->t_stage;
            j->n_tokens++;
        }
        if (j->n_stage_lps && j->n_lps + j->n_stage_lps > j->cap_lps) { /* out of memory: those log-probabilities are lost, not the request */
            const int cap = 2 * (j->n_lps + j->n_stage_lps) + 64;
            zp_token_logprobs *a = realloc(j->lps, sizeof *a * (size_t)cap);
            if (a) j->lps = a;
            int *b = realloc(j->lp_tok, sizeof *b * (size_t)cap);
            if (b) j->lp_tok = b;
            if (a && b) j->cap_lps = cap;
        }
        for (int k = 0; k < j->n_stage_lps && j->n_lps < j->cap_lps; k++) j->lps[j->n_lps] = j->stage_lps[k], j->lp_tok[j->n_lps++] = j->stage_lp_tok[k];
        const size_t from = j->len;
        if (j->stage_len && !j->stop_hit && job_append(j, j->stage, j->stage_len) == ZP_OK && j->n_stop) job_match_stop(j, from);
        if ((j->stage_len || j->n_stage_lps) && j->call->stream && !j->call->to_wake) j->call->to_wake = 1, s->wake_calls[s->n_wake_calls++] = j->call;
        j->stage_len = 0;
        j->stage_tokens = 0;
        j->n_stage_lps = 0;
    }
    s->n_touched = 0;
}

static void job_done(srv_server *s, srv_job *j) {
    if (j->status == ZP_OK && j->finish > ZP_FINISH_NONE && j->finish < ZP_FINISH_COUNT) s->m.finished[j->finish]++;
    j->done = 1;
    j->call->n_done++;
    if (j->in_engine) { /* out of the look-up table and the active list (the last one takes its place) */
        s->live[j->id % s->live_cap] = NULL;
        s->free_slots[s->n_free_slots++] = (int)(j->id % s->live_cap);
        srv_job *last = s->active[--s->n_active];
        s->active[j->active_ix] = last;
        last->active_ix = j->active_ix;
    }
    j->in_engine = 0;
    pthread_cond_broadcast(&j->call->cv);
}

/* Moves waiting choices into the engine, in arrival order, while it holds fewer than max_num_seqs
 * requests (running, or waiting in it: preempted ones): the engine's scheduler caps each step's
 * batch, not its running list, so the server keeps the rest and the cap holds (mutex held). Each
 * choice takes a free slot of the look-up table; its engine id is a fresh number times live_cap
 * plus that slot, so no choice ever waits for another's slot. */
static void admit_waiting(srv_server *s) {
    int room = s->cfg.ec.max_num_seqs - zp_engine_num_running(s->e) - zp_engine_num_waiting(s->e);
    for (int i = 0; i < s->n_waiting; i++) {
        srv_job *j = s->waiting[i];
        if (j->call->aborted) { /* its client left before it started */
            j->finish = ZP_FINISH_ABORT;
            job_done(s, j);
            continue;
        }
        if (room <= 0 || s->n_free_slots == 0) { /* the engine is full: the rest wait, in order */
            memmove(s->waiting, s->waiting + i, sizeof *s->waiting * (size_t)(s->n_waiting - i));
            s->n_waiting -= i;
            return;
        }
        const int slot = s->free_slots[--s->n_free_slots];
        j->id = s->next_id++ * (int64_t)s->live_cap + slot;
        j->status = zp_engine_add_request(s->e, j->prompt, j->n_prompt, &j->sp, j->id, j->sample, j->sp.has_rng_key ? j->seed : (uint64_t)j->id);
        if (j->status != ZP_OK) {
            s->free_slots[s->n_free_slots++] = slot;
            snprintf(j->error, sizeof j->error, "%s", zp_last_error());
            job_done(s, j);
            continue;
        }
        room--;
        s->live[slot] = j;
        j->active_ix = s->n_active;
        s->active[s->n_active++] = j;
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

/* After a step (mutex held, once per step: the connection threads woken by the last step contend
 * for it): stop strings end their requests; finished outputs complete their choices. */
static zp_status after_step(srv_server *s) {
    flush_staged(s);
    for (int i = 0; i < s->n_active; i++) {
        srv_job *j = s->active[i];
        if (j->finish != ZP_FINISH_NONE || !(j->stop_hit || j->call->aborted)) continue;
        const zp_finish_reason why = j->stop_hit ? ZP_FINISH_STOP : ZP_FINISH_ABORT;
        zp_status st = zp_engine_finish_request(s->e, j->id, j->sample, why);
        if (st != ZP_OK && st != ZP_ERR_INVALID) return st;
        if (st == ZP_OK) j->finish = why; /* INVALID: it finished on its own in this step (its output says how) */
    }
    snapshot(s);
    zp_output o[64];
    for (int n; (n = zp_engine_poll(s->e, o, 64)) > 0;) {
        for (int i = 0; i < n; i++) {
            srv_job *j = s->live[o[i].request_id % s->live_cap];
            if (j && j->id == o[i].request_id) {
                char tail[3]; /* a character its last token left cut: U+FFFD, as a whole decode ends */
                const size_t k = j->stop_hit ? 0 : zp_tokenizer_decode_flush(&j->dt, tail, sizeof tail);
                if (k && job_append(j, tail, k) == ZP_OK && j->n_stop) job_match_stop(j, j->len - k);
                j->finish = j->stop_hit ? ZP_FINISH_STOP : j->finish == ZP_FINISH_ABORT ? ZP_FINISH_ABORT : o[i].finish;
                j->n_tokens = o[i].n_tokens;
                job_done(s, j);
            }
            zp_output_free(&o[i]);
        }
    }
    return ZP_OK;
}

/* The streams with new text, to be woken once the mutex is let go (mutex held): a call whose
 * choices are all done was woken by job_done and may be freed as soon as the mutex is let go,
 * so it is left out; the others cannot be freed before this thread ends their choices. */
static int take_wake_list(srv_server *s) {
    int n = 0;
    for (int i = 0; i < s->n_wake_calls; i++) {
        srv_call *c = s->wake_calls[i];
        c->to_wake = 0;
        if (c->n_done < c->n_jobs) s->wake_calls[n++] = c;
    }
    s->n_wake_calls = 0;
    return n;
}

/* Ends every choice still in the server's queue with a 503 saying why (mutex held). */
static void end_waiting(srv_server *s, const char *why) {
    for (int i = 0; i < s->n_waiting; i++) {
        s->waiting[i]->status = ZP_ERR_INTERRUPTED;
        snprintf(s->waiting[i]->error, sizeof s->waiting[i]->error, "%s", why);
        job_done(s, s->waiting[i]);
    }
    s->n_waiting = 0;
}

/* The shutdown's grace period is over: every choice not yet finished ends with a 503 naming the
 * shutdown (its client never takes a cut answer for a whole one); those in the engine end at the
 * next step through the abort path (mutex held). */
static void cut_unfinished(srv_server *s) {
    s->cut = 1;
    char msg[160];
    snprintf(msg, sizeof msg, "the server shut down (--shutdown-timeout %d s) before this request finished", s->cfg.shutdown_timeout);
    for (int i = 0; i < s->n_active; i++) {
        srv_job *j = s->active[i];
        if (j->finish != ZP_FINISH_NONE) continue;
        j->status = ZP_ERR_INTERRUPTED;
        snprintf(j->error, sizeof j->error, "%s", msg);
        j->call->aborted = 1;
    }
    end_waiting(s, msg);
    fprintf(stderr, "serve: %s: %d requests ended\n", msg, s->n_active);
}

void *srv_engine_main(void *arg) {
    srv_server *s = arg;
    pthread_mutex_lock(&s->mu);
    double t_end = 0; /* when the last step ended (0: the engine was idle since) */
    for (;;) {
        if (s->stopping && !s->cut && s->stop_deadline > 0 && zp_now() >= s->stop_deadline) cut_unfinished(s);
        admit_waiting(s);
        if (!zp_engine_has_unfinished(s->e)) {
            if (s->stopping) break;
            t_end = 0;
            for (int i = 0, n = take_wake_list(s); i < n; i++) pthread_cond_broadcast(&s->wake_calls[i]->cv); /* (none expected: all is done) */
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        /* after admit_waiting (a waiting choice of a client that left is done by now), and only this
         * thread ends choices (job_done): the calls kept stay alive until it locks again */
        const int n_wake = take_wake_list(s);
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < n_wake; i++) pthread_cond_broadcast(&s->wake_calls[i]->cv);
        const double t0 = zp_now();
        zp_status st = zp_engine_step(s->e);
        const double t1 = zp_now();
        pthread_mutex_lock(&s->mu);
        if (st == ZP_OK) st = after_step(s);
        s->m.steps++;
        s->m.step_seconds += t1 - t0;
        if (t_end > 0) s->m.between_seconds += t0 - t_end;
        s->m.between_seconds += zp_now() - t1;
        t_end = zp_now();
        if (st != ZP_OK) { /* the engine cannot go on: every choice in it fails */
            s->engine_status = st;
            fprintf(stderr, "serve: engine step failed: %s\n", zp_last_error());
            for (int i = 0; i < s->n_touched; i++) s->touched[i]->stage_len = 0, s->touched[i]->stage_tokens = 0, s->touched[i]->n_stage_lps = 0;
            s->n_touched = 0;
            take_wake_list(s); /* every choice ends below, each call woken by job_done */
            while (s->n_active > 0) { /* job_done takes each out of the list */
                srv_job *j = s->active[s->n_active - 1];
                j->status = st;
                snprintf(j->error, sizeof j->error, "the engine failed: %s", zp_last_error());
                job_done(s, j);
            }
            s->stopping = 1;
            break;
        }
    }
    end_waiting(s, "the server is shutting down");
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void srv_free_jobs(srv_job *jobs, int n_jobs, int per_prompt) {
    for (int i = 0; i < n_jobs; i++) {
        if (i % per_prompt == 0) free(jobs[i].prompt);
        free(jobs[i].text);
        free(jobs[i].stage);
        free(jobs[i].lps);
        free(jobs[i].lp_tok);
    }
    free(jobs);
}

int srv_enqueue(srv_server *s, srv_job *jobs, int n_jobs, srv_call *call, int64_t *call_id, srv_error *err) {
    const int hold = s->cfg.ec.max_num_seqs + s->cfg.max_waiting;
    if (n_jobs > hold) { /* never fits: the request's fault, not a busy server */
        srv_error_set(err, 400, "invalid_request_error", "n", "%d choices (prompts x n); this server holds at most %d at once (max_num_seqs + max_waiting)",
                      n_jobs, hold);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    /* the choices held: those in the engine (at most max_num_seqs: running, preempted, just admitted)
     * and those in the server's queue; past max_num_seqs + max_waiting a call is refused */
    if (s->stopping || s->n_active + s->n_waiting + n_jobs > hold) {
        pthread_mutex_unlock(&s->mu);
        srv_error_set(err, 503, "server_error", NULL, s->stopping ? "the server is shutting down" : "the waiting queue is full (%d choices); try again later",
                      s->cfg.max_waiting);
        return 0;
    }
    *call_id = s->next_call++;
    for (int i = 0; i < n_jobs; i++) {
        jobs[i].id = -1; /* its engine id comes with its slot (admit_waiting) */
        jobs[i].call = call;
        jobs[i].t_arrival = zp_now();
        s->waiting[s->n_waiting++] = &jobs[i];
    }
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    return 1;
}

/* The request's fault (the engine refused its values or it can never fit) is a 400; the server
 * stopping before it ran a 503; anything else a fault of ours, a 500, logged. */
void srv_job_error(const srv_job *j, srv_error *err) {
    if (j->status == ZP_ERR_CAPACITY || j->status == ZP_ERR_INVALID) srv_error_set(err, 400, "invalid_request_error", NULL, "%s", j->error);
    else if (j->status == ZP_ERR_INTERRUPTED) srv_error_set(err, 503, "server_error", NULL, "%s", j->error);
    else {
        fprintf(stderr, "serve: request %lld failed: %s\n", (long long)j->id, j->error);
        srv_error_set(err, 500, "server_error", NULL, "%s", j->error);
    }
}

/* ---------------------------------------------------------------- the server's life */

zp_status srv_server_open(srv_server *s, const srv_config *cfg) {
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (cfg->max_waiting < 1) return zp_fail(ZP_ERR_INVALID, "serve: max_waiting %d must be positive", cfg->max_waiting);
    const char *slash = strrchr(cfg->ec.model_dir, '/');
    const char *base = cfg->served_name ? cfg->served_name : slash && slash[1] ? slash + 1 : cfg->ec.model_dir;
    snprintf(s->name, sizeof s->name, "%s", base);
    char dir[4096]; /* the tokenizer's folder: the checkpoint's, or the preset's (random weights) */
    if (cfg->ec.random_weights) ZP_TRY(zp_preset_dir(cfg->ec.model_dir, dir, sizeof dir));
    else snprintf(dir, sizeof dir, "%s", cfg->ec.model_dir);
    ZP_TRY(zp_tokenizer_load(dir, &s->tok));
    if (3 * zp_tokenizer_max_token_bytes(s->tok) + 3 > 8192) /* on_token's buffer */
        return zp_fail(ZP_ERR_INVALID, "serve: the tokenizer of %s has a token of %d bytes; at most 2,729 are served", dir,
                       zp_tokenizer_max_token_bytes(s->tok));
    s->has_chat = zp_chat_detect(dir, &s->family) == ZP_OK; /* else /v1/chat/completions refuses */
    ZP_TRY(zp_engine_init(&cfg->ec, &s->e));
    s->max_pos = zp_engine_model_config(s->e)->max_pos;
    s->vocab = zp_engine_model_config(s->e)->vocab;
    s->special = calloc((size_t)s->vocab, 1);
    if (!s->special) return zp_fail(ZP_ERR_OOM, "serve: no memory for the special-token table");
    for (int i = 0; i < s->vocab; i++) s->special[i] = (unsigned char)zp_tokenizer_is_special(s->tok, i);
    s->live_cap = cfg->ec.max_num_seqs; /* the engine holds at most that many (admit_waiting) */
    if (s->live_cap < 1) return zp_fail(ZP_ERR_INVALID, "serve: max_num_seqs %d must be positive", s->live_cap);
    s->waiting = calloc((size_t)cfg->max_waiting + (size_t)cfg->ec.max_num_seqs, sizeof *s->waiting); /* srv_enqueue's bound */
    s->live = calloc((size_t)s->live_cap, sizeof *s->live);
    s->active = calloc((size_t)s->live_cap, sizeof *s->active);
    s->touched = calloc((size_t)s->live_cap, sizeof *s->touched);
    s->wake_calls = calloc((size_t)s->live_cap, sizeof *s->wake_calls);
    s->free_slots = calloc((size_t)s->live_cap, sizeof *s->free_slots);
    for (int i = 0; s->free_slots && i < s->live_cap; i++) s->free_slots[s->n_free_slots++] = s->live_cap - 1 - i;
    if (!s->waiting || !s->live || !s->active || !s->touched || !s->wake_calls || !s->free_slots) return zp_fail(ZP_ERR_OOM, "serve: no memory for %d choices", cfg->max_waiting);
    zp_engine_set_token_hook(s->e, on_token, s);
    snapshot(s); /* /metrics before the first step */
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->tok_mu, NULL);
    pthread_mutex_init(&s->arrival_mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    return ZP_OK;
}

void srv_server_close(srv_server *s) {
    if (s->e) zp_engine_free(s->e);
    if (s->tok) zp_tokenizer_free(s->tok);
    free(s->special);
    free(s->waiting);
    free(s->live);
    free(s->active);
    free(s->touched);
    free(s->wake_calls);
    free(s->free_slots);
}
