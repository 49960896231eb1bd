#!/usr/bin/env python3
"""check_history.py - exact H2O: the harness's live attention history and compression against
the authors' running hh_score (ref_h2o.keep_exact, FMInference/H2O modify_llama.py:317-326 and
:258-287). For each case a whole request's post-RoPE keys and queries (make_inputs.make_sequence:
a shared key direction, RoPE, near-duplicate runs) go to replay_dump, which runs the library's
CPU attn_history over every prompt row (two prefill chunks) and every decode row and compresses
with policy h2o whenever the growth block fills; the oracle replays H2O with the same cadence
(block 1: the original, one eviction a step). The final kept positions of every KV head must be
identical.

    python3 tests/reference/check_history.py build/tests/replay_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_inputs as mi  # noqa: E402
import ref_h2o  # noqa: E402

# (D, G, H_kv, prompt, budget, block, window, tokens)
CASES = [
    (64, 4, 2, 20, 32, 1, 1, 160),     # the original cadence: one eviction a decode step
    (128, 3, 2, 40, 64, 16, 16, 300),
    (64, 1, 2, 30, 48, 8, 8, 250),
    (128, 4, 2, 100, 128, 64, 16, 520),
]


def main(dump):
    tmp = tempfile.mkdtemp(prefix="zipage-h2o-")
    failures = 0
    for i, (D, G, H, P, budget, bs, w, N) in enumerate(CASES):
        seq = mi.make_sequence(D, G, N, H, seed=100 + i)
        K, Q = seq["keys_all"], seq["queries_all"]
        path = os.path.join(tmp, f"case{i}.bin")
        mi.write_replay_case(path, K, Q, P, budget, bs, w)
        out = subprocess.run([dump, path, "h2o", "{}"], check=True, capture_output=True, text=True).stdout
        got = [np.sort(np.array([int(x) for x in line.split()])) for line in out.strip().split("\n")]
        want, _ = ref_h2o.keep_exact(K, Q, P, budget, {"gqa": "mean"}, block=bs)
        same = sum(np.array_equal(got[h], np.sort(want[h])) for h in range(H))
        print(f"D {D:3d} G {G} block {bs:3d} budget {budget:3d} prompt {P:3d} tokens {N}: identical kept sets {same}/{H} heads"
              + ("" if same == H else "  FAIL"))
        failures += same != H
    print("check_history: " + ("exact H2O identical to the authors' replay" if not failures else f"{failures} case(s) differ"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
