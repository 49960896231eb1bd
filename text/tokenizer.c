/* tokenizer.c - encoding (added tokens, NFC, pre-tokenizer steps, rank-ordered merges with a
 * piece cache) and streaming decoding. Merging keeps the candidate pairs in a heap, O(p log p)
 * for a piece of p bytes (a 40k-letter run no longer takes seconds); repeated pieces hit the
 * cache. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h> /* utf8proc_NFC */

#include "tokenizer_internal.h"

/* ---------------------------------------------------------------- growable id list */

typedef struct {
    int *v;
    int n, cap;
} id_list;

static zp_status push(id_list *l, int id) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        int *v = realloc(l->v, sizeof(int) * (size_t)cap);
        ZP_CHECK_ALLOC(v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return ZP_OK;
}

/* ---------------------------------------------------------------- BPE of one piece */

static int pair_rank(const zp_tokenizer *t, int a, int b, int *result) {
    if (t->mode == ZP_BPE_TIKTOKEN) {
        unsigned char buf[512];
        int la = t->tok_len[a], lb = t->tok_len[b];
        if (la + lb > (int)sizeof buf) return -1;
        memcpy(buf, t->tok[a], (size_t)la);
        memcpy(buf + la, t->tok[b], (size_t)lb);
        int id = tok_lookup(t, buf, la + lb);
        if (id < 0) return -1;
        *result = id;
        return t->rank[id];
    }
    if (!t->pairs) return -1; /* no merges at all */
    uint64_t key = ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)(b + 1);
    for (uint32_t h = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 32) & t->pairs_mask;; h = (h + 1) & t->pairs_mask) {
        if (t->pairs[h].key == 0) return -1;
        if (t->pairs[h].key == key) { *result = t->pairs[h].result; return t->pairs[h].rank; }
    }
}

/* ---------------------------------------------------------------- merging in O(p log p) */

/* A candidate merge of symbol `left` with its right neighbour `right` (as they were when
 * pushed), ordered by rank, then by position (left indices never reorder): the merge order
 * of the plain rescan, lowest rank first and the leftmost among equal ranks. */
typedef struct {
    int rank, left, right, result;
} merge_cand;

static int cand_less(const merge_cand *a, const merge_cand *b) { return a->rank < b->rank || (a->rank == b->rank && a->left < b->left); }

static void heap_push(merge_cand *h, int *n, merge_cand c) {
    int i = (*n)++;
    for (; i > 0 && cand_less(&c, &h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = c;
}

static merge_cand heap_pop(merge_cand *h, int *n) {
    merge_cand top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static void push_pair(const zp_tokenizer *t, const int *sym, int a, int b, merge_cand *h, int *nh) {
    int res, r = a >= 0 && b >= 0 ? pair_rank(t, sym[a], sym[b], &res) : -1;
    if (r >= 0) heap_push(h, nh, (merge_cand){r, a, b, res});
}

/* Merges sym[0..m) in place (linked by next/prev) and compacts it; returns the new length. */
static int merge_symbols(const zp_tokenizer *t, int *sym, int m, int *next, int *prev, merge_cand *heap) {
    int nh = 0;
    for (int i = 0; i < m; i++) next[i] = i + 1 < m ? i + 1 : -1, prev[i] = i - 1;
    for (int i = 0; i + 1 < m; i++) push_pair(t, sym, i, i + 1, heap, &nh);
    while (nh > 0) {
        merge_cand c = heap_pop(heap, &nh);
        if (sym[c.left] < 0 || next[c.left] != c.right || sym[c.right] < 0) continue; /* stale */
        int res, r = pair_rank(t, sym[c.left], sym[c.right], &res);
        if (r != c.rank || res != c.result) continue; /* one side changed since it was pushed */
        sym[c.left] = c.result;
        sym[c.right] = -1;
        next[c.left] = next[c.right];
        if (next[c.right] >= 0) prev[next[c.right]] = c.left;
        push_pair(t, sym, prev[c.left], c.left, heap, &nh);
        push_pair(t, sym, c.left, next[c.left], heap, &nh);
    }
    int k = 0;
    for (int i = 0; i < m; i++)
        if (sym[i] >= 0) sym[k++] = sym[i];
    return k;
}

static zp_status bpe_piece(zp_tokenizer *t, const unsigned char *s, int n, id_list *out) {
    if (t->whole_piece_first) {
        int id = tok_lookup(t, s, n);
        if (id >= 0) return push(out, id);
    }
    if (!t->cache && !(t->cache = calloc(ZP_CACHE_SLOTS, sizeof *t->cache)))
        return zp_fail(ZP_ERR_OOM, "tokenizer: no memory for the piece cache (%zu bytes)", ZP_CACHE_SLOTS * sizeof *t->cache);
    uint64_t h = tok_hash(s, n);
    zp_cache_slot *slot = n <= ZP_CACHE_MAX_PIECE ? &t->cache[h & (ZP_CACHE_SLOTS - 1)] : NULL;
    if (slot && slot->hash == h && slot->len == n && !memcmp(slot->piece, s, (size_t)n)) {
        for (int i = 0; i < slot->n_ids; i++) ZP_TRY(push(out, slot->ids[i]));
        return ZP_OK;
    }
    int *sym = malloc(sizeof(int) * (size_t)n * 3);
    merge_cand *heap = malloc(sizeof(merge_cand) * (size_t)(3 * n + 1)); /* n - 1 pairs, then at most 2 per merge */
    if (!sym || !heap) { free(sym); free(heap); return zp_fail(ZP_ERR_OOM, "tokenizer: no memory for a piece of %d bytes", n); }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (t->byte_id[s[i]] >= 0) sym[m++] = t->byte_id[s[i]];
    m = merge_symbols(t, sym, m, sym + n, sym + 2 * n, heap);
    free(heap);
    zp_status st = ZP_OK;
    for (int i = 0; i < m && st == ZP_OK; i++) st = push(out, sym[i]);
    if (slot && st == ZP_OK) {
        slot->hash = h;
        slot->len = n;
        memcpy(slot->piece, s, (size_t)n);
        slot->n_ids = m;
        memcpy(slot->ids, sym, sizeof(int) * (size_t)m);
    }
    free(sym);
    return st;
}

/* ---------------------------------------------------------------- pre-tokenization */

typedef struct {
    int *start, *len; /* pieces as (offset, length) into the text */
    int n, cap;
} piece_list;

static zp_status piece_push(piece_list *p, int start, int len) {
    if (len <= 0) return ZP_OK;
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        int *s = realloc(p->start, sizeof(int) * (size_t)cap), *l = s ? realloc(p->len, sizeof(int) * (size_t)cap) : NULL;
        if (s) p->start = s;
        ZP_CHECK_ALLOC(l);
        p->len = l;
        p->cap = cap;
    }
    p->start[p->n] = start;
    p->len[p->n++] = len;
    return ZP_OK;
}

/* Splits [start, start+len) by one step: regex matches (and the gaps between them), or runs
 * of single digits apart from the rest. */
static zp_status split_piece(const zp_tokenizer *t, const zp_pretok_step *st, const unsigned char *text, int start, int len,
                             piece_list *out) {
    if (st->kind == ZP_PRE_DIGITS) { /* every numeric code point (Nd, Nl, No, as Rust's is_numeric) alone */
        int run = start;
        for (int i = start; i < start + len;) {
            utf8proc_int32_t cp;
            utf8proc_ssize_t l = utf8proc_iterate(text + i, start + len - i, &cp);
            if (l <= 0) l = 1, cp = -1;
            utf8proc_category_t c = cp >= 0 ? utf8proc_category(cp) : UTF8PROC_CATEGORY_CN;
            if (c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO) {
                ZP_TRY(piece_push(out, run, i - run));
                ZP_TRY(piece_push(out, i, (int)l));
                run = i + (int)l;
            }
            i += (int)l;
        }
        return piece_push(out, run, start + len - run);
    }
    PCRE2_SIZE off = 0;
    int gap = 0;
    while (off < (PCRE2_SIZE)len) {
        /* the text was validated once in zp_tokenizer_encode: skip PCRE2's per-call UTF scan */
        int rc = pcre2_match(st->re, text + start, (PCRE2_SIZE)len, off, PCRE2_NO_UTF_CHECK, st->md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
        if (ov[1] == ov[0]) { off = ov[0] + 1; continue; } /* empty match: skip a code unit */
        ZP_TRY(piece_push(out, start + gap, (int)ov[0] - gap));
        ZP_TRY(piece_push(out, start + (int)ov[0], (int)(ov[1] - ov[0])));
        gap = (int)ov[1];
        off = ov[1];
    }
    return piece_push(out, start + gap, len - gap);
}

/* Runs the pre-tokenizer steps over a span of ordinary text and BPEs every piece. */
static zp_status encode_span(zp_tokenizer *t, const unsigned char *text, int len, id_list *out) {
    piece_list a = {0}, b = {0};
    zp_status s = piece_push(&a, 0, len);
    for (int k = 0; s == ZP_OK && k < t->n_steps; k++) {
        b.n = 0;
        for (int i = 0; s == ZP_OK && i < a.n; i++) s = split_piece(t, &t->steps[k], text, a.start[i], a.len[i], &b);
        piece_list tmp = a;
        a = b;
        b = tmp;
    }
    for (int i = 0; s == ZP_OK && i < a.n; i++) s = bpe_piece(t, text + a.start[i], a.len[i], out);
    free(a.start); free(a.len); free(b.start); free(b.len);
    return s;
}

/* Longest added token starting at text[i], or NULL. */
static const zp_added_token *match_added(const zp_tokenizer *t, const char *text, size_t len, size_t i) {
    for (int k = 0; k < t->n_added; k++) {
        const zp_added_token *a = &t->added[k];
        if ((size_t)a->len <= len - i && text[i] == a->text[0] && !memcmp(text + i, a->text, (size_t)a->len)) return a;
    }
    return NULL;
}

static zp_status encode_normalised(zp_tokenizer *t, const char *text, size_t len, int parse_special, id_list *out) {
    size_t span = 0;
    for (size_t i = 0; i < len;) {
        const zp_added_token *a = parse_special ? match_added(t, text, len, i) : NULL;
        if (!a) { i++; continue; }
        ZP_TRY(encode_span(t, (const unsigned char *)text + span, (int)(i - span), out));
        ZP_TRY(push(out, a->id));
        i += (size_t)a->len;
        span = i;
    }
    return encode_span(t, (const unsigned char *)text + span, (int)(len - span), out);
}

static int utf8_valid(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t l = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (l <= 0) return 0;
        i += (size_t)l;
    }
    return 1;
}

zp_status zp_tokenizer_encode(zp_tokenizer *t, const char *text, size_t len, int parse_special, int **ids, int *n) {
    id_list out = {0};
    if (len > (size_t)1 << 30) return zp_fail(ZP_ERR_INVALID, "tokenizer: text of %zu bytes is too long", len);
    unsigned char *norm = NULL;
    if (t->nfc) { /* utf8proc needs NUL-terminated input */
        char *copy = malloc(len + 1);
        ZP_CHECK_ALLOC(copy);
        memcpy(copy, text, len);
        copy[len] = 0;
        norm = utf8proc_NFC((const utf8proc_uint8_t *)copy);
        free(copy);
        if (!norm) return zp_fail(ZP_ERR_INVALID, "tokenizer: input is not valid UTF-8");
        text = (const char *)norm;
        len = strlen(text);
    }
    if (!t->nfc && !utf8_valid((const unsigned char *)text, len)) return zp_fail(ZP_ERR_INVALID, "tokenizer: input is not valid UTF-8");
    zp_status s = encode_normalised(t, text, len, parse_special, &out);
    free(norm);
    if (s != ZP_OK) { free(out.v); return s; }
    *ids = out.v ? out.v : malloc(sizeof(int));
    *n = out.n;
    return ZP_OK;
}

/* ---------------------------------------------------------------- decoding */

/* The Unicode standard's well-formed UTF-8 (table 3-7): the range of a sequence's second byte
 * after lead byte c (0: c leads nothing), and its length. Later bytes are 80..BF. */
static int utf8_second_ok(unsigned char c, unsigned char b) {
    if (c == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (c == 0xED) return b >= 0x80 && b <= 0x9F; /* no surrogates */
    if (c == 0xF0) return b >= 0x90 && b <= 0xBF; /* no overlong forms */
    if (c == 0xF4) return b >= 0x80 && b <= 0x8F; /* nothing past U+10FFFF */
    return (b & 0xC0) == 0x80;
}
static int utf8_len(unsigned char c) { return c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0; }

static size_t put_replacement(char *out, size_t n, size_t cap) {
    if (n + 3 <= cap) memcpy(out + n, "\xEF\xBF\xBD", 3), n += 3;
    return n;
}

/* One byte through the decoder: a complete character is written, a sequence that breaks
 * becomes one U+FFFD (its maximal subpart, as Python's decode with errors="replace", and so
 * Hugging Face's, replaces it) and the byte is then read afresh. */
static size_t decode_byte(zp_detok_state *st, unsigned char c, char *out, size_t n, size_t cap) {
    if (st->n_pending) {
        const int ok = st->n_pending == 1 ? utf8_second_ok(st->pending[0], c) : (c & 0xC0) == 0x80;
        if (ok) {
            st->pending[st->n_pending++] = c;
            if (st->n_pending == utf8_len(st->pending[0])) {
                if (n + (size_t)st->n_pending <= cap) memcpy(out + n, st->pending, (size_t)st->n_pending), n += (size_t)st->n_pending;
                st->n_pending = 0;
            }
            return n;
        }
        n = put_replacement(out, n, cap);
        st->n_pending = 0;
    }
    const int want = utf8_len(c);
    if (want == 1) {
        if (n < cap) out[n++] = (char)c;
    } else if (want == 0) {
        n = put_replacement(out, n, cap); /* a stray continuation byte, or one that leads nothing */
    } else {
        st->pending[st->n_pending++] = c;
    }
    return n;
}

size_t zp_tokenizer_decode_stream(const zp_tokenizer *t, int id, zp_detok_state *st, char *out, size_t cap) {
    size_t n = 0;
    if (id < 0 || id >= t->n_vocab || !t->tok[id]) return 0;
    for (int i = 0; i < t->tok_len[id]; i++) n = decode_byte(st, t->tok[id][i], out, n, cap);
    return n;
}

size_t zp_tokenizer_decode_flush(zp_detok_state *st, char *out, size_t cap) {
    if (!st->n_pending) return 0;
    st->n_pending = 0;
    return put_replacement(out, 0, cap);
}

zp_status zp_tokenizer_decode(const zp_tokenizer *t, const int *ids, int n, char **out, size_t *len) {
    size_t cap = 3, used = 0;
    for (int i = 0; i < n; i++) cap += ids[i] >= 0 && ids[i] < t->n_vocab ? 3 * (size_t)t->tok_len[ids[i]] : 0;
    char *s = malloc(cap + 1);
    ZP_CHECK_ALLOC(s);
    zp_detok_state st = {{0}, 0};
    for (int i = 0; i < n; i++) /* ids without a token (a model's padded vocabulary rows) decode to nothing */
        used += zp_tokenizer_decode_stream(t, ids[i], &st, s + used, cap - used);
    used += zp_tokenizer_decode_flush(&st, s + used, cap - used); /* a trailing cut character */
    s[used] = 0;
    *out = s;
    if (len) *len = used;
    return ZP_OK;
}

int zp_tokenizer_vocab_size(const zp_tokenizer *t) { return t->n_vocab; }
const char *zp_tokenizer_token_bytes(const zp_tokenizer *t, int id, int *len) {
    const int ok = id >= 0 && id < t->n_vocab && t->tok[id];
    *len = ok ? t->tok_len[id] : 0;
    return ok ? (const char *)t->tok[id] : NULL;
}
int zp_tokenizer_max_token_bytes(const zp_tokenizer *t) {
    int m = 0;
    for (int i = 0; i < t->n_vocab; i++)
        if (t->tok[i] && t->tok_len[i] > m) m = t->tok_len[i];
    return m;
}
int zp_tokenizer_is_special(const zp_tokenizer *t, int id) {
    for (int k = 0; k < t->n_added; k++)
        if (t->added[k].id == id) return t->added[k].special;
    return 0;
}

int zp_tokenizer_find(const zp_tokenizer *t, const char *token) {
    for (int k = 0; k < t->n_added; k++)
        if (!strcmp(t->added[k].text, token)) return t->added[k].id;
    return tok_lookup(t, (const unsigned char *)token, (int)strlen(token));
}
const char *zp_tokenizer_pretok_name(const zp_tokenizer *t) { return t->pretok_name; }
