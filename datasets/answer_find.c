/* answer_find.c - the stated answer of a model output, by Math-Verify's priorities
 * (answer_find.h). A scanner per pattern family with regex finditer's left-to-right,
 * non-overlapping matching; O(n * 100) per family. */
#include "answer_find.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "math_grade.h" /* math_extract_boxed */

typedef struct {
    long start, end;   /* the whole match */
    long at;           /* where the answer itself starts */
    char *answer;      /* malloc'ed */
} af_match;

typedef struct {
    af_match best;     /* of the current priority: largest end, then smallest start */
    int found;
} af_group;

static void group_offer_at(af_group *g, long start, long end, long at, char *answer) {
    if (!answer) return;
    if (!*answer) { free(answer); return; }
    if (g->found && (end < g->best.end || (end == g->best.end && start >= g->best.start))) { free(answer); return; }
    if (g->found) free(g->best.answer);
    g->best = (af_match){start, end, at, answer};
    g->found = 1;
}

static void group_offer(af_group *g, long start, long end, char *answer) { group_offer_at(g, start, end, start, answer); }

static char *dup_range(const char *s, long a, long b) {
    char *r = malloc((size_t)(b - a) + 1);
    if (!r) return NULL;
    memcpy(r, s + a, (size_t)(b - a));
    r[b - a] = 0;
    return r;
}

static int ci_at(const char *s, long i, const char *word) {
    for (long k = 0; word[k]; k++)
        if (tolower((unsigned char)s[i + k]) != word[k]) return 0;
    return 1;
}

/* ------------------------------------------------------------------ LaTeX environments */

/* Optional "\s*" percent suffix at i: the index after it (i when absent). */
static long percent_suffix(const char *s, long i) {
    long j = i;
    while (isspace((unsigned char)s[j])) j++;
    static const char *const words[] = {"\\%", "%", "percentage", "percent", "pct", NULL};
    for (int k = 0; words[k]; k++) {
        const size_t n = strlen(words[k]);
        if (k >= 2 ? (s[j] == 'P' || s[j] == 'p') && !strncmp(s + j + 1, words[k] + 1, n - 1) : !strncmp(s + j, words[k], n))
            return j + (long)n;
    }
    return i;
}

static int simple_number(const char *s, long *j) { /* -?\d+([.,]\d+)? */
    long k = *j;
    if (s[k] == '-') k++;
    if (!isdigit((unsigned char)s[k])) return 0;
    while (isdigit((unsigned char)s[k])) k++;
    if ((s[k] == '.' || s[k] == ',') && isdigit((unsigned char)s[k + 1])) {
        k++;
        while (isdigit((unsigned char)s[k])) k++;
    }
    *j = k;
    return 1;
}

#define ENV_MAX 8192 /* characters an environment may span: longer ones are not answers (and the
                       scan stays linear on text with many unclosed openers) */

/* One environment starting at i: its end (after an optional percent), content [*cs, *ce);
 * -1 when none starts here. */
static long latex_env(const char *s, long i, long *cs, long *ce) {
    const int esc = i > 0 && s[i - 1] == '\\';
    if (s[i] == '$' && s[i + 1] == '$' && !esc) { /* $$ ... $$ */
        for (long j = i + 2; s[j] && j < i + ENV_MAX; j++) /* content of one character at least */
            if (j > i + 2 && s[j] == '$' && s[j + 1] == '$' && s[j - 1] != '\\') { *cs = i + 2; *ce = j; return percent_suffix(s, j + 2); }
    }
    if (s[i] == '\\' && s[i + 1] == '[' && !esc) { /* \[ ... \] */
        for (long j = i + 2; s[j] && j < i + ENV_MAX; j++)
            if (j > i + 2 && s[j] == '\\' && s[j + 1] == ']' && s[j - 1] != '\\') { *cs = i + 2; *ce = j; return percent_suffix(s, j + 2); }
    }
    if (s[i] == '$' && !esc && !(i > 0 && isdigit((unsigned char)s[i - 1]))) { /* $ ... $, one line */
        for (long j = i + 1; s[j] && s[j] != '\n' && j < i + ENV_MAX; j++) {
            if (s[j] == '\\' && s[j + 1] == '$') { j++; continue; }
            if (s[j] == '$') {
                if (j == i + 1) break;
                *cs = i + 1; *ce = j;
                return percent_suffix(s, j + 1);
            }
        }
    }
    if (s[i] == '\\' && s[i + 1] == '(' && !esc) { /* \( ... \), one line */
        for (long j = i + 2; s[j] && s[j] != '\n' && j < i + ENV_MAX; j++)
            if (j > i + 2 && s[j] == '\\' && s[j + 1] == ')') { *cs = i + 2; *ce = j; return percent_suffix(s, j + 2); }
    }
    if (isspace((unsigned char)s[i]) && s[i + 1] == '[') { /* " [ ... ] " */
        long j = i + 2;
        while (s[j] && s[j] != '\n' && s[j] != ']' && s[j] != '[' && j < i + ENV_MAX) j++;
        if (s[j] == ']' && j > i + 2 && isspace((unsigned char)s[j + 1])) { *cs = i + 2; *ce = j; return percent_suffix(s, j + 2); }
    }
    long j = i;
    if (s[j] == '-') j++;
    if (!strncmp(s + j, "\\frac{", 6)) { /* a plain \frac{a}{b} of simple numbers */
        long k = j + 6;
        if (simple_number(s, &k) && s[k] == '}' && s[k + 1] == '{') {
            k += 2;
            if (simple_number(s, &k) && s[k] == '}') { *cs = i; *ce = k + 1; return percent_suffix(s, k + 1); }
        }
    }
    return -1;
}

/* What an environment's content yields: its last \boxed argument (boxed context) or itself. */
static char *env_answer(const char *s, long cs, long ce, int boxed) {
    char *c = dup_range(s, cs, ce);
    if (!c || !boxed) return c;
    char *b = strstr(c, "\\boxed{") ? math_extract_boxed(c) : NULL;
    free(c);
    return b;
}

/* Up to six environments joined by "and", "or" or commas from i; the end, answers "a, b". */
static long latex_envs(const char *s, long i, int boxed, char **answer) {
    long cs, ce, end = latex_env(s, i, &cs, &ce);
    if (end < 0) return -1;
    char *a = env_answer(s, cs, ce, boxed);
    if (!a) return -1;
    for (int k = 0; k < 5; k++) {
        long j = end;
        while (isspace((unsigned char)s[j])) j++;
        if (s[j] == ',') j++;
        if (!strncmp(s + j, "and", 3)) j += 3;
        else if (!strncmp(s + j, "or", 2)) j += 2;
        else if (j == end || s[j - 1] != ',') break;
        while (isspace((unsigned char)s[j])) j++;
        long cs2, ce2, e2 = latex_env(s, j, &cs2, &ce2);
        if (e2 < 0) break;
        char *b = env_answer(s, cs2, ce2, boxed);
        if (!b) break;
        char *ab = malloc(strlen(a) + strlen(b) + 3);
        if (!ab) { free(b); break; }
        strcpy(ab, a), strcat(ab, ", "), strcat(ab, b);
        free(a), free(b);
        a = ab;
        end = e2;
    }
    *answer = a;
    return end;
}

/* ------------------------------------------------------------------ numbers and expressions */

static int is_op(const char *s, long j, long *len) { /* + - * / ^ ( ) and the UTF-8 signs × ÷ */
    if (strchr("+-*/^()", s[j]) && s[j]) { *len = 1; return 1; }
    if (!strncmp(s + j, "\xc3\x97", 2) || !strncmp(s + j, "\xc3\xb7", 2)) { *len = 2; return 1; }
    return 0;
}

static int expr_char(const char *s, long j, long *len) {
    if (isdigit((unsigned char)s[j]) || s[j] == '.' || isspace((unsigned char)s[j])) { *len = 1; return 1; }
    return is_op(s, j, len);
}

/* The anchor "(^|\s|=)(\*\*)?" at i: the index after it, or -1. */
static long anchor(const char *s, long i) {
    long j = i;
    if (i == 0 && !isspace((unsigned char)s[0]) && s[0] != '=') j = 0;
    else if (isspace((unsigned char)s[i]) || s[i] == '=') j = i + 1;
    else return -1;
    if (s[j] == '*' && s[j + 1] == '*') j += 2;
    return j;
}

/* An expression "-?\(?-?\d[chars]*[op][chars]+\)?" then "(\*\*)?(.|,|:|\s|\)|\$|end)" at j: the
 * expression's end (before the suffix), or -1. Greedy with backtracking, as the regex. */
#define EXPR_MAX_RUN 512 /* characters an expression may run to (the regex has no bound; answers are short) */

static long expr_at(const char *s, long j) {
    long k = j, len;
    if (s[k] == '-') k++;
    if (s[k] == '(') k++;
    if (s[k] == '-') k++;
    if (!isdigit((unsigned char)s[k])) return -1;
    k++;
    long run[EXPR_MAX_RUN + 1], n = 0, first_op = -1; /* run[q]: start of run character q */
    run[0] = k;
    while (n < EXPR_MAX_RUN && expr_char(s, run[n], &len)) {
        if (first_op < 0 && is_op(s, run[n], &len)) first_op = n;
        run[n + 1] = run[n] + len;
        n++;
    }
    /* m run characters used: "[chars]*[op][chars]+" needs an operator among the first m - 1;
     * the longest m first, each with and without the optional ')', then the suffix */
    for (long m = n; m >= 2 && first_op >= 0 && first_op + 1 < m; m--) {
        const long end = run[m];
        for (int paren = s[end] == ')'; paren >= 0; paren--) {
            long t = end + paren;
            if (s[t] == '*' && s[t + 1] == '*') t += 2;
            if (!s[t] || strchr(".,:)$", s[t]) || isspace((unsigned char)s[t])) return end + paren;
        }
    }
    return -1;
}

/* A number at j (currency sign allowed before it): thousands "1,234.5", decimals "12.5" or
 * "12,5", ".5", integers; an optional percent. The end, or -1; *ns, *ne the number itself. */
static long number_at(const char *s, long j, long *ns, long *ne, int *grouped) {
    *grouped = 0;
    static const char *const cur[] = {"$", "\xe2\x82\xac", "\xc2\xa3", "\xc2\xa5", "\xe2\x82\xb9", NULL};
    for (int c = 0; cur[c]; c++)
        if (!strncmp(s + j, cur[c], strlen(cur[c]))) { j += (long)strlen(cur[c]); break; }
    if (j > 0 && isdigit((unsigned char)s[j - 1])) return -1;
    long k = j;
    *ns = j;
    int neg = s[k] == '-';
    if (neg) k++;
    if (s[k] >= '1' && s[k] <= '9') { /* thousands groups */
        long d = k, g = 0;
        while (isdigit((unsigned char)s[d]) && d - k < 3) d++;
        long e = d;
        while ((s[e] == ',' || s[e] == ' ') && isdigit((unsigned char)s[e + 1]) && isdigit((unsigned char)s[e + 2]) &&
               isdigit((unsigned char)s[e + 3])) { e += 4; g++; }
        if (g > 0 && !isdigit((unsigned char)s[d])) {
            if (s[e] == '.' && isdigit((unsigned char)s[e + 1])) { e++; while (isdigit((unsigned char)s[e])) e++; }
            *ne = e;
            *grouped = 1;
            return percent_suffix(s, e);
        }
    }
    if (isdigit((unsigned char)s[k])) {
        while (isdigit((unsigned char)s[k])) k++;
        if ((s[k] == '.' || s[k] == ',') && isdigit((unsigned char)s[k + 1])) { k++; while (isdigit((unsigned char)s[k])) k++; }
        *ne = k;
        return percent_suffix(s, k);
    }
    if (!neg && s[k] == '.' && isdigit((unsigned char)s[k + 1])) {
        k++;
        while (isdigit((unsigned char)s[k])) k++;
        *ne = k;
        return percent_suffix(s, k);
    }
    return -1;
}

/* The number's text, thousands separators removed ("1 234" is the number 1234), a decimal comma
 * made a point. */
static char *number_text(const char *s, long ns, long ne, int grouped) {
    char *r = dup_range(s, ns, ne);
    if (r && !grouped) { /* a decimal comma: "-2,1" is -2.1 for Math-Verify's number pattern */
        char *c = strchr(r, ',');
        if (c) *c = '.';
    }
    if (r && grouped) {
        char *w = r;
        for (char *p = r; *p; p++)
            if (*p != ',' && *p != ' ') *w++ = *p;
        *w = 0;
    }
    return r;
}

/* expr_or_number at i (anchor included): the match end, the answer text. not_eq: the
 * "(?!\s*=)" of the answer patterns. */
static long expr_or_number(const char *s, long i, int not_eq, char **answer) {
    long j = anchor(s, i);
    if (j < 0) return -1;
    long e = expr_at(s, j), ns, ne;
    if (e >= 0) {
        long t = e;
        while (isspace((unsigned char)s[t])) t++;
        if (!not_eq || s[t] != '=') { *answer = dup_range(s, j, e); return e; }
    }
    int grouped;
    e = number_at(s, j, &ns, &ne, &grouped);
    if (e < 0) return -1;
    long t = e;
    while (isspace((unsigned char)s[t])) t++;
    if (not_eq && s[t] == '=') return -1;
    *answer = number_text(s, ns, ne, grouped);
    return e;
}

/* ------------------------------------------------------------------ the prioritised patterns */

/* "final answer is" [:] \s* ANSWER [.] [\s] "I hope" (hope) or "final answer" .{0,100}? \s+ "is"
 * [:] ANSWER (latex: \s* before it); all matches offered to g. */
static void final_answer(const char *s, long n, int hope, af_group *g) {
    for (long i = 0; i < n; i++) {
        if (!ci_at(s, i, "final answer")) continue;
        for (int latex = 0; latex < 2; latex++) {
            long starts[101], ns = 0;
            if (hope) {
                if (!ci_at(s, i + 12, " is")) continue;
                starts[ns++] = i + 15;
            } else {
                for (long k = i + 12; k <= i + 112 && k < n && ns < 101; k++) { /* lazy: the first "\s+is" that works */
                    if (!latex && s[k] == '\n' && k > i + 12) break; /* '.' stops at newlines outside LaTeX patterns */
                    long w = k;
                    if (!isspace((unsigned char)s[w])) continue;
                    while (isspace((unsigned char)s[w])) w++;
                    if (s[w] == 'i' && s[w + 1] == 's') starts[ns++] = w + 2;
                }
            }
            for (long q = 0; q < ns; q++) {
                long j = starts[q];
                if (s[j] == ':') j++;
                char *a = NULL;
                long e;
                if (latex) {
                    while (isspace((unsigned char)s[j])) j++;
                    e = latex_envs(s, j, 0, &a);
                } else {
                    if (hope) while (isspace((unsigned char)s[j]) && isspace((unsigned char)s[j + 1])) j++;
                    e = expr_or_number(s, j, 0, &a);
                }
                if (e < 0) continue;
                if (hope) {
                    long h = e;
                    if (s[h] == '.') h++;
                    if (isspace((unsigned char)s[h])) h++;
                    if (strncmp(s + h, "I hope", 6)) { free(a); continue; }
                    e = h + 6;
                }
                group_offer(g, i, e, a);
                break;
            }
        }
    }
}

/* "answer" [:] then ANSWER within 50 characters (or after the last "=" within 100, for
 * expressions); colon: the colon is required (priority 100), else not (200). */
static void answer_word(const char *s, long n, int colon, af_group *g) {
    for (long i = 0; i < n; i++) {
        if (!ci_at(s, i, "answer")) continue;
        long j0 = i + 6;
        if (colon) { if (s[j0] != ':') continue; j0++; }
        for (int latex = 0; latex < 2; latex++) {
            char *a = NULL;
            long e = -1;
            if (!latex) { /* (.{0,100}=\s*) greedy first, then .{0,50}? lazy; no newlines */
                long last_eq[101], ne = 0;
                for (long k = j0; k < j0 + 100 && s[k] && s[k] != '\n'; k++)
                    if (s[k] == '=') last_eq[ne++] = k;
                for (long q = ne - 1; q >= 0 && e < 0; q--) {
                    long j = last_eq[q] + 1;
                    while (isspace((unsigned char)s[j])) j++;
                    /* the anchor wants a space or '=' before the number: the regex backtracks \s* */
                    for (long b = j; b > last_eq[q] && e < 0; b--) e = expr_or_number(s, b - 1 >= last_eq[q] ? b - 1 : b, 1, &a);
                }
                for (long k = j0; k <= j0 + 50 && e < 0 && s[k] && (k == j0 || s[k - 1] != '\n'); k++) e = expr_or_number(s, k, 1, &a);
            } else {
                for (long k = j0; k <= j0 + 50 && e < 0 && s[k]; k++) e = latex_envs(s, k, 0, &a);
            }
            if (e >= 0) group_offer(g, i, e, a);
        }
    }
}

/* Every balanced \boxed{...} argument in [a, b): one as itself, several (distinct) as the set
 * "\{x, y\}" (Math-Verify reads "\boxed{1}, then \boxed{2}" as {1, 2}). */
static const char *next_box(const char *p) { /* the next \boxed{ or \fbox{ at or after p */
    const char *x = strstr(p, "\\boxed{"), *y = strstr(p, "\\fbox{");
    return !x ? y : !y ? x : x < y ? x : y;
}

/* The argument of the last balanced \boxed{...} or \fbox{...} that starts in [a, b), or NULL. */
static char *last_boxed(const char *s, long a, long b) {
    long at = -1, n = 0;
    for (const char *p = s + a; (p = next_box(p)) != NULL && p < s + b; p++) {
        const long open = p[1] == 'b' ? 6 : 5; /* index of the '{' */
        int depth = 0;
        long e = -1;
        for (long i = open; p[i]; i++) {
            if (p[i] == '\\' && p[i + 1]) { i++; continue; }
            if (p[i] == '{') depth++;
            else if (p[i] == '}' && --depth == 0) { e = i; break; }
        }
        if (e < 0) break;
        at = (p - s) + open + 1;
        n = e - open - 1;
    }
    return at < 0 ? NULL : dup_range(s, at, at + n);
}

/* \boxed: LaTeX environments holding one (joined), and a plain \boxed{...} (or \fbox{...}),
 * whose match runs from the first to the text's last '}' as Math-Verify's does, yielding the
 * last boxed argument in it. */
static void boxed(const char *s, long n, af_group *g) {
    for (long i = 0; i < n; i++) {
        char *a = NULL;
        long e = latex_envs(s, i, 1, &a);
        if (e >= 0) group_offer(g, i, e, a);
    }
    const char *first = next_box(s), *last_brace = strrchr(s, '}');
    if (first && last_brace && last_brace > first + 6) {
        const char *from = first; /* where the last boxed answer starts, for from_thinking */
        for (const char *p = first; (p = next_box(p)) != NULL && p < last_brace; p++) from = p;
        group_offer_at(g, first - s, last_brace - s + 1, from - s, last_boxed(s, first - s, last_brace - s + 1));
    }
}

/* Priority 300: every environment, expression and number, finditer style per pattern. */
static void anywhere(const char *s, long n, af_group *g) {
    for (long i = 0; i < n;) {
        char *a = NULL;
        long e = latex_envs(s, i, 0, &a);
        if (e >= 0) { group_offer(g, i, e, a); i = e > i ? e : i + 1; }
        else i++;
    }
    for (int expr = 1; expr >= 0; expr--)
        for (long i = 0; i < n;) {
            long j = anchor(s, i), e = -1, ns, ne;
            int grouped = 0;
            if (j >= 0) e = expr ? expr_at(s, j) : number_at(s, j, &ns, &ne, &grouped);
            if (e >= 0) {
                long t = e; /* the expression pattern's suffix is part of its match */
                if (expr) { if (s[t] == '*' && s[t + 1] == '*') t += 2; if (s[t]) t++; }
                group_offer(g, i, expr ? t : e, expr ? dup_range(s, j, e) : number_text(s, ns, ne, grouped));
                i = (expr ? t : e) > i ? (expr ? t : e) : i + 1;
            } else {
                i++;
            }
        }
}

char *answer_find(const char *text, long *at) {
    const long n = (long)strlen(text);
    for (int p = 0; p < 5; p++) {
        af_group g = {{0, 0, 0, NULL}, 0};
        if (p == 0) final_answer(text, n, 1, &g);
        else if (p == 1) { final_answer(text, n, 0, &g); boxed(text, n, &g); }
        else if (p == 2) answer_word(text, n, 1, &g);
        else if (p == 3) answer_word(text, n, 0, &g);
        else anywhere(text, n, &g);
        if (g.found) {
            if (at) *at = g.best.at;
            return g.best.answer;
        }
    }
    return NULL;
}
