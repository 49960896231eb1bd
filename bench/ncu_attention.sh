#!/usr/bin/env bash
# ncu_attention.sh - Nsight Compute on the decode attention kernel alone (bench_attention, so
# device memory is small and kernel replay is quick): speed of light, memory workload,
# occupancy, warp stall reasons and the source-level hot spots, for the Qwen3-8B shape at
# batch 256 / 384 tokens (the fixed workload's decode) and batch 8 / 32k tokens, for the
# mainline kernel (bench_attention) and the lab's register-pipeline variant (dev_decode_attention 1,
# dev/cuda/). Writes the text reports to $OUT (or /tmp). Needs a CUDA build with bench_attention
# and dev_decode_attention in BUILD.
# Usage there: bash bench/ncu_attention.sh BUILD
set -uo pipefail
B=${1:?build folder}; O=${OUT:-/tmp}
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats"
for knob in default regs; do
  for shape in "256 384" "8 32768"; do
    f=$O/ncu_decode_${knob}_${shape// /x}.txt
    if [ $knob = default ]; then run="$B/bench_attention decode $shape"; else run="$B/dev_decode_attention 1 $shape"; fi
    ncu --kernel-name regex:"decode_attn_(async|warp)_kernel|mma_regs_kernel" --launch-skip 2 --launch-count 1 $S \
      --print-summary none $run > "$f" 2>&1
    echo "== decode $shape, kernel $knob ($f)"
    grep -E "decode_attn|mma_regs|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$f" | head -30
  done
done
