/* answer_find.h - where a model output states its final answer, found the way Math-Verify's
 * parser finds it in a whole output (math-verify 0.9.0, math_verify/parser.py: the LaTeX and
 * expression extraction targets with their default configs, lazy_latex_regex, lazy_expr_regex,
 * extract_target_from_pred). Its rules, as implemented here (own code, behaviour read from that
 * file):
 *   priority 0    "final answer is" [":"] <answer> ["."] [" "] "I hope"
 *   priority 50   "final answer" ... (at most 100 characters) "is" [":"] <answer>; a \boxed{...}
 *                 (alone, or inside $...$ / \[...\] and friends)
 *   priority 100  "answer:" ... (at most 50 characters, or up to the last "=" within 100) <answer>
 *   priority 200  "answer" ... likewise, without the colon
 *   priority 300  any LaTeX environment ($...$, $$...$$, \(...\), \[...\], " [...] ", a plain
 *                 \frac{a}{b}), any number or arithmetic expression preceded by a space or "="
 * where <answer> is a LaTeX environment (up to six joined by "and", "or" or commas) or a number
 * or expression; case-insensitive keywords; within the best priority with a match, the match
 * that ends last (then starts first) gives the answer. Differences: Math-Verify moves on to the
 * next match when sympy cannot parse one (here the first match is taken); of several plain
 * boxed answers Math-Verify makes a set ("\boxed{1}, then finally \boxed{2}" reads {1, 2}),
 * here the last one is the answer (2), and a bare \fbox{...} counts as a box here, not for
 * Math-Verify (neither changes a verdict of tools/grading's corpus); regex backtracking beyond
 * these rules is not reproduced. Pure string code, no allocation but the result.
 */
#ifndef ZP_ANSWER_FIND_H
#define ZP_ANSWER_FIND_H

/* The stated answer of text (malloc'ed; several joined answers as "a, b, c"), or NULL; *at
 * (when not NULL) is where its match starts in text. */
char *answer_find(const char *text, long *at);

#endif
