"""Reference oracle: R-KV (harness policy `rkv`).

Follows (Zefan-Cai/R-KV @ d15c976):
  rkv/compression/r1_kv.py:9-19     defaults: budget 128, window_size 8, kernel_size 7,
                                    mix_lambda 0.07 (code; README.md:175 and the paper say 0.1),
                                    retain_direction "last"
  rkv/compression/r1_kv.py:46-47    no compression while the cache holds fewer than `budget` tokens
  rkv/compression/r1_kv.py:49       logits: rkv/utils.py:8-39 (q.k / sqrt(D), MAX over the GQA
                                    group of the LOGITS)
  rkv/compression/r1_kv.py:51-59    softmax over the non-window keys [:-W] (fp32), mean over the W
                                    rows, cast to bf16
  rkv/compression/r1_kv.py:62-67    max_pool1d kernel 7, padding 3 over the candidates
  rkv/compression/r1_kv.py:69-73    redundancy rkv/utils.py:42-94 cal_similarity on ALL n keys
                                    (window included): k / (||k|| + 1e-8), cosine, diagonal 0,
                                    threshold 0.5, per row zero the LAST column above threshold
                                    (column 0 when none: the quirk), mean over rows, softmax over n;
                                    then the window columns are sliced off
  rkv/compression/r1_kv.py:75-77    final = lambda * pooled - (1 - lambda) * redundancy
  rkv/compression/r1_kv.py:82       topk(budget - W), torch.topk order
  rkv/compression/r1_kv.py:168-180  gather candidates in TOP-K (rank) ORDER, then the W window
                                    tokens: later compressions see the cache in rank order, so
                                    pooling mixes rank neighbours and "last" = highest cache slot
  rkv/modeling.py:101-126           rolling cache of the last W queries (newest = current token)
  rkv/modeling.py:589-610, run_math.py:137-154, README.md:170-175
                                    cadence: every divide_length = 128 tokens (B_buffer 128), alpha
                                    (window) 8, lambda 0.1
keep_gkv_recipe: the R-KV that G-KV ran (microsoft/G-KV @ 6db3b2e scripts/inference.sh:10-14:
--method score --enable_pooling --suppressing_redundancy --mix_lambda 0.1; window 16 from :58)
computed by gkv/model/compression/score_based.py:102-205 with gkv/utils/compression_score.py:
softmax over ALL keys with a causal window (:326-335), MAX over the group of PROBABILITIES
(:337-341), max pool kernel 5 (score_based.py:19), triton redundancy without the column-0 quirk
and with keys / (||k|| + 1e-6) (compression_score.py:74-266), sorted kept indices (:205).
"""
import numpy as np

import _redundancy as red
from _common import (as_f32, bf16, merge_params, softmax, top_plus_window, topk_desc, window_idx)
from ref_snapkv_d import importance

DEFAULTS = dict(window=8, kernel=7, mix_lambda=0.1, threshold=0.5, emulate_bf16=False)


def redundancy(keys, threshold=0.5, emulate_bf16=False):
    """[H, n]: softmax over n of R-KV's column mean (with the column-0 quirk)."""
    m = red.rkv_colmean(keys, threshold, mode="rkv")
    R = softmax(m, axis=-1)
    return bf16(R) if emulate_bf16 else R


def scores(keys, queries, params=None):
    """[H, n - W] final R-KV score of the candidates."""
    p = merge_params(DEFAULTS, params)
    W, lam = p["window"], p["mix_lambda"]
    n = np.shape(keys)[1]
    P = importance(keys, queries, W, p["kernel"], p["emulate_bf16"]).astype(np.float64)
    R = redundancy(keys, p["threshold"], p["emulate_bf16"])[:, :n - W].astype(np.float64)
    if p["emulate_bf16"]:
        return bf16(bf16(P * lam) - bf16(R * (1 - lam)))
    return P * lam - R * (1 - lam)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    """history, n_hist, block_size unused (R-KV keeps no state)."""
    p = merge_params(DEFAULTS, params)
    return top_plus_window(keys, queries, budget, p["window"], lambda: scores(keys, queries, p))


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)


def keep_gkv_recipe(keys, queries, history, n_hist, block_size, budget, params=None):
    """R-KV as G-KV ran it (and presumably the R-KV anchor in Zipage's tables)."""
    import ref_gkv
    p = dict(window=16, enable_pooling=True, kernel=5, suppressing_redundancy=True, mix_lambda=0.1,
             enable_score_cache=False, triton_similarity=True)
    p.update(params or {})
    idx, _ = ref_gkv.score_based(keys, queries, None, budget, **p)
    return idx


def simulate(keys_all, queries_all, prompt_len, budget, divide=128, params=None):
    """Whole request with the authors' cadence and rank-order cache (_common.simulate_periodic)."""
    from _common import simulate_periodic
    p = merge_params(DEFAULTS, params)
    fn = lambda kc, qw, b, pp: keep(kc, qw, None, 0, 0, b, pp)
    return simulate_periodic(fn, keys_all, queries_all, prompt_len, budget, divide, p["window"], p)
