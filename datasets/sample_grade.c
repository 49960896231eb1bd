/* sample_grade.c - one sample's verdict by its dataset's grader (sample_grade.h). */
#include "sample_grade.h"

#include "passkey.h"

_Static_assert(GRADER_ERR == ZP_DS_ERR, "sample_grade: one error buffer serves the code and the math grader");

sample_grade_status sample_grade(const ds_dataset *d, const ds_item *it, const char *output, grader *math, const code_opts *co,
                                 int *correct, char **extracted, char *err) {
    *extracted = NULL;
    if (d->is_code) {
        code_result cr;
        if (code_grade(output, it, co, &cr, err)) return SAMPLE_GRADE_CODE_FAILED;
        *correct = cr.status == CODE_PASS;
        return SAMPLE_GRADE_OK;
    }
    if (d->context_tokens) {
        passkey_grade(output, it->answer, correct, extracted);
        return SAMPLE_GRADE_OK;
    }
    return grader_math(math, output, it->answer, correct, extracted, err) ? SAMPLE_GRADE_MATH_FAILED : SAMPLE_GRADE_OK;
}

const char *sample_grader_label(const ds_dataset *d, const char *math_name) {
    return d->is_code ? code_grader_label(d) : d->context_tokens ? PASSKEY_GRADER : math_name;
}
