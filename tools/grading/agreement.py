#!/usr/bin/env python3
"""agreement.py - how often the builtin grader agrees with Math-Verify, on a generated corpus.

Builds the corpus (make_corpus.py: every math dataset's answers in boxed and unboxed
final-answer phrasings, thinking sections, equivalent LaTeX and plain forms, decimals,
fractions, radicals, pi, degrees, percentages, units, tuples, intervals, sets, text answers,
bases, matrices, and wrong answers close to right ones; then sympy_renderings.py: every reference
as sympy's LaTeX writes it), grades it with `zipage grade --pairs`
under both graders, and prints the agreement overall, on outputs whose answer is boxed, and per
category; disagreements go to OUT/disagreements.jsonl.

    python3 tools/grading/agreement.py build/zipage /tmp/agreement [--min 99.5]

With --min P it exits 1 when the overall agreement is below P percent (test_grade_agreement).
"""
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def grade(zipage, corpus, out, grader):
    subprocess.run([zipage, "grade", "--pairs", corpus, "--out", out, "--grader", grader], check=True)
    return [json.loads(l) for l in open(out, encoding="utf-8")]


def main(zipage, work, minimum=None):
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.jsonl")
    subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), corpus], check=True)
    # sympy's LaTeX renderings of every reference (sympy_renderings.py), with the grader's own
    # environment's sympy and Math-Verify: the same rows on every machine
    venv = os.path.join(HERE, "..", "..", ".venv-grade", "bin", "python")
    subprocess.run([venv, os.path.join(HERE, "sympy_renderings.py"), corpus], check=True)
    b = grade(zipage, corpus, os.path.join(work, "builtin.jsonl"), "builtin")
    m = grade(zipage, corpus, os.path.join(work, "math_verify.jsonl"), "math-verify")
    per = collections.defaultdict(collections.Counter)
    boxed = collections.Counter()
    with open(os.path.join(work, "disagreements.jsonl"), "w", encoding="utf-8") as f:
        for x, y in zip(b, m):
            c = per[x["category"]]
            c["n"] += 1
            agree = x["correct"] == y["correct"]
            c["agree"] += agree
            if "\\boxed" in x["output"]:
                boxed["n"] += 1
                boxed["agree"] += agree
            if not agree:
                f.write(json.dumps({"id": x["id"], "category": x["category"], "reference": x["reference"],
                                    "output": x["output"], "builtin": x["correct"], "math_verify": y["correct"],
                                    "builtin_extracted": x["extracted"], "math_verify_extracted": y["extracted"]},
                                   ensure_ascii=False) + "\n")
    n = sum(c["n"] for c in per.values())
    a = sum(c["agree"] for c in per.values())
    print(f"pairs {n}: agreement {100.0 * a / n:.2f}%; with a \\boxed answer {boxed['n']}: {100.0 * boxed['agree'] / max(1, boxed['n']):.2f}%")
    for cat, c in sorted(per.items(), key=lambda kv: kv[1]["agree"] / kv[1]["n"]):
        print(f"  {cat:40s} {c['n']:6d}  {100.0 * c['agree'] / c['n']:6.2f}%")
    if minimum is not None and 100.0 * a / n < minimum:
        print(f"agreement {100.0 * a / n:.2f}% is below the bar of {minimum}% (disagreements: {work}/disagreements.jsonl)")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--min"):
        sys.exit("usage: agreement.py ZIPAGE WORKDIR [--min PERCENT]")
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[4]) if len(sys.argv) == 5 else None))
