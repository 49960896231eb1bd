"""Shared numpy helpers for the reference oracles (own code; nothing here is copied).

Conventions used by every oracle in this folder
-----------------------------------------------
keys     [H_kv, n, D]     float32, post-RoPE keys of one request and one layer, physical order
queries  [H_kv, w, G, D]  float32, the last w queries; query j belongs to token n - w + j;
                          query head (h, g) is model query head h * G + g (consecutive groups,
                          as the harness's compress/compress.c select_layer and HF repeat_kv)
history  [H_kv, n] | None stored score of earlier compressions, valid for t < n_hist
returns  int64 [H_kv, budget] token indices into the given `keys`, in the order the authors'
         code gathers the survivors (keep_sorted: np.sort(..., axis=-1)).

Top-k tie order: torch.topk leaves it unspecified; here ties go to the lower index
(np.argsort kind="stable" on -score). This matches the harness (scorers/normalize.c:32-36).
"""
import numpy as np

NEG_INF = np.float32(-np.inf)


def as_f32(x):
    return np.asarray(x, dtype=np.float32)


def bf16(x):
    """Round float32 values to bfloat16 (round to nearest even), returned as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    lsb = (u >> 16) & 1
    u = ((u + 0x7FFF + lsb) >> 16) << 16
    out = u.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, out).astype(np.float32)


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return (e / s).astype(np.float32)


def logits(queries, keys, scale=None):
    """[H, w, G, D] x [H, n, D] -> [H, G, w, n] scaled dot products (scale 1/sqrt(D))."""
    queries, keys = as_f32(queries), as_f32(keys)
    D = keys.shape[-1]
    if scale is None:
        scale = 1.0 / np.sqrt(D)
    z = np.einsum("hwgd,hnd->hgwn", queries.astype(np.float64), keys.astype(np.float64))
    return (z * scale).astype(np.float32)


def causal_window_mask(w, n):
    """[w, n] boolean: True where query j (token n - w + j) may NOT see key t (t > n - w + j)."""
    t = np.arange(n)[None, :]
    j = np.arange(w)[:, None]
    return t > (n - w + j)


def max_pool1d(x, k):
    """Stride-1 max pooling on the last axis, window [t - k//2, t + k//2] (torch.nn.functional
    max_pool1d with padding k//2 pads with -inf, so the window is clipped at the ends)."""
    x = np.asarray(x, dtype=np.float32)
    if k <= 1:
        return x.copy()
    h = k // 2
    n = x.shape[-1]
    pad = np.full(x.shape[:-1] + (h,), -np.inf, dtype=np.float32)
    xp = np.concatenate([pad, x, pad], axis=-1)
    out = np.full_like(x, -np.inf)
    for o in range(k):
        out = np.maximum(out, xp[..., o:o + n])
    return out


def avg_pool1d(x, k):
    """Stride-1 average pooling, zero padding k//2 counted in the divisor (torch avg_pool1d
    defaults: count_include_pad=True), so edge values are divided by k."""
    x = np.asarray(x, dtype=np.float64)
    if k <= 1:
        return x.astype(np.float32)
    h = k // 2
    n = x.shape[-1]
    pad = np.zeros(x.shape[:-1] + (h,))
    xp = np.concatenate([pad, x, pad], axis=-1)
    out = np.zeros_like(x)
    for o in range(k):
        out += xp[..., o:o + n]
    return (out / k).astype(np.float32)


def topk_desc(score, k):
    """Indices of the k largest along the last axis, in descending score order (ties: lower
    index first). NaN counts as -inf."""
    s = np.asarray(score, dtype=np.float64)
    s = np.where(np.isnan(s), -np.inf, s)
    if k <= 0:
        return np.zeros(s.shape[:-1] + (0,), dtype=np.int64)
    return np.argsort(-s, axis=-1, kind="stable")[..., :k].astype(np.int64)


def window_idx(H, n, w):
    return np.broadcast_to(np.arange(n - w, n, dtype=np.int64), (H, w)).copy()


def merge_params(defaults, params):
    p = dict(defaults)
    if params:
        unknown = set(params) - set(defaults)
        if unknown:
            raise KeyError(f"unknown parameters {sorted(unknown)}; known: {sorted(defaults)}")
        p.update(params)
    return p


def check_keep(idx, n, budget):
    """Every row: `budget` distinct indices in [0, n)."""
    idx = np.asarray(idx)
    assert idx.shape[-1] == budget, (idx.shape, budget)
    flat = idx.reshape(-1, budget)
    for r in flat:
        assert r.min() >= 0 and r.max() < n, (r.min(), r.max(), n)
        assert len(np.unique(r)) == budget, "duplicate indices"
    return True


def jaccard(a, b):
    """Mean over rows of |a & b| / |a | b| for two [.., k] index arrays."""
    a = np.asarray(a).reshape(-1, np.asarray(a).shape[-1])
    b = np.asarray(b).reshape(-1, np.asarray(b).shape[-1])
    js = []
    for x, y in zip(a, b):
        sx, sy = set(x.tolist()), set(y.tolist())
        js.append(len(sx & sy) / max(1, len(sx | sy)))
    return float(np.mean(js))


def simulate_periodic(keep_fn, keys_all, queries_all, prompt_len, budget, divide, qwin, params=None,
                      prefill_compress=True):
    """Runs a periodic-compression method (R-KV, SnapKV-D, G-KV style) over a whole request and
    tracks the authors' cache order.

    keys_all [H, N, D], queries_all [H, N, G, D] (post-RoPE, original positions). The cache
    starts as the prompt; a compression runs at prefill (if prompt_len >= budget and
    prefill_compress) and then in the forward of every decode token whose position p has
    p % divide == 0, on the cache including token p (R-KV rkv/modeling.py:589-610 sets the flag
    after token p-1 when length % divide == 0; G-KV gkv/model/gen_patch.py:174-179 uses the
    output length). keep_fn(keys_cache, queries_window, budget, params) must return per-head
    indices into the cache. Returns the list of (p, positions [H, len]) after each
    compression, and the final cache positions. Caches are per KV head (rows may differ).
    """
    H, N, D = keys_all.shape
    pos = np.broadcast_to(np.arange(prompt_len), (H, prompt_len)).copy()
    events = []

    def compress(p_now):
        nonlocal pos
        kc = np.stack([keys_all[h, pos[h]] for h in range(H)])
        qw = queries_all[:, p_now + 1 - qwin:p_now + 1]
        if kc.shape[1] < budget:
            return
        idx = keep_fn(kc, qw, budget, params)
        pos = np.take_along_axis(pos, idx, axis=1)
        events.append((p_now, pos.copy()))

    if prefill_compress and prompt_len >= budget:
        compress(prompt_len - 1)
    for p in range(prompt_len, N):
        pos = np.concatenate([pos, np.full((H, 1), p)], axis=1)
        if p % divide == 0:
            compress(p)
    return events, pos


def top_plus_window(keys, queries, budget, W, score_fn):
    """R-KV's and SnapKV-D's selection: the budget - W best of the older tokens by score_fn(),
    in rank order as the authors gather them, then the W window tokens. All tokens when n < budget."""
    H, n, _ = np.shape(keys)
    assert np.shape(queries)[1] >= W, "need at least `window` queries"
    if n < budget:
        return np.broadcast_to(np.arange(n), (H, n)).copy()
    return np.concatenate([topk_desc(score_fn(), budget - W), window_idx(H, n, W)], axis=1)
