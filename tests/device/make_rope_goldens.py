"""make_rope_goldens.py - recomputes tests/data/rope/transformers-*.jsonl with transformers.

Each line's "config" (a config.json dict; its architectures[0] picks Qwen3, Qwen2 or Llama) is
loaded by the architecture's config class and its rotary embedding built as the model builds it;
the line gets "inv_freq_f32le" (the inv_freq buffer, float32 little-endian hex),
"attention_scaling" and the standardised "rope_parameters", or "error" when transformers refuses
the config. Run on the GPU machine (transformers and torch are there):

    python3 tests/device/make_rope_goldens.py tests/data/rope/transformers-5.17.jsonl out.jsonl

test_rope.c compares the C implementation with these values.
"""
import json
import sys

import torch
import transformers as T
from transformers.models.llama import modeling_llama
from transformers.models.qwen2 import modeling_qwen2
from transformers.models.qwen3 import modeling_qwen3

KINDS = {
    "Qwen3ForCausalLM": (T.Qwen3Config, modeling_qwen3.Qwen3RotaryEmbedding),
    "Qwen2ForCausalLM": (T.Qwen2Config, modeling_qwen2.Qwen2RotaryEmbedding),
    "LlamaForCausalLM": (T.LlamaConfig, modeling_llama.LlamaRotaryEmbedding),
}


def golden(name, config):
    rec = {"name": name, "config": config}
    cfg_cls, rope_cls = KINDS[config["architectures"][0]]
    try:  # a deep copy: transformers standardises the rope dict it is given in place
        cfg = cfg_cls.from_dict(json.loads(json.dumps({k: v for k, v in config.items() if k != "architectures"})))
        rope = rope_cls(cfg)
        rec["inv_freq_f32le"] = rope.inv_freq.detach().cpu().float().numpy().astype("<f4").tobytes().hex()
        rec["attention_scaling"] = float(rope.attention_scaling)
        rec["rope_parameters"] = cfg.rope_parameters
    except Exception as e:  # transformers refuses the config: the C loader must refuse it too
        rec["error"] = repr(e)
    return rec


def main(src, dst):
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            d = json.loads(line)
            out.write(json.dumps(golden(d["name"], d["config"])) + "\n")
    print(f"{dst}: transformers {T.__version__}, torch {torch.__version__}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
