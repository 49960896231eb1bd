/* serve_answer.c - the JSON of `zipage serve`'s answers (serve_http.h): the head every answer
 * opens with, usage, one choice (completions' text, chat's message or delta, reasoning_content),
 * log-probabilities in OpenAI's two forms, and a whole answer. Deliberately not here: HTTP, the
 * stream's framing (serve_stream.c), the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_http.h"

/* The fields every answer opens with: id, object, created, model (chat: chat.completion[.chunk]). */
cJSON *srv_answer_head(const srv_server *s, int chat, int chunk, int64_t call_id) {
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
void srv_add_usage(cJSON *root, const srv_job *jobs, int n_jobs, int per_prompt) {
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
cJSON *srv_choice_json(int chat, int stream, int first, int i, const char *text, int parsed, const char *reasoning, const char *finish,
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
cJSON *srv_logprobs_json(const srv_server *s, const int *tok, const zp_token_logprobs *lps, int n, int chat, size_t *offset) {
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

char *srv_completion_json(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, int64_t call_id) {
    const int chat = r->endpoint == SRV_CHAT;
    cJSON *root = srv_answer_head(s, chat, 0, call_id), *choices = cJSON_AddArrayToObject(root, "choices");
    const int parsed = chat && s->cfg.reasoning != SRV_REASONING_NONE;
    for (int i = 0; i < n_jobs; i++) {
        char *content = NULL, *reasoning = NULL;
        if (parsed) split_whole(s, &jobs[i], &content, &reasoning);
        cJSON_AddItemToArray(choices, srv_choice_json(chat, 0, 1, i, parsed ? content : jobs[i].text ? jobs[i].text : "", parsed, reasoning,
                                                  srv_finish_reason(jobs[i].finish), r->logprobs ? srv_logprobs_json(s, jobs[i].lp_tok, jobs[i].lps, jobs[i].n_lps, chat,
                                                                                                              &(size_t){0}) : NULL));
        free(content);
        free(reasoning);
    }
    srv_add_usage(root, jobs, n_jobs, r->n);
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return j;
}
