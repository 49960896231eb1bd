"""Reference oracle: SnapKV-D, SnapKV adapted to decoding as R-KV runs it (harness policy `snapkv`).

Follows (Zefan-Cai/R-KV @ d15c976):
  rkv/compression/snapkv.py:9-20    defaults: budget 128, window_size 8, kernel_size 7
  rkv/compression/snapkv.py:38-39   no compression while the cache holds fewer than `budget` tokens
  rkv/compression/snapkv.py:41      logits from rkv/utils.py:8-39 compute_attention_scores:
                                    q.k / sqrt(D), then MAX over the GQA group (pooling="max") of the
                                    LOGITS (G == 1: plain logits)
  rkv/compression/snapkv.py:43-51   softmax over the non-window keys [:-W] only (fp32), mean over
                                    the W window rows, cast to the model dtype (bf16)
  rkv/compression/snapkv.py:53-58   max_pool1d(kernel 7, padding 3, stride 1) over those candidates
  rkv/compression/snapkv.py:61      topk(budget - W) of the candidates, torch.topk order (by score)
  rkv/compression/snapkv.py:131-142 gather the candidates in TOP-K ORDER, then append the W window
                                    tokens: the new cache is in rank order, not position order
  rkv/modeling.py:101-126           the W queries are a rolling cache of the last W queries
                                    (post-RoPE), the newest being the current token
  rkv/modeling.py:589-610, run_math.py:154  compression every divide_length = 128 tokens
  README.md:181                     "SnapKV adapted from prompt-time to decode-time by compressing every
                                    128 generated tokens"
G-KV's SnapKV recipe (keep_gkv_recipe below): microsoft/G-KV @ 6db3b2e scripts/inference.sh:6-8
(--method score --enable_pooling), gkv/model/compression/score_based.py:14-35,102-205 with
gkv/utils/compression_score.py:269-346 (see ref_gkv.py): softmax over ALL keys with a causal
window, MAX over the group of PROBABILITIES, window columns dropped, mean over the window, max pool
kernel 5 (score_based.py:19 default, not overridden by gkv/inference_main.py:151-173), sorted
indices (score_based.py:205), window 16 (scripts/inference.sh:58).
"""
import numpy as np

from _common import (as_f32, bf16, logits, max_pool1d, merge_params, softmax, top_plus_window, topk_desc, window_idx)

DEFAULTS = dict(window=8, kernel=7, emulate_bf16=False)


def importance(keys, queries, W, kernel, emulate_bf16=False):
    """[H, n - W] pooled SnapKV-D importance of the candidates t < n - W."""
    keys, queries = as_f32(keys), as_f32(queries)
    n = keys.shape[1]
    q = queries[:, -W:]
    z = logits(q, keys).max(axis=1)              # [H, W, n]: max over the group of logits
    A = softmax(z[:, :, :n - W], axis=-1).mean(axis=1)
    if emulate_bf16:
        A = bf16(A)
    return max_pool1d(A, kernel)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    """history, n_hist, block_size are unused (SnapKV-D keeps no state)."""
    p = merge_params(DEFAULTS, params)
    return top_plus_window(keys, queries, budget, p["window"], lambda: importance(keys, queries, p["window"], p["kernel"], p["emulate_bf16"]))


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)


def keep_gkv_recipe(keys, queries, history, n_hist, block_size, budget, params=None):
    """SnapKV as G-KV (and hence presumably Zipage's baseline table) ran it."""
    import ref_gkv
    p = dict(window=16, enable_pooling=True, kernel=5, suppressing_redundancy=False,
             enable_score_cache=False)
    p.update(params or {})
    idx, _ = ref_gkv.score_based(keys, queries, None, budget, **p)
    return idx


def simulate(keys_all, queries_all, prompt_len, budget, divide=128, params=None):
    """Whole request with the authors' cadence and cache order (see _common.simulate_periodic).
    Returns the list of (position of the token at which it compressed, original positions of
    the cache in cache order)."""
    from _common import simulate_periodic
    p = merge_params(DEFAULTS, params)
    fn = lambda kc, qw, b, pp: keep(kc, qw, None, 0, 0, b, pp)
    return simulate_periodic(fn, keys_all, queries_all, prompt_len, budget, divide, p["window"], p)
