#!/usr/bin/env python3
"""check_triattention_replay.py - TriAttention (per_layer_perhead) over whole requests: the
harness's compressor (replay_dump: the host plan through the engine's compression path, with the
request's next position and prompt as the engine passes them) against ref_triattention.py, the
port of the authors' code. For each case a request's post-RoPE keys (make_inputs.make_sequence,
RoPE theta 1e6) and random calibrated statistics go to replay_dump, which compresses each time the
growth block fills (block size B, budget N_max x B: the paper's cadence when B = 128) and prints
each KV head's held positions; the oracle replays the same cadence: at newest token t, the
scores of the held decode tokens at next position R = t + 1 (ref.score_rot, fp64), z-normalised
per query head, the group's max, the prompt kept (ref.keep_per_layer_head). The final caches must
hold the same positions, the prompt first. Exit 1 on a failure.

    python3 tests/reference/check_triattention_replay.py build/tests/replay_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_inputs as mi  # noqa: E402
import ref_triattention as ref  # noqa: E402

# (D, G, H_kv, prompt, budget, block, tokens): four or more compressions each
CASES = [(64, 4, 2, 20, 32, 16, 200), (128, 2, 2, 40, 64, 16, 330), (64, 1, 2, 2, 64, 32, 400), (128, 4, 2, 100, 128, 64, 520)]


def oracle(K, P, budget, bs, qm, qa, w, G):
    """Held positions [H, budget] after the request, and the worst near-tie spread met."""
    H, N = K.shape[0], K.shape[1]
    held = [list(range(P)) for _ in range(H)]
    offs = ref.offsets()
    for t in range(P, N):
        for h in range(H):
            held[h].append(t)
        if len(held[0]) == budget + bs:
            R = t + 1
            for h in range(H):
                pos = np.array(held[h])
                keys = K[h, pos]  # post-RoPE, at their original positions
                rows = np.array([ref.score_rot(keys[P:], R, qm[h * G + g], qa[h * G + g], w, offs) for g in range(G)])
                kept = ref.keep_per_layer_head(rows[None], G, P, budget)[0, 0]
                held[h] = sorted(pos[kept].tolist())
    return [np.array(x) for x in held]


def write_case(path, K, P, budget, bs, qm, qa, w):
    H, N, D = K.shape
    G = qm.shape[0] // H
    Q = np.zeros((H, N, G, D), np.float32)  # TriAttention reads no queries
    mi.write_replay_case(path, K, Q, P, budget, bs, 1)
    with open(path, "ab") as f:
        st = np.concatenate([qm.real, qm.imag, qa], axis=1).astype("<f4")  # [Hq][3 * F]
        f.write(st.tobytes())
        f.write(w.astype("<f4").tobytes())


def main(dump):
    tmp = tempfile.mkdtemp(prefix="zipage-trig-")
    rng = np.random.default_rng(520)
    failures = 0
    for i, (D, G, H, P, budget, bs, N) in enumerate(CASES):
        F = D // 2
        K = mi.make_sequence(D, G, N, H, seed=520 + i)["keys_all"]
        w = (mi.ROPE_THETA ** (-np.arange(0, D, 2) / D)).astype(np.float32)
        qm = (rng.standard_normal((H * G, F)) + 1j * rng.standard_normal((H * G, F))).astype(np.complex64)
        qa = (np.abs(qm) + np.abs(rng.standard_normal((H * G, F)))).astype(np.float32)
        path = os.path.join(tmp, f"case{i}.bin")
        write_case(path, K, P, budget, bs, qm, qa, w.astype(np.float64))
        out = subprocess.run([dump, path, "triattention", '{"stats": "(in the case file)"}'], check=True, capture_output=True,
                             text=True).stdout
        got = [np.array([int(x) for x in line.split()]) for line in out.strip().split("\n")]
        want = oracle(K, P, budget, bs, qm, qa, w.astype(np.float64), G)
        same = sum(np.array_equal(got[h], want[h]) for h in range(H))
        prompt_kept = all(np.array_equal(got[h][:P], np.arange(P)) for h in range(H))
        ok = same == H and prompt_kept
        print(f"triattention D {D:3d} G {G} block {bs:3d} budget {budget:3d} prompt {P:3d} tokens {N}: identical caches {same}/{H} heads, "
              f"prompt kept {prompt_kept}" + ("" if ok else "  FAIL"))
        failures += not ok
    print("check_triattention_replay: " + ("the compressor keeps the oracle's tokens" if not failures else f"{failures} case(s) differ"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
