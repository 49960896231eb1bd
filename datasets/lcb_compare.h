/* lcb_compare.h - LiveCodeBench's verdict on a stdin program's output, in C: the rules of
 * lcb_runner's grade_stdio (LiveCodeBench/LiveCodeBench lcb_runner/evaluation/testing_util.py,
 * get_stripped_lines, convert_line_to_decimals and the line loop of grade_stdio, commit
 * 28fef95). Both texts are stripped of surrounding whitespace, cut at '\n' and each line
 * stripped; the line counts must agree; a line matches when it is the same text or when both
 * split on whitespace into tokens that all read as Python Decimals and the two lists are equal
 * by value (no tolerance: "1.50" equals "1.5", "0.333" does not equal "0.3333").
 * Whitespace is Python's str.isspace (ASCII and the Unicode spaces). Decimal syntax: sign,
 * digits with one optional point, exponent, '_' between digits, Inf/Infinity, NaN/sNaN with
 * optional digits (NaN never equal; sNaN, where Python would raise, counts as unequal). Not
 * accepted (Python is): non-ASCII digits, exponents beyond 10^15. Nothing here runs code.
 */
#ifndef ZP_LCB_COMPARE_H
#define ZP_LCB_COMPARE_H

#include <stddef.h>

/* 1 when LiveCodeBench would accept `got` (the program's stdout) for `expected`, else 0. */
int lcb_stdout_matches(const char *got, const char *expected);
/* 1 when both tokens [a, a+na) and [b, b+nb) read as Decimals of the same value. */
int lcb_decimal_equal(const char *a, size_t na, const char *b, size_t nb);

#endif
