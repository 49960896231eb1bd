#!/usr/bin/env python3
"""hf_compare.py - our engine (CPU, or CUDA in fp32 storage) against Hugging Face transformers.

For each case folder written by prepare_hf_compare.sh: loads the checkpoint with
AutoModelForCausalLM in float32, compares the last-position logits with ours (max abs diff
relative to the largest |logit|, pass below 1e-5) and 64 greedy tokens (an explicit argmax
loop with the KV cache, no EOS stop; pass when identical). Prints one line per case and a
summary; exits 1 on any failure. Runs where torch + transformers are installed (the GPU
machine); the model runs on the CPU in fp32 so no TF32 or bf16 rounding enters.
"""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM


def load(d):
    """A checkpoint folder; when it holds a .gguf file, transformers reads (and dequantises) that."""
    kw = {}
    ggufs = [f for f in os.listdir(d) if f.endswith(".gguf")]
    if ggufs:
        kw["gguf_file"] = ggufs[0]
    try:
        m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, **kw)
    except TypeError:
        m = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32, **kw)
    return m.eval()


@torch.no_grad()
def greedy(model, ids, n):
    out = model(torch.tensor([ids]), use_cache=True)
    past, toks = out.past_key_values, []
    nxt = int(out.logits[0, -1].argmax())
    for _ in range(n):
        toks.append(nxt)
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = int(out.logits[0, -1].argmax())
    return toks


def main(root):
    torch.set_num_threads(8)
    failures, rows = 0, []
    for arch in sorted(os.listdir(root)):
        d = os.path.join(root, arch)
        model = load(d)
        for f in sorted(x for x in os.listdir(d) if x.startswith("logits_")):
            n = f[len("logits_"):-len(".json")]
            ours = json.load(open(os.path.join(d, f)))
            ids = ours["prompt_ids"]
            with torch.no_grad():
                ref = model(torch.tensor([ids])).logits[0, -1].double()
            mine = torch.tensor(ours["logits"][-1], dtype=torch.float64)
            scale = float(ref.abs().max())
            diff = float((ref - mine).abs().max())
            rel = diff / scale
            g_ours = json.load(open(os.path.join(d, f"greedy_{n}.json")))["samples"][0]["tokens"]
            g_ref = greedy(model, ids, len(g_ours))
            agree = next((i for i, (a, b) in enumerate(zip(g_ours, g_ref)) if a != b), len(g_ours))
            ok = rel < 1e-5 and g_ours == g_ref
            failures += not ok
            rows.append(f"{'PASS' if ok else 'FAIL'} {arch:20s} prompt {int(n):4d}: max|dlogit| {diff:.3e} "
                        f"(max|logit| {scale:.2f}, rel {rel:.2e}); greedy {agree}/{len(g_ours)} identical")
    import transformers
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print("\n".join(rows))
    print(f"{len(rows) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".devrun/cases"))
