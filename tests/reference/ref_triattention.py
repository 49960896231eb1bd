"""Reference oracle: TriAttention (issue 52; the harness policy `triattention` is not built yet).

Written from reading the authors' code, not copied (WeianMao/triattention @ c3744ee6; the HF
path, the one behind the paper's numbers; paths relative to its `triattention/` folder):
  scripts/calibrate.py:224-237            per (layer, query head) and RoPE pair f (the "half"
                                          pairing q[f] + i q[f + D/2]): the complex mean of the
                                          pre-RoPE query and the mean of its modulus
  methods/pruning_utils.py:51-83          pre-RoPE keys from the stored post-RoPE keys
                                          (the inverse "half" rotation at each key's position)
  methods/pruning_utils.py:245-253        offsets 1, 2, 4, ..., 65536 (17)
  methods/pruning_utils.py:256-274        per key and pair: amp = |E q||k|, phase of E q conj(k),
                                          the magnitude term (E|q| - |E q|) |k|
  methods/pruning_utils.py:277-309        score = mean over offsets o of
                                          sum_f amp cos((R - p + o) w_f + phi) + the magnitude term
  methods/triattention.py:258-262         each (layer, query head) row z-normalised over the
                                          decode tokens, population std, floor 1e-6
  methods/triattention.py:368-450         per_head: mean over layers of the max over the KV
                                          head's query heads; top-k; one set per KV head
  methods/triattention.py:292, 306-366    union: the max over every row; one set for all heads
  methods/triattention.py:452-564         per_layer_perhead: per layer, normalised again, max
                                          over the group; one set per (layer, KV head)
  methods/triattention.py:168-304         the prompt is kept and never scored; keep
                                          min(budget - prompt, n - prompt) decode tokens
  methods/triattention.py:895-902         the paper's (slack) trigger: the cache (prompt
                                          included) reaches budget + divide_length (128)
The TensorRT-LLM port (NVIDIA/TensorRT-LLM PR 16957, `kv_cache_compression/triattention`) scores
the post-RoPE keys directly (no positions): with R the next position and t = R + o,
  sum_f [A_f cos(t w_f) - B_f sin(t w_f)],  A = Re(E q conj(k_rot)), B = Im(E q conj(k_rot)),
which equals the form above when the rotation's scale is 1 (score_rot; self_check asserts it).

What this oracle does not reproduce: the authors' seeded 1e-6 uniform noise drawn on the GPU
(methods/triattention.py:264-271) and torch.topk's tie order. Ties go to the lower index here,
as in TensorRT-LLM's tie rule; the harness's comparisons are of kept sets, near-ties reported.
`python3 ref_triattention.py` runs self_check: the two score forms agree, union selection equals a
top-k of the row maximum, and the per-head keep sets keep the prompt and the budget.
"""
import sys

import numpy as np

F32 = np.float32


def inv_freq(head_dim, theta):
    """RoPE's angular frequency per pair (default RoPE; a model's own values should be preferred)."""
    i = np.arange(0, head_dim, 2, dtype=np.float64)
    return (1.0 / theta ** (i / head_dim)).astype(F32)


def offsets(max_len=65536):
    """Future query offsets, one per octave: 1, 2, 4, ..., max_len."""
    return np.array([2.0 ** j for j in range(int(np.log2(max_len)) + 1)], dtype=F32)


def _half_rotate(x, pos, w, sign, dt):
    ang = pos.astype(dt)[:, None] * w.astype(dt)[None, :]
    c = np.concatenate([np.cos(ang), np.cos(ang)], -1)
    s = np.concatenate([np.sin(ang), np.sin(ang)], -1)
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], -1)
    return x * c + sign * rot * s


def rope(x, pos, w, dt=F32):
    """Post-RoPE ("half" pairing) keys of pre-RoPE keys x [n, D] at positions pos [n]."""
    return _half_rotate(x.astype(dt), pos, w, 1.0, dt)


def unrope(y, pos, w, dt=F32):
    """The inverse rotation: pre-RoPE keys of post-RoPE keys y [n, D]."""
    return _half_rotate(y.astype(dt), pos, w, -1.0, dt)


def score_positions(k_rot, pos, R, q_mean, q_abs, w, offs, dt=F32):
    """The authors' form: keys un-rotated at their positions, amplitude and phase per pair, the
    series over the offsets, the magnitude term; mean over the offsets. k_rot [n, D], q_mean
    complex [F], q_abs [F]."""
    F = w.size
    k = unrope(k_rot, pos, w, dt)
    kc = k[:, :F] + 1j * k[:, F:]
    qm = q_mean.astype(np.complex128 if dt == np.float64 else np.complex64)
    rel = qm[None, :] * np.conj(kc)
    phi = np.arctan2(rel.imag, rel.real).astype(dt)
    kabs = np.abs(kc).astype(dt)
    amp = np.abs(qm).astype(dt)[None, :] * kabs
    extra = ((q_abs.astype(dt) - np.abs(qm).astype(dt))[None, :] * kabs).sum(-1)
    delta = (dt(R) - pos.astype(dt))[:, None] + offs.astype(dt)[None, :]
    phase = delta[:, :, None] * w.astype(dt)[None, None, :] + phi[:, None, :]
    return (amp[:, None, :] * np.cos(phase)).sum(-1).mean(1) + extra


def score_rot(k_rot, R, q_mean, q_abs, w, offs, dt=np.float64):
    """TensorRT-LLM's form on post-RoPE keys: no positions; the offsets' mean of cos and sin per
    pair (the series is linear in them)."""
    F = w.size
    kr, ki = k_rot[:, :F].astype(dt), k_rot[:, F:].astype(dt)
    qr, qi = q_mean.real.astype(dt), q_mean.imag.astype(dt)
    A, B = qr * kr + qi * ki, qi * kr - qr * ki
    ph = (dt(R) + offs.astype(dt))[:, None] * w.astype(dt)[None, :]
    base = (A * np.cos(ph).mean(0) - B * np.sin(ph).mean(0)).sum(-1)
    return base + ((q_abs.astype(dt) - np.abs(q_mean).astype(dt)) * np.sqrt(kr * kr + ki * ki)).sum(-1)


def znorm(rows, eps=1e-6):
    """Each row z-normalised: population std, floored at eps."""
    m = rows.mean(-1, keepdims=True)
    return (rows - m) / np.maximum(rows.std(-1, keepdims=True), eps)


def topk_desc(x, k):
    """The k largest, in descending order; ties go to the lower index."""
    return np.argsort(-x, kind="stable")[:k]


def decode_scores(keys, pos, R, P, stats_q_mean, stats_q_abs, w, offs, G):
    """Normalised scores of the decode tokens [P, n) per (layer, query head): [L, Hq, n - P].
    keys [L, Hkv, n, D] post-RoPE; pos [n] (or [L, Hkv, n]); stats [L, Hq, F]."""
    L, Hkv, n, _ = keys.shape
    out = np.empty((L, Hkv * G, n - P))
    for l in range(L):
        for h in range(Hkv * G):
            p = pos if pos.ndim == 1 else pos[l, h // G]
            out[l, h] = score_positions(keys[l, h // G, P:], p[P:], R, stats_q_mean[l, h], stats_q_abs[l, h], w, offs)
    return znorm(out)


def keep_per_head(S, G, P, budget):
    """The paper's mode: per KV head, the mean over layers of the group's max; the prompt then the
    top decode tokens in descending score order. S [L, Hq, m] from decode_scores. [Hkv, kept]."""
    L, Hq, m = S.shape
    keep = max(0, min(budget - P, m))
    agg = S.reshape(L, Hq // G, G, m).max(2).mean(0)
    return np.stack([np.concatenate([np.arange(P), P + topk_desc(a, keep)]) for a in agg])


def keep_union(S, P, budget):
    """One set for every layer and KV head: the top decode tokens of the max over every row, in
    position order (the authors' union of per-row top-k re-ranked by that max is the same set
    but for ties)."""
    m = S.shape[-1]
    keep = max(0, min(budget - P, m))
    return np.concatenate([np.arange(P), P + np.sort(topk_desc(S.reshape(-1, m).max(0), keep))])


def keep_per_layer_head(S_raw, G, P, budget):
    """Per (layer, KV head): that layer's rows normalised, the group's max, top decode tokens.
    S_raw [L, Hq, m] before normalisation. [L, Hkv, kept]."""
    L, Hq, m = S_raw.shape
    keep = max(0, min(budget - P, m))
    out = []
    for l in range(L):
        agg = znorm(S_raw[l]).reshape(Hq // G, G, m).max(1)
        out.append([np.concatenate([np.arange(P), P + topk_desc(a, keep)]) for a in agg])
    return np.array(out)


def triggers(n_cache, budget, divide_length=128):
    """The paper's slack trigger: the cache, prompt included, holds budget + divide_length."""
    return n_cache >= budget + divide_length


def self_check():
    rng = np.random.default_rng(0)
    D, F, theta = 128, 64, 1e6
    w, offs = inv_freq(D, theta), offsets()
    assert offs.size == 17 and offs[0] == 1 and offs[-1] == 65536
    n = 2176
    pos = np.arange(n)
    k_rot = rope(rng.standard_normal((n, D)) + 0.5, pos, w, np.float64)
    qm = rng.standard_normal(F) + 1j * rng.standard_normal(F)
    qa = np.abs(qm) + np.abs(rng.standard_normal(F))
    a = score_positions(k_rot, pos, n, qm, qa, w, offs, np.float64)
    b = score_rot(k_rot, n, qm, qa, w, offs)
    rel = np.max(np.abs(a - b)) / np.max(np.abs(a))
    assert rel < 1e-9, f"the two score forms differ by {rel:.2e} in fp64"
    a32 = score_positions(k_rot.astype(F32), pos, n, qm, qa, w, offs, F32)
    rel32 = np.max(np.abs(a32 - a)) / np.max(np.abs(a))
    assert rel32 < 1e-4, f"fp32 scores {rel32:.2e} from fp64: more than the phase's rounding"
    # union of per-row top-k re-ranked by the row max == top-k of the row max (distinct values)
    S = znorm(rng.standard_normal((3 * 8, 500)))
    k = 300
    union = np.unique(np.concatenate([topk_desc(r, k) for r in S]))
    mx = S.max(0)
    assert set(union[topk_desc(mx[union], k)]) == set(topk_desc(mx, k)), "union != top-k of the max"
    # per-head keep sets: the prompt, then budget - P distinct decode tokens, per KV head
    L, Hkv, G, P, budget, n2 = 2, 2, 2, 40, 200, 328
    keys = rope(rng.standard_normal((L * Hkv * n2, 32)), np.tile(np.arange(n2), L * Hkv), inv_freq(32, 1e4), np.float64)
    keys = keys.reshape(L, Hkv, n2, 32)
    qmean = rng.standard_normal((L, Hkv * G, 16)) + 1j * rng.standard_normal((L, Hkv * G, 16))
    qabs = np.abs(qmean) + 0.1
    assert triggers(n2, budget) and not triggers(n2 - 1, budget)
    S = decode_scores(keys, np.arange(n2), n2, P, qmean, qabs, inv_freq(32, 1e4), offs, G)
    assert S.shape == (L, Hkv * G, n2 - P) and np.allclose(S.mean(-1), 0) and np.allclose(S.std(-1), 1)
    kp = keep_per_head(S, G, P, budget)
    assert kp.shape == (Hkv, budget)
    for row in kp:
        assert (row[:P] == np.arange(P)).all() and len(set(row)) == budget and row[P:].min() >= P
    ku = keep_union(S, P, budget)
    assert ku.shape == (budget,) and (np.diff(ku) > 0).all()
    kl = keep_per_layer_head(S, G, P, budget)
    assert kl.shape == (L, Hkv, budget)
    print(f"ref_triattention: score forms agree to {rel:.1e} (fp64), fp32 within {rel32:.1e}; union = top-k of the max; "
          "keep sets hold the prompt and the budget")


if __name__ == "__main__":
    self_check()
    sys.exit(0)
