#!/usr/bin/env python3
"""check_topp.py - the harness's adaptive-budget count (scorers/adaptive_budget.c, through
mass_count_dump) against ref_topp.py: (1) one head whose ranking is its own mass, sink first, as
Twilight calls its kernel: the count equals the size of the kernel's top-p mask wherever that
mask is exact (the kernel's eps may add entries within 1e-5 of the boundary; those rows are
counted, not compared); (2) many heads ranked by another score (the policy's final score C, as
after pooling or a redundancy mix), ties and heads of no mass: the count equals the oracle's
request_count. Exit 1 on the first difference.

    python3 tests/reference/check_topp.py build/tests/mass_count_dump
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_topp as ref  # noqa: E402


def fmt(a):
    return " ".join(repr(float(x)) for x in np.asarray(a, dtype=np.float32))


def main():
    rng = np.random.default_rng(20261207)
    cases, want, kind = [], [], []
    for _ in range(300):  # (1) Twilight's own case
        d = int(rng.integers(8, 300))
        x = rng.standard_normal(d).astype(np.float32) * 2
        x[0] = x.max() + 3
        pr = np.exp(x - x.max())
        pr = (pr / pr.sum()).astype(np.float32)
        p = float(np.float32(rng.uniform(0.3, 0.99)))
        m = ref.twilight_mask(pr, p)
        cases.append(f"1 {d} {p!r}\n{fmt(pr)}\n{fmt(pr)}\n")
        want.append(int(m.sum()) if int(m.sum()) == ref.exact_count(pr, p) else None)
        kind.append("twilight")
    for _ in range(300):  # (2) the request's curve
        H, n = int(rng.integers(1, 12)), int(rng.integers(0, 200))
        tau = float(np.float32(rng.choice([0.0, 0.5, 0.9, 0.99, 1.0, rng.uniform(0, 1)])))
        heads, text = [], []
        for _h in range(H):
            S = (rng.standard_normal(n) ** 2).astype(np.float32)
            if rng.random() < 0.15:
                S[:] = 0
            C = rng.integers(0, 5, n).astype(np.float32) if rng.random() < 0.3 else \
                (S + rng.standard_normal(n).astype(np.float32) * 0.3).astype(np.float32)
            order = sorted(range(n), key=lambda t: (-C[t], t))
            heads.append((S, order))
            text.append(f"{fmt(S)}\n{fmt(C)}\n")
        cases.append(f"{H} {n} {tau!r}\n" + "".join(text))
        want.append(ref.request_count(heads, tau) if n else 0)
        kind.append("request")
    out = subprocess.run([sys.argv[1]], input="".join(cases), capture_output=True, text=True)
    if out.returncode != 0:
        print(f"check_topp: mass_count_dump failed ({out.returncode}): {out.stderr.strip()}")
        return 1
    got = [int(x) for x in out.stdout.split()]
    if len(got) != len(cases):
        print(f"check_topp: {len(got)} answers for {len(cases)} cases")
        return 1
    loose = 0
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            loose += 1
            continue
        if g != w:
            print(f"check_topp: case {i} ({kind[i]}): harness keeps {g}, oracle {w}")
            return 1
    print(f"check_topp: {len(cases) - loose}/{len(cases)} counts identical "
          f"({loose} Twilight rows where the kernel's eps widens its mask, not compared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
