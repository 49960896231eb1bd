/* code_grade.h - LiveCodeBench grading as LiveCodeBench's runner grades (lcb_runner at 28fef95:
 * testing_util.py, extraction_utils.py; checked case by case against it by test_lcb_grade): the
 * code between the last two lines holding ``` of the answer (after the last </think>; the runner
 * itself takes the whole output), LiveCodeBench's import prelude and recursion limit, the public
 * then the private tests (where a dataset has them) in order, stopping at the first failure, a
 * wall-clock limit per test (6 s, LiveCodeBench's default). A problem is functional exactly when
 * it has fn_name: Solution().<fn_name>(*[json.loads(l) for l in input lines]) (the module's
 * function when the code has no "class Solution") compared with Python's == on the JSON values,
 * a top-level tuple read as a list; otherwise the program reads the input on stdin, a SystemExit
 * ends it normally, and its stdout is compared by lcb_compare.h (exact Decimal values, no
 * tolerance). Not as LiveCodeBench: each test runs in its own process (LiveCodeBench keeps one
 * Solution() across a problem's tests), a program runs as a script (LiveCodeBench runs it as a
 * function body with a mocked stdin, so `global` at the top level or iterating sys.stdin fails
 * there and works here), the sandbox caps memory (2 GB; LiveCodeBench sets none) and no library
 * function is disabled (LiveCodeBench's reliability guard removes os.system, shutil.rmtree...,
 * which the sandbox makes harmless instead), integers beyond 2^53 in functional results compare
 * as doubles.
 *
 * Generated code is untrusted. The solution (and the drivers) are written once into a fresh
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
/* The lines strictly between the last two lines containing ``` of the answer part (after the
 * last </think>), malloc'ed; NULL when there are fewer than two such lines. */
char *code_extract_python(const char *text);
int code_sandbox_available(void);
/* Grades one output against a code item. Returns 0, or -1 with err when the harness itself
 * cannot run the tests (no sandbox, no temporary directory, bad test JSON). */
int code_grade(const char *output, const ds_item *item, const code_opts *o, code_result *r, char *err);
const char *code_status_name(code_status s);
/* The grader column of a code run: "lcb-public", or "lcb-public+private" for a dataset whose
 * problems carry LiveCodeBench's private tests (ds_dataset.n_private). */
const char *code_grader_label(const ds_dataset *d);

#endif
