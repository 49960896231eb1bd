"""Reference oracle: TOVA (harness policy `tova`).

Follows (schwartz-lab-NLP/TOVA @ 9c7d09b):
  src/convert_models/llama_custom.py:70   the new token's K/V are appended to the cache before
                                          the attention is computed
  llama_custom.py:75-91                   q k^T / sqrt(d) over every cached key and the current
                                          token, softmax in fp32
  llama_custom.py:112-113                 past_key_value.reduce(layer, attn_weights) after it
  src/tova_cache.py:41-42                 no eviction while the cache holds <= cache_size keys
  src/tova_cache.py:44                    mean over ALL query heads of the current (last) query's
                                          attention row: one score per token and layer
  src/tova_cache.py:45-46                 topk(cache_size), then sorted: position order
  src/tova_cache.py:47-51                 the same indices for every KV head of the layer
Nothing is protected: the newest token can be evicted. (kvpress's TOVAPress,
kvpress/presses/tova_press.py:45-59, differs: it drops the token's own column and always keeps
the newest token.)

keep_layer is the authors' rule for one eviction of a layer ([H_kv, budget], the same row for
every KV head). keep_kv_head is the harness's `tova`: the newest query's softmax per query head,
averaged over the KV head's group only, one selection per KV head. Where the layer has one KV
head the two are the same selection (asserted in check_plans.py). The authors evict one token
per step; the harness a block's worth at each overflow (the cadence, as for H2O).
"""
import numpy as np

from _common import as_f32, logits, softmax, topk_desc


def _newest_probs(keys, queries):
    """Softmax of the newest query over all n keys per query head: [H_kv, G, n]."""
    z = logits(as_f32(queries)[:, -1:], as_f32(keys))  # [H, G, 1, n]
    return softmax(z, axis=-1)[:, :, 0].astype(np.float64)


def keep_kv_head(keys, queries, history, n_hist, block_size, budget, params=None):
    H, n = np.shape(keys)[0], np.shape(keys)[1]
    if n <= budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    return np.sort(topk_desc(_newest_probs(keys, queries).mean(axis=1), budget), axis=-1)


def keep_layer(keys, queries, history, n_hist, block_size, budget, params=None):
    H, n = np.shape(keys)[0], np.shape(keys)[1]
    if n <= budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    score = _newest_probs(keys, queries).reshape(-1, n).mean(axis=0)  # every query head of the layer
    return np.broadcast_to(np.sort(topk_desc(score[None], budget)[0]), (H, budget)).copy()
