#!/usr/bin/env python3
"""cadence.py - how far the harness's block-granular eviction is from the per-step originals
of H2O and MorphKV, measured, so that the block size a run uses can be read as an
approximation of a known size.

One synthetic request (make_inputs.make_sequence: D 64, GQA 4, 2 KV heads, N tokens, a 64-token
prompt) goes through
  - the authors' per-step replay: ref_h2o.keep_exact (every prompt query and every decode query
    adds its attention over the cache as it is; one token evicted a step) and
    ref_morphkv.keep_exact (every step, the window's queries vote, one token evicted),
  - the harness's host plan (plan_dump, the C policy_select) replayed the engine's way at block
    size b: the cache grows by whole blocks and is compressed back to the budget whenever it
    holds budget + b tokens, with the last w queries, the stored history carried across
    compressions for H2O (none before the first, as in the engine).
The final caches are compared per KV head by the share of kept positions in common (|A & B| / B).
At b = 1 the harness evicts every step as the originals do; what differs then is the estimator
(h2o with history "window": the prompt's queries and the steps before the first compression do
not count, and a window of w queries counts each query w times unless w = 1; MorphKV: its rows
are the W - 1 queries before the current one and it protects W + 1 tokens, NOTES.md). h2o's
default, history "all", counts every query as H2O does: its rows are the authors' replay at the
harness's cadence, which tests/reference/check_history.py asserts the library reproduces
exactly, so only the cadence differs (identical at b = 1).

    .venv-grade/bin/python tests/reference/cadence.py build/tests/plan_dump [N] [BUDGET]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_plans  # noqa: E402  (write_case: the plan_dump input format)
import make_inputs as mi  # noqa: E402
import ref_h2o  # noqa: E402
import ref_morphkv  # noqa: E402

PROMPT = 64


def plan(dump, path, K, Q, hist, n_hist, bs, budget, policy, params, w):
    """One compression by the harness plan: kept indices [H][budget] and their new history."""
    H = K.shape[0]
    check_plans.write_case(path, dict(keys=K, queries=Q, n_hist=n_hist, block_size=bs, budget=budget), hist)
    out = subprocess.run([dump, path, policy, params, str(w), "--history"], check=True, capture_output=True, text=True).stdout
    lines = out.strip().split("\n")
    keep = [np.array([int(x) for x in lines[2 * h].split()]) for h in range(H)]
    newh = [np.array([float(x) for x in lines[2 * h + 1].split()]) for h in range(H)]
    return keep, newh


def harness_replay(dump, seq, budget, bs, policy, params, w, carry_history):
    """Final cache positions [H][budget] of the engine-style replay at block size bs."""
    K_all, Q_all = seq["keys_all"], seq["queries_all"]
    H, N, _ = K_all.shape
    pos = [np.arange(PROMPT) for _ in range(H)]        # cache positions per head, position order
    hist = [None] * H                                   # history of the retained tokens
    path = os.path.join(tempfile.mkdtemp(prefix="zipage-cadence-"), "c.bin")
    compressed = False
    for t in range(PROMPT, N):
        for h in range(H):
            pos[h] = np.append(pos[h], t)
        if len(pos[0]) < budget + bs:
            continue
        n = len(pos[0])
        K = np.stack([K_all[h, pos[h]] for h in range(H)])
        Q = np.stack([Q_all[h, t - w + 1:t + 1] for h in range(H)])   # the last w tokens' queries
        Hs = None
        if carry_history and compressed:
            Hs = np.stack([np.concatenate([hist[h], np.zeros(n - len(hist[h]))]) for h in range(H)])
        keep, newh = plan(dump, path, K, Q, Hs, budget if compressed else 0, bs, budget, policy, params, w)
        for h in range(H):
            pos[h] = pos[h][keep[h]]
            hist[h] = newh[h]
        compressed = True
    return pos


def share(a, b):
    return np.mean([len(np.intersect1d(x, y)) / len(y) for x, y in zip(a, b)])


def main(dump, N=1024, budget=256):
    seq = mi.make_sequence(D=64, G=4, N=N, H_kv=2, seed=0)
    K, Q = seq["keys_all"], seq["queries_all"]
    h2o_ref, _ = ref_h2o.keep_exact(K, Q, PROMPT, budget, {"gqa": "mean"})
    rows = [("h2o window", h2o_ref, '{"history": "window"}', True, [(1, 1), (1, 16), (4, 4), (16, 16), (64, 16), (256, 16)])]
    for W in (16, 32):
        mk_ref = ref_morphkv.keep_exact(K, Q, PROMPT, budget + 1, {"window": W})   # C = budget (NOTES.md)
        rows.append((f"morphkv W {W}", mk_ref, "{}", False, [(1, W), (4, W), (16, W), (64, W), (256, W)]))
    print(f"one request of {N} tokens (prompt {PROMPT}), budget {budget}, 2 KV heads, GQA 4, D 64")
    print(f"{'policy':16s} {'block':>5s} {'w':>3s}  kept positions shared with the per-step original")
    ref_pos = [np.sort(h2o_ref[h]) for h in range(h2o_ref.shape[0])]
    for bs in (1, 4, 16, 64, 256):   # exact H2O: the harness keeps what this replay keeps (check_history.py)
        got, _ = ref_h2o.keep_exact(K, Q, PROMPT, budget, {"gqa": "mean"}, block=bs)
        got = [np.sort(g) for g in got]
        print(f"{'h2o (exact)':16s} {bs:5d} {'-':>3s}  {share(got, ref_pos):.3f}")
    for name, ref, params, carry, settings in rows:
        ref_pos = [np.sort(ref[h]) for h in range(ref.shape[0])]
        for bs, w in settings:
            if (N - PROMPT) < bs:
                continue
            got = harness_replay(dump, seq, budget, bs, name.split()[0], params, w, carry)
            print(f"{name:16s} {bs:5d} {w:3d}  {share(got, ref_pos):.3f}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2:4]))
