/* serve_reasoning.c - the reasoning parsers (serve_reasoning.h). */
#include "serve_reasoning.h"

#include <string.h>

static const char OPEN[] = "<think>", CLOSE[] = "</think>";
enum { OPEN_N = sizeof OPEN - 1, CLOSE_N = sizeof CLOSE - 1 };

int srv_reasoning_parse_name(const char *name, srv_reasoning_parser *out) {
    if (!strcmp(name, "deepseek_r1")) { *out = SRV_REASONING_R1; return 1; }
    if (!strcmp(name, "qwen3")) { *out = SRV_REASONING_QWEN3; return 1; }
    return 0;
}

/* Bytes at the end of text[0, n) that begin tag but do not complete it (0 if none). */
static size_t partial_tail(const char *text, size_t n, const char *tag, size_t tag_n) {
    for (size_t k = tag_n - 1 < n ? tag_n - 1 : n; k > 0; k--)
        if (!memcmp(text + n - k, tag, k)) return k;
    return 0;
}

static const char *find(const char *s, size_t n, const char *tag, size_t tag_n) {
    for (size_t i = 0; i + tag_n <= n; i++)
        if (!memcmp(s + i, tag, tag_n)) return s + i;
    return NULL;
}

srv_reasoning_split srv_reasoning_split_text(srv_reasoning_parser p, const char *text, size_t n, int final) {
    srv_reasoning_split s = {0, 0, 0, n, 0};
    if (p == SRV_REASONING_NONE) return s;
    const int opens = n >= OPEN_N && !memcmp(text, OPEN, OPEN_N);
    if (!final && !opens && n < OPEN_N && !memcmp(text, OPEN, n)) { s.c1 = 0; return s; } /* may yet open */
    if (p == SRV_REASONING_QWEN3 && !opens) return s;
    const size_t start = opens ? OPEN_N : 0;
    s.has_reasoning = 1;
    s.r0 = start;
    const char *close = find(text + start, n - start, CLOSE, CLOSE_N);
    if (close) {
        s.r1 = (size_t)(close - text);
        s.c0 = s.r1 + CLOSE_N;
        s.c1 = n;
    } else {
        s.r1 = final ? n : n - partial_tail(text + start, n - start, CLOSE, CLOSE_N);
        s.c0 = s.c1 = s.r1; /* no content yet */
    }
    return s;
}
