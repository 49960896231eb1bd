/* code_grade.h - LiveCodeBench grading: the last fenced Python block of a model output, run
 * against the problem's public tests (the hidden tests are not available). stdin problems get
 * each test's input on stdin and are compared line by line (trailing spaces and blank lines
 * ignored); functional (LeetCode) problems run through a small driver that calls
 * Solution().<fn_name>(*args) and compares the JSON value.
 *
 * Generated code is untrusted. The solution (and the driver) are written once into a fresh
 * directory before any of it runs; each test then runs in the sandbox of sandbox.h (the
 * directory read-only, input on a pipe, output from a pipe). A functional test's value comes
 * back on a channel of its own and is compared here, so the expected output never enters the
 * sandbox and an exit at import is a failure. Without bwrap the grader refuses unless the
 * caller passes unsafe_no_sandbox (rlimits only). No engine headers.
 */
#ifndef ZP_CODE_GRADE_H
#define ZP_CODE_GRADE_H

#include "dataset.h"
#include "sandbox.h"

typedef enum { CODE_PASS, CODE_FAIL, CODE_NO_CODE, CODE_TIMEOUT, CODE_RUNTIME_ERROR } code_status;

/* Sandbox limits (sandbox.h): 6000 ms per test, 2048 MB (address space + a 64 MB private
 * /tmp), 64 processes, the system python3. */
typedef sbx_opts code_opts;

typedef struct {
    code_status status;    /* of the first failing test, or CODE_PASS */
    int passed, total;
    char detail[256];
} code_result;

code_opts code_opts_default(void);
/* Last ```python (or bare ```) fenced block of the answer part (after </think>), malloc'ed. */
char *code_extract_python(const char *text);
int code_sandbox_available(void);
/* Grades one output against a code item. Returns 0, or -1 with err when the harness itself
 * cannot run the tests (no sandbox, no temporary directory, bad test JSON). */
int code_grade(const char *output, const ds_item *item, const code_opts *o, code_result *r, char *err);
const char *code_status_name(code_status s);

#endif
