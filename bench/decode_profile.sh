#!/usr/bin/env bash
# decode_profile.sh - where a decode step's time goes on the GPU machine: `zipage generate
# --device cuda` on a random Qwen3-0.6B-shape checkpoint for a few batch / length shapes, once
# plain (tokens/s) and once with ZIPAGE_PROFILE=1 (device seconds per op kind, from events
# around every op). Needs a CUDA build in BUILD (default build-gpu, as run_gpu_tests.sh makes).
# Usage there: bash bench/decode_profile.sh [BUILD]
set -uo pipefail
B=${1:-build-gpu}
M=/tmp/q06
[ -d $M ] || $B/zipage mkmodel --preset Qwen3-0.6B --out $M >/dev/null || exit 1
run() { # n max_tokens policy
  local args="--device cuda --model $M --prompt-ids 1,2,3,4,5,6,7,8 --n $1 --temperature 0.6 --max-tokens $2 --ignore-eos
              --policy $3 --nmax 8 --window 16 --block-size 256 --kv-pool-tokens 262144"
  echo "-- $1 requests x $2 tokens, policy $3"
  $B/zipage generate $args | grep -E "tokens/s|policy"
  ZIPAGE_PROFILE=1 $B/zipage generate $args | grep -E "device time"
}
for shape in "16 400" "8 4000" "64 2000" "256 1000"; do
  for pol in full zipage; do run $shape $pol; done
done
