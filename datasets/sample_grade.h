/* sample_grade.h - one sample's verdict by its dataset's own grader: the code tests in the
 * sandbox (code_grade.h) for code, RULER's string match (passkey.h) for the passkey task, else
 * the math grader the caller opened (grader.h); and the name of that grader as runs.csv and
 * samples.jsonl record it. The runner and `zipage grade` both grade through here. Not here:
 * opening the math grader, and where verdicts are written. */
#ifndef ZP_SAMPLE_GRADE_H
#define ZP_SAMPLE_GRADE_H

#include "code_grade.h"
#include "dataset.h"
#include "grader.h"

typedef enum { SAMPLE_GRADE_OK, SAMPLE_GRADE_CODE_FAILED, SAMPLE_GRADE_MATH_FAILED } sample_grade_status;

/* Grades output against item it of d. *correct: the verdict; *extracted: the answer read
 * (malloc'ed; NULL for code and when nothing was read). On a failure of the code runner or of
 * the math grader's helper, err (ZP_DS_ERR bytes) says why. */
sample_grade_status sample_grade(const ds_dataset *d, const ds_item *it, const char *output, grader *math, const code_opts *co,
                                 int *correct, char **extracted, char *err);
/* The grader column's value: the code grader's label, PASSKEY_GRADER, or math_name. */
const char *sample_grader_label(const ds_dataset *d, const char *math_name);

#endif
