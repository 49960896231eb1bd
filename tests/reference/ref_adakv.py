"""Reference oracle: AdaKV's head-wise budget allocation as its authors wrote it.

Follows (FFY0/AdaKV @ efe4e2e, adaptive_snapkv/monkeypatch/snapkv_utils.py, class
AdaptiveSnapKVCluster, update_kv_gqa; update_kv_wo_gqa is the same rule without the group):
  303-306   base_capacity = budget - window (the candidates' budget B of one head);
            floor_capacity = int(B * floor_alpha); floor_alpha defaults to 0.2 (pred.py:27)
  439-442   no compression while B exceeds the candidates
  445       each head's candidate scores sorted descending
  449-455   (normalize off, the default) the sorted scores of all heads flattened [head][rank],
            top-k of H * B over them, each pick counted for its head (scatter_add_)
  460       counts = round(counts * (1 - floor_alpha) + floor_capacity): int64 * python float in
            torch's default float32, round half to even
  478       head h keeps its first counts[h] sorted candidates (a slice: never more than it has),
            488 then its window tokens
Top-k ties: torch leaves them unspecified; here the lower flattened index (the lower head, then
the earlier rank), and inside a head the earlier token (_common.py's convention).

head_counts takes heads of unequal lengths, which the authors' prefill never meets (every head
scores the same prompt) and the engine's later compressions do; with equal lengths it is their
rule exactly. harness_counts adds the one step that is the harness's own, not theirs: the
rounding can give a layer up to H / 2 more than H * B, which fixed-size cells cannot hold, so
the largest count (the later head on ties) loses one until the sum fits.
"""
import numpy as np


def floor_capacity(B, alpha):
    return int(B * alpha)


def head_counts(scores, B, alpha):
    """scores: a list of H 1-d float32 arrays (head h's candidate scores). Returns int counts [H]."""
    H = len(scores)
    flat_s, flat_h = [], []
    for h, s in enumerate(scores):
        s = np.asarray(s, dtype=np.float32)
        s = np.where(np.isnan(s), np.float32(-np.inf), s)
        srt = -np.sort(-s, kind="stable")          # 445: descending
        flat_s.append(srt)
        flat_h.append(np.full(len(srt), h))
    flat_s, flat_h = np.concatenate(flat_s), np.concatenate(flat_h)
    picked = np.argsort(-flat_s, kind="stable")[:H * B]   # 453: topk over [head][rank]
    c = np.bincount(flat_h[picked], minlength=H)          # 457-458: scatter_add_ of ones
    blended = c.astype(np.float32) * np.float32(1 - alpha) + np.float32(floor_capacity(B, alpha))
    c = np.rint(blended).astype(np.int64)                 # 460: round half to even, .int()
    n = np.array([len(s) for s in scores])
    return np.clip(c, 0, n)                               # 478: the slice clamps


def harness_counts(scores, B, alpha):
    c = head_counts(scores, B, alpha)
    while c.sum() > len(scores) * B:
        big = len(c) - 1 - int(np.argmax(c[::-1]))        # the largest, the later head on ties
        c[big] -= 1
    return c


def keep(scores, counts):
    """Each head's kept candidates: its counts[h] highest scores, the earlier token on ties, ascending."""
    out = []
    for s, k in zip(scores, counts):
        s = np.asarray(s, dtype=np.float32)
        s = np.where(np.isnan(s), np.float32(-np.inf), s)
        out.append(np.sort(np.argsort(-s, kind="stable")[:k]))
    return out


def keep_snapkv(keys, queries, budget, floor_alpha=0.2, window=32, kernel=7, harness=True):
    """AdaKV over SnapKV's scores, as AdaptiveSnapKVCluster with gqa_support and gqa_func "mean":
    keys [H_kv, n, D], queries [H_kv, w, G, D] (the last `window` used); budget = the authors'
    base_capacity (window included). Follows snapkv_utils.py 335-370 (calcul_attn_sore: the window
    queries' logits / sqrt(D), causal inside the window, softmax over all keys in fp32, the mean
    over the window rows of the non-window columns, the mean over the group, max_pool1d kernel 7
    padding 3), 445-460 (head_counts) and 478-490 (each head's top counts, then its window).
    Returns each head's kept indices, ascending; harness=True applies the harness's trim step."""
    from _common import NEG_INF, as_f32, causal_window_mask, logits, max_pool1d, softmax
    W = window
    keys, queries = as_f32(keys), as_f32(queries)
    H, n, _ = keys.shape
    B = budget - W
    if B > n - W:                                               # 439-442: no compression
        return [np.arange(n) for _ in range(H)]
    z = logits(queries[:, -W:], keys)                           # [H, G, W, n]
    z = np.where(causal_window_mask(W, n)[None, None], NEG_INF, z)
    a = softmax(z, axis=-1)[:, :, :, :n - W].mean(axis=2).mean(axis=1)   # [H, n - W]
    pooled = max_pool1d(a, kernel).astype(np.float32)
    scores = [pooled[h] for h in range(H)]
    counts = harness_counts(scores, B, floor_alpha) if harness else head_counts(scores, B, floor_alpha)
    return [np.concatenate([k, np.arange(n - W, n)]) for k in keep(scores, counts)]
