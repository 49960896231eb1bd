/* serve_request.h - the body of an OpenAI-compatible request (POST /v1/completions and
 * /v1/chat/completions) parsed and checked into one struct, and the error object a refusal is
 * answered with ({"error": {"message", "type", "param", "code"}}, OpenAI's shape).
 *
 * Every field is checked for its type and range here, and a field this server does not know is
 * refused by name, as OpenAI refuses it ("Unrecognized request argument supplied"): a request
 * never runs with a parameter silently dropped. Known fields this server cannot honour (echo,
 * best_of > 1, logit_bias, penalties, tools) are refused unless
 * they hold their no-op value. Deliberately not here: tokenizing text, applying the chat
 * template, the model's name and context length (the server checks those: they need the model),
 * HTTP and the body size limit.
 */
#ifndef ZP_SERVE_REQUEST_H
#define ZP_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum { SRV_COMPLETIONS, SRV_CHAT } srv_endpoint;

enum { SRV_MAX_STOP = 16, SRV_MAX_PROMPTS = 1024, SRV_MAX_N = 64, SRV_MAX_MESSAGES = 4096, SRV_MAX_FIELDS = 64, SRV_FIELD_NAME = 64 };

/* One prompt of a completion request: text, or token ids (then text is NULL). */
typedef struct {
    char *text;
    int *ids;
    int n_ids;
} srv_prompt;

typedef struct {
    char *role;    /* system, developer, user or assistant */
    char *content; /* the text (an array of text parts is joined) */
} srv_message;

typedef struct {
    srv_endpoint endpoint;
    char *model;
    srv_prompt *prompts;     /* completions: [n_prompts] */
    int n_prompts;
    srv_message *messages;   /* chat: [n_messages] */
    int n_messages;
    int max_tokens;          /* -1: not given (completions then 16, as OpenAI; chat: the rest of the context) */
    float temperature, top_p;
    int top_k;               /* -1: off (the request's 0 or -1, as vLLM) */
    int n;
    int has_seed;
    int64_t seed;
    char *stop[SRV_MAX_STOP];
    int n_stop;
    int stream, include_usage;
    int ignore_eos;
    int logprobs;            /* 1: the sampled tokens' log-probabilities are returned */
    int top_logprobs;        /* and the top_logprobs most likely tokens' at each step (0..20) */
    int has_top_logprobs;    /* chat: top_logprobs was given (it needs logprobs: true) */
    int enable_thinking;     /* chat_template_kwargs.enable_thinking: -1 not given, 0, 1 */
    int skip_special;        /* skip_special_tokens (vLLM's field, default true): special tokens not in the text */
} srv_request;

/* A refusal: the HTTP status, OpenAI's error type, the parameter at fault ("" when none). */
typedef struct {
    int http_status;
    char type[32];
    char param[64];
    char message[256];
} srv_error;

/* Parses body[0..n) for endpoint ep. On a refusal returns ZP_ERR_INVALID with *err filled (out
 * is then empty); out is freed with srv_request_free either way. */
zp_status srv_request_parse(const char *body, size_t n, srv_endpoint ep, srv_request *out, srv_error *err);
void srv_request_free(srv_request *r);
/* 1 when an Authorization header (NULL: none) is "Bearer KEY" with this key (the scheme in any
 * case, RFC 6750), compared in time that depends on the lengths only, not on where a guess first
 * differs (no key recovered byte by byte by timing). */
int srv_key_matches(const char *header, const char *key);
/* Fills *err (status 400 unless http_status is another) with a formatted message. */
void srv_error_set(srv_error *err, int http_status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The error object as JSON (malloc'ed; NULL when out of memory). */
char *srv_error_json(const srv_error *err);

#endif
