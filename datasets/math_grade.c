/* math_grade.c - see math_grade.h. Plain C string processing; a small recursive-descent
 * evaluator for numeric LaTeX (value comparison with relative tolerance 1e-9). */
#include "math_grade.h"

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

char *math_extract_last_number(const char *text) {
    const char *last = NULL;
    long last_len = 0;
    for (const char *p = text; *p;) {
        if (isdigit((unsigned char)*p) || ((*p == '-' || *p == '.') && isdigit((unsigned char)p[1]))) {
            const char *s = p;
            p++;
            while (isdigit((unsigned char)*p) || ((*p == '.' || *p == ',' || *p == '/') && isdigit((unsigned char)p[1]))) p++;
            last = s;
            last_len = p - s;
        } else {
            p++;
        }
    }
    return last ? dup_range(last, last_len) : NULL;
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
    if (p > cut && isalpha((unsigned char)*p)) { *cut = 0; return; }
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
        if (!strncmp(p, "\\frac", 5) && p[5] && p[5] != '{' && p[5] != ' ') {
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

char *math_normalize(const char *answer) {
    char *s = strdup(answer ? answer : "");
    if (!s) return NULL;
    unwrap(s, "\\text");
    unwrap(s, "\\textbf");
    unwrap(s, "\\mbox");
    unwrap(s, "\\mathrm");
    static const char *const drop[] = {"\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\displaystyle", "^\\circ", "^{\\circ}",
                                       "\\circ", "\\$", "$", "\\%", "%", "degrees", NULL};
    for (int i = 0; drop[i]; i++) replace_all(s, drop[i], "");
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
    char *eq = strchr(s, '=');
    if (eq && eq - s <= 3 && !strchr(eq + 1, '=')) memmove(s, eq + 1, strlen(eq + 1) + 1);
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
    char *o = brace_short_args(s);
    free(s);
    return o;
}

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

static double parse_atom(parser *ps) {
    const char *p = ps->p;
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
    double v = parse_power(ps);
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

static int values_equal(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))); }

/* ---------------------------------------------------------------- structured answers */

/* Splits "(a,b,c)" / "[a,b)" / "\{a,b\}" / "a,b" into top-level items; returns count or -1. */
static int split_items(const char *s, char items[][256], int max, char *open, char *close) {
    size_t n = strlen(s);
    const char *b = s, *e = s + n;
    *open = *close = 0;
    if (n >= 4 && !strncmp(s, "\\{", 2) && !strcmp(s + n - 2, "\\}")) { *open = '{'; *close = '}'; b += 2; e -= 2; }
    else if (n >= 2 && strchr("([", s[0]) && strchr(")]", s[n - 1])) { *open = s[0]; *close = s[n - 1]; b++; e--; }
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

static int atoms_equal(const char *a, const char *b) {
    if (!strcmp(a, b)) return 1;
    double x = value_of(a), y = value_of(b);
    return !isnan(x) && !isnan(y) && values_equal(x, y);
}

static int structured_equal(const char *a, const char *b) {
    static char ia[32][256], ib[32][256];
    char oa, ca, ob, cb;
    int na = split_items(a, ia, 32, &oa, &ca), nb = split_items(b, ib, 32, &ob, &cb);
    if (na < 2 || na != nb || oa != ob || ca != cb) return 0;
    if (oa == '{') { /* sets: any order */
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

int math_equiv(const char *pred, const char *ref) {
    if (!pred || !ref) return 0;
    char *a = math_normalize(pred), *b = math_normalize(ref);
    int eq = a && b && (atoms_equal(a, b) || structured_equal(a, b));
    free(a);
    free(b);
    return eq;
}

/* ---------------------------------------------------------------- grading */

math_grade_result math_grade(const char *output, const char *reference, int number_fallback) {
    math_grade_result r = {NULL, 0, 0};
    const char *answer = output, *p = output;
    while ((p = strstr(p, "</think>")) != NULL) answer = (p += 8);
    r.extracted = math_extract_boxed(answer);
    if (!r.extracted && answer != output && (r.extracted = math_extract_boxed(output)) != NULL) r.from_thinking = 1;
    if (!r.extracted && number_fallback) r.extracted = math_extract_last_number(answer);
    r.correct = r.extracted && math_equiv(r.extracted, reference);
    return r;
}

void math_grade_result_free(math_grade_result *r) {
    free(r->extracted);
    r->extracted = NULL;
}
