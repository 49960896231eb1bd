# Independent numpy re-implementation of the spec, compared against transformers 5.25 fp32 logits.
import numpy as np, torch, json, math
FP32_ROPE = False
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM, GptOssConfig, GptOssForCausalLM

def randomize(model, scale=0.3, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 1 and ("norm" in n):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(scale * torch.randn(p.shape, generator=g))

def rms(x, w, eps):
    v = (x.astype(np.float64)**2).mean(-1, keepdims=True)
    return (x / np.sqrt(v + eps)) * w

def silu(x): return x / (1 + np.exp(-x))
def sigmoid(x): return 1 / (1 + np.exp(-x))

def rope_default(theta, dim):
    if FP32_ROPE: return (1.0 / (np.float32(theta) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))).astype(np.float32), 1.0
    return 1.0 / (theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), 1.0

def rope_yarn(rp, dim):
    base = rp["rope_theta"]; factor = rp["factor"]; omax = rp["original_max_position_embeddings"]
    bf = rp.get("beta_fast") or 32; bs = rp.get("beta_slow") or 1
    af = rp.get("attention_factor")
    if af is None: af = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    def cdim(nrot): return dim * math.log(omax / (nrot * 2 * math.pi)) / (2 * math.log(base))
    low, high = cdim(bf), cdim(bs)
    if rp.get("truncate", True): low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high: high += 0.001
    pos = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
    extra = 1 - ramp
    inv = (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra
    return inv, af

def apply_rope(x, pos, inv, af):  # x [T, H, D], neox half split
    if FP32_ROPE:
        inv32 = inv.astype(np.float32); ang = (pos.astype(np.float32)[:, None] * inv32[None, :]).astype(np.float32)
        c = (np.cos(ang).astype(np.float32) * np.float32(af)).astype(np.float64); s = (np.sin(ang).astype(np.float32) * np.float32(af)).astype(np.float64)
    else:
        ang = pos[:, None] * inv[None, :]
        c = np.cos(ang) * af; s = np.sin(ang) * af
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    c = c[:, None, :]; s = s[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

def attention(q, k, v, window=None, sinks=None):
    # q [T,Hq,D], k/v [T,Hkv,D]
    T, Hq, D = q.shape; Hkv = k.shape[1]; g = Hq // Hkv
    out = np.zeros_like(q)
    for h in range(Hq):
        kh = k[:, h // g]; vh = v[:, h // g]
        sc = q[:, h] @ kh.T / math.sqrt(D)
        i = np.arange(T)[:, None]; j = np.arange(T)[None, :]
        allow = j <= i
        if window is not None: allow &= j > i - window
        sc = np.where(allow, sc, -np.inf)
        if sinks is not None:
            m = np.maximum(sc.max(-1, keepdims=True), sinks[h])
            e = np.exp(sc - m); den = e.sum(-1, keepdims=True) + np.exp(sinks[h] - m)
        else:
            m = sc.max(-1, keepdims=True); e = np.exp(sc - m); den = e.sum(-1, keepdims=True)
        out[:, h] = (e / den) @ vh
    return out

def qwen_ref(d, ids):
    cfg = json.load(open(f"{d}/config.json")); W = {k: v.astype(np.float64) for k, v in load_file(f"{d}/model.safetensors").items()}
    H, Hq, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or H // Hq; eps = cfg["rms_norm_eps"]
    E = cfg.get("num_experts", cfg.get("num_local_experts")); K = cfg["num_experts_per_tok"]
    rp = cfg.get("rope_parameters") or {"rope_theta": cfg.get("rope_theta", 10000.0)}
    inv, af = rope_default(rp["rope_theta"], D)
    x = W["model.embed_tokens.weight"][ids]; T = len(ids); pos = np.arange(T, dtype=np.float64)
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = rms(x, W[p+"input_layernorm.weight"], eps)
        q = (h @ W[p+"self_attn.q_proj.weight"].T).reshape(T, Hq, D)
        k = (h @ W[p+"self_attn.k_proj.weight"].T).reshape(T, Hkv, D)
        v = (h @ W[p+"self_attn.v_proj.weight"].T).reshape(T, Hkv, D)
        q = rms(q, W[p+"self_attn.q_norm.weight"], eps); k = rms(k, W[p+"self_attn.k_norm.weight"], eps)
        q = apply_rope(q, pos, inv, af); k = apply_rope(k, pos, inv, af)
        a = attention(q, k, v).reshape(T, Hq * D)
        x = x + a @ W[p+"self_attn.o_proj.weight"].T
        h = rms(x, W[p+"post_attention_layernorm.weight"], eps)
        sparse = (L not in (cfg.get("mlp_only_layers") or [])) and E > 0 and (L + 1) % cfg["decoder_sparse_step"] == 0
        if not sparse:
            y = (silu(h @ W[p+"mlp.gate_proj.weight"].T) * (h @ W[p+"mlp.up_proj.weight"].T)) @ W[p+"mlp.down_proj.weight"].T
        else:
            logits = h @ W[p+"mlp.gate.weight"].T
            pr = np.exp(logits - logits.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
            y = np.zeros_like(h)
            for t in range(T):
                top = np.argsort(-pr[t], kind="stable")[:K]; w = pr[t, top]
                if cfg["norm_topk_prob"]: w = w / w.sum()
                for e, we in zip(top, w):
                    pe = p + f"mlp.experts.{e}."
                    o = (silu(h[t] @ W[pe+"gate_proj.weight"].T) * (h[t] @ W[pe+"up_proj.weight"].T)) @ W[pe+"down_proj.weight"].T
                    y[t] += we * o
        x = x + y
    x = rms(x, W["model.norm.weight"], eps)
    return x @ W["lm_head.weight"].T

def gptoss_ref(d, ids):
    cfg = json.load(open(f"{d}/config.json")); W = {k: v.astype(np.float64) for k, v in load_file(f"{d}/model.safetensors").items()}
    H, Hq, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]; K = cfg["num_experts_per_tok"]; lim = cfg.get("swiglu_limit", 7.0); alpha = cfg.get("swiglu_alpha", 1.702)
    rp = cfg["rope_parameters"]; inv, af = rope_yarn(rp, D)
    x = W["model.embed_tokens.weight"][ids]; T = len(ids); pos = np.arange(T, dtype=np.float64)
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = rms(x, W[p+"input_layernorm.weight"], eps)
        q = (h @ W[p+"self_attn.q_proj.weight"].T + W[p+"self_attn.q_proj.bias"]).reshape(T, Hq, D)
        k = (h @ W[p+"self_attn.k_proj.weight"].T + W[p+"self_attn.k_proj.bias"]).reshape(T, Hkv, D)
        v = (h @ W[p+"self_attn.v_proj.weight"].T + W[p+"self_attn.v_proj.bias"]).reshape(T, Hkv, D)
        q = apply_rope(q, pos, inv, af); k = apply_rope(k, pos, inv, af)
        win = cfg["sliding_window"] if cfg["layer_types"][L] == "sliding_attention" else None
        a = attention(q, k, v, window=win, sinks=W[p+"self_attn.sinks"]).reshape(T, Hq * D)
        x = x + a @ W[p+"self_attn.o_proj.weight"].T + W[p+"self_attn.o_proj.bias"]
        h = rms(x, W[p+"post_attention_layernorm.weight"], eps)
        logits = h @ W[p+"mlp.router.weight"].T + W[p+"mlp.router.bias"]
        y = np.zeros_like(h)
        GU, GUb = W[p+"mlp.experts.gate_up_proj"], W[p+"mlp.experts.gate_up_proj_bias"]
        DN, DNb = W[p+"mlp.experts.down_proj"], W[p+"mlp.experts.down_proj_bias"]
        for t in range(T):
            top = np.argsort(-logits[t], kind="stable")[:K]; tl = logits[t, top]
            w = np.exp(tl - tl.max()); w /= w.sum()
            for e, we in zip(top, w):
                gu = h[t] @ GU[e] + GUb[e]
                gate, up = gu[0::2], gu[1::2]
                gate = np.minimum(gate, lim); up = np.clip(up, -lim, lim)
                act = (up + 1) * (gate * sigmoid(alpha * gate))
                y[t] += we * (act @ DN[e] + DNb[e])
        x = x + y
    x = rms(x, W["model.norm.weight"], eps)
    return x @ W["lm_head.weight"].T

def compare(name, model_cls, cfg, ref_fn, T, seed):
    torch.manual_seed(seed)
    m = model_cls(cfg).float().eval(); randomize(m, seed=seed)
    d = f"{name}_rand"; m.save_pretrained(d)
    ids = torch.randint(0, cfg.vocab_size, (1, T), generator=torch.Generator().manual_seed(seed + 1))
    res = {}
    for ai in ["eager", "sdpa"] if name.startswith("qwen") else ["eager"]:
        for ei in ["eager", "grouped_mm", "batched_mm"]:
            mm = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation=ai, experts_implementation=ei).eval()
            with torch.no_grad(): res[(ai, ei)] = mm(ids).logits[0].double().numpy()
    # incremental decode with cache (eager/eager)
    mm = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager", experts_implementation="eager").eval()
    with torch.no_grad():
        out = mm(ids[:, :3], use_cache=True); cache = out.cache if hasattr(out, "cache") else out.past_key_values
        steps = [out.logits[0]]
        for t in range(3, T):
            o = mm(ids[:, t:t+1], cache=cache, use_cache=True); cache = o.cache if hasattr(o, "cache") else o.past_key_values
            steps.append(o.logits[0])
    inc = torch.cat(steps).double().numpy()
    ref = ref_fn(d, ids[0].numpy())
    base = res[("eager", "eager")]
    def rel(a, b): return np.abs(a - b).max() / np.abs(b).max()
    print(f"[{name}] T={T}")
    for k_, v_ in res.items(): print(f"   HF {k_} vs numpy-ref: max|d|/max|ref| = {rel(v_, ref):.2e}")
    print(f"   HF incremental-decode vs HF full: {rel(inc, base):.2e}")
    return d
