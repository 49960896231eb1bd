#!/usr/bin/env python3
"""make_calib_goldens.py - the goldens of `zipage calibrate` (TriAttention's statistics) from
Hugging Face transformers: a tiny Qwen3 checkpoint (transformers' own random init, seed 52,
save_pretrained in fp32) and, for 96 calibration tokens, each layer's queries exactly as
attention consumes them before RoPE (the output of `self_attn.q_norm`, taken by a forward hook),
reduced as the authors' calibration does (WeianMao/triattention scripts/calibrate.py:224-237, as
tests/reference/ref_triattention.py reads it): per (layer, query head) and RoPE pair f (the "half"
pairing q[f] + i q[f + D/2]), the mean of that complex number and the mean of its modulus, over
every token, in float64. Writes tests/data/triattention/calib/{model/, ids.txt, expected.json}.
Needs torch and transformers (not in CI; the goldens are committed):
    python3 tests/reference/make_calib_goldens.py tests/data/triattention/calib
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import Qwen3Config, Qwen3ForCausalLM

out = sys.argv[1]
torch.manual_seed(52)
cfg = Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_position_embeddings=1024, rope_theta=10000.0, tie_word_embeddings=True,
                  bos_token_id=1, eos_token_id=2)
model = Qwen3ForCausalLM(cfg).to(torch.float32).eval()
model.save_pretrained(os.path.join(out, "model"), safe_serialization=True)
ids = np.random.default_rng(52).integers(3, cfg.vocab_size, 96).tolist()
with open(os.path.join(out, "ids.txt"), "w") as f:
    f.write(",".join(map(str, ids)) + "\n")
taken = {}
hooks = [layer.self_attn.q_norm.register_forward_hook(lambda mod, inp, outp, l=l: taken.__setitem__(l, outp.detach().double()))
         for l, layer in enumerate(model.model.layers)]
with torch.no_grad():
    model(torch.tensor([ids]))
for h in hooks:
    h.remove()
F = cfg.head_dim // 2
stats = {}
for l in range(cfg.num_hidden_layers):
    q = taken[l][0].numpy()  # [T, Hq, D] after q_norm, before RoPE
    z = q[..., :F] + 1j * q[..., F:]
    for h in range(cfg.num_attention_heads):
        mean = z[:, h].mean(0)
        stats[f"layer{l:02d}_head{h:02d}"] = {"q_mean_real": mean.real.tolist(), "q_mean_imag": mean.imag.tolist(),
                                              "q_abs_mean": np.abs(z[:, h]).mean(0).tolist()}
with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "tokens": len(ids), "stats": stats}, f, indent=1)
print(f"wrote {out}: {len(ids)} tokens, {cfg.num_hidden_layers} layers x {cfg.num_attention_heads} heads")
