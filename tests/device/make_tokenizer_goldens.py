#!/usr/bin/env python3
"""make_tokenizer_goldens.py - golden ids for tests/data/tokenizer/golden_texts.txt with the
reference tokenizers of each family (the same references as hf_tokenizer_compare.py). Each
line of the text file is one case, with the escapes \\n, \\t, \\r and \\uXXXX expanded. Writes
golden_<family>.jsonl ({"text", "ids"} per line) into the folder given (default $OUT).
Run on the GPU machine (it has tokenizers and tiktoken):
    python3 tests/device/make_tokenizer_goldens.py $OUT
then copy the files into tests/data/tokenizer/.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hf_tokenizer_compare import hf_json_tokenizer, qwen2_pipeline_tokenizer, tiktoken_tokenizer  # noqa: E402

FAMILIES = {"qwen3": (qwen2_pipeline_tokenizer, "models/Qwen3-8B"),
            "r1qwen": (qwen2_pipeline_tokenizer, "models/DeepSeek-R1-Distill-Qwen-7B"),
            "r1llama": (tiktoken_tokenizer, "models/DeepSeek-R1-Distill-Llama-8B"),
            "smollm2": (hf_json_tokenizer, "models/SmolLM2-135M-Instruct")}


def expand(line):
    """\\n, \\t, \\r and \\uXXXX escapes of a golden_texts.txt line to characters."""
    line = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), line)
    return line.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")


def cases():
    return [expand(line.rstrip("\n")) for line in open("tests/data/tokenizer/golden_texts.txt", encoding="utf-8")]


def main(out):
    texts = list(cases())
    for fam, (make, d) in FAMILIES.items():
        enc = make(d)
        with open(os.path.join(out, f"golden_{fam}.jsonl"), "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t, "ids": enc(t)}, ensure_ascii=False) + "\n")
        print(fam, len(texts), "cases")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
