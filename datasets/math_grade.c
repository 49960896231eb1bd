/* math_grade.c - see math_grade.h. Plain C string processing; a small recursive-descent
 * evaluator for numeric LaTeX (value comparison with relative tolerance 1e-9). */
#include "math_grade.h"

#include "answer_find.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- extraction */

/* Balanced {...} starting at s (s[0] == '{'); returns the index after the closing brace or -1. */
static long match_brace(const char *s) {
    int depth = 0;
    for (long i = 0; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1]) { i++; continue; }
        if (s[i] == '{') depth++;
        else if (s[i] == '}' && --depth == 0) return i + 1;
    }
    return -1;
}

static char *dup_range(const char *s, long n) {
    char *r = malloc((size_t)n + 1);
    if (!r) return NULL;
    memcpy(r, s, (size_t)n);
    r[n] = 0;
    return r;
}

char *math_extract_boxed(const char *text) {
    const char *best = NULL;
    char *result = NULL;
    for (const char *p = text; (p = strstr(p, "\\")) != NULL; p++) {
        int blen = !strncmp(p, "\\boxed", 6) ? 6 : !strncmp(p, "\\fbox", 5) ? 5 : 0;
        if (!blen) continue;
        const char *q = p + blen;
        while (*q == ' ') q++;
        if (*q == '{') {
            long end = match_brace(q);
            if (end < 0) continue; /* unbalanced (truncated output) */
            best = p;
            free(result);
            result = dup_range(q + 1, end - 2);
        } else if (q > p + blen && *q && *q != '$') { /* "\boxed 5": up to the next space or $ */
            const char *e = q;
            while (*e && *e != '$' && !isspace((unsigned char)*e)) e++;
            best = p;
            free(result);
            result = dup_range(q, e - q);
        }
    }
    (void)best;
    return result;
}

/* ---------------------------------------------------------------- normalisation */

static void replace_all(char *s, const char *from, const char *to) {
    size_t lf = strlen(from), lt = strlen(to);
    char *p = s;
    while ((p = strstr(p, from)) != NULL) { /* to is never longer than from here */
        memmove(p + lt, p + lf, strlen(p + lf) + 1);
        memcpy(p, to, lt);
        p += lt;
    }
}

/* \text{abc} -> abc (also \textbf, \mbox, \mathrm). */
static void unwrap(char *s, const char *cmd) {
    size_t lc = strlen(cmd);
    for (char *p = s; (p = strstr(p, cmd)) != NULL;) {
        if (p[lc] != '{') { p += lc; continue; }
        long end = match_brace(p + lc);
        if (end < 0) break;
        char *inner_end = p + lc + end - 1; /* the closing brace */
        memmove(inner_end, inner_end + 1, strlen(inner_end + 1) + 1);
        memmove(p, p + lc + 1, strlen(p + lc + 1) + 1);
    }
}

/* Units after a number: "5 cm", "5\text{ inches}", "15cm^2" -> the number. Any word after a
 * space goes; without a space only known unit words (so "2x" stays an expression). */
static void drop_units(char *s) {
    static const char *const units[] = {"cm", "mm", "km", "m", "inches", "inch", "in", "feet", "foot", "ft", "yards", "yd", "miles",
                                        "mph", "units", "unit", "sq", "square", "degrees", "dollars", "cents", "hours", "minutes",
                                        "seconds", "days", "meters", "kg", "g", "pounds", "lbs", NULL};
    char *p = s;
    if (*p == '-') p++;
    if (!isdigit((unsigned char)*p) && *p != '.') return;
    while (isdigit((unsigned char)*p) || *p == '.' || *p == ',') p++;
    char *cut = p;
    while (*p == ' ') p++;
    /* one letter after a space is a factor, not a unit: "3 x" and "2 x + 1" as sympy's LaTeX writes
     * 3x and 2x + 1 (Math-Verify reads a product); "5 m" is still metres */
    const int letter = isalpha((unsigned char)p[0]) && !isalpha((unsigned char)p[1]);
    if (p > cut && isalpha((unsigned char)*p) && !letter) { *cut = 0; return; }
    for (int i = 0; units[i]; i++) {
        size_t n = strlen(units[i]);
        if (!strncmp(p, units[i], n) && !isalpha((unsigned char)p[n])) { *cut = 0; return; }
    }
}

/* \frac12 -> \frac{1}{2}; \sqrt2 -> \sqrt{2} */
static char *brace_short_args(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(3 * n + 8), *w = o;
    if (!o) return NULL;
    for (const char *p = s; *p;) {
        if (!strncmp(p, "\\frac{", 6)) { /* \frac{270}7 -> \frac{270}{7} */
            long e = match_brace(p + 5);
            if (e > 0 && p[5 + e] && p[5 + e] != '{' && p[5 + e] != ' ' && p[5 + e] != '\\') {
                memcpy(w, p, (size_t)(5 + e)), w += 5 + e;
                w += sprintf(w, "{%c}", p[5 + e]);
                p += 5 + e + 1;
                continue;
            }
            *w++ = *p++;
        } else if (!strncmp(p, "\\frac", 5) && p[5] && p[5] != '{' && p[5] != ' ') {
            w += sprintf(w, "\\frac{%c}", p[5]);
            p += 6;
            if (*p && *p != '{') w += sprintf(w, "{%c}", *p++);
        } else if (!strncmp(p, "\\sqrt", 5) && p[5] && p[5] != '{' && p[5] != '[' && p[5] != ' ') {
            w += sprintf(w, "\\sqrt{%c}", p[5]);
            p += 6;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return o;
}

/* "\boxed 5" -> "5" (the braced forms are unwrapped like \text). */
static void unbox_bare(char *s) {
    for (char *p = s; (p = strstr(p, "\\boxed ")) != NULL;) memmove(p, p + 7, strlen(p + 7) + 1);
}

/* LaTeX's spacing: "\ " (a backslash and a space, not the row break "\\\\ " of a matrix),
 * \quad and \qquad go, as \, and \; do: sympy's LaTeX writes "\left( 3, \  \frac{\pi}{2}\right)". */
static void drop_latex_spaces(char *s) {
    replace_all(s, "\\qquad", " ");
    replace_all(s, "\\quad", " ");
    char *w = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] == '\\') { *w++ = *p++; *w++ = *p; continue; } /* an escaped backslash: kept whole */
        if (p[0] == '\\' && p[1] == ' ') { p++; continue; }
        *w++ = *p;
    }
    *w = 0;
}

/* "3 \cdot x", "2 \times k", "(a+5) \cdot (b+2)" -> 3x, 2k, (a+5)(b+2): a product sign before a
 * letter, or between two parentheses, is the implicit product sympy's LaTeX writes with
 * mul_symbol (Math-Verify reads the same product). Between numbers (2 \times 3) it stays. */
static void drop_product_signs(char *s) {
    static const char *const signs[] = {"\\cdot", "\\times", NULL};
    for (int k = 0; signs[k]; k++) {
        const size_t n = strlen(signs[k]);
        for (char *p = s; (p = strstr(p, signs[k])) != NULL;) {
            const char *after = p + n, *before = p;
            while (*after == ' ') after++;
            while (before > s && before[-1] == ' ') before--;
            const char prev = before > s ? before[-1] : 0;
            /* (not before a lone i: Math-Verify reads 9i as 9 times the imaginary unit, 9 \cdot i as a product with a symbol i) */
            const int imag = after[0] == 'i' && !isalpha((unsigned char)after[1]);
            const int letter = isalpha((unsigned char)*after) && !imag, parens = *after == '(' && prev == ')';
            if ((letter || parens) && prev && !isalpha((unsigned char)p[n])) memmove(p, p + n, strlen(p + n) + 1);
            else p += n;
        }
    }
}

/* sympy's "\left(-1\right) 13 x" and "(-1) \cdot 13 \cdot x" (after \left and \right are gone)
 * -> "-13x": a factor -1 before a number or letter is a minus sign; (-1)^n stays. */
static void minus_one_factors(char *s) {
    for (char *p = s; (p = strstr(p, "(-1)")) != NULL;) {
        const char *q = p + 4;
        while (*q == ' ') q++;
        if (!strncmp(q, "\\cdot", 5) && !isalpha((unsigned char)q[5])) q += 5;
        else if (!strncmp(q, "\\times", 6) && !isalpha((unsigned char)q[6])) q += 6;
        while (*q == ' ') q++;
        if (isalnum((unsigned char)*q)) {
            *p = '-';
            memmove(p + 1, q, strlen(q) + 1);
        } else {
            p += 4;
        }
    }
}

/* sympy's function calls, on the string without spaces: \cot{(x)} -> \cotx (as "\cot x" reads),
 * \sin{(2x)} -> \sin(2x). */
static void unbrace_function_args(char *s) {
    static const char *const fns[] = {"\\sin", "\\cos", "\\tan", "\\cot", "\\sec", "\\csc", "\\log", "\\ln", "\\exp", NULL};
    for (int k = 0; fns[k]; k++) {
        const size_t n = strlen(fns[k]);
        for (char *p = s; (p = strstr(p, fns[k])) != NULL;) {
            char *a = p + n;
            if (a[0] != '{' || a[1] != '(') { p += n; continue; }
            long end = match_brace(a);
            if (end < 4 || a[end - 2] != ')') { p += n; continue; }
            const int one = end == 5 && a[3] == ')'; /* {(x)} */
            if (one) { /* {(x)} -> x (spaces are gone: "\\cot x" reads \\cotx too) */
                a[0] = a[2];
                memmove(a + 1, a + end, strlen(a + end) + 1);
            } else { /* {(...)} -> (...) */
                memmove(a + end - 1, a + end, strlen(a + end) + 1);
                memmove(a, a + 1, strlen(a + 1) + 1);
            }
            p += n;
        }
    }
}

/* x^{5} -> x^5: an exponent of one letter or digit written in braces (sympy's LaTeX: x^{5} - x^{4}). */
static void unbrace_short_exponents(char *s) {
    for (char *p = s; (p = strstr(p, "^{")) != NULL; p++)
        if (isalnum((unsigned char)p[2]) && p[3] == '}') {
            p[1] = p[2];
            memmove(p + 2, p + 4, strlen(p + 4) + 1);
        }
}

/* "\text{140}_6": Math-Verify reads a text, not the number 140 in base 6: kept apart. */
static void text_digits_subscript(char *s) {
    for (char *p = s; (p = strstr(p, "\\text{")) != NULL; p++) {
        size_t d = strspn(p + 6, "0123456789");
        if (d && p[6 + d] == '}' && p[7 + d] == '_') memcpy(p + 1, "TEXT", 4); /* \TEXT{...}: never unwrapped */
    }
}

/* "2 000", "2\,220": digit groups apart are not one number for Math-Verify's LaTeX parser; nor
 * is "3 i" a multiple of the imaginary unit. */
static void split_digit_groups(char *s) {
    for (char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p)) continue;
        const int sep = p[1] == ' ' ? 1 : !strncmp(p + 1, "\\,", 2) ? 2 : 0;
        const char *g = p + 1 + sep; /* a group of exactly three digits after the separator */
        if (sep && strspn(g, "0123456789") == 3) {
            p[1] = '#';
            if (sep == 2) memmove(p + 2, p + 3, strlen(p + 3) + 1);
        } else if (p[1] == ' ' && p[2] == 'i' && !isalpha((unsigned char)p[3]) && !(*p == '1' && (p == s || !isdigit((unsigned char)p[-1])))) {
            p[1] = '#'; /* "1 i" is i for Math-Verify, "3 i" is not 3i */
        }
    }
}

/* cmd{...} arguments in lower case (Math-Verify compares text answers without case). */
static void lower_text_args(char *s, const char *cmd) {
    const long lc = (long)strlen(cmd);
    for (char *p = s; (p = strstr(p, cmd)) != NULL; p += lc) {
        long end = match_brace(p + lc - 1);
        if (end < 0) return;
        for (long i = lc; i < lc - 1 + end - 1; i++) p[i] = (char)tolower((unsigned char)p[i]);
    }
}

/* A plain word ("Evelyn", "(C)") in lower case, as the text answers above. */
/* Every letter outside a command's name in lower case: Math-Verify reads 2A as 2a and 3R^2 as 3r^2
 * (its symbols are case-blind); \\Delta and \\frac keep their names. */
static void lower_symbols(char *s) {
    for (char *p = s; *p; p++) {
        if (*p == '\\') {
            while (isalpha((unsigned char)p[1])) p++;
            continue;
        }
        *p = (char)tolower((unsigned char)*p);
    }
}

static void lower_word(char *s) {
    size_t n = strlen(s), k = 0, letters = 0;
    for (; k < n && (isalpha((unsigned char)s[k]) || s[k] == '(' || s[k] == ')'); k++) letters += isalpha((unsigned char)s[k]) != 0;
    if (k == n && (letters >= 2 || (n == 3 && s[0] == '(' && s[2] == ')')))
        for (size_t i = 0; i < n; i++) s[i] = (char)tolower((unsigned char)s[i]);
}

/* A base subscript after a number goes: 40_8, 52_{8}, 50_{(6)} -> the number (as Math-Verify
 * reads them). */
static void drop_number_subscripts(char *s) {
    for (char *p = s; (p = strchr(p, '_')) != NULL;) {
        if (p == s || !isdigit((unsigned char)p[-1])) { p++; continue; }
        char *e = p + 1;
        if (*e == '{') {
            long end = match_brace(e);
            if (end < 0) return;
            e += end;
        } else if (isalnum((unsigned char)*e)) {
            while (isalnum((unsigned char)*e)) e++;
        } else { p++; continue; }
        memmove(p, e, strlen(e) + 1);
    }
}

/* A single "a \pm b" becomes the list "a+b,a-b". */
static int split_items(const char *s, char items[][256], int max, char *open, char *close);

/* A set or a bare list whose items hold one \\pm each at most: each such item made two
 * ("\\{1\\pm\\sqrt{5},-2\\}" -> "\\{1+\\sqrt{5},1-\\sqrt{5},-2\\}", as Math-Verify reads it). A
 * tuple or an interval keeps its arity: unchanged. */
static char *expand_pm_items(char *s) {
    static char items[32][256];
    char open, close;
    const int k = split_items(s, items, 32, &open, &close);
    if (k < 2 || (open && open != '{')) return s;
    const size_t n = strlen(s);
    char *o = malloc(2 * n + 8), *w = o;
    if (!o) return s;
    w += sprintf(w, "%s", open ? "\\{" : "");
    for (int i = 0; i < k; i++) {
        char *pm = strstr(items[i], "\\pm");
        if (i) *w++ = ',';
        if (pm && !strstr(pm + 3, "\\pm")) {
            const int pre = (int)(pm - items[i]);
            w += sprintf(w, "%.*s+%s,%.*s-%s", pre, items[i], pm + 3, pre, items[i], pm + 3);
        } else {
            w += sprintf(w, "%s", items[i]);
        }
    }
    sprintf(w, "%s", open ? "\\}" : "");
    free(s);
    return o;
}

static char *expand_pm(char *s) {
    char *pm = strstr(s, "\\pm");
    if (pm && strchr(s, ',')) return expand_pm_items(s);
    if (!pm || strstr(pm + 3, "\\pm")) return s;
    const size_t n = strlen(s);
    char *o = malloc(2 * n + 4);
    if (!o) return s;
    const int pre = (int)(pm - s);
    snprintf(o, 2 * n + 4, "%.*s+%s,%.*s-%s", pre, s, pm + 3, pre, s, pm + 3);
    free(s);
    return o;
}

/* pct_div: a trailing percent divides by 100 (else it is dropped). */
static char *normalize_mode(const char *answer, int pct_div) {
    char *s = strdup(answer ? answer : "");
    if (!s) return NULL;
    unbox_bare(s);
    text_digits_subscript(s);
    split_digit_groups(s);
    unwrap(s, "\\boxed");
    unwrap(s, "\\fbox");
    lower_text_args(s, "\\text{");
    lower_text_args(s, "\\textbf{");
    lower_text_args(s, "\\mathrm{");
    unwrap(s, "\\text");
    unwrap(s, "\\textbf");
    unwrap(s, "\\mbox");
    unwrap(s, "\\mathrm");
    static const char *const drop[] = {"\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\displaystyle", "^\\circ", "^{\\circ}",
                                       "\\circ", "\\$", "$", "degrees", "\\approx", NULL};
    for (int i = 0; drop[i]; i++) replace_all(s, drop[i], "");
    drop_latex_spaces(s);
    unbrace_short_exponents(s);
    minus_one_factors(s);
    drop_product_signs(s);
    replace_all(s, ", and ", ",");
    replace_all(s, ",and ", ",");
    replace_all(s, " and ", ",");
    replace_all(s, "bmatrix", "pmatrix");
    replace_all(s, "[\\begin{matrix}", "\\begin{pmatrix}");
    replace_all(s, "\\end{matrix}]", "\\end{pmatrix}");
    replace_all(s, "+\\infty", "\\infty");
    replace_all(s, "\\in ", "=");
    replace_all(s, "\\in", "=");
    drop_number_subscripts(s);
    replace_all(s, "\\dfrac", "\\frac");
    replace_all(s, "\\tfrac", "\\frac");
    replace_all(s, "{,}", ",");
    for (char *p = s; *p; p++) if (*p == '\n' || *p == '\t') *p = ' ';
    /* trim, trailing '.', leading "x =" with a short left side */
    char *b = s;
    while (*b == ' ') b++;
    memmove(s, b, strlen(b) + 1);
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '.')) s[--n] = 0;
    char *eq = strchr(s, '='); /* "x =", "(x, y) =": a left side without digits, short */
    if (eq && eq - s <= 12 && !strchr(eq + 1, '=') && strcspn(s, "0123456789") > (size_t)(eq - s))
        memmove(s, eq + 1, strlen(eq + 1) + 1);
    /* a percent: the value over 100 ("40\%" equals 0.4, as Math-Verify reads it) */
    n = strlen(s);
    while (n && s[n - 1] == ' ') s[--n] = 0;
    int pct = n >= 2 && !strcmp(s + n - 2, "\\%") ? 2 : n >= 1 && s[n - 1] == '%' ? 1 : 0;
    if (pct) {
        s[n - pct] = 0;
        char *q = malloc(n + 8);
        if (q && pct_div) { snprintf(q, n + 8, "(%s)/100", s); free(s); s = q; }
        else free(q);
    }
    replace_all(s, "\\%", "");
    replace_all(s, "%", "");
    b = s;
    while (*b == ' ') b++;
    memmove(s, b, strlen(b) + 1);
    drop_units(s);
    /* remove remaining spaces */
    char *w = s;
    for (char *p = s; *p; p++) if (*p != ' ') *w++ = *p;
    *w = 0;
    /* thousands separators 1,234,567 (only between digit groups of three) */
    for (char *p = s; *p; p++)
        if (*p == ',' && p > s && isdigit((unsigned char)p[-1]) && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
            isdigit((unsigned char)p[3]) && !isdigit((unsigned char)p[4]))
            memmove(p, p + 1, strlen(p + 1) + 1);
    /* leading zeros of an integer: 025 -> 25 */
    char *d = s + (*s == '-');
    while (d[0] == '0' && isdigit((unsigned char)d[1])) memmove(d, d + 1, strlen(d + 1) + 1);
    unbrace_function_args(s); /* (on the string without spaces) */
    s = expand_pm(s);
    lower_word(s);
    lower_symbols(s);
    char *o = brace_short_args(s);
    free(s);
    return o;
}

char *math_normalize(const char *answer) { return normalize_mode(answer, 1); }

/* ---------------------------------------------------------------- value of numeric LaTeX */

#define MATH_MAX_DEPTH 256 /* nested groups an answer may have: deeper is not a number (no stack overflow) */

typedef struct {
    const char *p;
    int ok, depth;
} parser;

static double parse_expr(parser *ps);

static int eat(parser *ps, const char *tok) {
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n)) return 0;
    ps->p += n;
    return 1;
}

static double parse_group(parser *ps) { /* {expr} or a single atom */
    if (eat(ps, "{")) {
        double v = parse_expr(ps);
        if (!eat(ps, "}")) ps->ok = 0;
        return v;
    }
    ps->ok = 0;
    return 0;
}

static double parse_power(parser *ps);

static double parse_atom(parser *ps) {
    const char *p = ps->p;
    if (eat(ps, "-")) return -parse_power(ps); /* "5 \cdot -25" */
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        char *end;
        double v = strtod(p, &end);
        ps->p = end;
        return v;
    }
    if (eat(ps, "\\frac")) {
        double a = parse_group(ps), b = parse_group(ps);
        return a / b;
    }
    if (eat(ps, "\\sqrt")) {
        double k = 2;
        if (eat(ps, "[")) {
            k = parse_expr(ps);
            if (!eat(ps, "]")) ps->ok = 0;
        }
        return pow(parse_group(ps), 1.0 / k);
    }
    if (eat(ps, "\\pi")) return M_PI;
    if (eat(ps, "(") || eat(ps, "{")) {
        char close = ps->p[-1] == '(' ? ')' : '}';
        double v = parse_expr(ps);
        if (*ps->p != close) ps->ok = 0;
        else ps->p++;
        return v;
    }
    ps->ok = 0;
    return 0;
}

static double parse_power(parser *ps) {
    double v = parse_atom(ps);
    if (eat(ps, "^")) {
        double e = *ps->p == '{' ? parse_group(ps) : parse_atom(ps);
        v = pow(v, e);
    }
    return v;
}

static double parse_term(parser *ps) {
    const char *start = ps->p;
    double v = parse_power(ps);
    /* a mixed number: an integer right before \frac{a}{b} adds it (21\frac{9}{11} = 21 + 9/11) */
    if (ps->ok && !strncmp(ps->p, "\\frac", 5) && ps->p > start && strspn(start, "0123456789") == (size_t)(ps->p - start))
        return v + parse_power(ps);
    for (;;) {
        if (eat(ps, "\\cdot") || eat(ps, "\\times") || eat(ps, "*")) v *= parse_power(ps);
        else if (eat(ps, "/")) v /= parse_power(ps);
        else if (*ps->p == '\\' || *ps->p == '(' || isdigit((unsigned char)*ps->p)) v *= parse_power(ps); /* implicit product */
        else return v;
        if (!ps->ok) return v;
    }
}

static double parse_expr(parser *ps) {
    if (++ps->depth > MATH_MAX_DEPTH) {
        ps->ok = 0;
        return 0;
    }
    double sign = 1;
    if (eat(ps, "-")) sign = -1;
    else eat(ps, "+");
    double v = sign * parse_term(ps);
    while (ps->ok) {
        if (eat(ps, "+")) v += parse_term(ps);
        else if (eat(ps, "-")) v -= parse_term(ps);
        else break;
    }
    ps->depth--;
    return v;
}

/* Value of a normalised answer when it is purely numeric, else NAN. */
static double value_of(const char *s) {
    if (!*s) return NAN;
    parser ps = {s, 1, 0};
    double v = parse_expr(&ps);
    return (ps.ok && *ps.p == 0 && isfinite(v)) ? v : NAN;
}

static int values_equal(double a, double b) { return fabs(a - b) <= 1e-14 * fmax(1.0, fmax(fabs(a), fabs(b))); }

/* pred equals ref, or ref rounded to k decimals, k the prediction's own decimals and at least 6
 * (as Math-Verify's verdicts: 4.666667 and 14.6666666667 for 14/3, 3.141593 for pi, not 3.1416;
 * 110.0000001 is not 110). */
static int pred_matches(double pred, double ref, int k) {
    if (values_equal(pred, ref)) return 1;
    const double scale = pow(10.0, k < 6 ? 6 : k > 15 ? 15 : k);
    return values_equal(pred, round(ref * scale) / scale);
}

/* Decimals of a plain decimal literal ("-14.6666666667": 10), else 0. */
static int literal_decimals(const char *s) {
    s += *s == '-';
    s += strspn(s, "0123456789");
    if (*s != '.') return 0;
    const size_t d = strspn(s + 1, "0123456789");
    return s[1 + d] == 0 ? (int)d : 0;
}

/* ---------------------------------------------------------------- structured answers */

/* 1 when the bracket at s[0] closes only at s[n-1] ("(a)\cup(b)" is not one bracketed list). */
static int encloses(const char *s, size_t n) {
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '(' || s[i] == '[' || s[i] == '{') depth++;
        if (s[i] == ')' || s[i] == ']' || s[i] == '}') depth--;
        if (depth == 0 && i + 1 < n) return 0;
    }
    return depth == 0;
}

/* Splits "(a,b,c)" / "[a,b)" / "\{a,b\}" / "a,b" into top-level items; returns count or -1. */
static int split_items(const char *s, char items[][256], int max, char *open, char *close) {
    size_t n = strlen(s);
    const char *b = s, *e = s + n;
    *open = *close = 0;
    if (n >= 4 && !strncmp(s, "\\{", 2) && !strcmp(s + n - 2, "\\}")) { *open = '{'; *close = '}'; b += 2; e -= 2; }
    else if (n >= 2 && strchr("([", s[0]) && strchr(")]", s[n - 1]) && encloses(s, n)) { *open = s[0]; *close = s[n - 1]; b++; e--; }
    int k = 0, depth = 0;
    const char *start = b;
    for (const char *p = b; p <= e; p++) {
        if (p < e && (*p == '{' || *p == '(' || *p == '[')) depth++;
        if (p < e && (*p == '}' || *p == ')' || *p == ']')) depth--;
        if (p == e || (*p == ',' && depth == 0)) {
            if (k == max || p - start >= 255) return -1;
            memcpy(items[k], start, (size_t)(p - start));
            items[k][p - start] = 0;
            k++;
            start = p + 1;
        }
    }
    return k;
}

static int terms_equal(const char *a, const char *b);

/* A multiple-choice letter: "C", "(C)", "c" -> 'c', else 0. */
static char choice_letter(const char *s) {
    const size_t n = strlen(s);
    if (n == 1 && isalpha((unsigned char)s[0])) return (char)tolower((unsigned char)s[0]);
    if (n == 3 && s[0] == '(' && isalpha((unsigned char)s[1]) && s[2] == ')') return (char)tolower((unsigned char)s[1]);
    return 0;
}

/* a is the prediction, b the reference. */
/* s is one \frac{N}{D} and nothing else: N and D copied (each under 256 bytes). */
static int frac_parts(const char *s, char *num, char *den) {
    if (strncmp(s, "\\frac{", 6)) return 0;
    long e1 = match_brace(s + 5);
    if (e1 < 2 || e1 > 255 || s[5 + e1] != '{') return 0;
    long e2 = match_brace(s + 5 + e1);
    if (e2 < 2 || e2 > 255 || s[5 + e1 + e2]) return 0;
    memcpy(num, s + 6, (size_t)(e1 - 2)), num[e1 - 2] = 0;
    memcpy(den, s + 6 + e1, (size_t)(e2 - 2)), den[e2 - 2] = 0;
    return 1;
}

static int atoms_equal(const char *a, const char *b) {
    if (!strcmp(a, b)) return 1;
    char na[256], da[256], nb[256], db[256]; /* \frac{9a+11}{20} and \frac{11+9a}{20}: part by part */
    if (frac_parts(a, na, da) && frac_parts(b, nb, db) && (strcmp(na, nb) || strcmp(da, db)) && atoms_equal(na, nb) && atoms_equal(da, db))
        return 1; /* (else the values below: \\frac{200}{6} is \\frac{100}{3}) */
    const char ca = choice_letter(a), cb = choice_letter(b);
    if (ca && cb) return ca == cb;
    double x = value_of(a), y = value_of(b);
    if (!isnan(x) && !isnan(y)) return pred_matches(x, y, literal_decimals(a));
    return terms_equal(a, b);
}

/* Top-level signed terms of s ("-q+p" -> "-q", "+p"); count or -1. */
static int split_terms(const char *s, char items[][256], int max) {
    int k = 0, depth = 0;
    const char *start = s;
    for (const char *p = s;; p++) {
        if (*p == '{' || *p == '(' || *p == '[') depth++;
        if (*p == '}' || *p == ')' || *p == ']') depth--;
        if (!*p || (depth == 0 && p > s && (*p == '+' || *p == '-') && !strchr("^{(+-", p[-1]))) {
            if (k == max || p - start >= 254) return -1;
            int sign = *start == '+' || *start == '-';
            char sg = sign ? *start : '+';
            if (sign && (start[1] == '+' || start[1] == '-')) { sg = sg == start[1] ? '+' : '-'; sign = 2; } /* "+-18" */
            items[k][0] = sg;
            const char *t = start + sign;
            size_t len = (size_t)(p - t);
            if (len >= 2 && t[0] == 'i' && strspn(t + 1, "0123456789") == len - 1) { /* i15 -> 15i */
                memcpy(items[k] + 1, t + 1, len - 1);
                items[k][len] = 'i';
                items[k][len + 1] = 0;
            } else if (len >= 2 && t[0] == '1' && isalpha((unsigned char)t[1])) { /* 1i -> i */
                memcpy(items[k] + 1, t + 1, len - 1);
                items[k][len] = 0;
            } else {
                memcpy(items[k] + 1, t, len);
                items[k][len + 1] = 0;
            }
            if (strcmp(items[k] + 1, "0")) k++; /* a zero term adds nothing */
            start = p;
            if (!*p) break;
        }
    }
    return k;
}

/* Sums equal up to the order of their terms (4+15i and 15i+4, p-q and -q+p). */
static int terms_equal(const char *a, const char *b) {
    static char ta[16][256], tb[16][256];
    int na = split_terms(a, ta, 16), nb = split_terms(b, tb, 16);
    if (na < 1 || na != nb || (na == 1 && !strchr("+-", a[0]) && !strchr(a, '+') && !strchr(b, '+'))) return 0;
    int used[16] = {0};
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb && !found; j++)
            if (!used[j] && !strcmp(ta[i], tb[j])) used[j] = found = 1;
        if (!found) return 0;
    }
    return 1;
}

/* \begin{pmatrix} a \\ b & c \end{pmatrix}: the entries in order, compared as atoms. */
static int matrix_equal(const char *a, const char *b) {
    static const char *const open = "\\begin{pmatrix}", *const close = "\\end{pmatrix}";
    const size_t lo = strlen(open), lc = strlen(close), na = strlen(a), nb = strlen(b);
    if (na < lo + lc || nb < lo + lc || strncmp(a, open, lo) || strncmp(b, open, lo) || strcmp(a + na - lc, close) || strcmp(b + nb - lc, close))
        return 0;
    const char *pa = a + lo, *pb = b + lo, *ea = a + na - lc, *eb = b + nb - lc;
    for (;;) {
        const char *sa = pa, *sb = pb;
        while (pa < ea && *pa != '&' && !(pa[0] == '\\' && pa[1] == '\\')) pa++;
        while (pb < eb && *pb != '&' && !(pb[0] == '\\' && pb[1] == '\\')) pb++;
        char xa[256], xb[256];
        if (pa - sa > 255 || pb - sb > 255) return 0;
        snprintf(xa, sizeof xa, "%.*s", (int)(pa - sa), sa);
        snprintf(xb, sizeof xb, "%.*s", (int)(pb - sb), sb);
        if (!atoms_equal(xa, xb)) return 0;
        if ((pa == ea) != (pb == eb)) return 0;
        if (pa == ea) return 1;
        if ((*pa == '&') != (*pb == '&')) return 0;
        pa += *pa == '&' ? 1 : 2;
        pb += *pb == '&' ? 1 : 2;
    }
}

static double value_of(const char *s);

/* Two items a <= b: "[a, b]" is then an interval. */
static int closed_interval(char items[][256], int n) {
    if (n != 2) return 0;
    const double a = value_of(items[0]), b = value_of(items[1]);
    return !isnan(a) && !isnan(b) && a <= b;
}

/* An item's decorations: "x=0" -> "0", "and10" -> "10". */
static void clean_item(char *it) {
    char *eq = strchr(it, '=');
    if (eq && strcspn(it, "0123456789") > (size_t)(eq - it) && eq - it <= 3) memmove(it, eq + 1, strlen(eq + 1) + 1);
    if (!strncmp(it, "and", 3) && it[3]) memmove(it, it + 3, strlen(it + 3) + 1);
}

static int structured_equal(const char *a, const char *b) {
    static char ia[32][256], ib[32][256];
    char oa, ca, ob, cb;
    if (matrix_equal(a, b)) return 1;
    int na = split_items(a, ia, 32, &oa, &ca), nb = split_items(b, ib, 32, &ob, &cb);
    if (na < 2 || na != nb) return 0;
    for (int i = 0; i < na; i++) clean_item(ia[i]);
    for (int i = 0; i < nb; i++) clean_item(ib[i]);
    /* a bracketed list reads as a tuple: [13,-12,2] equals (13,-12,2) when neither is an interval
     * with mixed brackets */
    /* [a, b] stays an interval unless a > b (then, as longer lists, Math-Verify reads a tuple) */
    if (oa == '[' && ca == ']' && ob == '(' && cb == ')' && !closed_interval(ia, na)) oa = '(', ca = ')';
    if (ob == '[' && cb == ']' && oa == '(' && ca == ')' && !closed_interval(ib, nb)) ob = '(', cb = ')';
    /* tuples and intervals in order with the same brackets; a set or a bare list on either side:
     * any order (Math-Verify reads {-13, 14} as (-13, 14)) */
    const int ordered = (oa == '(' || oa == '[') && (ob == '(' || ob == '[');
    if ((oa == '[' || ca == ']') != (ob == '[' || cb == ']') && (!oa || !ob)) return 0; /* an interval is not a bare list */
    if (ordered && (oa != ob || ca != cb)) return 0;
    if (!ordered) {
        int used[32] = {0};
        for (int i = 0; i < na; i++) {
            int found = 0;
            for (int j = 0; j < nb && !found; j++)
                if (!used[j] && atoms_equal(ia[i], ib[j])) used[j] = found = 1;
            if (!found) return 0;
        }
        return 1;
    }
    for (int i = 0; i < na; i++)
        if (!atoms_equal(ia[i], ib[i])) return 0;
    return 1;
}

static int union_equal(const char *a, const char *b);

static int equiv_modes(const char *pred, const char *ref, int pct_pred, int pct_ref) {
    char *a = normalize_mode(pred, pct_pred), *b = normalize_mode(ref, pct_ref);
    int eq = a && b && (atoms_equal(a, b) || structured_equal(a, b) || union_equal(a, b));
    free(a);
    free(b);
    return eq;
}

static int has_percent(const char *s) { return strchr(s, '%') != NULL; }

/* The parts of a union "A\cup B\cup C": count, or -1 (too many or too long). */
static int split_union(const char *s, char parts[][256], int max) {
    int n = 0;
    for (const char *p = s, *q; n < max; p = q + 4) {
        q = strstr(p, "\\cup");
        const size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len > 255) return -1;
        snprintf(parts[n++], 256, "%.*s", (int)len, p);
        if (!q) return n;
    }
    return -1;
}

/* Unions of intervals in any order: "(-4,4)\cup(-8,-4)" equals "(-8,-4)\cup(-4,4)". */
static int union_equal(const char *a, const char *b) {
    if (!strstr(a, "\\cup") || !strstr(b, "\\cup")) return 0;
    static char pa[8][256], pb[8][256];
    const int na = split_union(a, pa, 8), nb = split_union(b, pb, 8);
    if (na < 0 || na != nb) return 0;
    int used[8] = {0};
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb && !found; j++)
            if (!used[j] && (atoms_equal(pa[i], pb[j]) || structured_equal(pa[i], pb[j]))) used[j] = found = 1;
        if (!found) return 0;
    }
    return 1;
}

/* "a/b." (a plain-text fraction then a period): Math-Verify divides by the float "b." and
 * evaluates a * (1 / b.) in double precision; its verdict is true exactly when that product is
 * the double nearest the reference (2/7. equals 2/7, 5/7. does not; measured on 414 such pairs of
 * tools/grading's corpus: every verdict). 1 or 0, or -1 when pred is not of this form. */
static int float_division_verdict(const char *pred, const char *ref) {
    const char *p = pred + strspn(pred, " ");
    const int neg = *p == '-';
    p += neg;
    const size_t na = strspn(p, "0123456789");
    if (!na || na > 15 || p[na] != '/') return -1;
    const size_t nb = strspn(p + na + 1, "0123456789");
    const char *end = p + na + 1 + nb;
    if (!nb || nb > 15 || *end != '.' || end[1 + strspn(end + 1, " ")] != 0) return -1;
    const double a = strtod(p, NULL), b = strtod(p + na + 1, NULL);
    char *r = math_normalize(ref);
    const double y = r ? value_of(r) : NAN;
    free(r);
    if (isnan(y) || b == 0) return -1;
    volatile double inv = 1.0 / b; /* two roundings, as Math-Verify's float evaluation */
    const double v = (neg ? -a : a) * inv;
    return v == y;
}

int math_equiv(const char *pred, const char *ref) {
    if (!pred || !ref) return 0;
    const int fd = float_division_verdict(pred, ref);
    if (fd >= 0) return fd;
    if (equiv_modes(pred, ref, 1, 1)) return 1;
    /* a percent reads as its number too (Math-Verify: 8\% equals 8 and 0.08), but not a negative
     * one (its -1\% stays -0.01) */
    const char *p = pred + strspn(pred, " $");
    if (has_percent(pred) && *p != '-' && equiv_modes(pred, ref, 0, 1)) return 1;
    return has_percent(ref) && equiv_modes(pred, ref, 1, 0);
}

/* ---------------------------------------------------------------- grading */

math_grade_result math_grade(const char *output, const char *reference) {
    math_grade_result r = {NULL, 0, 0};
    const char *p = output, *think_end = NULL;
    while ((p = strstr(p, "</think>")) != NULL) think_end = (p += 8);
    long at = 0;
    r.extracted = answer_find(output, &at);
    r.from_thinking = r.extracted && think_end && output + at < think_end;
    r.correct = r.extracted && math_equiv(r.extracted, reference);
    return r;
}

void math_grade_result_free(math_grade_result *r) {
    free(r->extracted);
    r->extracted = NULL;
}
