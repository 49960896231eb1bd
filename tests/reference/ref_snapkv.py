"""Reference oracle: SnapKV as its authors published it (prefill-time only).

Follows (FasterDecoding/SnapKV @ e216ddc):
  snapkv/monkeypatch/snapkv_utils.py:72-87   defaults: window_size 32, max_capacity_prompt 2048,
                                             kernel_size 5, pooling avgpool
  experiments/LongBench/config/ablation_c2048_w32_k7_maxpool.json  the LongBench runs: window 32,
                                             capacity 2048, kernel 7, maxpool
  snapkv/monkeypatch/llama_hijack_4_37.py:76-77  K/V repeated to the QUERY heads BEFORE
                                             compression: one selection per query head, so the
                                             cache is G times larger than a per-KV-head cache
  llama_hijack_4_37.py:84-90                 update_kv only on the pass whose key length equals the
                                             whole sequence (the prefill); decoding never evicts
  snapkv_utils.py:40-43                      no compression when the prompt is shorter than
                                             max_capacity_prompt
  snapkv_utils.py:45-54                      logits of the last W prompt queries against ALL prompt
                                             keys / sqrt(D), causal mask inside the window (additive
                                             finfo.min), softmax over all keys (fp32)
  snapkv_utils.py:55                         SUM over the W rows of the non-window columns
  snapkv_utils.py:56-61                      avg_pool1d (count_include_pad: edges divided by k) or
                                             max_pool1d, kernel k, padding k//2
  snapkv_utils.py:62-69                      topk(capacity - W), gathered in TOP-K ORDER, then the W
                                             window tokens
Output shape differs from the common interface: [H_kv, G, budget] (one row per query head,
query head h*G + g); G == 1 gives [H_kv, 1, budget].

keep_kv_head is the common interface ([H_kv, budget]) for the harness's `snapkv`, which keeps one
set per KV head: the authors' per-query-head probabilities are reduced over the group per window
row (gqa "mean_prob", the harness's default, or "max_prob") before the sum over the rows, the
pooling and the top-k above. That reduction is the harness's, not the authors'; with G == 1 it is
the identity and keep_kv_head returns the authors' kept set.
"""
import numpy as np

from _common import (NEG_INF, as_f32, avg_pool1d, causal_window_mask, logits, max_pool1d, merge_params,
                     softmax, topk_desc)

DEFAULTS = dict(window=32, kernel=5, pooling="avgpool")
LONGBENCH = dict(window=32, kernel=7, pooling="maxpool")


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    """keys: the PROMPT keys [H_kv, n, D]; queries: >= W last prompt queries [H_kv, w, G, D];
    budget = max_capacity_prompt. Returns [H_kv, G, budget] (or [H_kv, G, n] when n < budget).
    history, n_hist, block_size unused."""
    p = merge_params(DEFAULTS, params)
    W = p["window"]
    keys, queries = as_f32(keys), as_f32(queries)
    H, n, _ = keys.shape
    G = queries.shape[2]
    assert queries.shape[1] >= W
    if n < budget:
        return np.broadcast_to(np.arange(n), (H, G, n)).copy()
    z = logits(queries[:, -W:], keys)                          # [H, G, W, n]
    z = np.where(causal_window_mask(W, n)[None, None], NEG_INF, z)
    a = softmax(z, axis=-1)[:, :, :, :n - W].sum(axis=2)       # [H, G, n - W]
    pooled = avg_pool1d(a, p["kernel"]) if p["pooling"] == "avgpool" else max_pool1d(a, p["kernel"])
    idx = topk_desc(pooled, budget - W)
    win = np.broadcast_to(np.arange(n - W, n), (H, G, W))
    return np.concatenate([idx, win], axis=-1)


def keep_kv_head(keys, queries, history, n_hist, block_size, budget, params=None):
    """The harness's per-KV-head SnapKV (see the module note): [H_kv, budget], top-k order."""
    p = merge_params(dict(LONGBENCH, gqa="mean_prob"), params)
    W = p["window"]
    keys, queries = as_f32(keys), as_f32(queries)
    H, n, _ = keys.shape
    if n < budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    z = logits(queries[:, -W:], keys)                          # [H, G, W, n]
    z = np.where(causal_window_mask(W, n)[None, None], NEG_INF, z)
    pr = softmax(z, axis=-1)[:, :, :, :n - W]                  # [H, G, W, n - W]
    a = (pr.mean(axis=1) if p["gqa"] == "mean_prob" else pr.max(axis=1)).sum(axis=1)   # [H, n - W]
    pooled = avg_pool1d(a, p["kernel"]) if p["pooling"] == "avgpool" else max_pool1d(a, p["kernel"])
    idx = topk_desc(pooled, budget - W)
    win = np.broadcast_to(np.arange(n - W, n), (H, W))
    return np.concatenate([idx, win], axis=-1)


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)


def keep_exact(prompt_keys, prompt_queries, n_total, budget, params=None):
    """The authors' cache after n_total tokens: the prefill selection of the prompt (per query
    head), then EVERY generated token (no decode-time eviction). Needs the prompt's keys and its
    last W queries, and only the count of generated tokens. Returns [H_kv, G, L]."""
    sel = keep(prompt_keys, prompt_queries, None, 0, 0, budget, params)
    P = np.shape(prompt_keys)[1]
    H, G = sel.shape[:2]
    gen = np.broadcast_to(np.arange(P, n_total), (H, G, n_total - P))
    return np.concatenate([sel, gen], axis=-1)
