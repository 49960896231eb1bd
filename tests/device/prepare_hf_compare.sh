#!/usr/bin/env bash
# prepare_hf_compare.sh - writes the inputs of hf_compare.py: for each tiny architecture, a
# checkpoint from `zipage mkmodel` and our CPU engine's outputs on three prompts (12, 64 and
# 300 tokens): last-position logits (`zipage logits`) and 64 greedy tokens with EOS ignored
# (`zipage generate`, KV block size 16 so attention crosses many pages). With HF_CHECKPOINTS=1
# the checkpoints are written by transformers instead (make_hf_checkpoints.py: both config
# styles, every rope type, odd shapes; HF_CASES=a,b picks some) and the prompts are 7, 129
# and 1,500 tokens.
# Usage: tests/device/prepare_hf_compare.sh [BUILD_DIR] [OUT_DIR] [ENGINE FLAGS...]
#   (default build .devrun/cases; e.g. `--device cuda --precision fp32` for the CUDA engine,
#   run on the GPU machine)
set -euo pipefail
B=${1:-build}; O=${2:-.devrun/cases}; shift $(( $# < 2 ? $# : 2 )); X=("$@")
Z=$B/zipage
rm -rf "$O"; mkdir -p "$O"
if [ "${HF_CHECKPOINTS:-0}" = 1 ]; then
  python3 "$(dirname "$0")/make_hf_checkpoints.py" "$O" "${HF_CASES:-}"; LENS="7 129 1500"; VOCAB=512
else
  for p in tiny-qwen3 tiny-qwen2 tiny-llama; do "$Z" mkmodel --preset "$p" --out "$O/$p" --seed 1 >/dev/null; done
  LENS="12 64 300"; VOCAB=1024
fi
for d in "$O"/*; do
  for n in $LENS; do
    ids=$(python3 -c "import random; r=random.Random($n); print(','.join(str(r.randrange(3,$VOCAB)) for _ in range($n)))")
    "$Z" logits --model "$d" --prompt-ids "$ids" --out "$d/logits_$n.json" ${X[@]+"${X[@]}"}
    "$Z" generate --model "$d" --prompt-ids "$ids" ${X[@]+"${X[@]}"} --greedy --ignore-eos --max-tokens 64 --block-size 16 --out "$d/greedy_$n.json" >/dev/null
  done
done
echo "cases written to $O"
