/* chat.c - per-family chat rendering and detection (see chat.h). */
#include "chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"    /* zp_read_file, zp_config_load */
#include "tokenizer.h" /* zp_tokenizer_encode */

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
        if (c.arch == ZP_ARCH_QWEN3) f = ZP_CHAT_QWEN3;
        else if (c.arch == ZP_ARCH_LLAMA && c.vocab == 49152) f = ZP_CHAT_SMOLLM2;
        else if (c.arch == ZP_ARCH_LLAMA) f = ZP_CHAT_LLAMA3;
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

static zp_status chat_render_llama3(const char *sys, const char *user, char **out) {
    char *u = chat_trim(user), *st = sys ? chat_trim(sys) : NULL;
    size_t n = strlen(user) + (sys ? strlen(sys) : 0) + 256;
    char *s = malloc(n);
    if (!u || (sys && !st) || !s) { free(u); free(st); free(s); return zp_fail(ZP_ERR_OOM, "chat: out of host memory rendering the llama3 template"); }
    snprintf(s, n, "<|begin_of_text|>%s%s%s<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
             st ? "<|start_header_id|>system<|end_header_id|>\n\n" : "", st ? st : "", st ? "<|eot_id|>" : "", u);
    free(u);
    free(st);
    *out = s;
    return ZP_OK;
}

zp_status zp_chat_render(const zp_chat_opts *o, const char *user, char **out) {
    const char *sys = o->system;
    if (o->family == ZP_CHAT_LLAMA3) return chat_render_llama3(sys, user, out);
    size_t n = strlen(user) + (sys ? strlen(sys) : 0) + 256;
    char *s = malloc(n);
    ZP_CHECK_ALLOC(s);
    switch (o->family) {
    case ZP_CHAT_QWEN3:
        snprintf(s, n, "%s%s%s<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s", sys ? "<|im_start|>system\n" : "", sys ? sys : "",
                 sys ? "<|im_end|>\n" : "", user, o->enable_thinking ? "" : "<think>\n\n</think>\n\n");
        break;
    case ZP_CHAT_R1:
        snprintf(s, n, "<｜begin▁of▁sentence｜>%s<｜User｜>%s<｜Assistant｜><think>\n", sys ? sys : "", user);
        break;
    case ZP_CHAT_SMOLLM2:
        snprintf(s, n, "<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n",
                 sys ? sys : "You are a helpful AI assistant named SmolLM, trained by Hugging Face", user);
        break;
    default:
        free(s);
        return zp_fail(ZP_ERR_INVALID, "chat: unknown family %d", o->family);
    }
    *out = s;
    return ZP_OK;
}

zp_status zp_chat_encode(zp_tokenizer *t, const zp_chat_opts *o, const char *user, int **ids, int *n) {
    char *text = NULL;
    ZP_TRY(zp_chat_render(o, user, &text));
    zp_status s = zp_tokenizer_encode(t, text, strlen(text), 1, ids, n);
    free(text);
    return s;
}
