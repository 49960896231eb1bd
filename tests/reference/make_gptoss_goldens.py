#!/usr/bin/env python3
"""make_gptoss_goldens.py - the goldens of the gpt-oss port from Hugging Face transformers: tiny
GptOssForCausalLM checkpoints written by transformers itself (seeded random weights, save_pretrained in
float32), and for each prompt the model's last-position logits and 48 greedy tokens (tests/device/hf_compare.py's
argmax loop over the KV cache), with the eager attention and the eager experts. Three cases:

  gptoss        4 layers (sliding, full, sliding, full), W 16, 8 experts top 4, yarn (theta 1.5e5, factor 32,
                beta 32/1, truncate false, original_max_position_embeddings 64), untied lm_head.
  gptoss-clamp  3 layers (full, sliding, sliding), W 8, 6 experts top 2, swiglu_limit small enough that the
                clamp binds on a good share of gate and up values, tied embeddings, yarn theta 1e4 factor 8
                original_max_position_embeddings 64 (max_position_embeddings 512) with `truncate` absent (= true: the floor/ceil branch).
  gptoss-mxfp4  gptoss's weights with the experts quantised to MXFP4 and stored as published checkpoints do
                (*_blocks uint8 [E, R, C/32, 16], *_scales uint8 [E, R, C/32], quantization_config mxfp4);
                the goldens come from transformers loading it with Mxfp4Config(dequantize=True).

Every bias (q/k/v/o, router, expert gate_up/down), every sink and every RMSNorm weight is re-randomised before
saving (transformers' init zeroes the expert biases). Writes OUT/CASE/{model/, expected.json}; prints a report.
Needs torch and transformers 5.25 (not in CI; the goldens are committed):
    python3 tests/reference/make_gptoss_goldens.py tests/data/gptoss
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file as np_load_file
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, GptOssConfig, GptOssForCausalLM, Mxfp4Config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "device"))
from hf_compare import greedy  # noqa: E402  the same argmax loop over the KV cache as the GPU machine's comparison

BASE = dict(vocab_size=512, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            intermediate_size=32, max_position_embeddings=2048, rms_norm_eps=1e-5, initializer_range=0.1,
            attention_bias=True, bos_token_id=1, eos_token_id=2)
CASE1 = dict(num_hidden_layers=4, num_local_experts=8, num_experts_per_tok=4,
             layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
             sliding_window=16, tie_word_embeddings=False,
             rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                              "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 64})
CASE2 = dict(num_hidden_layers=3, num_local_experts=6, num_experts_per_tok=2,
             layer_types=["full_attention", "sliding_attention", "sliding_attention"],
             sliding_window=8, tie_word_embeddings=True, swiglu_limit=0.5, max_position_embeddings=512,
             rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0, "beta_fast": 32.0,
                              "beta_slow": 1.0, "original_max_position_embeddings": 64})
# seeds picked by seed_search.py (largest min top1-top2 logit gap and router top-k margin among 24 seeds)
CASES = [("gptoss", CASE1, 5419, None), ("gptoss-clamp", CASE2, 5505, None), ("gptoss-mxfp4", CASE1, 5419, "mxfp4")]
PROMPTS = (7, 129, 300)
GREEDY = 48
BIAS_STD, SINK_STD, NORM_STD = 0.1, 0.5, 0.2
# published gpt-oss-20b/120b quantization_config
MXFP4_QCFG = {"quant_method": "mxfp4", "modules_to_not_convert": [
    "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], np.float32)
LOAD = dict(dtype=torch.float32, attn_implementation="eager", experts_implementation="eager")


def build(kw, seed):
    """GptOssForCausalLM with seeded random weights; every bias, sink and norm weight re-randomised."""
    torch.manual_seed(seed)
    model = GptOssForCausalLM(GptOssConfig(**{**BASE, **kw})).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, BIAS_STD)
            elif name.endswith("sinks"):
                p.normal_(0.0, SINK_STD)
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + NORM_STD * torch.randn_like(p))
    return model.eval()


def quantise_mxfp4(w):
    """w: [E, R, C] float (Linear orientation: out x in). Returns blocks uint8 [E, R, C/32, 16], scales uint8
    [E, R, C/32]: per 32-block the smallest power of two 2^e with max|x|/2^e <= 6, codes the nearest E2M1 value."""
    E, R, C = w.shape
    x = w.reshape(E, R, C // 32, 32).astype(np.float64)
    amax = np.abs(x).max(-1, keepdims=True)
    e = np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)).astype(np.int64)
    y = x / np.exp2(e)
    codes = np.abs(y[..., None] - FP4.astype(np.float64)).argmin(-1).astype(np.uint8)  # ties -> lower code (+ side)
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    scales = (e[..., 0] + 127).astype(np.uint8)
    return blocks, scales


def dequant_mxfp4(blocks, scales):
    """Independent numpy dequantisation: [E, R, G, 16] + [E, R, G] -> [E, R, 32G] fp32 (Linear orientation)."""
    lo, hi = FP4[blocks & 0xF], FP4[blocks >> 4]
    vals = np.stack([lo, hi], -1).reshape(*blocks.shape[:-1], 32)
    vals = vals * np.exp2(scales.astype(np.float64) - 127)[..., None].astype(np.float32)  # exact power-of-two
    return vals.reshape(*blocks.shape[:-2], -1).astype(np.float32)


def save_mxfp4(model, d):
    """Write the model with experts as MXFP4 *_blocks/*_scales (biases kept), config with quantization_config.
    Returns the fp32 dequantised weights per layer in the HF parameter orientation."""
    os.makedirs(d, exist_ok=True)
    sd = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    deq = {}
    for k in list(sd):
        for proj in ("gate_up_proj", "down_proj"):
            if k.endswith(f"mlp.experts.{proj}"):
                w = sd.pop(k).numpy().transpose(0, 2, 1)  # HF [E, in, out] -> [E, out, in]
                blocks, scales = quantise_mxfp4(np.ascontiguousarray(w))
                sd[k + "_blocks"] = torch.from_numpy(blocks)
                sd[k + "_scales"] = torch.from_numpy(scales)
                deq[k] = dequant_mxfp4(blocks, scales).transpose(0, 2, 1)
    save_file(dict(sorted(sd.items())), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(d)
    model.generation_config.save_pretrained(d)
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg.update(architectures=["GptOssForCausalLM"], dtype="float32", quantization_config=MXFP4_QCFG)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return deq


class Stats:
    """Hooks: router top-k margin (k-th minus (k+1)-th raw router logit) and the swiglu clamp share."""

    def __init__(self, model):
        self.margin, self.gate_n, self.gate_c, self.up_n, self.up_c = float("inf"), 0, 0, 0, 0
        self.handles = []
        for layer in model.model.layers:
            k = layer.mlp.router.top_k
            self.handles.append(layer.mlp.router.register_forward_hook(
                lambda m, i, o, k=k: self._router(o[0], k)))
            ex = layer.mlp.experts
            orig = ex._apply_gate

            def wrapped(gu, ex=ex, orig=orig):
                g, u = gu[..., ::2], gu[..., 1::2]
                self.gate_n += g.numel(); self.gate_c += int((g > ex.limit).sum())
                self.up_n += u.numel(); self.up_c += int((u.abs() > ex.limit).sum())
                return orig(gu)
            ex._apply_gate = wrapped

    def _router(self, logits, k):
        s = logits.sort(-1, descending=True).values
        if s.shape[-1] > k:
            self.margin = min(self.margin, float((s[..., k - 1] - s[..., k]).min()))


@torch.no_grad()
def greedy_with_gaps(model, ids, n):
    """hf_compare.greedy's loop, also returning the decode logits and the top1-top2 gap of every choice."""
    out = model(torch.tensor([ids]), use_cache=True)
    past, toks, steps, gaps = out.past_key_values, [], [], []
    lg = out.logits[0, -1]
    for _ in range(n):
        t2 = lg.topk(2).values
        gaps.append(float(t2[0] - t2[1]))
        nxt = int(lg.argmax())
        toks.append(nxt)
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        lg = out.logits[0, -1]
        steps.append(lg.clone())
    return toks, torch.stack(steps), min(gaps)


@torch.no_grad()
def last_logits(model, ids):
    return model(torch.tensor([ids])).logits[0, -1]


def main(out):
    torch.set_num_threads(8)
    report = {}
    for ci, (name, kw, seed, quant) in enumerate(CASES):
        d = os.path.join(out, name, "model")
        model = build(kw, seed)
        rep = report.setdefault(name, {})
        if quant:
            deq = save_mxfp4(model, d)
            loaded = AutoModelForCausalLM.from_pretrained(d, quantization_config=Mxfp4Config(dequantize=True),
                                                          **LOAD).eval()
            # transformers' dequantised weights vs the independent numpy dequantisation of the file's blocks/scales
            st = np_load_file(os.path.join(d, "model.safetensors"))
            sdl = loaded.state_dict()
            bad = 0
            for k in deq:
                mine = dequant_mxfp4(st[k + "_blocks"], st[k + "_scales"]).transpose(0, 2, 1)
                hf = sdl[k].numpy()
                assert hf.shape == mine.shape and hf.dtype == np.float32, (k, hf.shape, mine.shape, hf.dtype)
                bad += int((hf.view(np.uint32) != np.ascontiguousarray(mine).view(np.uint32)).sum())
            rep["mxfp4_bit_mismatches"] = bad
            rep["mxfp4_tensors_checked"] = len(deq)
            qerr = max(float(np.abs(deq[k] - model.state_dict()[k].numpy()).max()) for k in deq)
            rep["mxfp4_max_quantisation_error_vs_fp32"] = qerr
            rep["expert_dtype_loaded"] = str(loaded.model.layers[0].mlp.experts.gate_up_proj.dtype)
            rep["experts_class_loaded"] = type(loaded.model.layers[0].mlp.experts).__name__
            rep["scale_byte_range"] = [int(min(st[k + "_scales"].min() for k in deq)), int(max(st[k + "_scales"].max() for k in deq))]
            codes = np.concatenate([np.concatenate([st[k + "_blocks"].ravel() & 15, st[k + "_blocks"].ravel() >> 4]) for k in deq])
            rep["fp4_code_histogram"] = np.bincount(codes, minlength=16).tolist()
            # the same weights through the plain (unquantised) path: the fp32 model with the dequantised experts
            with torch.no_grad():
                for k, v in deq.items():
                    model.get_parameter(k).copy_(torch.from_numpy(np.ascontiguousarray(v)))
            model.config._attn_implementation = "eager"
            ids = np.random.default_rng(54 + ci).integers(3, BASE["vocab_size"], PROMPTS[1]).tolist()
            rep["mxfp4_load_vs_plain_fp32_with_dequantised_experts_maxdiff_prompt129"] = float(
                (last_logits(loaded, ids) - last_logits(model, ids)).abs().max())
            model = loaded
        else:
            model.save_pretrained(d)
            model = AutoModelForCausalLM.from_pretrained(d, **LOAD).eval()
        stats = Stats(model)
        rng = np.random.default_rng(54 + ci)
        cases, gaps, decode_vs_full = [], [], []
        for n in PROMPTS:
            ids = rng.integers(3, BASE["vocab_size"], n).tolist()
            logits = last_logits(model, ids)
            toks, steps, gap = greedy_with_gaps(model, ids, GREEDY)
            assert toks == greedy(model, ids, GREEDY)
            gaps.append(gap)
            # decode with the cache vs one full forward over prompt + generated tokens
            with torch.no_grad():
                full = model(torch.tensor([ids + toks])).logits[0, n:]
            decode_vs_full.append(float((full - steps).abs().max()))
            cases.append({"prompt_ids": ids, "logits": [float(x) for x in logits], "greedy": toks})
        with open(os.path.join(out, name, "expected.json"), "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "cases": cases}, f)
        rep.update(min_top1_top2_gap_per_prompt=gaps, min_router_topk_margin=stats.margin,
                   decode_vs_full_maxdiff_per_prompt=decode_vs_full,
                   gate_clamped_share=stats.gate_c / max(stats.gate_n, 1), up_clamped_share=stats.up_c / max(stats.up_n, 1),
                   max_abs_logit=max(max(abs(x) for x in c["logits"]) for c in cases),
                   safetensors_bytes=os.path.getsize(os.path.join(d, "model.safetensors")),
                   inv_freq=[float(x) for x in model.model.rotary_emb.inv_freq],
                   attention_scaling=float(model.model.rotary_emb.attention_scaling))
        if name == "gptoss":
            rep.update(sanity(d, cases))
        print(name, json.dumps(rep, indent=1))
    json.dump(report, open(os.path.join(out, "..", "gptoss_report.json"), "w"), indent=1)


@torch.no_grad()
def sanity(d, cases):
    """How much the sinks and the window matter, and the window rule, checked empirically on case 1."""
    r = {}
    model = AutoModelForCausalLM.from_pretrained(d, **LOAD).eval()
    ids7, ids129 = cases[0]["prompt_ids"], cases[1]["prompt_ids"]
    base7, base129 = last_logits(model, ids7), last_logits(model, ids129)
    saved = [layer.self_attn.sinks.clone() for layer in model.model.layers]
    for layer in model.model.layers:
        layer.self_attn.sinks.fill_(-1e9)
    r["sinks_off_maxdiff_prompt7"] = float((last_logits(model, ids7) - base7).abs().max())
    r["sinks_off_maxdiff_prompt129"] = float((last_logits(model, ids129) - base129).abs().max())
    for layer, s in zip(model.model.layers, saved):
        layer.self_attn.sinks.copy_(s)
    W = model.config.sliding_window
    for w in (10**6, W - 1, W + 1):
        m = AutoModelForCausalLM.from_pretrained(d, sliding_window=w, **LOAD).eval()
        r[f"sliding_window_{w}_maxdiff_prompt129"] = float((last_logits(m, ids129) - base129).abs().max())
        r[f"sliding_window_{w}_maxdiff_prompt7"] = float((last_logits(m, ids7) - base7).abs().max())
    # the visibility pattern, read from the eager attention probabilities (layer 0 sliding, layer 1 full)
    T = 40
    ids = ids129[:T]
    o = model(torch.tensor([ids]), output_attentions=True, use_cache=True)
    a0, a1 = o.attentions[0][0], o.attentions[1][0]  # [H, T, T]
    vis0 = (a0 > 0).all(0)
    exp0 = torch.tensor([[(i - W < j <= i) for j in range(T)] for i in range(T)])
    exp1 = torch.tensor([[(j <= i) for j in range(T)] for i in range(T)])
    r["prefill_sliding_visible_is_i-W<j<=i"] = bool((vis0 == exp0).all())
    r["prefill_full_visible_is_j<=i"] = bool(((a1 > 0).all(0) == exp1).all())
    past = o.past_key_values
    r["sliding_cache_len_after_prefill_T40"] = int(past.layers[0].keys.shape[-2])
    r["full_cache_len_after_prefill_T40"] = int(past.layers[1].keys.shape[-2])
    o2 = model(torch.tensor([[5]]), past_key_values=past, use_cache=True, output_attentions=True)
    r["decode_pos40_sliding_attn_shape"] = list(o2.attentions[0].shape)
    r["decode_pos40_sliding_all_keys_weighted"] = bool((o2.attentions[0] > 0).all())
    r["decode_pos40_full_attn_shape"] = list(o2.attentions[1].shape)
    # decode step at position T on the sliding layer vs a full forward whose mask sees keys T-W+1..T
    full = model(torch.tensor([ids + [5]])).logits[0, -1]
    r["decode_pos40_vs_full_forward_maxdiff"] = float((full - o2.logits[0, -1]).abs().max())
    return r


if __name__ == "__main__":
    main(sys.argv[1])
