/* serve_prompt.c - a parsed request's prompts as the engine takes them (serve_request.c parses;
 * this file turns what it parsed into token ids): a chat's conversation rendered by the model
 * family's template and tokenized (srv_chat_prompt), every prompt tokenized or copied, checked
 * against the vocabulary and the context, and made into the call's jobs with their sampling
 * (srv_build_jobs). Deliberately not here: parsing the body (serve_request.c), queuing the jobs
 * (serve_engine.c), HTTP. */
#include "serve_http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The choices of a parsed request: tokenized, checked against the model, queued (mutex held by
 * none); fills err on a refusal. */
int srv_build_jobs(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, srv_error *err) {
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

/* A chat request's prompt: the conversation rendered by the model family's template (chat.h:
 * system, user and assistant turns as the family's Hugging Face template renders them; a
 * developer message is OpenAI's system message) and tokenized into r->prompts[0]. max_tokens
 * defaults to the rest of the context. */
int srv_chat_prompt(srv_server *s, srv_request *r, srv_error *err) {
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
