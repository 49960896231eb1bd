/* grader.h - the math graders behind one interface: the builtin C grader (math_grade.h, fast,
 * no Python) and Hugging Face Math-Verify with the Zipage reference's protocol (gold
 * parse("\boxed{answer}"), the whole output parsed, verify) in one long-lived helper process
 * (tools/grading/math_verify_grade.py under the project's .venv-grade interpreter, spawned
 * without a shell, talking JSON lines over pipes). Deliberately not here: code grading
 * (code_grade.h) and which dataset an answer comes from (the callers). No engine headers.
 */
#ifndef ZP_GRADER_H
#define ZP_GRADER_H

#include <stdio.h>
#include <sys/types.h>

typedef enum { GRADER_BUILTIN, GRADER_MATH_VERIFY } grader_kind;

typedef struct {
    grader_kind kind;
    pid_t pid;            /* the helper (math-verify) */
    FILE *to, *from;      /* its stdin / stdout */
    char version[64];     /* "builtin", or "math-verify 0.9.0" */
} grader;

#define GRADER_ERR 512

/* "builtin" | "math-verify" -> kind; 0 ok, -1 unknown. */
int grader_parse(const char *name, grader_kind *k);
const char *grader_name(grader_kind k);
/* Opens a grader (math-verify starts its helper and waits for its ready line: python, the
 * interpreter of the pinned environment, runs script; callers take both from paths.h). 0, or -1
 * with err. */
int grader_open(grader *g, grader_kind k, const char *python, const char *script, char *err);
/* Grades one output against a reference answer (both graders read the whole output by
 * Math-Verify's rules: a boxed answer, "final answer is", "answer:", else the last number or
 * LaTeX; the same for every dataset). *extracted: malloc'ed or NULL. 0, or -1 with err when
 * the helper failed. */
int grader_math(grader *g, const char *output, const char *answer, int *correct, char **extracted, char *err);
void grader_close(grader *g);

#endif
