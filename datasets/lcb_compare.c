/* lcb_compare.c - LiveCodeBench's stdout verdict (lcb_compare.h): Python whitespace, line
 * stripping and Decimal equality of tokens. Linear in the texts; one allocation per compared
 * token pair. */
#include "lcb_compare.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of the Python whitespace character (str.isspace) starting at s, or 0. */
static size_t py_space(const unsigned char *s, const unsigned char *end) {
    if (s >= end) return 0;
    const unsigned c = s[0];
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c == 0xc2 && end - s >= 2 && (s[1] == 0x85 || s[1] == 0xa0)) return 2; /* U+0085, U+00A0 */
    if (end - s < 3) return 0;
    if (c == 0xe1 && s[1] == 0x9a && s[2] == 0x80) return 3; /* U+1680 */
    if (c == 0xe2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
        return 3; /* U+2000..200A, U+2028, U+2029, U+202F */
    if (c == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) return 3; /* U+205F */
    if (c == 0xe3 && s[1] == 0x80 && s[2] == 0x80) return 3; /* U+3000 */
    return 0;
}

/* Bytes of the whitespace character that ends at end (not before start), or 0. */
static size_t py_space_before(const unsigned char *start, const unsigned char *end) {
    for (size_t k = 1; k <= 3 && (size_t)(end - start) >= k; k++)
        if (py_space(end - k, end) == k) return k;
    return 0;
}

/* str.strip() of [*s, *e). */
static void py_strip(const unsigned char **s, const unsigned char **e) {
    size_t k;
    while (*s < *e && (k = py_space(*s, *e)) > 0) *s += k;
    while (*e > *s && (k = py_space_before(*s, *e)) > 0) *e -= k;
}

typedef enum { DEC_BAD, DEC_FINITE, DEC_INF, DEC_NAN } dec_kind;
typedef struct {
    dec_kind kind;
    int neg;
    const char *dig; /* significant digits, no leading or trailing zeros (nd 0: the value 0) */
    size_t nd;
    long long key;   /* value = dig * 10^key */
} dec_val;

#define DEC_MAX_EXP 1000000000000000LL /* exponents beyond 10^15 are refused (Python takes them) */

static int lower_eq(const char *s, const char *word) {
    for (; *word; s++, word++)
        if (*s != *word && *s != *word - 'a' + 'A') return 0;
    return 1;
}

/* Parses the NUL-terminated s (underscores already removed, as CPython's Decimal removes them),
 * rewriting its front with the significant digits. */
static dec_val dec_parse(char *s) {
    dec_val v = {DEC_BAD, 0, s, 0, 0};
    const char *p = s;
    if (*p == '+' || *p == '-') v.neg = *p++ == '-';
    const size_t rest = strlen(p);
    if ((rest == 3 && lower_eq(p, "inf")) || (rest == 8 && lower_eq(p, "infinity"))) { v.kind = DEC_INF; return v; }
    if ((rest >= 3 && lower_eq(p, "nan")) || (rest >= 4 && lower_eq(p, "snan"))) {
        const char *q = p + (lower_eq(p, "nan") ? 3 : 4);
        while (*q >= '0' && *q <= '9') q++;
        v.kind = *q ? DEC_BAD : DEC_NAN; /* NaN and sNaN are equal to nothing */
        return v;
    }
    size_t w = 0, n_digits = 0, frac = 0, trailing = 0;
    int point = 0;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !point); p++) {
        if (*p == '.') { point = 1; continue; }
        n_digits++;
        frac += point;
        if (*p == '0' && w == 0) continue; /* leading zero */
        s[w++] = *p;
        trailing = *p == '0' ? trailing + 1 : 0;
    }
    if (n_digits == 0) return v;
    long long e = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        int eneg = 0;
        if (*p == '+' || *p == '-') eneg = *p++ == '-';
        if (!(*p >= '0' && *p <= '9')) return v;
        for (; *p >= '0' && *p <= '9'; p++) {
            e = e * 10 + (*p - '0');
            if (e > DEC_MAX_EXP) return v;
        }
        e = eneg ? -e : e;
    }
    if (*p) return v;
    v.kind = DEC_FINITE;
    v.nd = w - trailing;
    v.key = e - (long long)frac + (long long)trailing;
    return v;
}

/* [a, a+n) without underscores, NUL-terminated, malloc'ed. */
static char *without_underscores(const char *a, size_t n) {
    char *r = malloc(n + 1);
    if (!r) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != '_') r[w++] = a[i];
    r[w] = 0;
    return r;
}

int lcb_decimal_equal(const char *a, size_t na, const char *b, size_t nb) {
    char *ca = without_underscores(a, na), *cb = without_underscores(b, nb);
    int eq = 0;
    if (ca && cb) {
        const dec_val x = dec_parse(ca), y = dec_parse(cb);
        if (x.kind == DEC_FINITE && y.kind == DEC_FINITE) {
            if (x.nd == 0 || y.nd == 0) eq = x.nd == 0 && y.nd == 0; /* -0 == 0 */
            else eq = x.neg == y.neg && x.nd == y.nd && x.key == y.key && !memcmp(x.dig, y.dig, x.nd);
        } else if (x.kind == DEC_INF && y.kind == DEC_INF) {
            eq = x.neg == y.neg;
        }
    }
    free(ca);
    free(cb);
    return eq;
}

/* The next whitespace-separated token of [*s, e): [*t, *te), or 0 at the end. */
static int next_token(const unsigned char **s, const unsigned char *e, const unsigned char **t, const unsigned char **te) {
    size_t k;
    while (*s < e && (k = py_space(*s, e)) > 0) *s += k;
    if (*s >= e) return 0;
    *t = *s;
    while (*s < e && py_space(*s, e) == 0) (*s)++;
    *te = *s;
    return 1;
}

/* One stripped line of each side: same text, or the same Decimal values token by token. */
static int line_matches(const unsigned char *a, const unsigned char *ae, const unsigned char *b, const unsigned char *be) {
    if (ae - a == be - b && !memcmp(a, b, (size_t)(ae - a))) return 1;
    const unsigned char *ta, *tae, *tb, *tbe;
    for (;;) {
        const int ha = next_token(&a, ae, &ta, &tae), hb = next_token(&b, be, &tb, &tbe);
        if (!ha || !hb) return !ha && !hb;
        if (!lcb_decimal_equal((const char *)ta, (size_t)(tae - ta), (const char *)tb, (size_t)(tbe - tb))) return 0;
    }
}

/* The next '\n'-separated line of [*s, e), stripped: [*l, *le); 0 when none is left. */
static int next_line(const unsigned char **s, const unsigned char *e, int *done, const unsigned char **l, const unsigned char **le) {
    if (*done) return 0;
    const unsigned char *nl = memchr(*s, '\n', (size_t)(e - *s));
    *l = *s;
    *le = nl ? nl : e;
    if (nl) *s = nl + 1;
    else *done = 1;
    py_strip(l, le);
    return 1;
}

int lcb_stdout_matches(const char *got, const char *expected) {
    const unsigned char *a = (const unsigned char *)got, *ae = a + strlen(got);
    const unsigned char *b = (const unsigned char *)expected, *be = b + strlen(expected);
    py_strip(&a, &ae);
    py_strip(&b, &be);
    int da = 0, db = 0;
    const unsigned char *la, *lae, *lb, *lbe;
    for (;;) {
        const int ha = next_line(&a, ae, &da, &la, &lae), hb = next_line(&b, be, &db, &lb, &lbe);
        if (!ha || !hb) return !ha && !hb; /* line counts differ: wrong answer */
        if (!line_matches(la, lae, lb, lbe)) return 0;
    }
}
