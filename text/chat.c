/* chat.c - per-family chat rendering and detection (see chat.h). */
#include "chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h" /* ZP_ARCH_LLAMA, ZP_ARCH_QWEN3, zp_config_load */
#include "tokenizer.h" /* zp_tokenizer_encode */
#include "files.h"

static const char *names[ZP_CHAT_COUNT] = {"qwen3", "r1", "llama3", "smollm2"};
const char *zp_chat_family_name(zp_chat_family f) { return (f >= 0 && f < ZP_CHAT_COUNT) ? names[f] : "?"; }
int zp_chat_family_parse(const char *name, zp_chat_family *out) {
    for (int i = 0; i < ZP_CHAT_COUNT; i++)
        if (!strcmp(name, names[i])) { *out = (zp_chat_family)i; return 1; }
    return 0;
}

/* Family from a template text; -1 when it is none we know. */
static int family_of_template(const char *tpl) {
    if (strstr(tpl, "<｜Assistant｜>")) return ZP_CHAT_R1;
    if (strstr(tpl, "<|start_header_id|>")) return ZP_CHAT_LLAMA3;
    if (strstr(tpl, "<|im_start|>") && strstr(tpl, "enable_thinking")) return ZP_CHAT_QWEN3;
    if (strstr(tpl, "<|im_start|>")) return ZP_CHAT_SMOLLM2;
    return -1;
}

static int family_of_file(const char *dir, const char *name) {
    char path[4096], *txt;
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &sb) != 0 || zp_read_file(path, &txt, NULL) != ZP_OK) return -1;
    int f = family_of_template(txt); /* tokenizer_config.json holds the template as a JSON string */
    free(txt);
    return f;
}

zp_status zp_chat_detect(const char *dir, zp_chat_family *out) {
    int f = family_of_file(dir, "tokenizer_config.json");
    if (f < 0) f = family_of_file(dir, "chat_template.jinja");
    if (f < 0) {
        zp_model_config c;
        ZP_TRY(zp_config_load(dir, &c));
        if (c.arch == ZP_ARCH_QWEN3 || c.arch == ZP_ARCH_QWEN3_MOE) f = ZP_CHAT_QWEN3;
        else if (c.arch == ZP_ARCH_LLAMA && c.vocab == 49152) f = ZP_CHAT_SMOLLM2;
        else if (c.arch == ZP_ARCH_LLAMA) f = ZP_CHAT_LLAMA3;
        else if (c.arch == ZP_ARCH_GPT_OSS)
            return zp_fail(ZP_ERR_UNSUPPORTED, "%s: gpt-oss's chat format (harmony) is not built yet: give prompts as token ids", dir);
        else return zp_fail(ZP_ERR_UNSUPPORTED, "%s: no chat template found and %s has no default (pass --chat FAMILY)", dir, c.arch_name);
    }
    *out = (zp_chat_family)f;
    return ZP_OK;
}

/* Length in bytes of the whitespace character at s (Python's str.isspace set, which Jinja's
 * `trim` filter strips), or 0. */
static int space_len(const unsigned char *s, size_t n) {
    if (n >= 1 && ((s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x20))) return 1;
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0)) return 2;
    if (n < 3) return 0;
    unsigned c = ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
    if ((s[0] & 0xf0) != 0xe0) return 0;
    return (c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
            c == 0x3000) ? 3 : 0;
}

/* Jinja's `trim` (Python str.strip()): a copy of s without leading and trailing whitespace. */
static char *chat_trim(const char *s) {
    const unsigned char *b = (const unsigned char *)s, *e = b + strlen(s);
    for (int k; b < e && (k = space_len(b, (size_t)(e - b))) > 0;) b += k;
    for (int moved = 1; moved && e > b;) { /* step back over whole whitespace characters */
        moved = 0;
        for (int k = 1; k <= 3 && e - k >= b; k++)
            if (space_len(e - k, (size_t)k) == k) { e -= k; moved = 1; break; }
    }
    char *r = malloc((size_t)(e - b) + 1);
    if (r) { memcpy(r, b, (size_t)(e - b)); r[e - b] = 0; }
    return r;
}

/* ---------------------------------------------------------------- a growable string */

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} chat_buf;

static void put_n(chat_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? 2 * b->cap : 256;
        while (c < b->n + n + 1) c *= 2;
        char *t = realloc(b->s, c);
        if (!t) { b->oom = 1; return; }
        b->s = t, b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void put(chat_buf *b, const char *s) { put_n(b, s, strlen(s)); }

/* Python's str.split(sep)[0] and [-1] and str.strip('\n') family on [s, e). */
static const char *first_of(const char *s, const char *e, const char *sep) {
    const size_t k = strlen(sep);
    for (const char *p = s; p + k <= e; p++)
        if (!memcmp(p, sep, k)) return p;
    return NULL;
}
static const char *after_last(const char *s, const char *e, const char *sep) { /* split(sep)[-1] */
    const size_t k = strlen(sep);
    for (size_t i = (size_t)(e - s) >= k ? (size_t)(e - s) - k + 1 : 0; i > 0; i--) /* starts e - k down to s */
        if (!memcmp(s + i - 1, sep, k)) return s + i - 1 + k;
    return s;
}
static void lstrip_nl(const char **s, const char *e) { while (*s < e && **s == '\n') (*s)++; }
static void rstrip_nl(const char *s, const char **e) { while (*e > s && (*e)[-1] == '\n') (*e)--; }

/* ---------------------------------------------------------------- the families */

/* Qwen3's template without tools: a first system message, then user and later system turns
 * as written; an assistant turn's reasoning (before its last </think>) is dropped unless the
 * turn comes after the last user query and is the last message or has reasoning. */
static void render_qwen3(chat_buf *b, const zp_chat_msg *m, int n, int enable_thinking) {
    if (n > 0 && m[0].role == ZP_CHAT_SYSTEM) put(b, "<|im_start|>system\n"), put(b, m[0].content), put(b, "<|im_end|>\n");
    int last_query = n - 1; /* the last user message that is not a wrapped tool response */
    for (int i = n - 1; i >= 0; i--) {
        const char *c = m[i].content;
        const size_t k = strlen(c);
        const int wrapped = k >= 15 && !strncmp(c, "<tool_response>", 15) && k >= 16 && !strcmp(c + k - 16, "</tool_response>");
        if (m[i].role == ZP_CHAT_USER && !wrapped) { last_query = i; break; }
    }
    for (int i = 0; i < n; i++) {
        const char *c = m[i].content, *ce = c + strlen(c);
        if (m[i].role == ZP_CHAT_USER || (m[i].role == ZP_CHAT_SYSTEM && i > 0)) {
            put(b, "<|im_start|>"), put(b, m[i].role == ZP_CHAT_USER ? "user" : "system"), put(b, "\n"), put(b, c), put(b, "<|im_end|>\n");
        } else if (m[i].role == ZP_CHAT_ASSISTANT) {
            const char *rs = "", *re = rs; /* reasoning_content */
            const char *close = first_of(c, ce, "</think>");
            if (close) {
                re = close;
                rstrip_nl(c, &re);
                rs = after_last(c, re, "<think>");
                lstrip_nl(&rs, re);
                c = after_last(c, ce, "</think>");
                lstrip_nl(&c, ce);
            }
            if (i > last_query && (i == n - 1 || re > rs)) {
                lstrip_nl(&rs, re); /* reasoning_content.strip('\n') */
                rstrip_nl(rs, &re);
                lstrip_nl(&c, ce);
                put(b, "<|im_start|>assistant\n<think>\n"), put_n(b, rs, (size_t)(re - rs)), put(b, "\n</think>\n\n"), put_n(b, c, (size_t)(ce - c));
            } else {
                put(b, "<|im_start|>assistant\n"), put_n(b, c, (size_t)(ce - c));
            }
            put(b, "<|im_end|>\n");
        }
    }
    put(b, "<|im_start|>assistant\n");
    if (!enable_thinking) put(b, "<think>\n\n</think>\n\n");
}

/* DeepSeek-R1-Distill's template without tools: BOS, the last system message's text bare, then
 * user and assistant turns; an assistant turn keeps only what follows its last </think>. */
static void render_r1(chat_buf *b, const zp_chat_msg *m, int n) {
    const char *sys = "";
    for (int i = 0; i < n; i++)
        if (m[i].role == ZP_CHAT_SYSTEM) sys = m[i].content;
    put(b, "<｜begin▁of▁sentence｜>"), put(b, sys);
    for (int i = 0; i < n; i++) {
        const char *c = m[i].content, *ce = c + strlen(c);
        if (m[i].role == ZP_CHAT_USER) put(b, "<｜User｜>"), put(b, c);
        else if (m[i].role == ZP_CHAT_ASSISTANT) {
            if (first_of(c, ce, "</think>")) c = after_last(c, ce, "</think>");
            put(b, "<｜Assistant｜>"), put(b, c), put(b, "<｜end▁of▁sentence｜>");
        }
    }
    put(b, "<｜Assistant｜><think>\n");
}

static const char *role_name(zp_chat_role r) { return r == ZP_CHAT_SYSTEM ? "system" : r == ZP_CHAT_USER ? "user" : "assistant"; }

/* SmolLM2's ChatML: its default system line when the first message is not a system one. */
static void render_smollm2(chat_buf *b, const zp_chat_msg *m, int n) {
    if (n > 0 && m[0].role != ZP_CHAT_SYSTEM) put(b, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n");
    for (int i = 0; i < n; i++) put(b, "<|im_start|>"), put(b, role_name(m[i].role)), put(b, "\n"), put(b, m[i].content), put(b, "<|im_end|>\n");
    put(b, "<|im_start|>assistant\n");
}

/* Meta's Llama-3-Instruct template: BOS, then every message's header and its trimmed text. */
static void render_llama3(chat_buf *b, const zp_chat_msg *m, int n) {
    put(b, "<|begin_of_text|>");
    for (int i = 0; i < n; i++) {
        char *t = chat_trim(m[i].content);
        if (!t) { b->oom = 1; return; }
        put(b, "<|start_header_id|>"), put(b, role_name(m[i].role)), put(b, "<|end_header_id|>\n\n"), put(b, t), put(b, "<|eot_id|>");
        free(t);
    }
    put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

zp_status zp_chat_render_messages(const zp_chat_opts *o, const zp_chat_msg *m, int n, char **out) {
    if (n < 1) return zp_fail(ZP_ERR_INVALID, "chat: no messages to render");
    for (int i = 0; i < n; i++) {
        if (m[i].role < 0 || m[i].role >= ZP_CHAT_ROLE_COUNT) return zp_fail(ZP_ERR_INVALID, "chat: message %d has an unknown role %d", i, (int)m[i].role);
        if (!m[i].content) return zp_fail(ZP_ERR_INVALID, "chat: message %d has no content", i);
    }
    chat_buf b = {0};
    switch (o->family) {
    case ZP_CHAT_QWEN3: render_qwen3(&b, m, n, o->enable_thinking); break;
    case ZP_CHAT_R1: render_r1(&b, m, n); break;
    case ZP_CHAT_SMOLLM2: render_smollm2(&b, m, n); break;
    case ZP_CHAT_LLAMA3: render_llama3(&b, m, n); break;
    default: return zp_fail(ZP_ERR_INVALID, "chat: unknown family %d", o->family);
    }
    if (b.oom) { free(b.s); return zp_fail(ZP_ERR_OOM, "chat: out of host memory rendering the %s template", zp_chat_family_name(o->family)); }
    *out = b.s;
    return ZP_OK;
}

zp_status zp_chat_render(const zp_chat_opts *o, const char *user, char **out) {
    zp_chat_msg m[2];
    int n = 0;
    if (o->system) m[n++] = (zp_chat_msg){ZP_CHAT_SYSTEM, o->system};
    m[n++] = (zp_chat_msg){ZP_CHAT_USER, user};
    return zp_chat_render_messages(o, m, n, out);
}

zp_status zp_chat_encode(zp_tokenizer *t, const zp_chat_opts *o, const char *user, int **ids, int *n) {
    char *text = NULL;
    ZP_TRY(zp_chat_render(o, user, &text));
    zp_status s = zp_tokenizer_encode(t, text, strlen(text), 1, ids, n);
    free(text);
    return s;
}
