#!/usr/bin/env bash
# bench/log/s19/call3.sh: call 3 of session 19 (issue 40): the F = 8 replica (call2.sh's configuration)
# for full KV alone, given the rest of the call's 600 s to reach completion (call 2 cut it at 255 s).
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
MS=$((585 - SECONDS - 45)); echo "build done at ${SECONDS}s; full KV gets --max-seconds $MS"
C="--preset Qwen3-8B --device cuda --workload reasoning --requests 960 --max-tokens 32768 --length-scale 8 --block-size 32 --pools 3.375GiB --max-num-seqs 512 --max-num-batched-tokens 63840 --cuda-graphs --csv $OUT/runs.csv --timeline $OUT/timeline.csv --timeline-interval 5"
timeout $((MS + 45)) build-gpu/zipage bench $C --max-seconds $MS --label full-x8 > $OUT/full.log 2>&1; echo "full rc=$?"
python3 - $OUT <<'PY'
import csv, sys
o = sys.argv[1]
for r in csv.DictReader(open(f"{o}/runs.csv")):
    print(r['label'], 'wall', r['wall_s'], 'completion', r['completion_s'], 'tokens', r['tokens'], 'tps', r['tps'], 'finished', r['finished'], 'running', r['mean_running'],
          'step_ms', r['decode_step_ms'], 'roofline', r['roofline_ratio'], 'preempt', r['preemptions'], 'p50', r['latency_p50_s'], 'p90', r['latency_p90_s'], 'p99', r['latency_p99_s'])
PY
