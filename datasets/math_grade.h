/* math_grade.h - answer extraction and equivalence for math benchmarks (AIME, AMC, MATH-500,
 * GSM8K). Never includes engine headers.
 *
 * Extraction: answer_find.h, Math-Verify's priorities over the whole output (a boxed answer,
 * "final answer is", "answer:", else the last LaTeX or number); from_thinking when that answer
 * lies before the last </think>.
 * Equivalence, following Math-Verify 0.9.0's verdicts (tools/grading/agreement.py measures how
 * closely): normalised strings (spaces, \left/\right, \!, ^\circ, \text{} without case, \boxed and
 * \fbox, units, dfrac/tfrac, $, trailing '.', thousands separators, leading zeros, "x =" and
 * "x \in" prefixes, base subscripts dropped, \pm as two answers), then numbers and simple LaTeX
 * expressions compared by value (\frac, mixed numbers, \sqrt, \pi, ^, implicit products, a/b,
 * decimals: a decimal prediction matches the reference rounded to its own decimals, at least 6;
 * a percent reads as x/100 or x), sums up to the order of their terms, tuples and intervals
 * element by element, sets and bare lists in any order, matrices entry by entry, unions of
 * intervals in any order; "a/b." in plain text as Math-Verify's float division a * (1 / b.)
 * (its verdict then depends on double rounding: 2/7. equals 2/7, 5/7. does not).
 */
#ifndef ZP_MATH_GRADE_H
#define ZP_MATH_GRADE_H

typedef struct {
    char *extracted;   /* malloc'ed answer text, NULL when none was found */
    int from_thinking; /* the answer came from the thinking part only */
    int correct;
} math_grade_result;

/* Content of the last \boxed / \fbox in text[0..], or NULL (malloc'ed). */
char *math_extract_boxed(const char *text);
/* Canonical form used for string comparison (malloc'ed). */
char *math_normalize(const char *answer);
/* 1 when pred and ref denote the same answer. */
int math_equiv(const char *pred, const char *ref);
/* Extract from a model output (answer_find.h: Math-Verify's priorities over the whole output)
 * and compare with the reference. */
math_grade_result math_grade(const char *output, const char *reference);
void math_grade_result_free(math_grade_result *r);

#endif
