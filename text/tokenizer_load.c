/* tokenizer_load.c - reads tokenizer.json, vocab.json + merges.txt (+ tokenizer_config.json)
 * and tiktoken tokenizer.model (+ tokenizer_config.json), builds the byte and merge tables. */
#include <cjson/cJSON.h> /* tokenizer.json, vocab.json, tokenizer_config.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "files.h"
#include "tokenizer_internal.h"

/* Split regexes (the families' published pre-tokenizer patterns). */
static const char *RE_QWEN2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *RE_LLAMA3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *RE_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---------------------------------------------------------------- tables */

uint64_t tok_hash(const unsigned char *s, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

int tok_lookup(const zp_tokenizer *t, const unsigned char *s, int n) {
    if (!t->bytes_map) return -1;
    for (uint32_t h = (uint32_t)tok_hash(s, n) & t->bytes_mask;; h = (h + 1) & t->bytes_mask) {
        int id = t->bytes_map[h];
        if (id < 0) return -1;
        if (t->tok_len[id] == n && !memcmp(t->tok[id], s, (size_t)n)) return id;
    }
}

zp_status tok_add(zp_tokenizer *t, int id, const unsigned char *s, int n) {
    if (id < 0 || id > ZP_TOK_MAX_ID) return zp_fail(ZP_ERR_FORMAT, "tokenizer: token id %d out of range [0, %d]", id, ZP_TOK_MAX_ID);
    if (id >= t->cap_vocab) { /* geometric growth: ids arrive in order */
        int cap = t->cap_vocab ? 2 * t->cap_vocab : 1024;
        while (cap <= id) cap *= 2;
        unsigned char **tk = realloc(t->tok, sizeof(*tk) * (size_t)cap);
        if (tk) t->tok = tk;
        int *tl = tk ? realloc(t->tok_len, sizeof(int) * (size_t)cap) : NULL;
        if (tl) t->tok_len = tl;
        int *rk = tl ? realloc(t->rank, sizeof(int) * (size_t)cap) : NULL;
        ZP_CHECK_ALLOC(rk);
        t->rank = rk;
        for (int i = t->cap_vocab; i < cap; i++) { t->tok[i] = NULL; t->tok_len[i] = 0; t->rank[i] = -1; }
        t->cap_vocab = cap;
    }
    if (id >= t->n_vocab) t->n_vocab = id + 1;
    free(t->tok[id]);
    t->tok[id] = malloc((size_t)n + 1);
    ZP_CHECK_ALLOC(t->tok[id]);
    memcpy(t->tok[id], s, (size_t)n);
    t->tok[id][n] = 0;
    t->tok_len[id] = n;
    return ZP_OK;
}

zp_status tok_build_index(zp_tokenizer *t) {
    uint32_t cap = 1;
    while (cap < 2u * (uint32_t)t->n_vocab) cap <<= 1;
    free(t->bytes_map);
    t->bytes_map = malloc(sizeof(int) * cap);
    ZP_CHECK_ALLOC(t->bytes_map);
    memset(t->bytes_map, 0xff, sizeof(int) * cap);
    t->bytes_mask = cap - 1;
    for (int id = 0; id < t->n_vocab; id++) {
        if (!t->tok[id] || tok_lookup(t, t->tok[id], t->tok_len[id]) >= 0) continue; /* first id wins */
        uint32_t h = (uint32_t)tok_hash(t->tok[id], t->tok_len[id]) & t->bytes_mask;
        while (t->bytes_map[h] >= 0) h = (h + 1) & t->bytes_mask;
        t->bytes_map[h] = id;
    }
    int printable = 0;
    for (int b = 0; b < 256; b++) { /* bytes without a token are dropped, as HF's BPE does without unk */
        unsigned char c = (unsigned char)b;
        t->byte_id[b] = tok_lookup(t, &c, 1);
        printable += b >= 'a' && b <= 'z' && t->byte_id[b] >= 0;
    }
    if (printable < 26) return zp_fail(ZP_ERR_FORMAT, "tokenizer: the letters a-z have no single-byte tokens (not a byte-level BPE vocabulary)");
    return ZP_OK;
}

static void pairs_insert(zp_pair_slot *tab, uint32_t mask, zp_pair_slot e) {
    uint32_t h = (uint32_t)(e.key * 0x9E3779B97F4A7C15ull >> 32) & mask;
    while (tab[h].key) h = (h + 1) & mask;
    tab[h] = e;
}

/* Doubles the merge table (or makes its first one), rehashing every pair. */
static zp_status pairs_grow(zp_tokenizer *t) {
    uint32_t cap = t->pairs ? 2 * (t->pairs_mask + 1) : 1024;
    zp_pair_slot *tab = calloc(cap, sizeof *tab);
    ZP_CHECK_ALLOC(tab);
    for (uint32_t i = 0; t->pairs && i <= t->pairs_mask; i++)
        if (t->pairs[i].key) pairs_insert(tab, cap - 1, t->pairs[i]);
    free(t->pairs);
    t->pairs = tab;
    t->pairs_mask = cap - 1;
    return ZP_OK;
}

zp_status tok_add_merge(zp_tokenizer *t, int left, int right, int rank, int result) {
    if (rank >= ZP_TOK_MAX_MERGES) return zp_fail(ZP_ERR_FORMAT, "tokenizer: more than %d merges", ZP_TOK_MAX_MERGES);
    if (!t->pairs || 2u * (uint32_t)(t->n_pairs + 1) > t->pairs_mask + 1) ZP_TRY(pairs_grow(t));
    uint64_t key = ((uint64_t)(uint32_t)(left + 1) << 32) | (uint32_t)(right + 1);
    uint32_t h = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 32) & t->pairs_mask;
    while (t->pairs[h].key && t->pairs[h].key != key) h = (h + 1) & t->pairs_mask;
    if (t->pairs[h].key == key) return ZP_OK; /* keep the first (lowest) rank */
    t->pairs[h] = (zp_pair_slot){key, rank, result};
    t->n_pairs++;
    return ZP_OK;
}

zp_status tok_add_regex_step(zp_tokenizer *t, const char *pattern, const char *src) {
    if (t->n_steps == 4) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: more than 4 pre-tokenizer steps", src);
    int err;
    PCRE2_SIZE eoff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL); /* the pattern is checked: a file can hold any bytes */
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return zp_fail(ZP_ERR_FORMAT, "%s: split regex does not compile at offset %zu: %s", src, (size_t)eoff, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional speed-up; falls back to the interpreter */
    zp_pretok_step *st = &t->steps[t->n_steps++];
    st->kind = ZP_PRE_REGEX;
    st->re = re;
    st->md = pcre2_match_data_create_from_pattern(re, NULL);
    ZP_CHECK_ALLOC(st->md);
    return ZP_OK;
}

zp_status tok_set_pretok(zp_tokenizer *t, const char *name) {
    t->pretok_name = name;
    return tok_add_regex_step(t, !strcmp(name, "qwen2") ? RE_QWEN2 : !strcmp(name, "llama3") ? RE_LLAMA3 : RE_GPT2, name);
}

zp_status tok_add_added(zp_tokenizer *t, const char *text, int id, int special) {
    if (!text[0]) return zp_fail(ZP_ERR_FORMAT, "tokenizer: added token %d has empty content", id);
    zp_added_token *a = realloc(t->added, sizeof *a * (size_t)(t->n_added + 1));
    ZP_CHECK_ALLOC(a);
    t->added = a;
    a[t->n_added].text = strdup(text);
    ZP_CHECK_ALLOC(a[t->n_added].text);
    a[t->n_added].len = (int)strlen(text);
    a[t->n_added].id = id;
    a[t->n_added].special = special;
    t->n_added++;
    return tok_add(t, id, (const unsigned char *)text, (int)strlen(text)); /* decodes to its text */
}

static int by_len_desc(const void *x, const void *y) { return ((const zp_added_token *)y)->len - ((const zp_added_token *)x)->len; }
void tok_finish_added(zp_tokenizer *t) {
    if (t->n_added) qsort(t->added, (size_t)t->n_added, sizeof *t->added, by_len_desc);
}

/* GPT-2 byte-level alphabet: printable bytes stand for themselves, the other 68 bytes map to
 * code points 256.. in byte order. */
int tok_unicode_to_byte(uint32_t cp) {
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return (int)cp;
    if (cp < 256 || cp >= 256 + 68) return -1;
    int k = (int)cp - 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        if (!printable && k-- == 0) return b;
    }
    return -1;
}

/* Byte-level token string (UTF-8 of mapped code points) -> raw bytes. */
static int unmap_bytes(const char *s, unsigned char *out, int cap) {
    int n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && n < cap) {
        uint32_t cp;
        int l = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : 4;
        cp = l == 1 ? *p : l == 2 ? (*p & 0x1Fu) : l == 3 ? (*p & 0x0Fu) : (*p & 0x07u);
        for (int i = 1; i < l; i++) {
            if ((p[i] & 0xC0) != 0x80) return -1;
            cp = (cp << 6) | (p[i] & 0x3Fu);
        }
        int b = tok_unicode_to_byte(cp);
        if (b < 0) return -1;
        out[n++] = (unsigned char)b;
        p += l;
    }
    return *p ? -1 : n; /* longer than cap: refused, not cut */
}

/* ---------------------------------------------------------------- formats */

static zp_status load_vocab_object(zp_tokenizer *t, const cJSON *vocab, const char *src) {
    const cJSON *e;
    unsigned char buf[1024];
    if (!cJSON_IsObject(vocab)) /* an array's entries have no token strings */
        return zp_fail(ZP_ERR_FORMAT, "%s: model.vocab is not an object of token strings to ids", src);
    cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble <= ZP_TOK_MAX_ID) || e->valuedouble != (double)(int)e->valuedouble)
            return zp_fail(ZP_ERR_FORMAT, "%s: vocab entry \"%.100s\" has no integer id in [0, %d]", src, e->string, ZP_TOK_MAX_ID);
        int n = unmap_bytes(e->string, buf, sizeof buf);
        if (n < 0) return zp_fail(ZP_ERR_FORMAT, "%s: token \"%.100s\" is not in the byte-level alphabet (or longer than 1024 bytes)", src, e->string);
        ZP_TRY(tok_add(t, e->valueint, buf, n));
    }
    return tok_build_index(t);
}

/* One merge "a b" (or the pair [a, b]) of rank r. */
static zp_status add_merge_strings(zp_tokenizer *t, const char *a, const char *b, int r, const char *src) {
    unsigned char ba[512], bb[512], both[1024];
    int la = unmap_bytes(a, ba, sizeof ba), lb = unmap_bytes(b, bb, sizeof bb);
    if (la <= 0 || lb <= 0) return zp_fail(ZP_ERR_FORMAT, "%s: merge %d (\"%s %s\") is not byte-level", src, r, a, b);
    memcpy(both, ba, (size_t)la);
    memcpy(both + la, bb, (size_t)lb);
    int ia = tok_lookup(t, ba, la), ib = tok_lookup(t, bb, lb), ires = tok_lookup(t, both, la + lb);
    if (ia < 0 || ib < 0 || ires < 0) return zp_fail(ZP_ERR_FORMAT, "%s: merge %d (\"%s %s\") uses or makes a token missing from the vocabulary", src, r, a, b);
    return tok_add_merge(t, ia, ib, r, ires);
}

static zp_status load_merges_txt(zp_tokenizer *t, const char *path) {
    char *txt;
    ZP_TRY(zp_read_file(path, &txt, NULL));
    zp_status s = ZP_OK;
    int rank = 0, line_no = 0;
    for (char *line = strtok(txt, "\n"); line && s == ZP_OK; line = strtok(NULL, "\n")) {
        line_no++;
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r') line[--l] = 0;
        if (line_no == 1 && !strncmp(line, "#version", 8)) continue;
        if (!l) continue;
        char *sp = strchr(line, ' ');
        if (!sp) { s = zp_fail(ZP_ERR_FORMAT, "%s: line %d is not \"left right\"", path, line_no); break; }
        *sp = 0;
        s = add_merge_strings(t, line, sp + 1, rank++, path);
    }
    free(txt);
    return s;
}

/* added_tokens_decoder of tokenizer_config.json: {"id": {"content": ..., "special": ...}} */
static zp_status load_added_from_config(zp_tokenizer *t, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return ZP_OK;
    cJSON *root;
    ZP_TRY(zp_read_json_object(path, &root));
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "added_tokens_decoder"), *e;
    zp_status s = ZP_OK;
    cJSON_ArrayForEach(e, dec) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsString(c)) { s = zp_fail(ZP_ERR_FORMAT, "%s: added token %s has no content", path, e->string); break; }
        if (!e->string[0] || strspn(e->string, "0123456789") != strlen(e->string) || strlen(e->string) > 9) {
            s = zp_fail(ZP_ERR_FORMAT, "%s: added token key \"%.40s\" is not a token id", path, e->string);
            break;
        }
        if ((s = tok_add_added(t, c->valuestring, atoi(e->string), cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")))) != ZP_OK) break;
    }
    cJSON_Delete(root);
    return s;
}

static zp_status load_vocab_merges(zp_tokenizer *t, const char *dir) {
    char path[4096];
    cJSON *vocab;
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    ZP_TRY(zp_read_json_object(path, &vocab));
    zp_status s = load_vocab_object(t, vocab, path);
    cJSON_Delete(vocab);
    ZP_TRY(s);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    ZP_TRY(load_merges_txt(t, path));
    t->mode = ZP_BPE_MERGES;
    t->nfc = 1;
    ZP_TRY(tok_set_pretok(t, "qwen2"));
    return load_added_from_config(t, dir);
}

static zp_status base64_decode(const char *s, unsigned char *out, int cap, int *n) {
    static const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t acc = 0;
    int bits = 0, k = 0;
    for (; *s && *s != '='; s++) {
        const char *p = strchr(A, *s);
        if (!p || !*s) return ZP_ERR_FORMAT;
        acc = (acc << 6) | (uint32_t)(p - A);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (k >= cap) return ZP_ERR_FORMAT;
            out[k++] = (unsigned char)(acc >> bits);
        }
    }
    *n = k;
    return ZP_OK;
}

static zp_status load_tiktoken(zp_tokenizer *t, const char *dir) {
    char path[4096], *txt;
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    ZP_TRY(zp_read_file(path, &txt, NULL));
    zp_status s = ZP_OK;
    int line_no = 0;
    for (char *line = strtok(txt, "\n"); line && s == ZP_OK; line = strtok(NULL, "\n")) {
        line_no++;
        char *sp = strchr(line, ' ');
        unsigned char buf[512];
        int n, rank;
        if (!sp || base64_decode((*sp = 0, line), buf, sizeof buf, &n) != ZP_OK || sscanf(sp + 1, "%d", &rank) != 1 || rank < 0)
            s = zp_fail(ZP_ERR_FORMAT, "%s: line %d is not \"base64 rank\"", path, line_no);
        else if ((s = tok_add(t, rank, buf, n)) == ZP_OK)
            t->rank[rank] = rank;
    }
    free(txt);
    ZP_TRY(s);
    ZP_TRY(tok_build_index(t));
    t->mode = ZP_BPE_TIKTOKEN;
    t->whole_piece_first = 1;
    ZP_TRY(tok_set_pretok(t, "llama3"));
    return load_added_from_config(t, dir);
}

/* tokenizer.json: model (BPE vocab + merges), added_tokens, normalizer, pre_tokenizer. */
static zp_status load_pretok_json(zp_tokenizer *t, const cJSON *pt, const char *src) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(pt, "type");
    const char *ty = cJSON_IsString(type) ? type->valuestring : "";
    if (!strcmp(ty, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers")) ZP_TRY(load_pretok_json(t, e, src));
        return ZP_OK;
    }
    if (!strcmp(ty, "Digits")) {
        if (t->n_steps == 4) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: too many pre-tokenizer steps", src);
        t->steps[t->n_steps++].kind = ZP_PRE_DIGITS;
        return ZP_OK;
    }
    if (!strcmp(ty, "ByteLevel")) {
        if (!cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(pt, "use_regex"))) {
            t->pretok_name = "gpt2";
            return tok_add_regex_step(t, RE_GPT2, src);
        }
        return ZP_OK;
    }
    if (!strcmp(ty, "Split")) {
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pt, "pattern"), "Regex");
        if (!cJSON_IsString(re)) return zp_fail(ZP_ERR_UNSUPPORTED, "%s: Split pre-tokenizer without a Regex pattern", src);
        t->pretok_name = strstr(re->valuestring, "\\p{N}{1,3}") ? "llama3" : "qwen2";
        return tok_add_regex_step(t, re->valuestring, src);
    }
    return zp_fail(ZP_ERR_UNSUPPORTED, "%s: pre-tokenizer type \"%s\" is not supported", src, ty);
}

static zp_status load_tokenizer_json_root(zp_tokenizer *t, const cJSON *root, const char *path) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE"))
        return zp_fail(ZP_ERR_UNSUPPORTED, "%s: model type %s is not supported (BPE only)", path, cJSON_IsString(type) ? type->valuestring : "?");
    ZP_TRY(load_vocab_object(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), path));
    const cJSON *m;
    int rank = 0;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(model, "merges")) {
        if (cJSON_IsString(m)) {
            char *dup = strdup(m->valuestring), *sp = dup ? strchr(dup, ' ') : NULL;
            zp_status s = sp ? (*sp = 0, add_merge_strings(t, dup, sp + 1, rank, path)) : zp_fail(ZP_ERR_FORMAT, "%s: merge %d is malformed", path, rank);
            free(dup);
            ZP_TRY(s);
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
            ZP_TRY(add_merge_strings(t, cJSON_GetArrayItem(m, 0)->valuestring, cJSON_GetArrayItem(m, 1)->valuestring, rank, path));
        } else {
            return zp_fail(ZP_ERR_FORMAT, "%s: merge %d is malformed", path, rank);
        }
        rank++;
    }
    t->mode = ZP_BPE_MERGES;
    t->whole_piece_first = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer"), *nt = cJSON_GetObjectItemCaseSensitive(norm, "type");
    t->nfc = cJSON_IsString(nt) && !strcmp(nt->valuestring, "NFC");
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (pt && !cJSON_IsNull(pt)) ZP_TRY(load_pretok_json(t, pt, path));
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content"), *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        if (!cJSON_IsString(c) || !cJSON_IsNumber(id)) return zp_fail(ZP_ERR_FORMAT, "%s: malformed added token", path);
        ZP_TRY(tok_add_added(t, c->valuestring, id->valueint, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special"))));
    }
    return ZP_OK;
}

static zp_status load_tokenizer_json(zp_tokenizer *t, const char *dir) {
    char path[4096];
    cJSON *root;
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    ZP_TRY(zp_read_json_object(path, &root));
    zp_status s = load_tokenizer_json_root(t, root, path);
    cJSON_Delete(root);
    return s;
}

static int exists(const char *dir, const char *name) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

zp_status zp_tokenizer_load(const char *dir, zp_tokenizer **out) {
    zp_tokenizer *t = calloc(1, sizeof *t);
    ZP_CHECK_ALLOC(t);
    zp_status s; /* the piece cache is allocated by the first encode (tokenizer.c) */
    if (exists(dir, "tokenizer.json")) s = load_tokenizer_json(t, dir);
    else if (exists(dir, "vocab.json") && exists(dir, "merges.txt")) s = load_vocab_merges(t, dir);
    else if (exists(dir, "tokenizer.model")) s = load_tiktoken(t, dir);
    else if ((s = zp_model_dir_check(dir, 0)) == ZP_OK) /* a missing or empty folder is named as such */
        s = zp_fail(ZP_ERR_IO, "%s: no tokenizer.json, vocab.json + merges.txt or tokenizer.model", dir);
    if (s != ZP_OK) { zp_tokenizer_free(t); return s; }
    tok_finish_added(t);
    *out = t;
    return ZP_OK;
}

void zp_tokenizer_free(zp_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->cap_vocab; i++) free(t->tok[i]);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].text);
    for (int i = 0; i < t->n_steps; i++) {
        if (t->steps[i].md) pcre2_match_data_free(t->steps[i].md);
        if (t->steps[i].re) pcre2_code_free(t->steps[i].re);
    }
    free(t->tok); free(t->tok_len); free(t->rank); free(t->bytes_map); free(t->pairs); free(t->added); free(t->cache);
    free(t);
}
