#!/usr/bin/env python3
"""check_adakv.py - the harness's AdaKV head budgets (scorers/head_budget.c, through
head_budget_dump) against ref_adakv.py, the port of the authors' allocation: identical per-head
counts on a grid of head counts (1 to 32), budgets (0 to 256), floor shares (0, 0.2, 0.5, 0.3,
1) and score kinds (continuous, heavily tied, sinks at +inf, NaN, -inf), heads of equal length
(the authors' case, where the harness's trim step must be the only difference, and it is
checked to fire only when their sum exceeds H x B) and of unequal length (the engine's later
compressions). Exit 1 on the first difference.

    python3 tests/reference/check_adakv.py build/tests/head_budget_dump
"""
import itertools
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_adakv as ref  # noqa: E402


def scores_of(rng, kind, n):
    if kind == "continuous":
        return rng.standard_normal(n).astype(np.float32) ** 2
    if kind == "tied":
        return rng.integers(0, 4, n).astype(np.float32) / 4
    s = rng.random(n).astype(np.float32)
    if kind == "sinks" and n:
        s[: min(4, n)] = np.inf
    if kind == "special" and n:
        s[rng.random(n) < 0.1] = np.nan
        s[rng.random(n) < 0.1] = -np.inf
    return s


def main():
    rng = np.random.default_rng(20261207)
    cases = []
    for H, B, alpha, kind, equal in itertools.product([1, 2, 4, 8, 32], [0, 1, 7, 64, 256], [0.0, 0.2, 0.3, 0.5, 1.0],
                                                      ["continuous", "tied", "sinks", "special"], [True, False]):
        base = int(B * rng.uniform(1.0, 3.0)) + 1
        n = [base] * H if equal else [int(v) for v in rng.integers(0, 2 * base + 2, H)]
        cases.append((H, B, alpha, equal, [scores_of(rng, kind, m) for m in n]))
    lines = []
    for H, B, alpha, _, sc in cases:
        head = f"{H} {B} {alpha!r} " + " ".join(str(len(s)) for s in sc)
        vals = " ".join(repr(float(v)) for s in sc for v in s)
        lines.append(head + " " + vals + "\n")
    out = subprocess.run([sys.argv[1]], input="".join(lines), capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(cases):
        sys.exit(f"check_adakv: {len(out)} lines for {len(cases)} cases")
    bad = trims = 0
    for (H, B, alpha, equal, sc), line in zip(cases, out):
        got = np.array([int(v) for v in line.split()])
        want = ref.harness_counts(sc, B, alpha)
        theirs = ref.head_counts(sc, B, alpha)
        if not np.array_equal(got, want):
            bad += 1
            if bad <= 5:
                print(f"H {H} B {B} alpha {alpha}: harness {got.tolist()}, oracle {want.tolist()}")
        if not np.array_equal(theirs, want):
            trims += 1
            if theirs.sum() <= H * B:
                bad += 1
                print(f"H {H} B {B} alpha {alpha}: trimmed although the authors' sum {theirs.sum()} fits {H * B}")
        if got.sum() > H * B or (got > np.array([len(s) for s in sc])).any():
            bad += 1
            print(f"H {H} B {B} alpha {alpha}: counts {got.tolist()} exceed the layer or a head")
    print(f"check_adakv: {len(cases)} layers, {trims} trimmed by the harness's step (the authors' sum above H x B), {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
