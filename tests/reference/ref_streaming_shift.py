"""Reference oracle: StreamingLLM with and without its position shift, over a whole request of a
Llama or Qwen3 checkpoint (harness policy `streaming`, parameter `position_shift`).

Follows (mit-han-lab/streaming-llm @ 2e50426):
  streaming_llm/enable_streaming_llm.py:4-12  for Llama the authors always enable the shift
  streaming_llm/pos_shift/modify_llama.py:85-88    kv_seq_len = new tokens + cached tokens
  streaming_llm/pos_shift/modify_llama.py:89-91    the query rotated at position_ids, which
      transformers' LlamaModel makes past_length + arange(q_len): its index in the cache
  streaming_llm/pos_shift/modify_llama.py:94-99    the cache holds the keys BEFORE RoPE
  streaming_llm/pos_shift/modify_llama.py:101-103  every cached key rotated at arange(kv_seq_len),
      its index in the cache, at every step
  streaming_llm/pos_shift/modify_llama.py:106-130  repeat_kv, q k^T / sqrt(D), mask, fp32 softmax
  streaming_llm/kv_cache.py:40-64  StartRecentKVCache.__call__: keep [0, start) and
      [seq_len - recent, seq_len)
Without the shift (the harness's default): transformers' own attention, keys cached after RoPE at
their original positions. The rest of the model is transformers' Llama/Qwen3 forward
(modeling_llama.py / modeling_qwen3.py: RMSNorm, q/k RMSNorm before RoPE for Qwen3, rotate_half
RoPE, SwiGLU MLP, tied embeddings), in float64; RoPE frequencies as modeling_rope_utils.py
(default and llama3).

What differs from the authors, on purpose, and is reproduced here: the cache is trimmed when the
harness compresses (its N_max + 1 blocks full and a token coming: trimmed to start + recent =
N_max x block_size), not after every step; the Qwen3 key is cached after its k_norm (what RoPE
would rotate). The harness stores keys after RoPE and re-rotates a moved key once per move; the
oracle rotates the stored unrotated key anew, as the authors do.
"""
import json
import math
import os
import struct

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {t['dtype']}, the oracle reads F32")
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return out


def rope_inv_freq(cfg, D):
    """modeling_rope_utils.py: the default frequencies and _compute_llama3_parameters."""
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (np.arange(0, D, 2, dtype=np.float64) / D))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "default":
        return inv
    if kind != "llama3":
        raise SystemExit(f"ref_streaming_shift: rope_type {kind} is not ported")
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / lo, old / hi
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, out)


def rotate(x, pos, inv):
    """x [..., n, D] rotated at positions pos [n] (rotate_half layout, apply_rotary_pos_emb)."""
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps) * w


class Model:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = load_safetensors(os.path.join(folder, "model.safetensors"))
        c = self.cfg
        self.L, self.Hq, self.Hkv = c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or c["hidden_size"] // self.Hq
        self.eps = c["rms_norm_eps"]
        self.inv = rope_inv_freq(c, self.D)
        self.lm_head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])

    def start(self, shift):
        """A fresh request: per layer cached keys [Hkv, n, D] (before RoPE with the shift) and values."""
        self.shift = shift
        self.k = [np.zeros((self.Hkv, 0, self.D)) for _ in range(self.L)]
        self.v = [np.zeros((self.Hkv, 0, self.D)) for _ in range(self.L)]
        self.n_seen = 0  # tokens fed so far (original positions)

    def cache_len(self):
        return self.k[0].shape[1]

    def trim(self, start, recent):
        """kv_cache.py:40-64 StartRecentKVCache.__call__, every layer."""
        n = self.cache_len()
        if n <= start + recent:
            return
        for l in range(self.L):
            self.k[l] = np.concatenate([self.k[l][:, :start], self.k[l][:, n - recent:]], 1)
            self.v[l] = np.concatenate([self.v[l][:, :start], self.v[l][:, n - recent:]], 1)

    def attention(self, l, x):
        pre = f"model.layers.{l}.self_attn."
        T, D, Hq, Hkv = x.shape[0], self.D, self.Hq, self.Hkv
        proj = lambda name: x @ self.w[pre + name + ".weight"].T + self.w.get(pre + name + ".bias", 0.0)
        q = proj("q_proj").reshape(T, Hq, D).transpose(1, 0, 2)
        k = proj("k_proj").reshape(T, Hkv, D).transpose(1, 0, 2)
        v = proj("v_proj").reshape(T, Hkv, D).transpose(1, 0, 2)
        if pre + "q_norm.weight" in self.w:
            q = rmsnorm(q, self.w[pre + "q_norm.weight"], self.eps)
            k = rmsnorm(k, self.w[pre + "k_norm.weight"], self.eps)
        past = self.k[l].shape[1]
        if self.shift:  # modify_llama.py:89-103
            q = rotate(q, past + np.arange(T), self.inv)
            self.k[l] = np.concatenate([self.k[l], k], 1)
            self.v[l] = np.concatenate([self.v[l], v], 1)
            keys = rotate(self.k[l], np.arange(past + T), self.inv)
        else:  # transformers: q and k at their original positions, k cached after RoPE
            pos = self.n_seen + np.arange(T)
            q = rotate(q, pos, self.inv)
            self.k[l] = np.concatenate([self.k[l], rotate(k, pos, self.inv)], 1)
            self.v[l] = np.concatenate([self.v[l], v], 1)
            keys = self.k[l]
        G, n = Hq // Hkv, past + T
        keys, vals = np.repeat(keys, G, 0), np.repeat(self.v[l], G, 0)  # repeat_kv
        s = q @ keys.transpose(0, 2, 1) / math.sqrt(D)
        s = s + np.where(np.arange(n)[None, :] > past + np.arange(T)[:, None], -np.inf, 0.0)[None]
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = (p @ vals).transpose(1, 0, 2).reshape(T, Hq * D)
        return o @ self.w[pre + "o_proj.weight"].T

    def feed(self, tokens):
        """Runs tokens through the model; the logits of the last one."""
        x = self.w["model.embed_tokens.weight"][np.asarray(tokens)]
        for l in range(self.L):
            pre = f"model.layers.{l}."
            x = x + self.attention(l, rmsnorm(x, self.w[pre + "input_layernorm.weight"], self.eps))
            h = rmsnorm(x, self.w[pre + "post_attention_layernorm.weight"], self.eps)
            g, u = h @ self.w[pre + "mlp.gate_proj.weight"].T, h @ self.w[pre + "mlp.up_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ self.w[pre + "mlp.down_proj.weight"].T
        self.n_seen += len(tokens)
        return rmsnorm(x[-1], self.w["model.norm.weight"], self.eps) @ self.lm_head.T


def replay(model, prompt, generated, shift, block_size, nmax, sink):
    """Teacher-forced replay of a request: logits [len(generated)][vocab] and the trims made. The
    cache is trimmed to sink + (budget - sink) when it holds (nmax + 1) blocks and a token comes."""
    budget, cap = nmax * block_size, (nmax + 1) * block_size
    model.start(shift)
    rows, trims = [model.feed(prompt)], 0
    for t in generated[:-1]:
        if model.cache_len() == cap:
            model.trim(sink, budget - sink)
            trims += 1
        rows.append(model.feed([t]))
    return np.array(rows), trims
