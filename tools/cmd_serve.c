/* cmd_serve.c - `zipage serve`: the flags of the OpenAI-compatible server (server/serve.h) and
 * the engine's flags; the server itself is in server/. A build without libmicrohttpd refuses
 * the command and says how to get it. */
#include <stdlib.h>
#include <string.h>

#include "cli_common.h" /* cli_value, cli_int, cli_report */
#include "cli_engine.h" /* engine flags shared with generate and bench */
#include "serve.h"

static void usage(FILE *f) {
    fprintf(f, "usage: zipage serve (--model DIR | --preset NAME) [flags]\n"
               "  --model DIR               checkpoint folder with its tokenizer\n"
               "  --preset NAME             a preset (models/) or config.json with seeded random weights built in\n"
               "                            memory, as zipage bench's (load tests: bench/serve_bench.py)\n"
               "  --host ADDR               IPv4 address to listen on (default 127.0.0.1)\n"
               "  --port N                  TCP port (default 8000; 0: a free port, printed)\n"
               "  --api-key KEY             require \"Authorization: Bearer KEY\" (except /health, /metrics)\n"
               "  --served-model-name NAME  the model's name in requests and /v1/models (default: the folder's name)\n"
               "  --max-waiting N           choices waiting beyond the engine's --max-num-seqs before a 503 with\n"
               "                            Retry-After (default 4096): the server holds max-num-seqs + N at most\n"
               "  --shutdown-timeout S      after SIGTERM/SIGINT, requests still unfinished S seconds later end with a\n"
               "                            503 (streams: an error event); default 60; 0: wait for them all\n"
               "  --idle-timeout S          close a connection silent for S seconds: headers or body not sent, an idle\n"
               "                            keep-alive, an answer not read (default 60; 0: never). A request waiting\n"
               "                            for the engine is not idle. Without the key, or with a Content-Length over\n"
               "                            8 MiB, a request is refused on its headers, before its body is read\n"
               "  --request-timeout S       close a connection whose request (headers and body) has not arrived S\n"
               "                            seconds after it opened or after its previous answer (a client trickling\n"
               "                            it; default 120; 0: never)\n"
               "  --reasoning-parser P      chat answers' thinking block as reasoning_content: deepseek_r1 (the\n"
               "                            answer is reasoning up to </think>) or qwen3 (when it opens with <think>)\n"
               "endpoints: GET /health, GET /metrics, GET /v1/models, POST /v1/completions,\n"
               "           POST /v1/chat/completions; both stream\n"
               "engine flags (as zipage generate):\n");
    cli_engine_usage(f);
}

static zp_status parse(int argc, char **argv, srv_config *c) {
    *c = srv_config_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--help")) { usage(stdout); exit(0); }
        if (!cli_engine_switch(a) && !(v = cli_value(argc, argv, &i))) return ZP_ERR_INVALID;
        if (!strcmp(a, "--model")) { c->ec.model_dir = v; c->ec.random_weights = 0; }
        else if (!strcmp(a, "--preset")) { c->ec.model_dir = v; c->ec.random_weights = 1; }
        else if (!strcmp(a, "--host")) c->host = v;
        else if (!strcmp(a, "--port")) ZP_TRY(cli_int(a, v, 0, 65535, &c->port));
        else if (!strcmp(a, "--api-key")) c->api_key = v;
        else if (!strcmp(a, "--served-model-name")) c->served_name = v;
        else if (!strcmp(a, "--max-waiting")) ZP_TRY(cli_int(a, v, 1, 1 << 20, &c->max_waiting));
        else if (!strcmp(a, "--idle-timeout")) ZP_TRY(cli_int(a, v, 0, 86400, &c->idle_timeout));
        else if (!strcmp(a, "--request-timeout")) ZP_TRY(cli_int(a, v, 0, 86400, &c->request_timeout));
        else if (!strcmp(a, "--shutdown-timeout")) ZP_TRY(cli_int(a, v, 0, 1 << 24, &c->shutdown_timeout));
        else if (!strcmp(a, "--reasoning-parser")) {
            if (!srv_reasoning_parse_name(v, &c->reasoning)) return zp_fail(ZP_ERR_INVALID, "--reasoning-parser: \"%s\" is neither deepseek_r1 nor qwen3", v);
        }
        else {
            int matched;
            ZP_TRY(cli_engine_flag(a, v, &c->ec, &matched));
            if (!matched) { usage(stderr); return zp_fail(ZP_ERR_INVALID, "unknown flag %s", a); }
        }
    }
    if (!c->ec.model_dir) return zp_fail(ZP_ERR_INVALID, "--model DIR or --preset NAME is required (make a checkpoint with `zipage mkmodel`)");
    if (c->served_name && !c->served_name[0]) return zp_fail(ZP_ERR_INVALID, "--served-model-name must not be empty");
    return ZP_OK;
}

int cmd_serve(int argc, char **argv) {
    srv_config c;
    zp_status s = parse(argc, argv, &c);
#ifdef ZP_HAVE_MHD
    if (s == ZP_OK) s = srv_run(&c);
#else
    if (s == ZP_OK) s = zp_fail(ZP_ERR_INVALID, "this build has no HTTP library: install libmicrohttpd-dev (`make deps`) and rebuild");
#endif
    return s == ZP_OK ? 0 : cli_report("serve", s);
}
