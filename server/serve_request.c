/* serve_request.c - see serve_request.h. */
#include "serve_request.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

void srv_error_set(srv_error *err, int http_status, const char *type, const char *param, const char *fmt, ...) {
    err->http_status = http_status;
    snprintf(err->type, sizeof err->type, "%s", type);
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

/* Length of the valid UTF-8 sequence at t (1 to 4), 0 when t does not start one (overlong forms,
 * surrogates and code points past U+10FFFF included). */
static int utf8_seq(const unsigned char *t) {
    if (t[0] < 0x80) return 1;
    const int n = t[0] >= 0xC2 && t[0] <= 0xDF ? 2 : t[0] >= 0xE0 && t[0] <= 0xEF ? 3 : t[0] >= 0xF0 && t[0] <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((t[i] & 0xC0) != 0x80) return 0;
    if ((t[0] == 0xE0 && t[1] < 0xA0) || (t[0] == 0xED && t[1] > 0x9F) || (t[0] == 0xF0 && t[1] < 0x90) || (t[0] == 0xF4 && t[1] > 0x8F)) return 0;
    return n;
}

/* A copy of t with every byte that is no part of valid UTF-8 written as '?': an error message
 * quotes what the client sent, and a message cut to its buffer may end inside a character. */
static void utf8_clean(const char *t, char *out, size_t cap) {
    size_t o = 0;
    for (const unsigned char *u = (const unsigned char *)t; *u && o + 1 < cap;) {
        const int k = utf8_seq(u);
        if (k == 0 || o + (size_t)k >= cap) { out[o++] = '?'; u++; continue; }
        memcpy(out + o, u, (size_t)k);
        o += (size_t)k;
        u += k;
    }
    out[o] = 0;
}

char *srv_error_json(const srv_error *err) {
    char msg[sizeof err->message], param[sizeof err->param];
    utf8_clean(err->message, msg, sizeof msg);
    utf8_clean(err->param, param, sizeof param);
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    if (!e || !cJSON_AddStringToObject(e, "message", msg) || !cJSON_AddStringToObject(e, "type", err->type) ||
        !(param[0] ? cJSON_AddStringToObject(e, "param", param) : cJSON_AddNullToObject(e, "param")) ||
        !cJSON_AddNullToObject(e, "code")) {
        cJSON_Delete(root);
        return NULL;
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

int srv_key_matches(const char *header, const char *key) {
    if (!header || strncasecmp(header, "Bearer ", 7) != 0) return 0;
    const char *given = header + 7;
    const size_t n = strlen(key), m = strlen(given);
    unsigned diff = n != m;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < m ? given[i] : 0);
    return diff == 0;
}

/* ---------------------------------------------------------------- typed fields */

typedef struct {
    srv_request *r;
    srv_error *err;
} parse_ctx;

static const char *json_type(const cJSON *v) {
    return cJSON_IsNull(v) ? "null" : cJSON_IsBool(v) ? "a boolean" : cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string"
           : cJSON_IsArray(v) ? "an array" : "an object";
}

static zp_status refuse(parse_ctx *c, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static zp_status refuse(parse_ctx *c, const char *param, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (param[0]) srv_error_set(c->err, 400, "invalid_request_error", param, "%s: %s", param, msg);
    else srv_error_set(c->err, 400, "invalid_request_error", param, "%s", msg);
    return zp_fail(ZP_ERR_INVALID, "%s", c->err->message);
}

static zp_status want_number(parse_ctx *c, const cJSON *v, const char *name, double lo, double hi, double *out) {
    if (!cJSON_IsNumber(v)) return refuse(c, name, "expected a number, got %s", json_type(v));
    if (!isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return refuse(c, name, "%g is out of range [%g, %g]", v->valuedouble, lo, hi);
    *out = v->valuedouble;
    return ZP_OK;
}

static zp_status want_int(parse_ctx *c, const cJSON *v, const char *name, double lo, double hi, double *out) {
    if (!cJSON_IsNumber(v) || floor(v->valuedouble) != v->valuedouble)
        return refuse(c, name, "expected an integer, got %s", cJSON_IsNumber(v) ? "a fraction" : json_type(v));
    return want_number(c, v, name, lo, hi, out);
}

static zp_status want_bool(parse_ctx *c, const cJSON *v, const char *name, int *out) {
    if (!cJSON_IsBool(v)) return refuse(c, name, "expected a boolean, got %s", json_type(v));
    *out = cJSON_IsTrue(v);
    return ZP_OK;
}

static zp_status copy_string(parse_ctx *c, const cJSON *v, const char *name, char **out) {
    if (!cJSON_IsString(v)) return refuse(c, name, "expected a string, got %s", json_type(v));
    *out = strdup(v->valuestring);
    if (!*out) return zp_fail(ZP_ERR_OOM, "serve: no memory for %s", name);
    return ZP_OK;
}

/* ---------------------------------------------------------------- prompts and messages */

static zp_status parse_ids(parse_ctx *c, const cJSON *a, const char *name, srv_prompt *p) {
    const int n = cJSON_GetArraySize(a);
    if (n == 0) return refuse(c, name, "a prompt of token ids must not be empty");
    p->ids = malloc(sizeof(int) * (size_t)n);
    if (!p->ids) return zp_fail(ZP_ERR_OOM, "serve: no memory for %d token ids", n);
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        double x;
        ZP_TRY(want_int(c, v, name, 0, 2147483647.0, &x));
        p->ids[p->n_ids++] = (int)x;
    }
    return ZP_OK;
}

/* prompt: a string, an array of strings, an array of token ids, or an array of such arrays. */
static zp_status parse_prompt(parse_ctx *c, const cJSON *v) {
    srv_request *r = c->r;
    const int list = cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0 && !cJSON_IsNumber(cJSON_GetArrayItem(v, 0));
    const int n = list ? cJSON_GetArraySize(v) : 1;
    if (!cJSON_IsString(v) && !cJSON_IsArray(v))
        return refuse(c, "prompt", "expected a string, an array of strings or an array of token ids, got %s", json_type(v));
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0) return refuse(c, "prompt", "must not be empty");
    if (n > SRV_MAX_PROMPTS) return refuse(c, "prompt", "%d prompts; at most %d in one request", n, SRV_MAX_PROMPTS);
    r->prompts = calloc((size_t)n, sizeof *r->prompts);
    if (!r->prompts) return zp_fail(ZP_ERR_OOM, "serve: no memory for %d prompts", n);
    for (int i = 0; i < n; i++) {
        const cJSON *p = list ? cJSON_GetArrayItem(v, i) : v;
        srv_prompt *q = &r->prompts[r->n_prompts++];
        if (cJSON_IsString(p)) ZP_TRY(copy_string(c, p, "prompt", &q->text));
        else if (cJSON_IsArray(p)) ZP_TRY(parse_ids(c, p, "prompt", q));
        else return refuse(c, "prompt", "item %d: expected a string or an array of token ids, got %s", i, json_type(p));
    }
    return ZP_OK;
}

/* content: a string, or an array of {"type": "text", "text": ...} parts (joined). */
static zp_status parse_content(parse_ctx *c, const cJSON *v, int i, char **out) {
    if (cJSON_IsString(v)) return copy_string(c, v, "messages", out);
    if (!cJSON_IsArray(v)) return refuse(c, "messages", "message %d: content must be a string or an array of text parts, got %s", i, json_type(v));
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, v) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "type"), *x = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "text") || !cJSON_IsString(x))
            return refuse(c, "messages", "message %d: only text parts ({\"type\": \"text\", \"text\": ...}) are supported", i);
        len += strlen(x->valuestring);
    }
    char *w = *out = malloc(len + 1);
    if (!w) return zp_fail(ZP_ERR_OOM, "serve: no memory for a message");
    cJSON_ArrayForEach(part, v) {
        const char *x = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        const size_t k = strlen(x);
        memcpy(w, x, k);
        w += k;
    }
    *w = 0;
    return ZP_OK;
}

static zp_status parse_messages(parse_ctx *c, const cJSON *v) {
    srv_request *r = c->r;
    if (!cJSON_IsArray(v)) return refuse(c, "messages", "expected an array of messages, got %s", json_type(v));
    const int n = cJSON_GetArraySize(v);
    if (n == 0 || n > SRV_MAX_MESSAGES) return refuse(c, "messages", "%d messages; between 1 and %d", n, SRV_MAX_MESSAGES);
    r->messages = calloc((size_t)n, sizeof *r->messages);
    if (!r->messages) return zp_fail(ZP_ERR_OOM, "serve: no memory for %d messages", n);
    static const char *roles[] = {"system", "developer", "user", "assistant"};
    for (int i = 0; i < n; i++) {
        const cJSON *m = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsObject(m)) return refuse(c, "messages", "message %d: expected an object, got %s", i, json_type(m));
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role"), *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        int known = 0;
        for (int k = 0; k < 4 && cJSON_IsString(role); k++) known |= !strcmp(role->valuestring, roles[k]);
        if (!known) return refuse(c, "messages", "message %d: role must be system, developer, user or assistant", i);
        if (!content) return refuse(c, "messages", "message %d: no content", i);
        for (const cJSON *f = m->child; f; f = f->next)
            if (strcmp(f->string, "role") && strcmp(f->string, "content") && strcmp(f->string, "name"))
                return refuse(c, "messages", "message %d: unsupported field \"%s\"", i, f->string);
        srv_message *q = &r->messages[r->n_messages++];
        ZP_TRY(copy_string(c, role, "messages", &q->role));
        ZP_TRY(parse_content(c, content, i, &q->content));
    }
    return ZP_OK;
}

/* ---------------------------------------------------------------- the fields */

static zp_status parse_stop(parse_ctx *c, const cJSON *v) {
    srv_request *r = c->r;
    if (cJSON_IsNull(v)) return ZP_OK;
    if (cJSON_IsString(v)) {
        ZP_TRY(copy_string(c, v, "stop", &r->stop[r->n_stop]));
        return r->stop[r->n_stop++][0] ? ZP_OK : refuse(c, "stop", "a stop string must not be empty");
    }
    if (!cJSON_IsArray(v)) return refuse(c, "stop", "expected a string or an array of strings, got %s", json_type(v));
    if (cJSON_GetArraySize(v) > SRV_MAX_STOP) return refuse(c, "stop", "at most %d stop strings", SRV_MAX_STOP);
    const cJSON *s;
    cJSON_ArrayForEach(s, v) {
        ZP_TRY(copy_string(c, s, "stop", &r->stop[r->n_stop]));
        if (!r->stop[r->n_stop++][0]) return refuse(c, "stop", "a stop string must not be empty");
    }
    return ZP_OK;
}

static zp_status parse_stream_options(parse_ctx *c, const cJSON *v) {
    if (cJSON_IsNull(v)) return ZP_OK;
    if (!cJSON_IsObject(v)) return refuse(c, "stream_options", "expected an object, got %s", json_type(v));
    for (const cJSON *f = v->child; f; f = f->next) {
        if (strcmp(f->string, "include_usage")) return refuse(c, "stream_options", "unsupported field \"%s\"", f->string);
        ZP_TRY(want_bool(c, f, "stream_options.include_usage", &c->r->include_usage));
    }
    return ZP_OK;
}

static zp_status parse_template_kwargs(parse_ctx *c, const cJSON *v) {
    if (!cJSON_IsObject(v)) return refuse(c, "chat_template_kwargs", "expected an object, got %s", json_type(v));
    for (const cJSON *f = v->child; f; f = f->next) {
        if (strcmp(f->string, "enable_thinking")) return refuse(c, "chat_template_kwargs", "unsupported field \"%s\" (enable_thinking only)", f->string);
        ZP_TRY(want_bool(c, f, "chat_template_kwargs.enable_thinking", &c->r->enable_thinking));
    }
    return ZP_OK;
}

/* A known field this server cannot honour: accepted only at its no-op value. */
static zp_status only_noop(parse_ctx *c, const cJSON *v, const char *name) {
    const int noop = cJSON_IsNull(v) || (cJSON_IsBool(v) && !cJSON_IsTrue(v)) || (cJSON_IsNumber(v) && v->valuedouble == 0) ||
                     (!strcmp(name, "best_of") && cJSON_IsNumber(v) && v->valuedouble == 1) ||
                     ((cJSON_IsObject(v) || cJSON_IsArray(v)) && !v->child) || (cJSON_IsString(v) && !strcmp(name, "user"));
    return noop ? ZP_OK : refuse(c, name, "not supported by this server (only its no-op value is accepted)");
}

static zp_status parse_field(parse_ctx *c, const cJSON *f) {
    srv_request *r = c->r;
    const char *k = f->string;
    const int chat = r->endpoint == SRV_CHAT;
    double x = 0;
    if (!strcmp(k, "model")) return copy_string(c, f, "model", &r->model);
    if (!strcmp(k, "prompt") && !chat) return parse_prompt(c, f);
    if (!strcmp(k, "messages") && chat) return parse_messages(c, f);
    if (!strcmp(k, "max_tokens") || (chat && !strcmp(k, "max_completion_tokens"))) {
        if (cJSON_IsNull(f)) return ZP_OK;
        ZP_TRY(want_int(c, f, k, 1, 2147483647.0, &x));
        r->max_tokens = (int)x;
        return ZP_OK;
    }
    if (!strcmp(k, "temperature")) { ZP_TRY(want_number(c, f, k, 0, 100, &x)); r->temperature = (float)x; return ZP_OK; }
    if (!strcmp(k, "top_p")) {
        ZP_TRY(want_number(c, f, k, 0, 1, &x));
        if (x == 0) return refuse(c, k, "must be greater than 0");
        r->top_p = (float)x;
        return ZP_OK;
    }
    if (!strcmp(k, "top_k")) { ZP_TRY(want_int(c, f, k, -1, 1e9, &x)); r->top_k = x == 0 ? -1 : (int)x; return ZP_OK; }
    if (!strcmp(k, "n")) { ZP_TRY(want_int(c, f, k, 1, SRV_MAX_N, &x)); r->n = (int)x; return ZP_OK; }
    if (!strcmp(k, "seed")) {
        if (cJSON_IsNull(f)) return ZP_OK;
        ZP_TRY(want_int(c, f, k, -9007199254740991.0, 9007199254740991.0, &x));
        r->seed = (int64_t)x;
        r->has_seed = 1;
        return ZP_OK;
    }
    if (!strcmp(k, "stop")) return parse_stop(c, f);
    if (!strcmp(k, "stream")) return cJSON_IsNull(f) ? ZP_OK : want_bool(c, f, k, &r->stream);
    if (!strcmp(k, "stream_options")) return parse_stream_options(c, f);
    if (!strcmp(k, "ignore_eos")) return want_bool(c, f, k, &r->ignore_eos);
    if (!strcmp(k, "logprobs")) { /* completions: the number of alternatives; chat: a switch (top_logprobs) */
        if (cJSON_IsNull(f)) return ZP_OK;
        if (chat) return want_bool(c, f, k, &r->logprobs);
        ZP_TRY(want_int(c, f, k, 0, 20, &x));
        r->logprobs = 1;
        r->top_logprobs = (int)x;
        return ZP_OK;
    }
    if (chat && !strcmp(k, "top_logprobs")) {
        if (cJSON_IsNull(f)) return ZP_OK;
        ZP_TRY(want_int(c, f, k, 0, 20, &x));
        r->top_logprobs = (int)x;
        r->has_top_logprobs = 1;
        return ZP_OK;
    }
    if (chat && !strcmp(k, "chat_template_kwargs")) return parse_template_kwargs(c, f);
    if (!strcmp(k, "skip_special_tokens")) return want_bool(c, f, k, &r->skip_special);
    static const char *noop[] = {"frequency_penalty", "presence_penalty", "logit_bias", "user", "echo", "suffix", "best_of", "tools", "tool_choice"};
    for (size_t i = 0; i < sizeof noop / sizeof *noop; i++)
        if (!strcmp(k, noop[i])) return only_noop(c, f, k);
    return refuse(c, k, "unrecognized request argument supplied");
}

/* The first string of body that holds a NUL character (the escape \u0000, or a raw NUL byte): its
 * byte offset, and in *field the top-level field it belongs to ("" outside one); -1 when none.
 * cJSON ends its strings at a NUL, so such a string would lose its rest without a word. Walks the
 * JSON text itself: strings, escapes and the nesting depth. */
static long find_nul(const char *body, size_t n, char *field, size_t cap) {
    int depth = 0, in_str = 0, key_next = 0;
    size_t s0 = 0;
    field[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char ch = body[i];
        if (in_str) {
            if (ch == 0) return (long)i;
            if (ch == '\\' && i + 1 < n) {
                if (body[i + 1] == 'u' && i + 5 < n && !memcmp(body + i + 2, "0000", 4)) return (long)i;
                i++;
            } else if (ch == '"') {
                in_str = 0;
                if (depth == 1 && key_next) { /* a top-level key: the field what follows belongs to */
                    const size_t k = i - s0 < cap - 1 ? i - s0 : cap - 1;
                    memcpy(field, body + s0, k);
                    field[k] = 0;
                    key_next = 0;
                }
            }
            continue;
        }
        if (ch == 0) return (long)i;
        if (ch == '"') { in_str = 1; s0 = i + 1; }
        else if (ch == '{' || ch == '[') { depth++; if (depth == 1) key_next = 1; }
        else if (ch == '}' || ch == ']') depth--;
        else if (ch == ',' && depth == 1) key_next = 1;
    }
    return -1;
}

zp_status srv_request_parse(const char *body, size_t n, srv_endpoint ep, srv_request *out, srv_error *err) {
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->endpoint = ep;
    out->max_tokens = -1;
    out->temperature = 1.0f;
    out->top_p = 1.0f;
    out->top_k = -1;
    out->n = 1;
    out->enable_thinking = -1;
    out->skip_special = 1;
    parse_ctx c = {out, err};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, n, &end, 0);
    zp_status s = ZP_OK;
    char field[SRV_FIELD_NAME];
    long nul = -1;
    size_t rest = root && end ? (size_t)(end - body) : n;
    while (rest < n && (body[rest] == ' ' || body[rest] == '\t' || body[rest] == '\n' || body[rest] == '\r')) rest++;
    if (root && (nul = find_nul(body, n, field, sizeof field)) >= 0) {
        s = refuse(&c, field, "holds a NUL character (\\u0000 at byte %ld of the body), which this server does not take: "
                              "cutting the text there would change the request", nul);
    } else if (root && rest < n) {
        srv_error_set(err, 400, "invalid_request_error", "", "the body has %zu bytes after its JSON value (from byte %zu)", n - rest, rest);
        s = zp_fail(ZP_ERR_INVALID, "%s", err->message);
    } else if (!root) {
        srv_error_set(err, 400, "invalid_request_error", "", "the body is not valid JSON (near byte %td)",
                      cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - body : (ptrdiff_t)0);
        s = zp_fail(ZP_ERR_INVALID, "%s", err->message);
    } else if (!cJSON_IsObject(root)) {
        srv_error_set(err, 400, "invalid_request_error", "", "the body must be a JSON object, got %s", json_type(root));
        s = zp_fail(ZP_ERR_INVALID, "%s", err->message);
    }
    if (s == ZP_OK && cJSON_GetArraySize(root) > SRV_MAX_FIELDS) s = refuse(&c, "", "%d fields; at most %d", cJSON_GetArraySize(root), SRV_MAX_FIELDS);
    for (const cJSON *f = root && s == ZP_OK ? root->child : NULL; f && s == ZP_OK; f = f->next) {
        for (const cJSON *g = root->child; g != f && s == ZP_OK; g = g->next)
            if (!strcmp(g->string, f->string)) s = refuse(&c, f->string, "given twice");
        if (s == ZP_OK) s = parse_field(&c, f);
    }
    const char *need = ep == SRV_CHAT ? "messages" : "prompt";
    if (s == ZP_OK && !(ep == SRV_CHAT ? out->n_messages : out->n_prompts)) s = refuse(&c, need, "is required");
    if (s == ZP_OK && !out->model) s = refuse(&c, "model", "is required");
    if (s == ZP_OK && out->include_usage && !out->stream) s = refuse(&c, "stream_options", "is only allowed with \"stream\": true");
    if (s == ZP_OK && out->has_top_logprobs && out->top_logprobs > 0 && !out->logprobs) s = refuse(&c, "top_logprobs", "needs \"logprobs\": true");
    cJSON_Delete(root);
    if (s != ZP_OK) {
        if (!err->message[0]) srv_error_set(err, 500, "internal_error", "", "%s", zp_last_error());
        srv_request_free(out);
    }
    return s;
}

void srv_request_free(srv_request *r) {
    for (int i = 0; r->prompts && i < r->n_prompts; i++) {
        free(r->prompts[i].text);
        free(r->prompts[i].ids);
    }
    for (int i = 0; r->messages && i < r->n_messages; i++) {
        free(r->messages[i].role);
        free(r->messages[i].content);
    }
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->prompts);
    free(r->messages);
    free(r->model);
    const srv_endpoint ep = r->endpoint;
    memset(r, 0, sizeof *r);
    r->endpoint = ep;
}
