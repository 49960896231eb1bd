#!/usr/bin/env python3
"""check_pyramid.py - the harness's PyramidKV schedule (model/layer_budget.c, through
pyramid_dump) against ref_pyramidkv.py, the port of the authors' code: identical per-layer
capacities for a grid of prompt capacities, windows, layer counts, betas and prompt lengths
(short prompts included, where the authors clamp layer 0), and the harness's cap -> P rule
against its definition. Exit 1 on the first difference.

    python3 tests/reference/check_pyramid.py build/tests/pyramid_dump
"""
import itertools
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_pyramidkv as ref  # noqa: E402


def main():
    dump = sys.argv[1]
    cases = []
    for P, w, L, beta in itertools.product([40, 96, 320, 1000, 2048, 4096], [1, 8, 32], [2, 3, 24, 28, 36, 80], [1, 7, 20]):
        if P - w <= 0:
            continue
        for q in [P + 1, 2 * P, 100000]:
            cases.append(("s", P, w, L, beta, q))
    caps = [("c", c, w, beta) for c, w, beta in itertools.product([3, 34, 64, 256, 512, 2048, 4097], [1, 8, 32], [1, 20])]
    text = "".join(" ".join(map(str, c)) + "\n" for c in cases + caps)
    out = subprocess.run([dump], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(cases) + len(caps):
        sys.exit(f"check_pyramid: {len(out)} lines for {len(cases) + len(caps)} cases")
    bad = 0
    for case, line in zip(cases, out):
        want = ref.caps(*case[1:])
        got = [int(v) for v in line.split()]
        if got != want:
            bad += 1
            if bad <= 5:
                print(f"schedule {case[1:]}: harness {got[:6]}..., authors {want[:6]}...")
    for case, line in zip(caps, out[len(cases):]):
        if int(line) != ref.cap_total(*case[1:]):
            bad += 1
            print(f"cap {case[1:]}: harness P {line}, definition {ref.cap_total(*case[1:])}")
    print(f"check_pyramid: {len(cases)} schedules and {len(caps)} caps, {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
