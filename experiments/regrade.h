/* regrade.h - grading finished outputs again without regenerating them (`zipage grade`).
 *
 * A results folder (samples.jsonl, runs.csv, meta.json as the runner writes them): every
 * sample is graded again against its dataset (math: the chosen grader; code: the sandboxed
 * public tests), its "extracted", "correct" and "grader" fields rewritten; each run's pass@1 and
 * its bootstrap CI are recomputed from the new verdicts (the runner's resampling, seed + 1) and
 * written into runs.csv with the grader column (added to a file written before it existed);
 * meta.json records the grader and its version. Each file is replaced whole (temporary file,
 * fsync, rename), so a second pass with the same grader leaves the folder byte for byte as
 * the first left it. A foreign JSONL of {"problem_id", "output"} lines is graded against a
 * dataset the same way, for outputs from another engine. Deliberately not here: generation.
 */
#ifndef ZP_REGRADE_H
#define ZP_REGRADE_H

#include "grader.h"
#include "status.h"

typedef struct {
    int runs, samples, changed; /* runs and samples graded, verdicts that changed */
} regrade_summary;

zp_status regrade_results(const char *dir, grader_kind k, int unsafe_no_sandbox, regrade_summary *sum);
/* Grades in (JSONL of problem_id + output) against dataset; writes out (the input lines with
 * "extracted", "correct", "grader") and prints pass@1 with its CI over the problems present. */
zp_status regrade_jsonl(const char *dataset, const char *in, const char *out, grader_kind k, int unsafe_no_sandbox, regrade_summary *sum);

/* Grades in (JSONL of {"output", "reference"} pairs, any other fields kept) with a math grader
 * (builtin without the GSM8K number fallback); writes out with "extracted" and "correct". For
 * measuring the graders' agreement (tools/grading/agreement.py). */
zp_status regrade_pairs(const char *in, const char *out, grader_kind k, regrade_summary *sum);

#endif
