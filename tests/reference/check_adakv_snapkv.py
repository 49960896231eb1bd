#!/usr/bin/env python3
"""check_adakv_snapkv.py - AdaKV over SnapKV's scores, whole layers: the harness's `snapkv`
plan with the engine's layer-wide selection (scorer_head_keep, through plan_dump --adakv) against
ref_adakv.keep_snapkv, the port of the authors' AdaptiveSnapKVCluster (gqa mean, window 32, max
pool 7): identical kept sets for every KV head of make_inputs' cases (D 64 and 128, GQA 1, 3 and 4,
blocks 64 and 256, first and later compressions) with 2 and 4 KV heads, at floor shares 0.2 (the
authors' default), 0.5 and 0. The harness sums SnapKV's window rows where the authors average
them: a factor 1/32, exact in binary, so no kept set can differ by it. Exit 1 on any difference.

    python3 tests/reference/check_adakv_snapkv.py build/tests/plan_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_inputs as mi  # noqa: E402
import ref_adakv  # noqa: E402
from check_plans import write_case  # noqa: E402


def main(dump):
    tmp = tempfile.mkdtemp(prefix="zipage-adakv-")
    same = heads = uneven = 0
    for H_kv in (2, 4):
        for i, c in enumerate(mi.all_cases(H_kv=H_kv)):
            path = os.path.join(tmp, f"case{H_kv}_{i}.bin")
            write_case(path, c, None)
            for floor in (0.2, 0.5, 0.0):
                want = ref_adakv.keep_snapkv(c["keys"], c["queries"], c["budget"], floor)
                out = subprocess.run([dump, path, "snapkv", "{}", "32", "--adakv", repr(floor)], check=True, capture_output=True,
                                     text=True).stdout
                got = [np.array([int(x) for x in line.split()], dtype=np.int64) for line in out.strip().split("\n")]
                for h in range(H_kv):
                    heads += 1
                    same += h < len(got) and np.array_equal(got[h], want[h])
                    uneven += len(want[h]) != c["budget"]
    print(f"check_adakv_snapkv: identical kept sets {same}/{heads} heads; {uneven} heads keep other than the uniform budget")
    sys.exit(0 if same == heads and uneven > 0 else 1)


if __name__ == "__main__":
    main(sys.argv[1])
