/* serve_http.h - what the HTTP side of `zipage serve` shares between its files (serve.c: the
 * handlers, the endpoints and srv_run; serve_prompt.c: a request's prompts; serve_answer.c: the
 * answers' JSON; serve_stream.c: the streamed answers). Internal to server/; libmicrohttpd and cJSON types appear here, nowhere in
 * serve.h. */
#ifndef ZP_SERVE_HTTP_H
#define ZP_SERVE_HTTP_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include "serve_internal.h"

/* ---- the daemon (serve.c) */
/* libmicrohttpd's daemon of the server's handlers, listening on addr (NULL: on no socket; connections
 * are handed to it with MHD_add_connection, as the HTTP fuzz target does); NULL if it cannot start. */
struct MHD_Daemon *srv_http_start(srv_server *s, const struct sockaddr_in *addr);

/* ---- responses (serve.c) */
/* A JSON answer (json malloc'ed, freed here; a 503 carries Retry-After). */
enum MHD_Result srv_send_json(struct MHD_Connection *c, unsigned status, char *json);
enum MHD_Result srv_send_error(struct MHD_Connection *c, const srv_error *err);
enum MHD_Result srv_refuse_with(struct MHD_Connection *c, int status, const char *type, const char *param, const char *msg);
/* The connection's idle timeout off (while its request waits for the engine) or back on. */
void srv_idle_timeout(const srv_server *s, struct MHD_Connection *c, int on);
/* OpenAI's finish_reason of an engine finish. */
const char *srv_finish_reason(zp_finish_reason f);

/* ---- the request timeout (serve_arrival.c) */
/* libmicrohttpd's connection notification (cls: the server): lists a connection from its start to its close. */
void srv_arrival_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* The connection's request has arrived (arriving 0: its body is complete) or the next one starts
 * arriving (1: its previous answer has ended; the clock starts afresh). */
void srv_arrival_mark(srv_server *s, struct MHD_Connection *c, int arriving);
/* Shuts down the sockets of connections still arriving cfg.request_timeout seconds after their
 * clock started; returns how many. */
int srv_arrival_sweep(srv_server *s, double now);

/* ---- a request's prompts (serve_prompt.c) */
/* A chat request's conversation rendered and tokenized into r->prompts[0]; 0 with err filled. */
int srv_chat_prompt(srv_server *s, srv_request *r, srv_error *err);
/* The call's n_jobs choices: prompts tokenized and checked, sampling set; 0 with err filled. */
int srv_build_jobs(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, srv_error *err);

/* ---- the answers' JSON (serve_answer.c) */
/* The fields every answer opens with: id, object, created, model (chat: chat.completion[.chunk]). */
cJSON *srv_answer_head(const srv_server *s, int chat, int chunk, int64_t call_id);
/* usage: the prompts once each (not per choice), the tokens of every choice. */
void srv_add_usage(cJSON *root, const srv_job *jobs, int n_jobs, int per_prompt);
/* One choice, whole or streamed (serve_answer.c says which fields when). */
cJSON *srv_choice_json(int chat, int stream, int first, int i, const char *text, int parsed, const char *reasoning, const char *finish,
                       cJSON *logprobs);
/* Log-probabilities of n sampled tokens in the completions or the chat form (*offset: text_offset). */
cJSON *srv_logprobs_json(const srv_server *s, const int *tok, const zp_token_logprobs *lps, int n, int chat, size_t *offset);
/* A whole answer of a call's choices (malloc'ed JSON). */
char *srv_completion_json(srv_server *s, const srv_request *r, srv_job *jobs, int n_jobs, int64_t call_id);

/* ---- streamed answers (serve_stream.c) */
/* Queues the call's choices and answers with server-sent events; takes r (emptied) and jobs. */
enum MHD_Result srv_start_stream(srv_server *s, struct MHD_Connection *c, srv_request *r, srv_job *jobs, int n_jobs);

#endif
