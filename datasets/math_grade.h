/* math_grade.h - answer extraction and equivalence for math benchmarks (AIME, AMC, MATH-500,
 * GSM8K). Never includes engine headers.
 *
 * Extraction: the last \boxed{...} / \boxed x / \fbox{...} of the answer part (after the last
 * </think>); when the answer part has none, the last one of the whole text (as Math-Verify on
 * the full output does) with from_thinking set; the last number only when asked.
 * Equivalence: normalised strings (spaces, \left/\right, \!, ^\circ, \text{}, units, dfrac/tfrac,
 * $, trailing '.', thousands separators, leading zeros, "x =" prefixes), then numbers and simple
 * LaTeX expressions compared by value (\frac, \sqrt, \pi, ^, implicit products, a/b,
 * decimals), tuples and intervals element by element, and sets ignoring order.
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
/* The last number of the text (integers, decimals, a/b), or NULL (malloc'ed). */
char *math_extract_last_number(const char *text);
/* Canonical form used for string comparison (malloc'ed). */
char *math_normalize(const char *answer);
/* 1 when pred and ref denote the same answer. */
int math_equiv(const char *pred, const char *ref);
/* Extract from a model output and compare with the reference. number_fallback: use the last
 * number when no boxed answer exists (GSM8K-style prompts). */
math_grade_result math_grade(const char *output, const char *reference, int number_fallback);
void math_grade_result_free(math_grade_result *r);

#endif
