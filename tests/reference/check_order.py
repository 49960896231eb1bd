#!/usr/bin/env python3
"""check_order.py - R-KV and SnapKV-D over whole requests: the harness's compaction order against
the authors' cache order. R-KV (Zefan-Cai/R-KV rkv/compression/r1_kv.py:82,168-179) and its
SnapKV-D (snapkv.py:61,131-142) gather the survivors in top-k order, then the window, and never
sort them, so from the second compression on their max pool and R-KV's "latest duplicate" rule act
on cache neighbours, not position neighbours. For each case a request's post-RoPE keys and queries
(make_inputs.make_sequence) go to replay_dump, which compresses with the library (host plan,
kv_compact) each time the growth block fills and prints each KV head's held positions in physical
order; the oracle replays the same cadence with the authors' keep (ref_rkv.keep, ref_snapkv_d.keep,
which return indices in their gather order) and takes the cache in that order. The sequences must
be identical, order included: with "order": "score" (the default) against the authors' order, with
"order": "position" against the same replay sorted after every compression (G-KV's order).

    python3 tests/reference/check_order.py build/tests/replay_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_inputs as mi  # noqa: E402
import ref_rkv  # noqa: E402
import ref_snapkv_d  # noqa: E402

# (D, G, H_kv, prompt, budget, block, window, tokens): four or more compressions each
CASES = [
    (64, 4, 2, 20, 32, 16, 8, 200),
    (128, 3, 2, 40, 64, 16, 8, 330),
    (64, 1, 2, 30, 64, 32, 8, 400),
    (128, 4, 2, 100, 128, 64, 8, 520),
]
# R-KV with its column-0 quirk ("parity": true, the default, as its code): the quirk zeroes a
# similarity with the token in cache slot 0, which in score order is the best-ranked token
POLICIES = [("rkv", ref_rkv.keep, ', "parity": true'), ("snapkv-d", ref_snapkv_d.keep, "")]


def oracle(keep, K, Q, P, budget, bs, w, sort):
    """The authors' cache after the request: positions [H, len] in cache order."""
    H, N = K.shape[0], K.shape[1]
    pos = np.broadcast_to(np.arange(P), (H, P)).copy()
    for t in range(P, N):
        pos = np.concatenate([pos, np.full((H, 1), t)], axis=1)
        if pos.shape[1] == budget + bs:
            kc = np.stack([K[h, pos[h]] for h in range(H)])
            idx = keep(kc, Q[:, t - w + 1:t + 1], None, 0, bs, budget, {"window": w})
            pos = np.take_along_axis(pos, np.sort(idx, axis=-1) if sort else idx, axis=1)
    return pos


def main(dump):
    tmp = tempfile.mkdtemp(prefix="zipage-order-")
    failures = 0
    differ = [0, 0]
    for i, (D, G, H, P, budget, bs, w, N) in enumerate(CASES):
        seq = mi.make_sequence(D, G, N, H, seed=300 + i)
        K, Q = seq["keys_all"], seq["queries_all"]
        path = os.path.join(tmp, f"case{i}.bin")
        mi.write_replay_case(path, K, Q, P, budget, bs, w)
        for policy, keep, extra in POLICIES:
            for order in ("score", "position"):
                out = subprocess.run([dump, path, policy, '{"order": "%s"%s}' % (order, extra)], check=True, capture_output=True, text=True).stdout
                got = [np.array([int(x) for x in line.split()]) for line in out.strip().split("\n")]
                want = oracle(keep, K, Q, P, budget, bs, w, order == "position")
                same = sum(np.array_equal(got[h], want[h]) for h in range(H))
                sets = sum(np.array_equal(np.sort(got[h]), np.sort(want[h])) for h in range(H))
                ok = same == H
                note = ""
                if order == "score":  # what the order changes: the kept set against the sorted replay's
                    other = oracle(keep, K, Q, P, budget, bs, w, True)
                    d = sum(not np.array_equal(np.sort(want[h]), np.sort(other[h])) for h in range(H))
                    differ[0] += d
                    differ[1] += H
                    note = f"; kept set differs from position order on {d}/{H}"
                print(f"{policy:8s} order {order:8s} D {D:3d} G {G} block {bs:3d} budget {budget:3d} tokens {N}: "
                      f"identical caches {same}/{H} heads (sets {sets}/{H}){note}" + ("" if ok else "  FAIL"))
                failures += not ok
    print(f"score order vs position order: different final kept sets on {differ[0]}/{differ[1]} heads"
          + ("" if differ[0] else "  FAIL (the cases do not tell the orders apart)"))
    failures += differ[0] == 0
    print("check_order: " + ("R-KV and SnapKV-D keep their authors' cache order" if not failures else f"{failures} case(s) differ"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
