#!/usr/bin/env python3
"""make_moe_goldens.py - the goldens of the Qwen3-MoE port (issue 53) from Hugging Face
transformers: tiny Qwen3MoeForCausalLM checkpoints written by transformers itself (seeded random
weights, initializer_range 0.1 so that greedy choices are not near-ties, save_pretrained in
float32: per-expert tensor names, the 5.x config style), and for each prompt the model's
last-position logits and 32 greedy tokens (tests/device/hf_compare.py's argmax loop over
the KV cache), with the eager attention and the eager experts (index_add_ in
expert order). Two cases: `qwen3moe` (8 experts, top 3, norm_topk_prob, a dense layer by
mlp_only_layers) and `qwen3moe-step2` (6 experts, top 2, no renormalisation, decoder_sparse_step
2, tied embeddings). Writes OUT/CASE/{model/, expected.json}. Needs torch and transformers (not
in CI; the goldens are committed):
    python3 tests/reference/make_moe_goldens.py tests/data/moe
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "device"))
from hf_compare import greedy  # noqa: E402  the same argmax loop over the KV cache as the GPU machine's comparison

BASE = dict(vocab_size=512, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            moe_intermediate_size=32, max_position_embeddings=1024, rms_norm_eps=1e-6, initializer_range=0.1,
            bos_token_id=1, eos_token_id=2)
CASES = {
    "qwen3moe": dict(intermediate_size=96, num_hidden_layers=3, num_experts=8, num_experts_per_tok=3, norm_topk_prob=True,
                     decoder_sparse_step=1, mlp_only_layers=[1], tie_word_embeddings=False,
                     rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
    "qwen3moe-step2": dict(intermediate_size=80, num_hidden_layers=3, num_experts=6, num_experts_per_tok=2, norm_topk_prob=False,
                           decoder_sparse_step=2, mlp_only_layers=[], tie_word_embeddings=True,
                           rope_parameters={"rope_type": "default", "rope_theta": 1e4}),
}
PROMPTS = (7, 129)
GREEDY = 32


def main(out):
    for i, (name, kw) in enumerate(sorted(CASES.items())):
        torch.manual_seed(5300 + i)
        Qwen3MoeForCausalLM(Qwen3MoeConfig(**BASE, **kw)).float().save_pretrained(os.path.join(out, name, "model"))
        model = AutoModelForCausalLM.from_pretrained(os.path.join(out, name, "model"), dtype=torch.float32,
                                                     attn_implementation="eager", experts_implementation="eager").eval()
        rng = np.random.default_rng(53 + i)
        cases = []
        for n in PROMPTS:
            ids = rng.integers(3, BASE["vocab_size"], n).tolist()
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0, -1]
            cases.append({"prompt_ids": ids, "logits": [float(x) for x in logits], "greedy": greedy(model, ids, GREEDY)})
        with open(os.path.join(out, name, "expected.json"), "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "cases": cases}, f)
        print(f"{name}: prompts {PROMPTS}, max|logit| {max(max(abs(x) for x in c['logits']) for c in cases):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
