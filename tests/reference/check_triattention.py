#!/usr/bin/env python3
"""check_triattention.py - the harness's TriAttention scorers (scorers/trig.c, through trig_dump)
against ref_triattention.py, the port of the authors' code, on synthetic GQA groups: Qwen3's and
Llama's RoPE frequencies, head dims 64 and 128, prompts of 0 to 300 tokens, next positions up to
40,000 (phases near 1e5 rad):
  1. raw scores: within 1e-5 of max|score| of the oracle's fp64 scores (the authors' own fp32
     arithmetic is further from them: printed for reference);
  2. the per_layer_perhead kept set of each (layer, KV head): the oracle's, computed from its own
     scores; a difference is allowed only between tokens whose aggregated scores lie within 1e-4
     of each other (a near-tie), and is reported.
Exit 1 on the first failure.

    python3 tests/reference/check_triattention.py build/tests/trig_dump
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_triattention as ref  # noqa: E402


def make_case(rng, n, D, G, P, budget, R, theta):
    F = D // 2
    w = ref.inv_freq(D, theta)
    pos = np.arange(R - n, R)  # the keys' positions end just before R
    keys = ref.rope((rng.standard_normal((n, D)) * 0.7 + 0.3).astype(np.float32), pos, w).astype(np.float32)
    qm = (rng.standard_normal((G, F)) + 1j * rng.standard_normal((G, F))).astype(np.complex64)
    qa = (np.abs(qm) + np.abs(rng.standard_normal((G, F)))).astype(np.float32)
    return dict(n=n, D=D, G=G, P=P, budget=budget, R=R, w=w, pos=pos, keys=keys, qm=qm, qa=qa)


def encode(c):
    rows = [f"{c['n']} {c['D']} {c['G']} {c['P']} {c['budget']} {c['R']}", " ".join(f"{x:.9g}" for x in c["w"])]
    for g in range(c["G"]):
        rows.append(" ".join(f"{x:.9g}" for x in np.concatenate([c["qm"][g].real, c["qm"][g].imag, c["qa"][g]])))
    rows.append(" ".join(f"{x:.9g}" for x in c["keys"].ravel()))
    return "\n".join(rows) + "\n"


def main():
    dump = sys.argv[1]
    rng = np.random.default_rng(52)
    cases = []
    for D, theta in ((128, 1e6), (64, 5e5)):
        for n, P, budget, R, G in ((256, 0, 128, 256, 4), (640, 40, 512, 640, 4), (1100, 300, 1024, 40000, 2), (400, 100, 200, 20000, 1)):
            cases.append(make_case(rng, n, D, G, P, budget, R, theta))
    out = subprocess.run([dump], input="".join(encode(c) for c in cases), capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != sum(c["G"] + 1 for c in cases):
        print(f"check_triattention: {len(out)} lines from trig_dump for {len(cases)} cases")
        return 1
    line, worst, worst_authors, near = 0, 0.0, 0.0, 0
    for i, c in enumerate(cases):
        ref_rows = []
        for g in range(c["G"]):
            got = np.array(out[line].split(), dtype=np.float64)
            line += 1
            want = ref.score_rot(c["keys"], c["R"], c["qm"][g], c["qa"][g], c["w"], ref.offsets())
            authors = ref.score_positions(c["keys"], c["pos"], c["R"], c["qm"][g], c["qa"][g], c["w"], ref.offsets())
            scale = np.max(np.abs(want))
            err = np.max(np.abs(got - want)) / scale
            worst, worst_authors = max(worst, err), max(worst_authors, np.max(np.abs(authors - want)) / scale)
            if err > 1e-5:
                print(f"check_triattention: case {i} head {g}: scores {err:.2e} of max|score| from the oracle's")
                return 1
            ref_rows.append(want)
        got_keep = set(map(int, out[line].split()))
        line += 1
        S = np.array(ref_rows)[None, :, c["P"]:]  # [1 layer, G, m]
        want_keep = set(ref.keep_per_layer_head(S, c["G"], c["P"], c["budget"])[0, 0].tolist())
        if got_keep != want_keep:
            agg = ref.znorm(S[0]).max(0)
            diff = sorted((got_keep ^ want_keep))
            spread = np.ptp(agg[np.array(diff) - c["P"]]) if all(t >= c["P"] for t in diff) else np.inf
            if len(got_keep) != len(want_keep) or spread > 1e-4:
                print(f"check_triattention: case {i}: kept sets differ at {diff[:8]} (aggregated scores {spread:.2e} apart)")
                return 1
            near += 1
    print(f"check_triattention: {len(cases)} groups, scores within {worst:.1e} of the oracle's fp64 (the authors' fp32 "
          f"arithmetic within {worst_authors:.1e}), kept sets equal ({near} near-ties)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
