#!/usr/bin/env bash
# bench/log/s19/call2.sh: call 2 of session 19 (issue 40): the paper's workload as a scaled replica
# (F = 8: each output length / 8, block 256 -> 32 so that the cap N_max x block is 2048 / 8 = 256 tokens,
# pool 27 GiB / 8 = 3.375 GiB; 960 requests, scheduler limits kept), each run to completion:
# Zipage (async, its reference configuration), then full KV, at the same KV memory.
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
C="--preset Qwen3-8B --device cuda --workload reasoning --requests 960 --max-tokens 32768 --length-scale 8 --block-size 32 --pools 3.375GiB --max-num-seqs 512 --max-num-batched-tokens 63840 --cuda-graphs --csv $OUT/runs.csv --timeline $OUT/timeline.csv --timeline-interval 5"
timeout 200 build-gpu/zipage bench $C --policy zipage --nmax 8 --window 16 --scheduler hybrid --async --max-seconds 150 --label zipage-x8 > $OUT/zipage.log 2>&1; echo "zipage rc=$?"
timeout 300 build-gpu/zipage bench $C --max-seconds 255 --label full-x8 > $OUT/full.log 2>&1; echo "full rc=$?"
python3 - $OUT <<'PY'
import csv, sys
o = sys.argv[1]
for r in csv.DictReader(open(f"{o}/runs.csv")):
    print(r['label'], 'wall', r['wall_s'], 'completion', r['completion_s'], 'tokens', r['tokens'], 'tps', r['tps'], 'finished', r['finished'], 'running', r['mean_running'],
          'peak', r['peak_running'], 'step_ms', r['decode_step_ms'], 'roofline', r['roofline_ratio'], 'compressions', r['compressions'], 'preempt', r['preemptions'],
          'p50', r['latency_p50_s'], 'p90', r['latency_p90_s'], 'p99', r['latency_p99_s'], 'blocks', r['kv_blocks'])
PY
