#!/usr/bin/env python3
"""lcb_oracle.py - LiveCodeBench's own runner on the harness's LiveCodeBench fixture: the
golden verdicts tests/data/lcb/lcb_runner.jsonl that test_lcb_grade compares against.

It imports LiveCodeBench itself from a checkout (LiveCodeBench/LiveCodeBench, LCB_DIR; the
goldens were made at commit 28fef95ea8c9, 2025-07-15) and, for each case of
tests/data/lcb/cases.jsonl, does what its evaluation does for one generation:
CodeGenerationProblem(**row).get_evaluation_sample() on the official-format row
(lcb_runner/benchmarks/code_generation.py), extract_code(output, LMStyle.OpenAIChat)
(lcb_runner/utils/extraction_utils.py) and check_correctness(sample, code, timeout)
(lcb_runner/evaluation/compute_code_generation_metrics.py), which forks a process per
generation and runs run_test (testing_util.py). One choice is the harness's, not the runner's:
the text before the last </think> is dropped first (the runner takes the whole output).
The per-test timeout is 1 s here (LiveCodeBench's default is 6 s) to keep the test short;
test_lcb_grade runs the harness with the same limit.

    LCB_DIR=/path/to/LiveCodeBench .venv-grade/bin/python tests/reference/lcb_oracle.py \
        tests/data/lcb/official_sample.jsonl tests/data/lcb/cases.jsonl tests/data/lcb/lcb_runner.jsonl

Needs numpy (LiveCodeBench imports it); the `datasets` and `tqdm` packages it imports but does
not use here are stubbed.
"""
import json
import os
import sys
import types

TIMEOUT_S = 1


def main():
    lcb = os.environ.get("LCB_DIR")
    if not lcb or not os.path.isdir(os.path.join(lcb, "lcb_runner")):
        sys.exit("lcb_oracle: set LCB_DIR to a LiveCodeBench checkout")
    for stub in ("datasets", "tqdm"):
        if stub not in sys.modules:
            m = types.ModuleType(stub)
            m.load_dataset = None
            m.tqdm = lambda x, **k: x
            sys.modules[stub] = m
    sys.path.insert(0, lcb)
    from lcb_runner.benchmarks.code_generation import CodeGenerationProblem
    from lcb_runner.evaluation.compute_code_generation_metrics import check_correctness
    from lcb_runner.lm_styles import LMStyle
    from lcb_runner.utils.extraction_utils import extract_code

    official, cases = sys.argv[1], sys.argv[2]
    samples = {}
    for line in open(official):
        row = json.loads(line)
        samples[row["question_id"]] = CodeGenerationProblem(**row).get_evaluation_sample()
    with open(sys.argv[3], "w") as f:
        for line in open(cases):
            case = json.loads(line)
            code = extract_code(case["output"].split("</think>")[-1], LMStyle.OpenAIChat)
            res, _ = check_correctness(samples[case["question_id"]], code, timeout=TIMEOUT_S, debug=False)
            res = [bool(x) if x is True or x is False else int(x) for x in res]
            f.write(json.dumps({"name": case["name"], "results": res}) + "\n")
            print(case["name"], res)


if __name__ == "__main__":
    main()
