"""Reference oracle: H2O heavy hitters + recent window (harness policy `h2o`).

Follows (FMInference/H2O @ ac75c2a, h2o_hf/utils_real_drop/modify_llama.py):
  :242-256   H2OKVCache_LayerWise(hh_size, recent_size); cache_size = hh + recent
  :258-266   every forward first updates hh_score, then evicts only if seq_len > cache_size
  :317-326   _update_hh_score: hh += attention probabilities summed over batch and over the
             query rows of this forward; the new tokens' columns start from their own attention.
             Prefill: all prompt rows (causal). Decode: the one new query. I.e. the running sum
             over EVERY query ever processed, of the attention it actually computed over the
             cache that existed at that step (evicted tokens are no longer in its softmax)
  :271-277   keep = sort(topk(hh[:, :seq_len - recent], hh_size)) then the last `recent`
  :279-285   boolean-mask gather: survivors stay in position order; hh_score moves with them
  :484-509   softmax over all keys with the causal mask, fp32 softmax cast back to fp16; the
             scores are PER QUERY HEAD and the mask is applied to the un-repeated KV cache, so
             the code supports only MHA (num_kv_heads == num_heads); this oracle reduces the
             GQA group by a SUM of probabilities (option gqa="mean": same ranking)
  h2o_hf/run_summarization.py:62-63  hh 1024 / recent 1024 (equal split); scripts/lm_eval/h2o.sh:9
             and run_lm_eval_harness.py:34-35 heavy_ratio = recent_ratio = 0.1 (equal split)
G-KV's H2O recipe (keep_gkv_recipe): microsoft/G-KV @ 6db3b2e scripts/inference.sh:28-32
(--enable_score_cache --smooth_method sum --window_size 1), alpha 0.8 (gkv/inference_main.py:324),
S = 0.8 * H + A / max(A) (gkv/model/compression/score_based.py:121-125,152-154).
R-KV's h2o.py (rkv/compression/h2o.py:15,35) forces window 1 and uses only the last query, with
no accumulation: not reproduced here.

keep(): the authors' selection rule applied once with the information the harness interface
carries: S = history (t < n_hist) + the attention of the given queries (all w of them, or the
last params["window"]), causal over all n keys.
keep_exact(): what the authors compute; it needs the queries of EVERY token of the request and
replays the per-step eviction (see its docstring).
"""
import numpy as np

from _common import (NEG_INF, as_f32, causal_window_mask, logits, merge_params, softmax, topk_desc)

DEFAULTS = dict(hh_size=None, recent_size=None, gqa="sum", window=None)


def _split(budget, p):
    recent = p["recent_size"] if p["recent_size"] is not None else budget // 2
    hh = p["hh_size"] if p["hh_size"] is not None else budget - recent
    assert hh + recent == budget, "hh_size + recent_size must equal the budget"
    return hh, recent


def _reduce_group(prob, gqa):
    return prob.sum(axis=1) if gqa == "sum" else prob.mean(axis=1)


def _select(S, hh, recent):
    """S [H, L] -> sorted kept indices [H, hh + recent] (modify_llama.py:271-285)."""
    H, L = S.shape
    if L <= hh + recent:
        return np.broadcast_to(np.arange(L), (H, L)).copy()
    top = np.sort(topk_desc(S[:, :L - recent], hh), axis=-1)
    rec = np.broadcast_to(np.arange(L - recent, L), (H, recent))
    return np.concatenate([top, rec], axis=1)


def window_attention_sum(keys, queries, gqa="sum"):
    """[H, n]: sum over the w given queries of their causal softmax attention over all n keys."""
    keys, queries = as_f32(keys), as_f32(queries)
    n = keys.shape[1]
    w = queries.shape[1]
    z = logits(queries, keys)                                  # [H, G, w, n]
    z = np.where(causal_window_mask(w, n)[None, None], NEG_INF, z)
    return _reduce_group(softmax(z, axis=-1), gqa).sum(axis=1).astype(np.float64)


def keep_with_history(keys, queries, history, n_hist, block_size, budget, params=None):
    p = merge_params(DEFAULTS, params)
    hh, recent = _split(budget, p)
    q = queries if p["window"] is None else np.asarray(queries)[:, -p["window"]:]
    S = window_attention_sum(keys, q, p["gqa"])
    if history is not None and n_hist > 0:
        S[:, :n_hist] += np.asarray(history, dtype=np.float64)[:, :n_hist]
    idx = _select(S, hh, recent)
    return idx, np.take_along_axis(S, idx, axis=1)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    return keep_with_history(keys, queries, history, n_hist, block_size, budget, params)[0]


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)


def keep_exact(keys_all, queries_all, prompt_len, budget, params=None, n_steps=None, block=1):
    """Replays H2O step by step.

    keys_all [H, N, D] and queries_all [H, N, G, D]: post-RoPE keys and queries of EVERY token
    of the request (prompt and generated), at their original positions -- the extra input the
    harness interface does not carry (it has only the last w queries and one stored score).
    Prefill: hh = column sums of the causal attention of all prompt queries; eviction if the
    prompt exceeds the budget. Then for each decode token p: append key p, add the attention of
    query p over the CURRENT cache to hh, evict one token when the cache exceeds the budget.
    block > 1: the harness's cadence with the authors' rule unchanged -- the cache grows to
    budget + block tokens before the same selection brings it back to budget (block 1 is the
    original, one token a step). Returns (positions [H, L] of the final cache in cache order,
    hh [H, L]).
    """
    p = merge_params(DEFAULTS, params)
    hh_size, recent = _split(budget, p)
    keys_all, queries_all = as_f32(keys_all), as_f32(queries_all)
    H, N, D = keys_all.shape
    end = N if n_steps is None else min(N, prompt_len + n_steps)
    P = prompt_len
    z = logits(queries_all[:, :P], keys_all[:, :P])             # [H, G, P, P]
    z = np.where(np.triu(np.ones((P, P), bool), 1)[None, None], NEG_INF, z)
    hh = _reduce_group(softmax(z, axis=-1), p["gqa"]).sum(axis=1).astype(np.float64)
    pos = np.broadcast_to(np.arange(P), (H, P)).copy()
    idx = _select(hh, hh_size, recent)
    pos, hh = np.take_along_axis(pos, idx, 1), np.take_along_axis(hh, idx, 1)
    scale = 1.0 / np.sqrt(D)
    for t in range(P, end):
        pos = np.concatenate([pos, np.full((H, 1), t)], axis=1)
        hh = np.concatenate([hh, np.zeros((H, 1))], axis=1)
        kc = np.take_along_axis(keys_all, pos[:, :, None], axis=1)          # [H, L, D]
        zt = np.einsum("hgd,hld->hgl", queries_all[:, t].astype(np.float64), kc.astype(np.float64)) * scale
        hh += _reduce_group(softmax(zt, axis=-1), p["gqa"]).astype(np.float64)
        if pos.shape[1] < budget + block:
            continue
        idx = _select(hh, hh_size, recent)
        pos, hh = np.take_along_axis(pos, idx, 1), np.take_along_axis(hh, idx, 1)
    return pos, hh


def keep_gkv_recipe(keys, queries, history, n_hist, block_size, budget, params=None):
    """H2O as G-KV ran it: window 1, S = 0.8 H + A / max A, history on t < budget - 1."""
    import ref_gkv
    p = dict(window=1, enable_pooling=False, suppressing_redundancy=False, enable_score_cache=True,
             smooth_method="sum", alpha=0.8)
    p.update(params or {})
    sc = None
    if history is not None and n_hist > 0:
        sc = np.asarray(history, dtype=np.float64)[:, :min(n_hist, budget - p["window"])]
    idx, _ = ref_gkv.score_based(keys, queries, sc, budget, **p)
    return idx
