#!/usr/bin/env python3
"""math_verify_grade.py - Hugging Face Math-Verify as a long-lived grading process for zipage.

The protocol of the Zipage reference (examples/eval/math_eval.py), open-r1 and lighteval:
gold = parse("\\boxed{" + answer + "}"), prediction = parse(the whole output), correct =
verify(gold, prediction), with Math-Verify's default parsing and verification timeouts (5 s
each, signal.alarm, so this runs in the main thread). One JSON object a line on stdin
({"answer": str, "output": str}); one a line on stdout ({"correct": bool, "extracted": str or
null}), flushed. The first line written is {"ready": true, "math_verify": VERSION}.
Started by datasets/grader.c with the interpreter of the project's .venv-grade (make deps).
"""
import json
import logging
import sys
from importlib.metadata import version

from math_verify import parse, verify


def extracted(pred):
    """The prediction's text form as Math-Verify parsed it (its last element), or None."""
    if not pred:
        return None
    try:
        return str(pred[-1])
    except Exception:  # str() of an odd sympy object
        return None


def main():
    logging.disable(logging.WARNING)  # timeouts are logged as warnings; the verdict is False
    out = sys.stdout
    out.write(json.dumps({"ready": True, "math_verify": version("math-verify")}) + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        gold = parse("\\boxed{" + req["answer"] + "}")
        pred = parse(req["output"])
        out.write(json.dumps({"correct": bool(verify(gold, pred)), "extracted": extracted(pred)}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
