"""Reference oracle: MorphKV (harness policy `morphkv`), Qwen2 patch (the closest to Qwen3).

Follows (ghadiaravi13/MorphKV @ 8903d2a):
  morphkv/models/patch_qwen2.py:218-223  WIN_SIZE W, MAX_CAPACITY C, morph_type, evict_after
  patch_qwen2.py:300-306   keys repeated to the query heads; the W cached queries (post-RoPE)
                           against every cached key, / sqrt(D)
  morphkv/morph_cache.py:145-151  query cache: the last W queries, newest (current token) last;
                           filled with the last W prompt queries at prefill (patch_qwen2.py:505)
  patch_qwen2.py:308-312   evicts in EVERY decode step once the cache (current token included)
                           holds >= (1 + C) * evict_after tokens; never during prefill
  patch_qwen2.py:228       softmax PER QUERY HEAD over the distant keys [:-(W+1)], rows
                           [-(W+1):-1] of the W-row query cache = its first W-1 rows (the W-1
                           previous queries; the current query is excluded)
  patch_qwen2.py:229-236   GQA: MAX over the group of those PROBABILITIES, then max over the rows
                           ("max_fused") or sum over the rows ("sum_fused"); topk(C - W)
  patch_qwen2.py:237       plus the last W + 1 tokens (W previous + current): C + 1 tokens survive
  morph_cache.py:109-112   survivors gathered with index_select of the mask's nonzero positions:
                           position order
  patch_qwen2.py:241-255   (not a kept-set matter) the current token's own attention is masked
                           with a per-QUERY-head top-k at the eviction step
  LongGenBench/Evalution/inference_hf.py:26-30  defaults max_fused, ws 3, mc 100, ea 1.0;
  README.md:74,99,137      ws 200 / mc 4000 max_fused; ws 30 / mc 600 sum_fused; ws 32 / mc 2000
                           sum_fused (W is 1.6-5 % of C)
Llama patch after the revert (gqa="sum_logit"): patch_llama.py:235-241 SUM over the group of the
stored LOGITS, then one softmax over the distant keys, then max/sum over the rows; rows are the
stored logits of the previous W tokens (patch_llama.py:225).

Interface mapping: budget = C + 1; the last W queries given are the query cache (queries[:, -1]
is the current token n - 1); rows used: queries[:, -W:-1]; distant keys t < n - W - 1;
top-k count budget - W - 1; protected: the last W + 1 tokens.
keep_exact(): the per-step eviction, which needs every token's query (the query cache at each
step) and replays the cache step by step.
"""
import numpy as np

from _common import as_f32, logits, merge_params, softmax, topk_desc

DEFAULTS = dict(window=32, fusion="max", gqa="max_prob")


def fused_scores(keys, queries, W, fusion="max", gqa="max_prob"):
    """[H, n - W - 1] MorphKV score of the distant keys; queries[:, -W:] is the query cache."""
    keys, queries = as_f32(keys), as_f32(queries)
    n = keys.shape[1]
    m = n - W - 1
    q = queries[:, -W:-1]                                       # W - 1 previous queries
    z = logits(q, keys[:, :m])                                  # [H, G, W-1, m]
    if gqa == "max_prob":
        rows = softmax(z, axis=-1).max(axis=1)                  # per head, then max over the group
    elif gqa == "sum_logit":
        rows = softmax(z.sum(axis=1), axis=-1)
    else:
        raise ValueError(gqa)
    return rows.max(axis=1) if fusion == "max" else rows.sum(axis=1)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    """history, n_hist, block_size unused (the Qwen2 patch recomputes from the query cache)."""
    p = merge_params(DEFAULTS, params)
    W = p["window"] if p["window"] is not None else np.shape(queries)[1]
    H, n, _ = np.shape(keys)
    assert np.shape(queries)[1] >= W >= 2, "need >= window (>= 2) queries"
    if n < budget:                               # authors evict once n >= C + 1 = budget
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    s = fused_scores(keys, queries, W, p["fusion"], p["gqa"])
    top = topk_desc(s, budget - W - 1)
    rec = np.broadcast_to(np.arange(n - W - 1, n), (H, W + 1))
    return np.sort(np.concatenate([top, rec], axis=1), axis=1)   # index_select: position order


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return keep(keys, queries, history, n_hist, block_size, budget, params)


def keep_exact(keys_all, queries_all, prompt_len, budget, params=None, n_steps=None, evict_after=1.0):
    """Replays MorphKV per decode step. keys_all [H, N, D], queries_all [H, N, G, D]: every
    token's post-RoPE key and query (the extra input). No eviction during prefill; from the
    first decode token on, whenever the cache incl. the current token holds >= budget *
    evict_after tokens (C = budget - 1), it keeps budget tokens. Returns positions [H, L]."""
    p = merge_params(DEFAULTS, params)
    W = p["window"]
    keys_all, queries_all = as_f32(keys_all), as_f32(queries_all)
    H, N, D = keys_all.shape
    end = N if n_steps is None else min(N, prompt_len + n_steps)
    pos = np.broadcast_to(np.arange(prompt_len), (H, prompt_len)).copy()
    for t in range(prompt_len, end):
        pos = np.concatenate([pos, np.full((H, 1), t)], axis=1)
        L = pos.shape[1]
        if L >= budget * evict_after and L >= budget:
            kc = np.take_along_axis(keys_all, pos[:, :, None], axis=1)
            qc = queries_all[:, t + 1 - W:t + 1]                 # query cache: last W queries
            idx = keep(kc, qc, None, 0, 0, budget, dict(p, window=W))
            pos = np.take_along_axis(pos, idx, axis=1)
    return pos
