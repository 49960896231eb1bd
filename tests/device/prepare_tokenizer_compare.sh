#!/usr/bin/env bash
# prepare_tokenizer_compare.sh - renders every problem of every dataset through each family's
# chat template (with the paper's math system prompt; LiveCodeBench's question text as is) and
# tokenizes it with our tokenizer: .devrun/prompts/<family>__<dataset>.jsonl, the input of
# hf_tokenizer_compare.py. Usage: tests/device/prepare_tokenizer_compare.sh [BUILD_DIR]
set -euo pipefail
B=${1:-build}
O=.devrun/prompts
rm -rf "$O"; mkdir -p "$O"
for fam in Qwen3-8B DeepSeek-R1-Distill-Qwen-7B DeepSeek-R1-Distill-Llama-8B SmolLM2-135M-Instruct; do
  for ds in aime24 aime25 amc23 math500 gsm8k livecodebench; do
    "$B/zipage" prompts --model "models/$fam" --dataset $ds --math-system --raw \
      --out "$O/${fam}__${ds}.jsonl" 2>/dev/null
  done
done
for ds in aime24 aime25 amc23 math500 gsm8k livecodebench; do
  "$B/zipage" prompts --model models/DeepSeek-R1-Distill-Llama-8B --chat llama3 --dataset $ds --math-system --raw \
    --out "$O/DeepSeek-R1-Distill-Llama-8B-llama3chat__${ds}.jsonl" 2>/dev/null
done
"$B/zipage" prompts --model models/Qwen3-8B --dataset aime24 --no-thinking --out "$O/Qwen3-8B-nothink__aime24.jsonl" 2>/dev/null
du -sh "$O"
