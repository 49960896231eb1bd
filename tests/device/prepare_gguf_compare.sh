#!/usr/bin/env bash
# prepare_gguf_compare.sh - inputs of the SmolLM2 GGUF comparison with transformers: our CPU
# engine's last-position logits and 64 greedy tokens (EOS ignored) for three chat prompts,
# the GGUF split in two halves (one device call carries at most 64 MiB), and the pure-Python
# `gguf` wheel transformers needs. Run `make models build` first.
#   call 1 (carry .devrun/g1):  mkdir -p .devstore && cp .devrun/g1/p1 .devstore/p1
#   call 2 (carry .devrun/g2 .devrun/gguf_cases .whl), on the still-warm machine:
#     D=.devstore/cases/smollm2; mkdir -p $D; cat .devstore/p1 .devrun/g2/p2 > $D/SmolLM2-135M-Instruct.Q4_1.gguf
#     cp .devrun/gguf_cases/smollm2/*.json $D/
#     python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl; PYTHONPATH=/tmp/site \
#       python3 tests/device/hf_compare.py .devstore/cases
set -euo pipefail
M=models/cache/SmolLM2-135M-Instruct-Q4_1
O=.devrun/gguf_cases/smollm2
rm -rf .devrun/gguf_cases .devrun/g1 .devrun/g2; mkdir -p "$O" .devrun/g1 .devrun/g2 .whl
n=0
for q in "What is the capital of France?" "Write a haiku about autumn leaves." "Solve: 12 * 7 + 5 = ? Explain briefly."; do
  n=$((n+1))
  printf '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$q" > /tmp/zp_q.txt
  ids=$(build/zipage tokenize --model "$M" /tmp/zp_q.txt)
  build/zipage logits --model "$M" --prompt-ids "$ids" --out "$O/logits_$n.json"
  build/zipage generate --model "$M" --prompt-ids "$ids" --greedy --ignore-eos --max-tokens 64 --block-size 16 --out "$O/greedy_$n.json" >/dev/null
done
split -n 2 -d "$M/SmolLM2-135M-Instruct.Q4_1.gguf" /tmp/zp_gpart
mv /tmp/zp_gpart00 .devrun/g1/p1; mv /tmp/zp_gpart01 .devrun/g2/p2
python3 -m pip download -q --no-deps --only-binary=:all: -d .whl gguf==0.19.0
echo "ready: .devrun/g1, .devrun/g2, .devrun/gguf_cases, .whl"
