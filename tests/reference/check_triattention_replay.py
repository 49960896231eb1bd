#!/usr/bin/env python3
"""check_triattention_replay.py - TriAttention in its three modes over whole requests: the
harness's compressor (replay_dump: the host plan through the engine's compression path, with the
request's next position and prompt as the engine passes them, 2 or 3 layers) against ref_triattention.py, the
port of the authors' code. For each case a request's post-RoPE keys (make_inputs.make_sequence,
RoPE theta 1e6) and random calibrated statistics go to replay_dump, which compresses each time the
growth block fills (block size B, budget N_max x B: the paper's cadence when B = 128) and prints
each KV head's held positions; the oracle replays the same cadence: at newest token t, the
scores of the held decode tokens at next position R = t + 1 (ref.score_rot, fp64), z-normalised
per (layer, query head), then the mode's rule: per_layer_perhead (ref.keep_per_layer_head),
per_head (ref.keep_per_head: one set per KV head for every layer), union (ref.keep_union: one set
for all), the prompt kept. The final caches of every (layer, KV head) must hold the same positions,
the prompt first, in each mode; and the cases must tell the modes apart. Exit 1 on a failure.

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

# (D, G, H_kv, layers, prompt, budget, block, tokens): four or more compressions each
CASES = [(64, 4, 2, 2, 20, 32, 16, 200), (128, 2, 2, 3, 40, 64, 16, 330), (64, 1, 2, 2, 2, 64, 32, 400), (128, 4, 2, 2, 100, 128, 64, 520)]
MODES = ("per_layer_perhead", "per_head", "union")


def oracle(mode, K, P, budget, bs, qm, qa, w, G):
    """Held positions [L][H] after the request (sorted: the harness compacts in position order)."""
    L, H, N = K.shape[0], K.shape[1], K.shape[2]
    held = [[list(range(P)) for _ in range(H)] for _ in range(L)]
    offs = ref.offsets()
    for t in range(P, N):
        for l in range(L):
            for h in range(H):
                held[l][h].append(t)
        if len(held[0][0]) < budget + bs:
            continue
        R = t + 1
        raw = np.array([[[ref.score_rot(K[l, h, held[l][h]][P:], R, qm[l, h * G + g], qa[l, h * G + g], w, offs) for g in range(G)]
                         for h in range(H)] for l in range(L)])  # [L, H, G, m]
        if mode == "per_layer_perhead":
            for l in range(L):
                for h in range(H):
                    kept = ref.keep_per_layer_head(raw[l, h][None], G, P, budget)[0, 0]
                    held[l][h] = sorted(np.array(held[l][h])[kept].tolist())
            continue
        S = ref.znorm(raw.reshape(L, H * G, -1))  # [L, Hq, m], as ref.decode_scores
        if mode == "per_head":
            kept = ref.keep_per_head(S, G, P, budget)  # [H, kept]: one set per KV head, every layer
            new = [sorted(np.array(held[0][h])[kept[h]].tolist()) for h in range(H)]
        else:
            kept = ref.keep_union(S, P, budget)  # one set for all
            new = [sorted(np.array(held[0][0])[kept].tolist()) for _ in range(H)]
        held = [[list(x) for x in new] for _ in range(L)]
    return [[np.array(x) for x in row] for row in held]


def write_case(path, K, P, budget, bs, qm, qa, w):
    L, H, N, D = K.shape
    G = qm.shape[1] // H
    Q = np.zeros((H, N, G, D), np.float32)  # TriAttention reads no queries
    mi.write_replay_case(path, K[0], Q, P, budget, bs, 1)
    with open(path, "ab") as f:
        f.write(np.array([L], dtype="<i4").tobytes())
        f.write(K[1:].astype("<f4").tobytes())
        f.write(np.concatenate([qm.real, qm.imag, qa], axis=2).astype("<f4").tobytes())  # [L][Hq][3 * F]
        f.write(w.astype("<f4").tobytes())


def main(dump):
    tmp = tempfile.mkdtemp(prefix="zipage-trig-")
    rng = np.random.default_rng(520)
    failures = 0
    apart = {m: 0 for m in MODES[1:]}  # (layer, head)s whose final set differs from per_layer_perhead's
    for i, (D, G, H, L, P, budget, bs, N) in enumerate(CASES):
        F = D // 2
        K = np.stack([mi.make_sequence(D, G, N, H, seed=520 + 10 * i + l)["keys_all"] for l in range(L)])  # [L, H, N, D]
        w = (mi.ROPE_THETA ** (-np.arange(0, D, 2) / D)).astype(np.float32).astype(np.float64)
        qm = (rng.standard_normal((L, H * G, F)) + 1j * rng.standard_normal((L, H * G, F))).astype(np.complex64)
        qa = (np.abs(qm) + np.abs(rng.standard_normal((L, H * G, F)))).astype(np.float32)
        path = os.path.join(tmp, f"case{i}.bin")
        write_case(path, K, P, budget, bs, qm, qa, w)
        for mode in MODES:
            out = subprocess.run([dump, path, "triattention", '{"stats": "(in the case file)", "mode": "%s"}' % mode], check=True,
                                 capture_output=True, text=True).stdout
            lines = out.strip().split("\n")
            got = [[np.array([int(x) for x in lines[l * H + h].split()]) for h in range(H)] for l in range(L)]
            want = oracle(mode, K, P, budget, bs, qm, qa, w, G)
            if mode == MODES[0]:
                first = want
            else:
                apart[mode] += sum(not np.array_equal(first[l][h], want[l][h]) for l in range(L) for h in range(H))
            same = sum(np.array_equal(got[l][h], want[l][h]) for l in range(L) for h in range(H))
            prompt_kept = all(np.array_equal(got[l][h][:P], np.arange(P)) for l in range(L) for h in range(H))
            ok = same == L * H and prompt_kept
            print(f"triattention {mode:17s} D {D:3d} G {G} layers {L} block {bs:3d} budget {budget:3d} prompt {P:3d} tokens {N}: "
                  f"identical caches {same}/{L * H} (layer, head)s, prompt kept {prompt_kept}" + ("" if ok else "  FAIL"))
            failures += not ok
    print("final sets differing from per_layer_perhead's: " + ", ".join(f"{m} {k}" for m, k in apart.items())
          + ("" if all(apart.values()) else "  FAIL (the cases do not tell the modes apart)"))
    failures += not all(apart.values())
    print("check_triattention_replay: " + ("the compressor keeps the oracle's tokens in every mode" if not failures else f"{failures} case(s) differ"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
