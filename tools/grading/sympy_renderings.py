#!/usr/bin/env python3
"""sympy_renderings.py - more rows of the grader-agreement corpus: every shipped reference answer
as sympy writes it in LaTeX (braced exponents, spaced implicit products, \\left( \\right) and
"\\ " in tuples, \\cdot or \\times products), boxed in a final-answer sentence, against the
reference as written. Math-Verify reads both through sympy; models write these forms.

The answer is parsed as Math-Verify parses it (math_verify.parse of "$answer$"); answers it
does not turn into one sympy expression, and renderings equal to the reference, add no row.
Run with the grader's environment (.venv-grade: sympy and math-verify pinned), so the rows are
the same on every machine:

    .venv-grade/bin/python tools/grading/sympy_renderings.py CORPUS.jsonl   (appends)
"""
import json
import os
import sys

import sympy
from math_verify import parse

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "datasets", "data")
FILES = ["aime24", "aime25", "amc23", "math500", "gsm8k"]
RENDERINGS = [("sympy_latex", {}), ("sympy_latex_cdot", {"mul_symbol": "dot"}), ("sympy_latex_times", {"mul_symbol": "times"})]


def expression(answer):
    """The one sympy expression Math-Verify reads in $answer$, or None."""
    try:
        got = parse("$" + answer + "$")
    except Exception:  # noqa: BLE001 - a reference Math-Verify cannot read adds no row
        return None
    exprs = [g for g in got if isinstance(g, sympy.Basic)]
    return exprs[0] if exprs else None


def main(out):
    rows = []
    with open(out, encoding="utf-8") as fh:
        n0 = sum(1 for _ in fh)
    for f in FILES:
        with open(os.path.join(DATA, f + ".jsonl"), encoding="utf-8") as fh:
            for line in fh:
                o = json.loads(line)
                e = expression(o["answer"])
                if e is None:
                    continue
                seen = {o["answer"].replace(" ", "")}
                for cat, kw in RENDERINGS:
                    try:
                        r = sympy.latex(e, **kw)
                    except Exception:  # noqa: BLE001
                        continue
                    if r.replace(" ", "") in seen:
                        continue
                    seen.add(r.replace(" ", ""))
                    rows.append({"id": f"{n0 + len(rows):06d}", "category": cat, "output": f"The final answer is $\\boxed{{{r}}}$.",
                                 "reference": o["answer"], "expected": True, "src": o["id"]})
    with open(out, "a", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} sympy renderings appended to {out}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sympy_renderings.py CORPUS.jsonl")
    main(sys.argv[1])
