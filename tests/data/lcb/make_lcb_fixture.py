#!/usr/bin/env python3
"""make_lcb_fixture.py - writes the LiveCodeBench test fixture of tests/data/lcb/:

- official_sample.jsonl: four problems written for this test in the official release-file
  format of livecodebench/code_generation_lite (every field a string; public_test_cases JSON;
  private_test_cases base64(zlib(pickle(JSON string))) as LiveCodeBench stores it, one row
  with plain JSON and one whose pickle is larger than 64 KiB so that it has no FRAME; metadata
  with func_name for the functional ones). No LiveCodeBench data: the problems are made up.
- decimal_pairs.jsonl: token pairs and whether Python's Decimal finds them equal (an exception,
  as for sNaN, counts as unequal: LiveCodeBench then fails the test);
- cases.jsonl: model outputs (solutions written for this test) to grade against them:
  right, right on the public tests only, float formats, whitespace, exits, errors, timeouts,
  tuples, bool/int/float equality, no code.

The verdicts of LiveCodeBench's own runner on these cases are tests/data/lcb/lcb_runner.jsonl,
made by tests/reference/lcb_oracle.py. Run: python3 tests/data/lcb/make_lcb_fixture.py
"""
import base64
import decimal
import json
import os
import pickle
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def t(i, o, kind="stdin"):
    return {"input": i, "output": o, "testtype": kind}


def pack(tests, plain=False):
    text = json.dumps(tests)
    if plain:
        return text
    return base64.b64encode(zlib.compress(pickle.dumps(text, protocol=4))).decode("ascii")


def row(qid, title, content, tests_pub, tests_priv, fn=None, starter="", plain=False, platform="atcoder"):
    return {"question_title": title, "question_content": content, "platform": platform, "question_id": qid,
            "contest_id": qid.split("_")[0], "contest_date": "2024-09-01T00:00:00", "starter_code": starter,
            "difficulty": "easy", "public_test_cases": json.dumps(tests_pub), "private_test_cases": pack(tests_priv, plain),
            "metadata": json.dumps({"func_name": fn} if fn else {})}


big = " ".join(str(i % 1000) for i in range(30000))  # a private input over 64 KiB
PROBLEMS = [
    row("zzz001_a", "Sum", "Print A+B.", [t("1 2\n", "3\n"), t("40 2\n", "42\n")],
        [t("5 5\n", "10\n"), t("-3 3\n", "0\n"), t("1000000000 1000000000\n", "2000000000\n")]),
    row("zzz001_b", "Halves", "Print A/2 for each A, one per line, then the word Done.",
        [t("2\n3 4\n", "1.5\n2\nDone\n")], [t("1\n1\n", "0.5\nDone\n")], plain=True),
    row("zzz001_c", "Count", "Print how many numbers follow N.", [t("3\n1 2 3\n", "3\n")],
        [t("30000\n" + big + "\n", "30000\n")]),
    row("9001", "addAll", "Return sum(xs) + k.", [t("[1, 2, 3]\n10", "16", "functional")],
        [t("[]\n-1", "-1", "functional"), t("[5]\n0", "5", "functional")], fn="addAll",
        starter="class Solution:\n    def addAll(self, xs: List[int], k: int) -> int:\n        ", platform="leetcode"),
    row("9002", "pairUp", "Return [x, x+1].", [t("4", "[4, 5]", "functional")], [t("0", "[0, 1]", "functional")],
        fn="pairUp", starter="class Solution:\n    def pairUp(self, x: int) -> List[int]:\n        ", platform="leetcode"),
    row("9003", "grid", "Return [[x, x+1]].", [t("4", "[[4, 5]]", "functional")], [t("0", "[[0, 1]]", "functional")],
        fn="grid", starter="class Solution:\n    def grid(self, x: int) -> List[List[int]]:\n        ", platform="leetcode"),
]


def py(code):
    return "Here is my solution.\n```python\n" + code + "\n```\n"


SUM_OK = "a, b = map(int, input().split())\nprint(a + b)"
CASES = [
    ("sum-right", "zzz001_a", py(SUM_OK)),
    ("sum-think", "zzz001_a", "<think>\n```python\nprint(0)\n```\n</think>\n" + py(SUM_OK)),
    ("sum-public-only", "zzz001_a", py("x = input()\nprint({'1 2': 3, '40 2': 42}[x.strip()])")),
    ("sum-exit0", "zzz001_a", py("import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(0)")),
    ("sum-exit1-after-print", "zzz001_a", py("import sys\na, b = map(int, input().split())\nprint(a + b)\nsys.exit(1)")),
    ("sum-exception", "zzz001_a", py("a, b = map(int, input().split())\nprint(a + b)\nraise ValueError('x')")),
    ("sum-timeout", "zzz001_a", py("while True:\n    pass")),
    ("sum-timeout-on-private", "zzz001_a", py("a, b = map(int, input().split())\nwhile a == 5:\n    pass\nprint(a + b)")),
    ("sum-leading-blank-lines", "zzz001_a", py("a, b = map(int, input().split())\nprint()\nprint()\nprint('  ', a + b, '  ')\nprint('\\n\\n')")),
    ("sum-plus-sign", "zzz001_a", py("a, b = map(int, input().split())\nprint('+' + str(a + b) if a + b > 0 else a + b)")),
    ("sum-float-format", "zzz001_a", py("a, b = map(int, input().split())\nprint(f'{a + b:.2f}')")),
    ("sum-exponent", "zzz001_a", py("a, b = map(int, input().split())\nprint('%de0' % (a + b))")),
    ("sum-stdin-read", "zzz001_a", py("import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)")),
    ("sum-no-code", "zzz001_a", "The answer is a+b."),
    ("sum-one-fence", "zzz001_a", "```python\nprint(3)\n"),
    ("sum-fence-after", "zzz001_a", py(SUM_OK) + "Run it with ```python3 sol.py``` and\n```\n"),
    ("halves-right", "zzz001_b", py("n = int(input())\nfor x in map(int, input().split()):\n    print(x / 2)\nprint('Done')")),
    ("halves-trailing-zeros", "zzz001_b", py("n = int(input())\nfor x in map(int, input().split()):\n    print(f'{x / 2:.3f}')\nprint('Done')")),
    ("halves-one-line", "zzz001_b", py("n = int(input())\nprint(*[x / 2 for x in map(int, input().split())])\nprint('Done')")),
    ("halves-lower-case", "zzz001_b", py("n = int(input())\nfor x in map(int, input().split()):\n    print(x / 2)\nprint('done')")),
    ("halves-blank-inside", "zzz001_b", py("n = int(input())\nfor x in map(int, input().split()):\n    print(x / 2)\nprint()\nprint('Done')")),
    ("halves-truncated", "zzz001_b", py("n = int(input())\nfor x in map(int, input().split()):\n    print(f'{x / 2:.0f}')\nprint('Done')")),
    ("count-right", "zzz001_c", py("n = int(input())\nprint(len(input().split()))")),
    ("add-right", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        return sum(xs) + k")),
    ("add-float", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        return float(sum(xs) + k)")),
    ("add-wrong-private", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        return 16")),
    ("add-no-class", "9001", py("def addAll(xs, k):\n    return sum(xs) + k")),
    ("add-exception", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        return xs[0] + k")),
    ("add-timeout", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        while True:\n            pass")),
    ("add-bool", "9001", py("class Solution:\n    def addAll(self, xs, k):\n        r = sum(xs) + k\n        return True if r == 1 else r")),
    ("pair-list", "9002", py("class Solution:\n    def pairUp(self, x):\n        return [x, x + 1]")),
    ("pair-tuple", "9002", py("class Solution:\n    def pairUp(self, x):\n        return (x, x + 1)")),
    ("grid-lists", "9003", py("class Solution:\n    def grid(self, x):\n        return [[x, x + 1]]")),
    ("grid-tuple-of-lists", "9003", py("class Solution:\n    def grid(self, x):\n        return ([x, x + 1],)")),
    ("grid-list-of-tuples", "9003", py("class Solution:\n    def grid(self, x):\n        return [(x, x + 1)]")),
    # a known difference: LiveCodeBench calls one Solution() for all tests (state carries over);
    # the harness runs each test in a fresh process
    ("grid-state-kept", "9003", py("class Solution:\n    calls = 0\n    def grid(self, x):\n        Solution.calls += 1\n        return [[x, x + Solution.calls]]")),
    ("pair-strings", "9002", py("class Solution:\n    def pairUp(self, x):\n        return [str(x), str(x + 1)]")),
]

TOKENS = ["1", "1.0", "1.", ".5", "0.5", "+0.5", "-0", "0", "+0.0e5", "00", "1e3", "1000", "1E+3", "10e2", "1_000",
          "_1", "1__0", "10", "1e1_0", "10000000000", "inf", "Infinity", "-inf", "INF", "nan", "NaN", "snan", "-1",
          "0.3333333", "0.33333333", "1.50", "1.5", "2", "2.0", "2.00e0", "20e-1", "abc", "1e", ".", "-", "1.2.3",
          "0x10", "12345678901234567890", "12345678901234567890.0", "1.2345678901234567890e19", "Infi", "nan12",
          "1e-0", "5e-324", "0.000", "1e999999", "1e+999999", "3.0e-2", "0.03"]


def decimal_equal(a, b):
    try:
        return decimal.Decimal(a) == decimal.Decimal(b)
    except decimal.InvalidOperation:
        return False


KNOWN_DIFFERENCES = {"grid-state-kept": "LiveCodeBench keeps one Solution() across a problem's tests; each test runs in its own process here"}


def main():
    with open(os.path.join(HERE, "official_sample.jsonl"), "w") as f:
        for r in PROBLEMS:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(HERE, "decimal_pairs.jsonl"), "w") as f:  # the oracle: Python's decimal module
        for a in TOKENS:
            for b in TOKENS:
                f.write(json.dumps({"a": a, "b": b, "equal": decimal_equal(a, b)}) + "\n")
    with open(os.path.join(HERE, "cases.jsonl"), "w") as f:
        for name, qid, out in CASES:
            case = {"name": name, "question_id": qid, "output": out}
            if name in KNOWN_DIFFERENCES:
                case["known_difference"] = KNOWN_DIFFERENCES[name]
            f.write(json.dumps(case) + "\n")


if __name__ == "__main__":
    main()
