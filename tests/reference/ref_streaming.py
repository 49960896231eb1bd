"""Reference oracle: StreamingLLM, attention sinks + recent window (harness policy `streaming`).

Follows (mit-han-lab/streaming-llm @ 2e50426):
  streaming_llm/kv_cache.py:23-38    StartRecentKVCache(start_size=4, recent_size=512)
  streaming_llm/kv_cache.py:40-64    __call__: when seq_len > start + recent, keep [0, start) and
                                     [seq_len - recent, seq_len), concatenated (position order)
  streaming_llm/kv_cache.py:66-94    evict_for_space: same with room for num_coming tokens
  examples/run_streaming_llama.py:118-119  start 4, recent 2000
  streaming_llm/pos_shift/modify_llama.py:89-103  position shift: keys are re-rotated with their
                                     index IN THE CACHE and the query with its cache position. This
                                     changes the attention, not which tokens the rule keeps.
and the budgeted form R-KV uses as its baseline (Zefan-Cai/R-KV @ d15c976
rkv/compression/streamingllm.py:4-41): first_tokens 4, local window budget - 4, applied when the
cache holds >= budget tokens (every divide_length tokens).
G-KV: scripts/inference.sh:23-26 (--sink_len 4 --window_size 512).

The kept set needs no keys or queries; applied once per step (the authors) or once per block
overflow (the harness), the set at the moment of eviction is the same.
"""
import numpy as np

from _common import merge_params

DEFAULTS = dict(start_size=4)


def keep(keys, queries, history, n_hist, block_size, budget, params=None):
    p = merge_params(DEFAULTS, params)
    H, n = np.shape(keys)[0], np.shape(keys)[1]
    if n <= budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    s = min(p["start_size"], budget)
    idx = np.concatenate([np.arange(s), np.arange(n - (budget - s), n)]).astype(np.int64)
    return np.broadcast_to(idx, (H, budget)).copy()


def keep_sorted(keys, queries, history, n_hist, block_size, budget, params=None):
    return np.sort(keep(keys, queries, history, n_hist, block_size, budget, params), axis=-1)


def keep_exact(n_total, budget, start_size=4):
    """Positions held by the authors' per-step cache after n_total tokens (start + recent =
    budget). Needs nothing but the length."""
    if n_total <= budget:
        return np.arange(n_total)
    return np.concatenate([np.arange(start_size), np.arange(n_total - (budget - start_size), n_total)])
