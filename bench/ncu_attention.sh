#!/usr/bin/env bash
# ncu_attention.sh - Nsight Compute on the decode attention kernel alone (bench_attention, so
# device memory is small and kernel replay is quick): speed of light, memory workload,
# occupancy, warp stall reasons and the source-level hot spots, for the Qwen3-8B shape at
# batch 256 / 384 tokens (the fixed workload's decode) and batch 8 / 32k tokens, for the
# default tensor-core kernel (cp.async tiles) and its register-pipeline variant
# (ZIPAGE_DECODE_KERNEL=mma). Writes the
# text reports to $OUT (or /tmp). Needs a CUDA build with bench_attention in BUILD.
# Usage there: bash bench/ncu_attention.sh BUILD
set -uo pipefail
B=${1:?build folder}; O=${OUT:-/tmp}
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats"
for knob in default mma; do
  for shape in "256 384" "8 32768"; do
    f=$O/ncu_decode_${knob}_${shape// /x}.txt
    ZIPAGE_DECODE_KERNEL=$knob ncu --kernel-name regex:"decode_attn_(mma|async)?_?kernel" --launch-skip 2 --launch-count 1 $S \
      --print-summary none $B/bench_attention decode $shape > "$f" 2>&1
    echo "== decode $shape, kernel $knob ($f)"
    grep -E "decode_attn|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$f" | head -30
  done
done
