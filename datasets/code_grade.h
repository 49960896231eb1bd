/* code_grade.h - LiveCodeBench grading: the last fenced Python block of a model output, run
 * against the problem's public tests (the hidden tests are not available). stdin problems get
 * each test's input on stdin and are compared line by line (trailing spaces and blank lines
 * ignored); functional (LeetCode) problems run through a small driver that calls
 * Solution().<fn_name>(*args) and compares the JSON value.
 *
 * Generated code is untrusted. Each test runs in bubblewrap (bwrap: read-only root, no
 * network, a fresh writable temporary directory, its own pid namespace) as an unprivileged user
 * with CPU time, address space, file size and process limits (setrlimit) and a wall-clock
 * timeout that kills the whole sandbox. Without bwrap the grader refuses unless the caller
 * passes unsafe_no_sandbox (rlimits only). No engine headers.
 */
#ifndef ZP_CODE_GRADE_H
#define ZP_CODE_GRADE_H

#include "dataset.h"

typedef enum { CODE_PASS, CODE_FAIL, CODE_NO_CODE, CODE_TIMEOUT, CODE_RUNTIME_ERROR } code_status;

typedef struct {
    int timeout_ms;        /* per test, wall clock (default 6000) */
    long mem_mb;           /* address-space limit (default 2048) */
    int unsafe_no_sandbox; /* run without bwrap (rlimits only) */
    const char *python;    /* interpreter (default "python3") */
} code_opts;

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
