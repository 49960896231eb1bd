/* fuzz_math.c - the math grader: the input as a model output against fixed references, and
 * split at its first newline into an answer pair for math_equiv and math_normalize. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "math_grade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *s = fuzz_text(data, n);
    if (!s) return 0;
    static const char *refs[] = {"204", "\\frac{14}{3}", "(3, \\frac{\\pi}{2})", "\\{1,-2\\}"};
    for (int k = 0; k < 4; k++) {
        math_grade_result r = math_grade(s, refs[k]);
        math_grade_result_free(&r);
    }
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = 0;
        math_equiv(s, nl + 1);
        free(math_normalize(nl + 1));
    }
    free(s);
    return 0;
}
