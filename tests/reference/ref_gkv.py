"""Reference oracle: G-KV (microsoft/G-KV @ 6db3b2e), against the harness policy `gkv`
(policies/gkv.c; check_plans.py asserts identical kept sets; NOTES.md lists what still differs:
cadence and precision).

Follows:
  scripts/inference.sh:16-21,52-62       G-KV recipe: --method score --suppressing_redundancy
                                         --mix_lambda 0.5 --enable_score_cache --alpha 0.8,
                                         budget 2048, divide_length 128, window_size 16
  gkv/inference_main.py:151-173,284-325  flags -> method_config; smooth_method default "max",
                                         enable_pooling off; kernel_size/triton_similarity not passed,
                                         so ScoreBasedKV defaults apply (kernel 5, triton True)
  gkv/model/modeling_qwen3.py:118-157    rolling query cache: the last window_size queries
                                         (post q_norm + RoPE), newest = current token
  gkv/model/gen_patch.py:174-179         compress when output_length % divide_length == 0
  gkv/model/compression/score_based.py:102-103  no-op while kv_cache_len <= budget
  gkv/utils/compression_score.py:269-346 attention: keys / sqrt(D); causal mask inside the last
                                         q_len columns (:326-331); softmax over ALL keys; MAX over the
                                         GQA group of PROBABILITIES (pooling="max", :337-341); the
                                         window's own columns removed (remove_query, :343-344)
  score_based.py:115                     A = mean over the window rows (candidates t < n - W only)
  score_based.py:121-125                 A /= max(A) (enable_score_cache and not disable_norm)
  score_based.py:127-156                 history: old = cat(score_cache, A[len(score_cache):]);
                                         "max": S = max(alpha * old, A) ("mean", "sum" variants too)
  score_based.py:158-166                 optional max pool (kernel 5) of S over the candidates
  score_based.py:168-190                 redundancy: cal_similarity_triton (compression_score.py:204-266,
                                         kernel :74-199): row sums with the last-above-0.5 rule,
                                         keys / (||k|| + 1e-6), divided by n * temperature(1), softmax
                                         over all n, window sliced off; R /= max(R) (same condition);
                                         C = lambda * S - (1 - lambda) * R
  score_based.py:202-205                 topk(budget - W) of the candidates, then SORTED
  score_based.py:207-221                 new score cache = S (before pooling / redundancy) gathered at
                                         the kept candidates: budget - W entries. The W window tokens
                                         and every later token have NO history at the next compression.
  score_based.py:244-255                 cache = kept candidates (position order) + the W window tokens
"""
import numpy as np

import _redundancy as red
from _common import (NEG_INF, as_f32, causal_window_mask, logits, max_pool1d, merge_params, softmax,
                     topk_desc, window_idx)

DEFAULTS = dict(window=16, kernel=5, mix_lambda=0.5, enable_pooling=False, suppressing_redundancy=True,
                enable_score_cache=True, smooth_method="max", alpha=0.8, disable_norm=False, threshold=0.5,
                triton_similarity=True, clip_history=True)


def attention(keys, queries, W):
    """[H, n - W]: G-KV compute_attention_scores(pooling='max', remove_query=True).mean(rows)."""
    keys, queries = as_f32(keys), as_f32(queries)
    n = keys.shape[1]
    z = logits(queries[:, -W:], keys)                      # [H, G, W, n]
    z = np.where(causal_window_mask(W, n)[None, None], NEG_INF, z)
    p = softmax(z, axis=-1).max(axis=1)                    # max over the group of probabilities
    return p[:, :, :n - W].mean(axis=1)


def redundancy(keys, W, triton_similarity=True, threshold=0.5):
    """[H, n - W] normalised redundancy of the candidates (softmax over all n first)."""
    n = np.shape(keys)[1]
    if triton_similarity:
        r = red.rowsum_last_rule(keys, threshold, mode="gkv") / (n * 1.0)
    else:
        r = red.rkv_colmean(keys, threshold, mode="rkv")
    return softmax(r, axis=-1)[:, :n - W]


def score_based(keys, queries, score_cache, budget, window=16, kernel=5, mix_lambda=0.1, enable_pooling=False,
                suppressing_redundancy=False, enable_score_cache=False, smooth_method="max", alpha=0.8,
                disable_norm=False, threshold=0.5, triton_similarity=True, **unused):
    """ScoreBasedKV.update_kv for one request. score_cache [H, L] or None.
    Returns (indices [H, budget] into keys, new score cache [H, budget - W] or None)."""
    keys = as_f32(keys)
    H, n, _ = keys.shape
    W = window
    if n <= budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy(), score_cache
    A = attention(keys, queries, W).astype(np.float64)
    if enable_score_cache and not disable_norm:
        A = A / A.max(axis=-1, keepdims=True)
    S = A
    if enable_score_cache and score_cache is not None and alpha > 0:
        L = score_cache.shape[-1]
        assert L <= n - W
        if smooth_method != "sum":
            old = np.concatenate([score_cache, A[:, L:]], axis=-1)
        else:
            old = np.concatenate([score_cache, np.zeros((H, n - W - L))], axis=-1)
        if smooth_method == "mean":
            S = old * alpha + A * (1 - alpha)
        elif smooth_method == "max":
            S = np.maximum(old * alpha, A)
        elif smooth_method == "sum":
            S = old * alpha + A
        else:
            raise ValueError(smooth_method)
    P = max_pool1d(S.astype(np.float32), kernel).astype(np.float64) if enable_pooling else S
    if suppressing_redundancy:
        R = redundancy(keys, W, triton_similarity, threshold).astype(np.float64)
        if enable_score_cache and not disable_norm:
            R = R / R.max(axis=-1, keepdims=True)
        P = P * mix_lambda - R * (1 - mix_lambda)
    idx = np.sort(topk_desc(P, budget - W), axis=-1)
    new_cache = np.take_along_axis(S, idx, axis=-1) if enable_score_cache else None
    return np.concatenate([idx, window_idx(H, n, W)], axis=1), new_cache


def _cache_from_history(history, n_hist, budget, W, clip):
    if history is None or n_hist <= 0:
        return None
    L = min(n_hist, budget - W) if clip else n_hist
    return np.asarray(history, dtype=np.float64)[:, :L]


def keep_with_history(keys, queries, history, n_hist, block_size, budget, params=None):
    """(indices [H, budget], new history [H, budget] aligned with the kept tokens; the last W
    entries are NaN because G-KV stores no score for the window tokens)."""
    p = merge_params(DEFAULTS, params)
    W = p["window"]
    sc = _cache_from_history(history, n_hist, budget, W, p["clip_history"])
    idx, new_cache = score_based(keys, queries, sc, budget, **p)
    H = idx.shape[0]
    nh = None
    if new_cache is not None:
        nh = np.concatenate([new_cache, np.full((H, W), np.nan)], axis=1)
    return idx, nh


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    """history valid for t < n_hist. With clip_history (default) only t < budget - W use it, as
    in G-KV, where the previous window tokens have no cached score."""
    return keep_with_history(keys, queries, history, n_hist, block_size, budget, params)[0]


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)
