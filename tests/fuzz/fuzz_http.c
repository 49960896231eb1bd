/* fuzz_http.c - the server's HTTP side from the raw bytes a client sends: request lines, headers
 * (the key, Content-Length, Transfer-Encoding), body framing (declared, chunked, short, several
 * requests on one connection), paths and methods, through libmicrohttpd and the server's handlers
 * (serve.c: refusals on the headers, the body's assembly, routing, the request's parsing and
 * prompts). The server is the real one over a tiny random model with an API key, marked stopping,
 * so a request that passes every check ends at the queue with a 503 instead of generating. Each
 * input is one connection (a loopback TCP pair, one end handed to the daemon): sent in full, then the write side
 * shut. The checks: the daemon answers and closes within 5 s (no hang), what comes back is a
 * sequence of HTTP/1.1 responses with their framing, a JSON answer's body parses, and input
 * without the key's bytes gets no JSON answer but /health's and /metrics' 200s, 401 and 413. */
#define _GNU_SOURCE /* memmem */
#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fuzz_util.h"
#include "paths.h"
#include "serve_http.h"

#define KEY "sk-fuzz"

static srv_server srv;
static struct MHD_Daemon *daemon_;

/* A folder of tiny-qwen3-vocab's tokenizer files and a config of its vocabulary on the smallest
 * shape (one layer, width 32): the random weights are built in well under a second. */
static const char *tiny_model(void) {
    static char dir[256], src[4096], dst[512];
    snprintf(dir, sizeof dir, "%s/m", fuzz_dir());
    mkdir(dir, 0700);
    const char *files[] = {"vocab.json", "merges.txt", "tokenizer_config.json", "generation_config.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(src, sizeof src, "%s/tiny-qwen3-vocab/%s", zp_path(ZP_PATH_MODELS), files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        if (symlink(src, dst) != 0 && errno != EEXIST) abort();
    }
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    FILE *f = fopen(dst, "w");
    if (!f) abort();
    fprintf(
        f, "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"bos_token_id\": 151643, "
           "\"eos_token_id\": 151645,"
           " \"head_dim\": 16, \"hidden_act\": \"silu\", \"hidden_size\": 32, \"intermediate_size\": 64, "
           "\"max_position_embeddings\": 4096,"
           " \"num_attention_heads\": 2, \"num_hidden_layers\": 1, \"num_key_value_heads\": 1, \"rms_norm_eps\": 1e-06,"
           " \"rope_theta\": 1000000, \"tie_word_embeddings\": true, \"vocab_size\": 151936}\n");
    fclose(f);
    return dir;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    srv_config cfg = srv_config_default();
    cfg.ec.model_dir = tiny_model();
    cfg.ec.random_weights = 1;
    cfg.ec.kv_pool_tokens = 1024;
    cfg.api_key = KEY;
    cfg.max_waiting = 8;
    cfg.idle_timeout = 5;
    if (srv_server_open(&srv, &cfg) != ZP_OK) {
        fprintf(stderr, "fuzz_http: %s\n", zp_last_error());
        abort();
    }
    srv.stopping = 1; /* no engine thread: a request that gets through is refused with a 503 */
    daemon_ = srv_http_start(&srv, NULL);
    if (!daemon_) {
        fprintf(stderr, "fuzz_http: the daemon did not start\n");
        abort();
    }
    return 0;
}

/* Sends data on fd while reading what comes back (into *out) until the peer closes; 0 on a hang. */
static int converse(int fd, const uint8_t *data, size_t n, char **out, size_t *n_out) {
    size_t sent = 0, cap = 1 << 16;
    *out = malloc(cap);
    *n_out = 0;
    const double t0 = zp_now();
    for (;;) {
        if (zp_now() - t0 > 5.0) return 0;
        struct pollfd p = {fd, (short)(POLLIN | (sent < n ? POLLOUT : 0)), 0};
        if (poll(&p, 1, 100) <= 0) continue;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            if (*n_out + 4096 > cap) *out = realloc(*out, cap *= 2);
            const ssize_t k = recv(fd, *out + *n_out, 4096, 0);
            if (k <= 0) return 1; /* closed (or reset) by the server */
            *n_out += (size_t)k;
        }
        if (sent < n && (p.revents & POLLOUT)) {
            const ssize_t k = send(fd, data + sent, n - sent, MSG_NOSIGNAL);
            if (k < 0)
                sent = n; /* the server closed its side: read what it said */
            else
                sent += (size_t)k;
            if (sent == n) shutdown(fd, SHUT_WR);
        }
    }
}

/* Walks the responses in r[0..n): each a status line, headers, and a body framed by its
 * Content-Length (or chunked); aborts on anything else, or a JSON body that does not parse. */
static void check_responses(const char *r, size_t n, int authorized_input) {
    while (n) {
        if (n < 12 || memcmp(r, "HTTP/1.1 ", 9)) {
            fprintf(stderr, "fuzz_http: not a response: %.40s\n", r);
            abort();
        }
        const int status = atoi(r + 9);
        const char *end = memmem(r, n, "\r\n\r\n", 4);
        if (!end) {
            fprintf(stderr, "fuzz_http: headers without their end\n");
            abort();
        }
        const char *body = end + 4;
        long long len = -1;
        int json = 0, chunked = 0, last = 0;
        for (const char *h = strstr(r, "\r\n") + 2; h < end; h = strstr(h, "\r\n") + 2) {
            if (!strncasecmp(h, "Content-Length:", 15)) len = atoll(h + 15);
            if (!strncasecmp(h, "Content-Type: application/json", 30)) json = 1;
            if (!strncasecmp(h, "Transfer-Encoding: chunked", 26)) chunked = 1;
            if (!strncasecmp(h, "Connection: close", 17)) last = 1;
        }
        if (!authorized_input && json && !(status == 200 || status == 401 || status == 413)) {
            /* without the key only /health and /metrics answer (200), a declared body over the
             * limit on them is refused (413), and every other path is refused (401) before any
             * other check of the server's could answer */
            fprintf(stderr, "fuzz_http: a request without the key answered %d\n", status);
            abort();
        }
        if (chunked) return; /* a stream's events (none here: the server is stopping) */
        /* libmicrohttpd's own refusal of a malformed request (HTML, then the close) is its business:
         * 0.9.75 sends the header block of its 400 for a malformed Content-Length twice */
        if (!json && last) return;
        if (len < 0 || (size_t)(body - r) + (size_t)len > n) {
            fprintf(stderr, "fuzz_http: a JSON answer without its body's length (status %d)\n", status);
            abort();
        }
        if (json) {
            cJSON *j = cJSON_ParseWithLength(body, (size_t)len);
            if (!j) {
                fprintf(stderr, "fuzz_http: a JSON answer that does not parse (status %d): %.*s\n", status, (int)len,
                        body);
                abort();
            }
            cJSON_Delete(j);
        }
        n -= (size_t)(body - r) + (size_t)len;
        r = body + len;
    }
}

/* A connected pair of loopback TCP sockets (libmicrohttpd's options for TCP apply; a Unix socket
 * pair would make it wait on the corking it cannot set). */
static int listener = -1;
/* connect through a signal (libFuzzer's -timeout alarm interrupts it now and then, EINTR): the
 * connection goes on; wait for it and read its outcome. */
static int connect_through_signals(int fd, const struct sockaddr_in *a) {
    if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0) return 0;
    if (errno != EINTR) return -1;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r;
    while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR) {}
    int err = 0;
    socklen_t n = sizeof err;
    if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0) return -1;
    errno = err;
    return err ? -1 : 0;
}
static void tcp_pair(int sv[2]) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (listener < 0) {
        listener = socket(AF_INET, SOCK_STREAM, 0);
        if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(listener, 16) != 0) abort();
    }
    if (getsockname(listener, (struct sockaddr *)&a, &len) != 0) abort();
    sv[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (sv[0] < 0) { perror("fuzz_http: socket"); abort(); }
    if (connect_through_signals(sv[0], &a) != 0) { perror("fuzz_http: connect"); abort(); }
    while ((sv[1] = accept(listener, NULL, NULL)) < 0 && errno == EINTR) {}
    if (sv[1] < 0) { perror("fuzz_http: accept"); abort(); }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    int sv[2];
    tcp_pair(sv);
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (MHD_add_connection(daemon_, sv[1], (const struct sockaddr *)&peer, sizeof peer) != MHD_YES)
        abort(); /* the daemon owns sv[1] */
    char *out;
    size_t n_out;
    if (!converse(sv[0], data, n, &out, &n_out)) {
        fprintf(stderr, "fuzz_http: no close within 5 s\n");
        abort();
    }
    close(sv[0]);
    out = realloc(out, n_out + 1);
    out[n_out] = 0;
    check_responses(out, n_out,
                    memmem(data, n, KEY, strlen(KEY)) != NULL); /* without the key's bytes: surely unauthorized */
    free(out);
    return 0;
}
