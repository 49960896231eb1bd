#!/usr/bin/env bash
# ncu_compress.sh - Nsight Compute on the device compression path (bench_redundancy, 16
# requests x 8 layers x 8 KV heads, 2,304 tokens each): the duration, speed of light,
# occupancy and launch shape of every kernel of one compress call without redundancy
# (window-attention stage 1, finish/top-k, compaction) and of one with lightning redundancy
# (adds the pairs stage), so the stage that dominates a compression is named by measurement.
# Writes the full report to $OUT (or /tmp). Needs a CUDA build with bench_redundancy in BUILD.
# Usage there: bash bench/ncu_compress.sh BUILD
set -uo pipefail
B=${1:?build folder}; O=${OUT:-/tmp}; f=$O/ncu_compress.txt
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats"
# bench_redundancy: 8 calls (a warm-up and 7 timed) per plan; the plan without redundancy
# launches 3 kernels per call, so launches 0-2 are its first call and 24-27 lightning's first
ncu --kernel-name regex:"plan_|compact_jobs" --launch-skip 0 --launch-count 28 $S --print-summary none \
  $B/bench_redundancy 16 > "$f" 2>&1
python3 - "$f" <<'PY'
import re, sys
name = None
for line in open(sys.argv[1]):
    m = re.match(r"\s+(?:void\s+)?(plan_\w+?_kernel|compact_jobs_kernel)", line)
    if m: name = m.group(1)
    d = re.search(r"Duration\s+(\w+)\s+([\d.,]+)", line)
    if d and name: print(f"{name:24s} {d.group(2):>10s} {d.group(1)}")
    for key in ("Achieved Occupancy", "Registers Per Thread", "Compute (SM) Throughput", "Memory Throughput", "Grid Size"):
        if key in line and name and re.search(r"[\d.]+\s*$", line): print(f"{'':24s} {line.strip()}")
PY
echo "full report: $f"
