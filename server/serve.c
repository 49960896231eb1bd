/* serve.c - the HTTP side of `zipage serve` (serve.h): libmicrohttpd's handlers (refusals on the
 * headers, the body, routing), the endpoints (/health, /metrics, /v1/models, whole completions and
 * chat completions), and srv_run. A request's prompts are in serve_prompt.c, the answers' JSON in
 * serve_answer.c, streamed answers in serve_stream.c, the engine thread in serve_engine.c. */
#include "serve_http.h"

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
void srv_idle_timeout(const srv_server *s, struct MHD_Connection *c, int on) {
    if (s->cfg.idle_timeout > 0) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, on ? (unsigned)s->cfg.idle_timeout : 0u);
}

enum MHD_Result srv_send_json(struct MHD_Connection *c, unsigned status, char *json) {
    if (!json) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(json); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1"); /* full: a second later (vLLM's clients retry on 503) */
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result srv_send_error(struct MHD_Connection *c, const srv_error *err) {
    return srv_send_json(c, (unsigned)err->http_status, srv_error_json(err));
}

enum MHD_Result srv_refuse_with(struct MHD_Connection *c, int status, const char *type, const char *param, const char *msg) {
    srv_error err;
    srv_error_set(&err, status, type, param, "%s", msg);
    return srv_send_error(c, &err);
}

const char *srv_finish_reason(zp_finish_reason f) {
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
    return srv_send_json(c, MHD_HTTP_OK, j);
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

static enum MHD_Result serve_completion(srv_server *s, struct MHD_Connection *c, const srv_conn *body, srv_endpoint ep) {
    srv_request r;
    srv_error err;
    if (srv_request_parse(body->body ? body->body : "", body->n, ep, &r, &err) != ZP_OK) return srv_send_error(c, &err);
    enum MHD_Result ret;
    if (strcmp(r.model, s->name)) {
        char msg[512];
        snprintf(msg, sizeof msg, "The model `%.200s` does not exist (this server serves `%.150s`)", r.model, s->name);
        ret = srv_refuse_with(c, 404, "NotFoundError", "model", msg);
        srv_request_free(&r);
        return ret;
    }
    if (ep == SRV_CHAT && !srv_chat_prompt(s, &r, &err)) { srv_request_free(&r); return srv_send_error(c, &err); }
    const int n_jobs = r.n_prompts * r.n;
    srv_job *jobs = calloc((size_t)n_jobs, sizeof *jobs);
    if (!jobs || !srv_build_jobs(s, &r, jobs, n_jobs, &err)) {
        if (!jobs) srv_error_set(&err, 500, "server_error", NULL, "no memory for %d choices", n_jobs);
        if (jobs) srv_free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return srv_send_error(c, &err);
    }
    if (r.stream) return srv_start_stream(s, c, &r, jobs, n_jobs);
    srv_call call = {n_jobs, 0, 0, PTHREAD_COND_INITIALIZER, 0, 0};
    int64_t call_id;
    if (!srv_enqueue(s, jobs, n_jobs, &call, &call_id, &err)) {
        srv_free_jobs(jobs, n_jobs, r.n);
        srv_request_free(&r);
        return srv_send_error(c, &err);
    }
    srv_idle_timeout(s, c, 0);
    pthread_mutex_lock(&s->mu);
    while (call.n_done < call.n_jobs) pthread_cond_wait(&call.cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    srv_idle_timeout(s, c, 1);
    pthread_cond_destroy(&call.cv);
    int failed = -1;
    for (int i = 0; i < n_jobs && failed < 0; i++)
        if (jobs[i].status != ZP_OK) failed = i;
    if (failed >= 0) {
        srv_job_error(&jobs[failed], &err);
        ret = srv_send_error(c, &err);
    } else {
        ret = srv_send_json(c, MHD_HTTP_OK, srv_completion_json(s, &r, jobs, n_jobs, call_id));
    }
    srv_free_jobs(jobs, n_jobs, r.n);
    srv_request_free(&r);
    return ret;
}

/* ---------------------------------------------------------------- routing */

static int authorized(const srv_server *s, struct MHD_Connection *c) {
    if (!s->cfg.api_key) return 1;
    return srv_key_matches(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"), s->cfg.api_key);
}

/* The first call, on the headers alone: a request without the key, or one that declares a body
 * over the limit, is answered before a byte of its body is read (libmicrohttpd then closes the
 * connection instead of reading the rest). NULL: go on to the body. */
static int refused_on_headers(srv_server *s, struct MHD_Connection *c, const char *url, const char *method, enum MHD_Result *ret) {
    const int open = !strcmp(url, "/health") || (!strcmp(url, "/metrics") && !strcmp(method, "GET")); /* no key (vLLM's too) */
    if (!open && !authorized(s, c)) {
        *ret = srv_refuse_with(c, 401, "invalid_request_error", NULL, "a valid API key is required (Authorization: Bearer KEY)");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end = NULL;
    const unsigned long long declared = cl ? strtoull(cl, &end, 10) : 0;
    if (cl && declared > s->cfg.max_body) {
        char msg[160];
        snprintf(msg, sizeof msg, "the request body (Content-Length %llu) exceeds %zu bytes", declared, s->cfg.max_body);
        *ret = srv_refuse_with(c, 413, "invalid_request_error", NULL, msg);
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
         * while a body is coming in, so the connection is closed here, nothing more buffered (a
         * body trickled past the request timeout: serve_arrival.c) */
        if (b->n + *upload_size > s->cfg.max_body)
            return MHD_NO;
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
    srv_arrival_mark(s, c, 0); /* arrived: from here the time is the engine's */
    if (!strcmp(url, "/health")) return srv_send_json(c, MHD_HTTP_OK, strdup("{}"));
    if (!strcmp(url, "/metrics") && !strcmp(method, "GET")) return serve_metrics(s, c); /* as /health: no key (vLLM's too) */
    const int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/v1/models") && get) return serve_models(s, c);
    if (!strcmp(url, "/v1/completions") && post) return serve_completion(s, c, b, SRV_COMPLETIONS);
    if (!strcmp(url, "/v1/chat/completions") && post) return serve_completion(s, c, b, SRV_CHAT);
    if (!strcmp(url, "/v1/models") || !strcmp(url, "/v1/completions") || !strcmp(url, "/v1/chat/completions"))
        return srv_refuse_with(c, 405, "invalid_request_error", NULL, "method not allowed on this path");
    return srv_refuse_with(c, 404, "NotFoundError", NULL, "no such path");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)why;
    srv_arrival_mark(cls, c, 1); /* a kept-alive connection's next request: its clock starts now */
    srv_conn *b = *con_cls;
    if (b) free(b->body);
    free(b);
    *con_cls = NULL;
}

struct MHD_Daemon *srv_http_start(srv_server *s, const struct sockaddr_in *addr) {
    /* poll(), not select(): a load test holds more than select's 1,024 descriptors; one
     * connection per queued choice at most, and a margin for /metrics and refusals */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (!addr) flags |= MHD_USE_NO_LISTEN_SOCKET; /* connections come through MHD_add_connection */
    return MHD_start_daemon(flags, addr ? ntohs(addr->sin_port) : 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            (const struct sockaddr *)addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_NOTIFY_CONNECTION, srv_arrival_notify, s, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(s->cfg.max_waiting + s->cfg.ec.max_num_seqs) + 256u,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.idle_timeout, MHD_OPTION_END);
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
    else if (!(d = srv_http_start(&s, &addr)))
        st = zp_fail(ZP_ERR_IO, "serve: cannot listen on %s:%d (in use, or not allowed)", cfg->host, cfg->port);
    if (st == ZP_OK) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        printf("serving %s on http://%s:%u\n", s.name, cfg->host, info ? (unsigned)info->port : (unsigned)cfg->port);
        fflush(stdout);
        int sig; /* a signal, and every quarter second the request timeout's sweep */
        const struct timespec tick = {0, 250000000};
        while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0) srv_arrival_sweep(&s, zp_now());
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
