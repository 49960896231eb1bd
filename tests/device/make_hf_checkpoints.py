#!/usr/bin/env python3
"""make_hf_checkpoints.py - checkpoints written by transformers itself, for hf_compare.py.

Each case is a config built by the architecture's config class, a model from that config with
seeded random weights (initializer_range 0.1 so that greedy choices are not near-ties), saved
with `save_pretrained` in float32: transformers 5 writes its own config style
(`rope_parameters`). Every case is written twice: OUT/v5-NAME as saved, and OUT/v4-NAME with
config.json rewritten by hand in the transformers 4 style (top-level `rope_theta` and a
`rope_scaling` object, no `rope_parameters`). Odd shapes on purpose: head_dim different from
hidden / heads, tied embeddings, MQA, Qwen2's biases, every rope type the engine runs.

    python3 tests/device/make_hf_checkpoints.py OUT [NAME,NAME...]   (default: every case)
"""
import json
import os
import sys

import torch
import transformers as T

BASE = dict(num_hidden_layers=2, vocab_size=512, max_position_embeddings=4096, initializer_range=0.1)
CASES = {
    "qwen3-default": (T.Qwen3Config, dict(hidden_size=192, intermediate_size=384, num_attention_heads=4,
                                          num_key_value_heads=2, head_dim=64, tie_word_embeddings=True,
                                          rope_parameters={"rope_type": "default", "rope_theta": 1e6})),
    "qwen3-yarn": (T.Qwen3Config, dict(hidden_size=192, intermediate_size=384, num_attention_heads=4,
                                       num_key_value_heads=2, head_dim=64,
                                       rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0,
                                                        "original_max_position_embeddings": 1024})),
    "qwen3-yarn-mscale": (T.Qwen3Config, dict(hidden_size=128, intermediate_size=256, num_attention_heads=2,
                                              num_key_value_heads=1, head_dim=96,
                                              rope_parameters={"rope_type": "yarn", "rope_theta": 5e5, "factor": 8.0,
                                                               "original_max_position_embeddings": 512, "mscale": 0.707,
                                                               "mscale_all_dim": 1.0, "beta_fast": 16, "beta_slow": 2,
                                                               "truncate": False})),
    "qwen2-mqa": (T.Qwen2Config, dict(hidden_size=128, intermediate_size=256, num_attention_heads=4,
                                      num_key_value_heads=1, rope_parameters={"rope_type": "default", "rope_theta": 1e4})),
    "llama-llama3": (T.LlamaConfig, dict(hidden_size=256, intermediate_size=512, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=96,
                                         rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0,
                                                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                          "original_max_position_embeddings": 512})),
    "llama-linear": (T.LlamaConfig, dict(hidden_size=128, intermediate_size=256, num_attention_heads=2,
                                         num_key_value_heads=2, tie_word_embeddings=True,
                                         rope_parameters={"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0})),
    "llama-dynamic": (T.LlamaConfig, dict(hidden_size=128, intermediate_size=256, num_attention_heads=4,
                                          num_key_value_heads=4,
                                          rope_parameters={"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0})),
}


def v4_style(cfg):
    """The transformers 4 spelling of the same configuration."""
    rp = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rp.pop("rope_theta")
    cfg["rope_scaling"] = rp if rp.get("rope_type", "default") != "default" else None
    return cfg


def main(out, only=None):
    for i, (name, (cls, kw)) in enumerate(sorted(CASES.items())):
        if only and name not in only:
            continue
        torch.manual_seed(1000 + i)
        cfg = cls(**BASE, **kw)
        model = T.AutoModelForCausalLM.from_config(cfg).float()
        d5 = os.path.join(out, "v5-" + name)
        model.save_pretrained(d5)
        with open(os.path.join(d5, "config.json")) as f:
            saved = json.load(f)
        assert "rope_parameters" in saved and "rope_scaling" not in saved, f"{name}: not the v5 style"
        d4 = os.path.join(out, "v4-" + name)
        model.save_pretrained(d4)
        with open(os.path.join(d4, "config.json"), "w") as f:
            json.dump(v4_style(saved), f, indent=2)
    print(f"checkpoints in {out} (transformers {T.__version__})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else None)
