/* cmd_grade.c - `zipage grade`: grades finished outputs again without regenerating them
 * (regrade.h): a results folder in place, or a JSONL of {problem_id, output} from any engine
 * against a dataset. */
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "regrade.h"

static const char *USAGE =
    "usage: zipage grade DIR [--grader builtin|math-verify] [--unsafe-no-sandbox]\n"
    "       zipage grade --dataset NAME|FILE.jsonl --outputs F.jsonl --out G.jsonl [--grader builtin|math-verify]\n"
    "       zipage grade --pairs F.jsonl --out G.jsonl [--grader builtin|math-verify]\n"
    "  DIR: a results folder (samples.jsonl, runs.csv, meta.json): every sample graded again, each run's\n"
    "       pass@1 and CI recomputed into runs.csv (grader column), meta.json records the grader.\n"
    "  --outputs: one {\"problem_id\", \"output\"} object a line; G gets the lines with their verdicts.\n"
    "  --pairs: one {\"output\", \"reference\"} object a line (no dataset), e.g. a grader-agreement corpus.\n"
    "  --grader: builtin (the C grader, default) or math-verify (Hugging Face Math-Verify, the Zipage\n"
    "       reference's protocol; needs the .venv-grade that `make deps` makes).\n";

int cmd_grade(int argc, char **argv) {
    const char *dir = NULL, *dataset = NULL, *outputs = NULL, *pairs = NULL, *out = NULL, *gname = "builtin";
    int unsafe = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(f, "--unsafe-no-sandbox")) { unsafe = 1; continue; }
        if (f[0] != '-') {
            if (dir) return cli_report("grade", zp_fail(ZP_ERR_INVALID, "one results folder at a time (got %s and %s)", dir, f));
            dir = f;
            continue;
        }
        if (!(v = cli_value(argc, argv, &i))) return cli_report("grade", ZP_ERR_INVALID);
        if (!strcmp(f, "--grader")) gname = v;
        else if (!strcmp(f, "--dataset")) dataset = v;
        else if (!strcmp(f, "--outputs")) outputs = v;
        else if (!strcmp(f, "--pairs")) pairs = v;
        else if (!strcmp(f, "--out")) out = v;
        else return cli_report("grade", zp_fail(ZP_ERR_INVALID, "unknown flag %s", f));
    }
    grader_kind k;
    if (grader_parse(gname, &k)) return cli_report("grade", zp_fail(ZP_ERR_INVALID, "--grader: \"%s\" (builtin or math-verify)", gname));
    regrade_summary sum;
    zp_status s;
    if (pairs && out && !dir && !dataset && !outputs) {
        s = regrade_pairs(pairs, out, k, &sum);
    } else if (dir && !dataset && !outputs && !out && !pairs) {
        s = regrade_results(dir, k, unsafe, &sum);
        if (s == ZP_OK) printf("grade: %s: %d samples of %d runs graded with %s, %d verdicts changed\n", dir, sum.samples, sum.runs, gname, sum.changed);
    } else if (!dir && !pairs && dataset && outputs && out) {
        s = regrade_jsonl(dataset, outputs, out, k, unsafe, &sum);
    } else {
        s = zp_fail(ZP_ERR_INVALID, "give a results folder, or --dataset, --outputs and --out (see zipage grade --help)");
    }
    return s == ZP_OK ? 0 : cli_report("grade", s);
}
