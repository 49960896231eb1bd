"""Reference oracle: Zipage (harness policy `zipage`).

Follows (microsoft/Zipage @ 3cf00ad):
  scripts/mathbench.sh:18-33          the paper's run: N_max 8, query_cache_len 16, lightning
                                      redundancy, lambda 0.2, temperature 0.4, global score with decay
                                      0.8, pooling on (zipage/config.py:22-48 defaults otherwise:
                                      max_norm False, continues_pooling False, pooling_size 5,
                                      sinks off / 4; model_runner.py:71 hard-codes pooling 5)
  zipage/engine/model_runner.py:334-349  query cache = the last query_cache_len queries (tokens
                                      bs - w .. bs - 1 of the full last block)
  zipage/kernel/attention_score.py:100-130  q.k * D^-0.5 over every block; in the LAST block query j
                                      sees in-block offsets <= bs - w + j (causal), others -inf
  attention_score.py:222-247          softmax over all keys per query head, MAX over the group, MEAN
                                      over the window (reduced="mean", model_runner.py:473)
  model_runner.py:480-494             optional max_norm (A /= max A), then global_score
  zipage/kernel/global_score.py:39-74 S = max(A, decay * H) on every block but the last one of a
                                      request that was compressed before; S = A on the last block and on
                                      a first compression; S is written back as the new score cache
  zipage/kernel/compress_score.py:40-60  the stored S follows the kept tokens in order
  model_runner.py:498-534             max pool (k 5, stride 1, -inf padding) of S over the WHOLE
                                      sequence, only for requests not yet compressed (unless
                                      continues_pooling)
  zipage/kernel/lightning_redudancy_score.py:57-169,248-252  lightning: inside each physical block,
                                      keys / max(||k||, 1e-6) (key_norm.py:75,112), diagonal 0, the
                                      last row above 0.5 per column is zeroed, row sums;
                                      softmax(r / (temperature * bs)) over the whole sequence
  zipage/kernel/raw_redudancy_score.py:81-155,218-229  raw: the same over all tokens,
                                      softmax(r / (temperature * T_valid))
  model_runner.py:551-561             optional R /= max R; C = lambda * P - (1 - lambda) * R
  model_runner.py:565-577             optional sinks: C[t < sink_len] = +inf
  zipage/kernel/window_mask.py:35-44  C = +inf on the last query_cache_len tokens of the last block
  model_runner.py:590-597, zipage/kernel/utils.py:21-36  top-k of bs * N_max over the request
  zipage/kernel/compress_kv.py:55-100 compaction in original (position) order
Interface: compressed (a later compression) <=> n_hist > 0; the history then covers every block
but the last, i.e. t < n - block_size (the harness passes n_hist = N_max * bs = n - bs).
"""
import numpy as np

import _redundancy as red
from _common import (NEG_INF, as_f32, causal_window_mask, logits, max_pool1d, merge_params, softmax,
                     topk_desc)

DEFAULTS = dict(window=16, use_global=True, global_mode="max", decay=0.8, max_norm=False, use_pooling=True,
                continues_pooling=False, pool_kernel=5, use_redundancy=True, lightning=True, lambda_=0.2,
                temperature=0.4, theta=0.5, use_sink=False, sink_len=4)


def attention(keys, queries, w):
    keys, queries = as_f32(keys), as_f32(queries)
    n = keys.shape[1]
    z = logits(queries[:, -w:], keys)                          # [H, G, w, n]
    z = np.where(causal_window_mask(w, n)[None, None], NEG_INF, z)
    return softmax(z, axis=-1).max(axis=1).mean(axis=1).astype(np.float64)   # [H, n]


def scores(keys, queries, history, n_hist, block_size, params=None):
    """(C [H, n] final score, S [H, n] the new score-cache values)."""
    p = merge_params(DEFAULTS, params)
    keys = as_f32(keys)
    H, n, _ = keys.shape
    w = p["window"]
    compressed = n_hist > 0 and history is not None
    A = attention(keys, queries, w)
    if p["use_global"] and p["max_norm"]:
        A = A / A.max(axis=-1, keepdims=True)
    S = A.copy()
    if p["use_global"] and compressed:
        m = n - block_size                                     # all blocks but the last
        Hh = np.asarray(history, dtype=np.float64)[:, :m]
        S[:, :m] = np.maximum(A[:, :m], p["decay"] * Hh) if p["global_mode"] == "max" else A[:, :m] + p["decay"] * Hh
    P = S
    if p["use_pooling"] and (p["continues_pooling"] or not compressed):
        P = max_pool1d(S.astype(np.float32), p["pool_kernel"]).astype(np.float64)
    C = P
    if p["use_redundancy"]:
        if p["lightning"]:
            r = red.blockwise_rowsum(keys, block_size, p["theta"], mode="zipage")
            R = softmax(r / (p["temperature"] * block_size), axis=-1).astype(np.float64)
        else:
            r = red.rowsum_last_rule(keys, p["theta"], mode="zipage")
            R = softmax(r / (p["temperature"] * n), axis=-1).astype(np.float64)
        if p["use_global"] and p["max_norm"]:
            R = R / R.max(axis=-1, keepdims=True)
        C = P * p["lambda_"] - R * (1 - p["lambda_"])
    C = C.copy()
    if p["use_sink"]:
        C[:, :p["sink_len"]] = np.inf
    C[:, n - w:] = np.inf
    return C, S


def keep_with_history(keys, queries, history, n_hist, block_size, budget, params=None):
    C, S = scores(keys, queries, history, n_hist, block_size, params)
    idx = np.sort(topk_desc(C, budget), axis=-1)                  # compaction keeps position order
    return idx, np.take_along_axis(S, idx, axis=1)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    return keep_with_history(keys, queries, history, n_hist, block_size, budget, params)[0]


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return keep(keys, queries, history, n_hist, block_size, budget, params)
