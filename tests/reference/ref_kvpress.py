"""Reference oracles: the key-score presses of kvpress (harness policies `keynorm` and `keydiff`).

Follows (NVIDIA/kvpress @ 8bb29b9, the presses last changed in 42175e7):
  kvpress/presses/scorer_press.py:93-95   n_kept = int(k_len * (1 - compression_ratio)); the
                                          kept tokens are scores.topk(n_kept, dim=-1) per
                                          (batch, KV head): higher is kept (docstring l.70-72)
  kvpress/presses/knorm_press.py:38       score = -keys.norm(dim=-1): the L2 norm over head_dim of
                                          each post-RoPE key, negated (low norms kept)
  kvpress/presses/keydiff_press.py:45     anchor = F.normalize(keys, p=2, dim=-1).mean(dim=2):
                                          unit keys (eps 1e-12) averaged over the sequence
  kvpress/presses/keydiff_press.py:46     score = -F.cosine_similarity(keys, anchor, dim=-1)
                                          (eps 1e-8): the keys least like the mean are kept
  kvpress/presses/block_press.py:65-92    KeyDiff's block-wise form (the paper's): the kept set
                                          and the next block are scored together, the anchor
                                          over those candidates only, topk(n_kept)
Neither press protects any token (no sinks, no window). The harness rounds key-norm's scores to 12
significant bits (kvpress does not): RoPE preserves a key's norm, so a token repeated at another
position has the same norm up to float rounding, and rounded the two tie exactly and the
earlier is kept on every backend instead of whichever float noise favours. kvpress compresses a prompt once; the
harness runs the same score at every block overflow on the cache plus its growth block, which
is BlockPress's step (candidates = kept + one block, budget = n_kept). The budget here is the
harness's N_max x block_size, not a ratio. Ties: the lower index (torch.topk leaves them
unspecified; _common.topk_desc).
"""
import numpy as np

from _common import as_f32, topk_desc


def _keep(score, n, budget):
    H = score.shape[0]
    if n <= budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    return topk_desc(score, budget)


def round_bits(x, bits=12):
    """x rounded to `bits` significant bits, ties to even (the harness's scorers/key_hash.h)."""
    m, e = np.frexp(x)
    return np.ldexp(np.rint(np.ldexp(m, bits)), e - bits)


def keep_knorm(keys, queries, history, n_hist, block_size, budget, params=None):
    k = as_f32(keys).astype(np.float64)
    return _keep(-round_bits(np.linalg.norm(k, axis=-1)), k.shape[1], budget)


def keep_keydiff(keys, queries, history, n_hist, block_size, budget, params=None):
    k = as_f32(keys).astype(np.float64)                                 # [H, n, D]
    norm = np.linalg.norm(k, axis=-1, keepdims=True)
    anchor = (k / np.maximum(norm, 1e-12)).mean(axis=1, keepdims=True)  # [H, 1, D]
    an = np.linalg.norm(anchor, axis=-1)                                 # [H, 1]
    cos = (k * anchor).sum(-1) / (np.maximum(norm[..., 0], 1e-8) * np.maximum(an, 1e-8))
    return _keep(-cos, k.shape[1], budget)
