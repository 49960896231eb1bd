"""Synthetic inputs shaped like real ones for the reference oracles.

What makes them realistic enough for eviction tests:
  * a shared key direction (keys of one head have a large common component), concentrated on the
    slowly rotating RoPE pairs, as in real LLM keys, so cosine similarities are mostly positive and
    survive RoPE;
  * token content from a small vocabulary, with near-duplicate runs: repeated phrases (copies of an
    earlier span) and stretches of one repeated token (newline / filler runs), plus small noise;
  * RoPE (rotate-half convention, theta 1e6 as Qwen3) at each token's ORIGINAL position; keys of a
    later compression are a sorted subset of an older sequence plus one fresh block, so positions
    are not contiguous;
  * an attention sink at token 0 and a few "anchor" token types the queries look for, so attention
    has heavy hitters;
  * the history of a later compression computed from earlier queries (not random numbers).

Shapes: keys [H_kv, n, D], queries [H_kv, w, G, D] (the last w tokens' queries), history [H_kv, n].
Cases: D in {64, 128} x G in {1, 3, 4} x block_size in {64, 256} x {first, later}.
First compression: n = (N_max + 1) * bs tokens at positions 0..n-1, no history.
Later compression: n = (N_max + 1) * bs tokens: N_max * bs retained older tokens + one new block.
"""
import itertools

import numpy as np

ROPE_THETA = 1.0e6


def rope(x, positions, theta=ROPE_THETA):
    """x [..., T, D] rotated at positions [T] (rotate-half: pairs (i, i + D/2))."""
    x = np.asarray(x, dtype=np.float64)
    D = x.shape[-1]
    inv = theta ** (-np.arange(0, D, 2) / D)                  # [D/2], pair i rotates at inv[i]
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def token_stream(N, rng, vocab=400, n_anchor=6):
    """Token ids with near-duplicate runs; id 0 is the BOS / sink; ids 1..n_anchor are anchors."""
    ids = [0]
    while len(ids) < N:
        r = rng.random()
        if r < 0.12 and len(ids) > 40:                         # copy an earlier phrase
            L = int(rng.integers(8, 40))
            s = int(rng.integers(1, len(ids) - L))
            ids.extend(ids[s:s + L])
        elif r < 0.20:                                         # run of one filler token
            ids.extend([int(rng.integers(n_anchor + 1, n_anchor + 6))] * int(rng.integers(4, 16)))
        elif r < 0.26:
            ids.append(int(rng.integers(1, n_anchor + 1)))     # an anchor token
        else:
            ids.extend(rng.integers(n_anchor + 1, vocab, size=int(rng.integers(1, 8))).tolist())
    return np.array(ids[:N], dtype=np.int64)


class Head:
    """Embedding tables of one KV head and its G query heads. Logit scales (in units of
    sqrt(D) in the query) were tuned so that the window attention looks like a real model's:
    an attention sink on token 0, heavy hitters on a few anchor types, a long flat tail."""

    S_SINK, S_ANCHOR, S_OWN, S_PRIV, Q_NOISE = 2.2, 1.6, 0.6, 1.2, 0.6

    def __init__(self, D, G, rng, vocab=400, n_anchor=6):
        self.D, self.G = D, G
        h = D // 2
        i = np.arange(D) % h                                   # RoPE pair index of each dim
        slow = (i >= h - h // 4).astype(float)                 # slowest pairs: the shared direction
        semi = ((i >= h // 2) & (i < h - h // 4)).astype(float)  # slow-ish pairs: anchor content
        self.mu = rng.normal(size=D) * slow
        self.mu *= 1.3 / np.linalg.norm(self.mu)               # shared key direction
        self.emb = rng.normal(size=(vocab, D)) / np.sqrt(D) * 1.6
        self.emb[0] = 2.5 * self.mu / np.linalg.norm(self.mu) + rng.normal(size=D) * 0.05   # BOS
        self.anchor = np.arange(1, n_anchor + 1)
        a = rng.normal(size=(n_anchor, D)) * semi
        self.emb[self.anchor] = 0.5 * self.emb[self.anchor] + 1.4 * a / np.linalg.norm(a, axis=1, keepdims=True)
        # query heads: sink seeking + a mixture of anchor contents + private random direction
        self.qmix = []
        for g in range(G):
            a = rng.choice(self.anchor, size=3, replace=False)
            wts = rng.uniform(0.5, 1.5, size=3)
            self.qmix.append((a, wts, rng.normal(size=D) / np.sqrt(D)))

    def keys_pre(self, ids, rng, noise=0.08):
        return self.mu[None] + self.emb[ids] + rng.normal(size=(len(ids), self.D)) * noise / np.sqrt(self.D)

    def queries_pre(self, ids, rng):
        T, r = len(ids), np.sqrt(self.D)
        q = np.zeros((T, self.G, self.D))
        mu_hat = self.mu / np.linalg.norm(self.mu)
        for g, (a, wts, priv) in enumerate(self.qmix):
            sink = self.S_SINK * r * mu_hat * rng.uniform(0.6, 1.4)
            anch = (wts[:, None] * self.emb[a]).sum(0) * r * self.S_ANCHOR
            own = self.emb[ids] * r * self.S_OWN                 # some self-content similarity
            q[:, g] = sink + anch + own + priv[None] * r * self.S_PRIV + rng.normal(size=(T, self.D)) * self.Q_NOISE
        return q


def make_sequence(D=64, G=4, N=1024, H_kv=2, seed=0):
    """Keys [H, N, D] and queries [H, N, G, D] of a whole request (positions 0..N-1), post-RoPE;
    for the per-step oracles (h2o/morphkv keep_exact, rkv/snapkv_d simulate)."""
    rng = np.random.default_rng(seed)
    ids = token_stream(N, rng)
    pos = np.arange(N)
    K = np.zeros((H_kv, N, D), np.float32)
    Q = np.zeros((H_kv, N, G, D), np.float32)
    for h in range(H_kv):
        hd = Head(D, G, rng)
        K[h] = rope(hd.keys_pre(ids, rng), pos)
        qp = hd.queries_pre(ids, rng)                           # [N, G, D]
        Q[h] = np.transpose(rope(np.transpose(qp, (1, 0, 2)), pos), (1, 0, 2))
    return dict(keys_all=K, queries_all=Q, ids=ids, positions=pos)


def _attn_mean(keys, queries):
    """mean over queries of max-over-group softmax attention (the shape of a Zipage/G-KV score)."""
    H, n, D = keys.shape
    z = np.einsum("hwgd,hnd->hgwn", queries.astype(np.float64), keys.astype(np.float64)) / np.sqrt(D)
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    return p.max(axis=1).mean(axis=1)


def make_case(D=64, G=4, block_size=64, compression="first", nmax=None, H_kv=2, w_max=64, seed=0):
    """One compression's inputs. Returns a dict with keys, queries (w_max), history, n_hist,
    block_size, budget, positions (original positions of the given keys) and alternative
    history scalings: histories['mean'] (Zipage-like), ['maxnorm'] (G-KV-like, max 1),
    ['cum'] (H2O-like cumulative sums)."""
    if nmax is None:
        nmax = 4 if block_size == 64 else 2
    budget = nmax * block_size
    n = budget + block_size
    rng = np.random.default_rng(seed)
    if compression == "first":
        N = n
        seq = make_sequence(D, G, N, H_kv, seed)
        sel = np.arange(N)
    else:
        N = n + 3 * block_size                                   # an older, longer request
        seq = make_sequence(D, G, N, H_kv, seed)
        old = N - block_size
        # retained: sink, some anchors/heavy tokens, and random others, biased to recent
        must = np.array([0, 1, 2, 3])
        wts = np.linspace(0.3, 1.0, old - 4) ** 2
        rest = rng.choice(np.arange(4, old), size=budget - 4, replace=False, p=wts / wts.sum())
        sel = np.sort(np.concatenate([must, rest, np.arange(old, N)]))
    keys = seq["keys_all"][:, sel]
    queries = seq["queries_all"][:, N - w_max:N]
    hist = {}
    n_hist = 0
    history = None
    if compression != "first":
        n_hist = budget
        # history: score of the retained tokens from the queries of earlier window positions
        qprev = seq["queries_all"][:, N - block_size - 16:N - block_size]
        a = _attn_mean(keys[:, :budget], qprev)
        full = np.zeros((H_kv, n))
        full[:, :budget] = a
        hist = dict(mean=full, maxnorm=full / full.max(axis=-1, keepdims=True), cum=full * 16 * 5)
        history = full
    return dict(keys=keys.astype(np.float32), queries=queries.astype(np.float32), history=history,
                histories=hist, n_hist=n_hist, block_size=block_size, budget=budget, positions=sel,
                D=D, G=G, compression=compression, seed=seed)


def all_cases(seed=0, H_kv=2):
    for D, G, bs, comp in itertools.product((64, 128), (1, 3, 4), (64, 256), ("first", "later")):
        yield make_case(D, G, bs, comp, H_kv=H_kv, seed=seed)


if __name__ == "__main__":
    for c in all_cases():
        k = c["keys"]
        kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
        cs = np.einsum("hnd,hmd->hnm", kn, kn)
        n = cs.shape[-1]
        off = cs[:, ~np.eye(n, dtype=bool)]
        print(f"D={c['D']:3d} G={c['G']} bs={c['block_size']:3d} {c['compression']:5s} n={k.shape[1]} "
              f"budget={c['budget']} mean cos={off.mean():.2f} pairs>0.5={np.mean(off > 0.5):.3f} "
              f"tokens with a partner>0.5={np.mean((cs - np.eye(n)[None] * 2 > 0.5).any(-1)):.2f} "
              f"pairs>0.9={np.mean(off > 0.9):.4f}")


def write_replay_case(path, K, Q, P, budget, block_size, window):
    """A whole request as replay_dump reads it: int32 H, N, D, G, P, budget, block, window, then
    float32 keys [H, N, D] and queries [H, N, G, D]."""
    H, N, D = K.shape
    G = Q.shape[2]
    with open(path, "wb") as f:
        f.write(np.array([H, N, D, G, P, budget, block_size, window], dtype="<i4").tobytes())
        f.write(np.ascontiguousarray(K, dtype="<f4").tobytes())
        f.write(np.ascontiguousarray(Q, dtype="<f4").tobytes())
