/* serve.h - `zipage serve`: an OpenAI-compatible HTTP server (libmicrohttpd, one thread per
 * connection) over one engine, whose thread steps continuously while requests join between
 * steps (continuous batching, every policy of the engine).
 *
 * This step serves GET /health, GET /metrics (Prometheus text), GET /v1/models and POST
 * /v1/completions (text or token-id prompts, n samples, stop strings matched on the decoded text
 * across token boundaries and ended through zp_engine_finish_request, max_tokens, temperature,
 * top_p, top_k, ignore_eos; streaming as server-sent events, where a client that leaves ends its
 * requests; a seed keys the draws, so a seeded request repeats), and POST /v1/chat/completions for
 * conversations through chat.h's templates, the thinking block as reasoning_content with a
 * reasoning parser (serve_reasoning.h); logprobs of the sampled tokens and their alternatives,
 * whole and streamed.
 * Deliberately not here:
 * parsing a body (serve_request.c) and the command line (tools/cmd_serve.c).
 */
#ifndef ZP_SERVE_H
#define ZP_SERVE_H

#include "engine.h"
#include "serve_reasoning.h"

typedef struct {
    zp_engine_config ec;       /* the engine (ec.model_dir: the model and its tokenizer) */
    const char *host;          /* 127.0.0.1 */
    int port;                  /* 0: an ephemeral port (printed) */
    const char *api_key;       /* NULL: none */
    const char *served_name;   /* NULL: the model folder's name */
    int max_waiting;           /* choices held beyond the engine's max_num_seqs before a 503 (Retry-After) */
    size_t max_body;           /* bytes of a request body before a 413 (declared) or a close (chunked) */
    int shutdown_timeout;      /* seconds after SIGTERM/SIGINT before unfinished requests end with a 503; 0: they all finish */
    int idle_timeout;          /* seconds a connection may stay silent (headers, body, keep-alive, an answer not read) before it is closed; 0: never */
    int request_timeout;       /* seconds a request may take to arrive, headers and body, counted from its connection's
                                  start or previous answer, before the connection is closed (a client trickling it, never
                                  silent for idle_timeout); 0: never */
    srv_reasoning_parser reasoning; /* chat answers: the thinking block as reasoning_content (NONE: in content) */
} srv_config;

static inline srv_config srv_config_default(void) {
    srv_config c = {.ec = zp_engine_config_default(),
                    .host = "127.0.0.1",
                    .port = 8000,
                    .max_waiting = 4096,
                    .max_body = 8u << 20,
                    .shutdown_timeout = 60,
                    .idle_timeout = 60,
                    .request_timeout = 120,
                    .reasoning = SRV_REASONING_NONE};
    return c;
}
/* Runs until SIGINT or SIGTERM: stops accepting, finishes the requests in flight, returns ZP_OK.
 * Prints "serving MODEL on http://HOST:PORT" to stdout once it accepts connections. */
zp_status srv_run(const srv_config *cfg);

#endif
