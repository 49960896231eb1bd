/* test_grading.c - the math grader on every MATH-500 reference answer written in several
 * equivalent forms (boxed in a sentence, spaces, \dfrac, \left/\right, $...$, trailing '.'),
 * integer answers against their neighbours, hand-picked equivalences and non-equivalences,
 * the extraction traps (boxed only in the thinking part, two boxed answers, truncated output),
 * GSM8K's number fallback, and the metrics against hand-computed values. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "files.h"
#include "math_grade.h"
#include "metrics.h"
#include "test_util.h"

static char *subst(const char *s, const char *from, const char *to) {
    size_t n = strlen(s) * 3 + 64;
    char *o = malloc(n), *w = o;
    for (const char *p = s; *p;) {
        if (!strncmp(p, from, strlen(from))) { w += sprintf(w, "%s", to); p += strlen(from); }
        else *w++ = *p++;
    }
    *w = 0;
    return o;
}

static void test_math500_forms(void) {
    char path[512], *txt;
    snprintf(path, sizeof path, "%s/../../datasets/data/math500.jsonl", ZP_TEST_DATA);
    if (zp_read_file(path, &txt, NULL) != ZP_OK) {
        CHECK_OK(ZP_ERR_IO);
        return;
    }
    int n = 0, fail = 0, ints = 0, int_fail = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const char *ref = cJSON_GetObjectItemCaseSensitive(o, "answer")->valuestring;
        char *forms[6], buf[2048];
        snprintf(buf, sizeof buf, "Thus the final answer is $\\boxed{%s}$.", ref);
        math_grade_result g = math_grade(buf, ref);
        forms[0] = subst(ref, ",", ", ");
        forms[1] = subst(ref, "\\frac", "\\dfrac");
        forms[2] = ref[0] == '(' ? subst(ref, "(", "\\left( ") : strdup(ref);
        snprintf(buf, sizeof buf, "$%s$", ref);
        forms[3] = strdup(buf);
        snprintf(buf, sizeof buf, "%s.", ref);
        forms[4] = strdup(buf);
        forms[5] = subst(ref, " ", "");
        int ok = g.correct;
        for (int f = 0; f < 6; f++) {
            int e = math_equiv(forms[f], ref);
            if (!e) fprintf(stderr, "math500 form %d of [%s]: [%s] not equivalent\n", f, ref, forms[f]);
            ok &= e;
            free(forms[f]);
        }
        if (!g.correct) fprintf(stderr, "math500: boxed [%s] not extracted/graded (got [%s])\n", ref, g.extracted ? g.extracted : "");
        math_grade_result_free(&g);
        fail += !ok;
        n++;
        const cJSON *ai = cJSON_GetObjectItemCaseSensitive(o, "answer_int");
        if (cJSON_IsNumber(ai)) { /* a neighbouring integer must not pass */
            ints++;
            snprintf(buf, sizeof buf, "%d", ai->valueint + 1);
            int_fail += math_equiv(buf, ref);
        }
        cJSON_Delete(o);
    }
    free(txt);
    printf("math500: %d answers, %d with a failing form; %d integer answers, %d neighbours accepted\n", n, fail, ints, int_fail);
    CHECK(n == 500 && fail == 0);
    CHECK(ints > 300 && int_fail == 0);
}

static void test_equivalences(void) {
    const char *same[][2] = {{"\\frac{1}{2}", "0.5"}, {"1/2", "\\dfrac12"}, {"\\tfrac{1}{2}", "\\frac{1}{2}"}, {"2\\sqrt{3}", "\\sqrt{12}"},
                             {"\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"}, {"3\\pi", "3 \\pi"}, {"(1,2)", "\\left(1, 2\\right)"},
                             {"\\{1,2,3\\}", "\\{3,1,2\\}"}, {"1,000", "1000"}, {"025", "25"}, {"x = 5", "5"}, {"5 cm", "5"},
                             {"90^\\circ", "90"}, {"\\text{(C)}", "(C)"}, {"10\\%", "10"}, {"-\\frac{3}{4}", "-0.75"},
                             {"\\sqrt[3]{8}", "2"}, {"2^{10}", "1024"}, {"12.0", "12"}, {"1{,}000", "1000"},
                             /* as sympy's LaTeX writes them (Math-Verify: equal; issue 37's held-out forms) */
                             {"x^{5} - x^{4}", "x^5 - x^4"}, {"3 x", "3x"}, {"x^{2} + 2 x + 1", "x^2+2x+1"},
                             {"\\left( 3, \\  \\frac{\\pi}{2}\\right)", "\\left( 3, \\frac{\\pi}{2} \\right)"}, {"30.0", "30\\text{ degrees}"},
                             {"2 \\cdot k + 2", "2k+2"}, {"6 \\times r^{2} - 4 \\times r - 24", "6r^2-4r-24"},
                             {"\\left(a + 5\\right) \\cdot \\left(b + 2\\right)", "(a+5)(b+2)"}, {"\\frac{270}{7}", "\\frac{270}7\\text{ degrees}"},
                             {"(1, 2) \\quad", "(1,2)"}, {"5 m", "5"},
                             {"\\left(-1\\right) \\cdot 13 \\cdot x + 3", "-13x+3"}, {"y = \\left(-1\\right) 2 x", "y = -2x"},
                             {"\\cot{\\left(x \\right)}", "\\cot x"}, {"\\frac{9 a + 11}{20}", "\\frac{11+9a}{20}"},
                             {"3 r^{2}", "3R^2"}, {"2a", "2A"}, {"\\left\\{-2, 1 - \\sqrt{5}, 1 + \\sqrt{5}\\right\\}", "\\{1\\pm\\sqrt{5},-2\\}"},
                             {"\\frac{200}{6}", "\\frac{100}{3}"}};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        if (!math_equiv(same[i][0], same[i][1])) fprintf(stderr, "[%s] vs [%s] should be equivalent\n", same[i][0], same[i][1]);
        CHECK(math_equiv(same[i][0], same[i][1]));
    }
    const char *diff[][2] = {{"2", "3"}, {"\\frac{1}{3}", "0.33"}, {"[0,1)", "(0,1]"}, {"(1,2)", "(2,1)"}, {"\\sqrt{2}", "2"}, {"", "0"},
                             {"12", "120"}, {"-5", "5"},
                             /* a product sign between numbers is kept; 9 \\cdot i is not 9i (Math-Verify: a symbol i) */
                             {"2 \\times 3", "23"}, {"9 \\cdot i + 6", "6+9i"},
                             /* (-1)^n is not -1^n; a tuple keeps its arity (no \\pm expansion) */
                             {"(-1)^{n}", "-1^n"}, {"(1\\pm\\sqrt{5}, 2)", "(1+\\sqrt{5}, 1-\\sqrt{5}, 2)"},
                             /* a matrix row break "\\\\ " is not LaTeX's "\\ " space */
                             {"\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 12 \\end{pmatrix}"}};
    for (size_t i = 0; i < sizeof diff / sizeof *diff; i++) {
        if (math_equiv(diff[i][0], diff[i][1])) fprintf(stderr, "[%s] vs [%s] should differ\n", diff[i][0], diff[i][1]);
        CHECK(!math_equiv(diff[i][0], diff[i][1]));
    }
}

/* The verdicts below are Math-Verify 0.9.0's on the same output and reference (its protocol as
 * in tools/grading/math_verify_grade.py), which the builtin grader follows (a truncated
 * \boxed{12 yields nothing, the last number of an unboxed output is its answer), except two
 * readings kept from this grader's own traps, where Math-Verify reads no answer (a bare
 * \fbox{7}) or a set ({1, 2} for "\boxed{1}, then finally \boxed{2}"). */
static void test_extraction_traps(void) {
    math_grade_result g = math_grade("<think>maybe \\boxed{3}</think>The answer is 4.", "3");
    CHECK(g.correct && g.from_thinking); /* a boxed answer (priority 50) beats "the answer is" (200) */
    math_grade_result_free(&g);
    g = math_grade("<think>\\boxed{3}</think>So \\boxed{4}.", "4");
    CHECK(g.correct && !g.from_thinking);
    math_grade_result_free(&g);
    g = math_grade("First \\boxed{1}, then finally \\boxed{2}", "2"); /* the last of two (Math-Verify: {1, 2}) */
    CHECK(g.correct && g.extracted && !strcmp(g.extracted, "2"));
    math_grade_result_free(&g);
    g = math_grade("We get $\\boxed{1}$. Rechecking: the answer is $\\boxed{2}$.", "2"); /* the last environment */
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("<think>long reasoning ... \\boxed{12", "12"); /* truncated: unbalanced */
    CHECK(!g.correct && g.extracted == NULL);
    math_grade_result_free(&g);
    g = math_grade("so \\boxed{\\frac{1}{\\sqrt{4}}}", "\\frac12");
    CHECK(g.correct && g.extracted && !strcmp(g.extracted, "\\frac{1}{\\sqrt{4}}"));
    math_grade_result_free(&g);
    g = math_grade("hence \\boxed 5 and done", "5");
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("\\fbox{7}", "7"); /* a box (Math-Verify: no answer) */
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("The answer is $\\fbox{7}$.", "7");
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("She makes 9 * 2 = $18 every day.", "18"); /* the last number */
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("Total: 2,125 dollars", "2,125");
    CHECK(g.correct);
    math_grade_result_free(&g);
    g = math_grade("Therefore, the final answer is $87$.", "87");
    CHECK(g.correct && g.extracted && !strcmp(g.extracted, "87"));
    math_grade_result_free(&g);
    g = math_grade("**Answer:** 204", "204");
    CHECK(g.correct);
    math_grade_result_free(&g);
}

static void test_metrics(void) {
    CHECK_NEAR(metrics_pass_at_k_problem(5, 2, 1), 0.4, 1e-12);
    CHECK_NEAR(metrics_pass_at_k_problem(5, 2, 2), 0.7, 1e-12); /* 1 - C(3,2)/C(5,2) */
    CHECK_NEAR(metrics_pass_at_k_problem(5, 0, 3), 0.0, 1e-12);
    CHECK_NEAR(metrics_pass_at_k_problem(5, 3, 3), 1.0, 1e-12); /* n - c < k */
    const int ns[4] = {4, 4, 2, 4}, cs[4] = {4, 0, 1, 2};
    metrics_counts m = {4, ns, cs};
    CHECK_NEAR(metrics_pass_at_k(&m, 1), (1.0 + 0 + 0.5 + 0.5) / 4, 1e-12);
    CHECK_NEAR(metrics_pass_at_k(&m, 2), (1.0 + 0 + 1.0 + (1 - 1.0 / 6)) / 4, 1e-12);
    double lo, hi, lo2, hi2;
    metrics_bootstrap_ci(&m, 2000, 0.95, 7, &lo, &hi);
    metrics_bootstrap_ci(&m, 2000, 0.95, 7, &lo2, &hi2);
    CHECK(lo == lo2 && hi == hi2);        /* seeded */
    CHECK(lo <= 0.5 && hi >= 0.5 && lo >= 0 && hi <= 1 && hi > lo);
    const int same_c[4] = {2, 2, 1, 2};
    metrics_counts flat = {4, ns, same_c}; /* every problem scores 0.5: no spread */
    metrics_bootstrap_ci(&flat, 500, 0.95, 1, &lo, &hi);
    CHECK_NEAR(lo, 0.5, 1e-12);
    CHECK_NEAR(hi, 0.5, 1e-12);
    const int cb[4] = {4, 2, 2, 2};
    metrics_counts m2 = {4, ns, cb};
    double d = metrics_paired_diff(&m, &m2, 1000, 0.95, 3, &lo, &hi);
    CHECK_NEAR(d, (0 + 0.5 + 0.5 + 0) / 4, 1e-12);
    CHECK(lo <= d && d <= hi);
}

/* 200,000 nested brackets inside \boxed{}: graded (wrong), not a stack overflow. */
static void test_deep_nesting(void) {
    const char *opens = "({";
    for (int k = 0; k < 2; k++) {
        size_t n = 200000;
        char *t = malloc(n + 32);
        CHECK(t != NULL);
        if (!t) return;
        memcpy(t, "\\boxed{", 7);
        memset(t + 7, opens[k], n);
        memcpy(t + 7 + n, "1}", 3);
        math_grade_result g = math_grade(t, "1");
        CHECK(!g.correct);
        math_grade_result_free(&g);
        free(t);
    }
}

int main(void) {
    test_deep_nesting();
    test_math500_forms();
    test_equivalences();
    test_extraction_traps();
    test_metrics();
    return zp_test_finish("test_grading");
}
