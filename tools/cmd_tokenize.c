/* cmd_tokenize.c - `zipage tokenize --model DIR [--decode] [FILE]`: text (file or stdin) to
 * token ids, one line of comma-separated ids; with --decode, ids (commas or whitespace) to
 * text. Special tokens in the text are recognised unless --no-special. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "cli_common.h" /* cli_value, cli_report */
#include "tokenizer.h"

static zp_status read_all(const char *path, char **out, size_t *len) {
    if (path) return zp_read_file(path, out, len);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ZP_CHECK_ALLOC(buf);
    for (size_t got; (got = fread(buf + n, 1, cap - n - 1, stdin)) > 0;) {
        n += got;
        if (cap - n < 2) {
            char *g = realloc(buf, cap *= 2);
            if (!g) { free(buf); return zp_fail(ZP_ERR_OOM, "tokenize: input too large"); }
            buf = g;
        }
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return ZP_OK;
}

static zp_status decode_ids(zp_tokenizer *t, const char *text) {
    int cap = 256, n = 0, *ids = malloc(sizeof(int) * (size_t)cap);
    ZP_CHECK_ALLOC(ids);
    for (const char *p = text; *p;) {
        if (*p == ',' || *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') { p++; continue; }
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            int w = (int)strcspn(p, ", \t\r\n");
            free(ids);
            return zp_fail(ZP_ERR_INVALID, "tokenize --decode: \"%.*s\" is not a token id", w < 20 ? w : 20, p);
        }
        if (v < 0 || v >= zp_tokenizer_vocab_size(t)) {
            free(ids);
            return zp_fail(ZP_ERR_INVALID, "tokenize --decode: id %ld is not in this tokenizer's vocabulary (0..%d)", v, zp_tokenizer_vocab_size(t) - 1);
        }
        if (n == cap) { int *g = realloc(ids, sizeof(int) * (size_t)(cap *= 2)); if (!g) { free(ids); return ZP_ERR_OOM; } ids = g; }
        ids[n++] = (int)v;
        p = end;
    }
    char *s;
    size_t len;
    zp_status st = zp_tokenizer_decode(t, ids, n, &s, &len);
    free(ids);
    ZP_TRY(st);
    fwrite(s, 1, len, stdout);
    free(s);
    return ZP_OK;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *v;
    int decode = 0, special = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: zipage tokenize --model DIR [--decode] [--no-special] [FILE]   (stdin without FILE)\n");
            return 0;
        } else if (!strcmp(argv[i], "--model")) {
            if (!(v = cli_value(argc, argv, &i))) return cli_report("tokenize", ZP_ERR_INVALID);
            model = v;
        } else if (!strcmp(argv[i], "--decode")) decode = 1;
        else if (!strcmp(argv[i], "--no-special")) special = 0;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_report("tokenize", zp_fail(ZP_ERR_INVALID, "unknown flag %s", argv[i]));
        else file = argv[i];
    }
    if (!model) return cli_report("tokenize", zp_fail(ZP_ERR_INVALID, "--model DIR is required (a folder with tokenizer files)"));
    zp_tokenizer *t;
    zp_status s = zp_tokenizer_load(model, &t);
    if (s != ZP_OK) return cli_report("tokenize", s);
    char *text = NULL;
    size_t len = 0;
    s = read_all(file, &text, &len);
    if (s == ZP_OK && decode) s = decode_ids(t, text);
    else if (s == ZP_OK) {
        int *ids, n;
        s = zp_tokenizer_encode(t, text, len, special, &ids, &n);
        for (int i = 0; s == ZP_OK && i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
        if (s == ZP_OK) { printf("\n"); free(ids); }
    }
    free(text);
    zp_tokenizer_free(t);
    return s == ZP_OK ? 0 : cli_report("tokenize", s);
}
