#!/usr/bin/env bash
# bench/log/s20/call2.sh: call 2 of session 20 (issue 38): zipage bench on call 1's requests for
# Zipage (call 1's failed with cuBLAS status 13 right after the server exited), then the request-
# rate sweep and the bench for full KV at the same KV memory (3.375 GiB), and nvidia-smi's view.
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=memory.used,memory.total --format=csv
M="--preset Qwen3-8B --device cuda --block-size 32 --max-num-seqs 512 --max-num-batched-tokens 63840"
W="--workload reasoning --requests 960 --max-tokens 32768 --length-scale 8"
timeout 150 build-gpu/zipage bench $M $W --pools 3.375GiB --policy zipage --nmax 8 --window 16 --scheduler hybrid --async \
  --max-seconds 45 --warmup-seconds 15 --label bench-zipage --csv $OUT/bench_zipage.csv > $OUT/bench_zipage.log 2>&1; echo "zipage bench rc=$?"; tail -3 $OUT/bench_zipage.log
POLICY=full RATES=1,2,4,inf timeout 420 bash bench/run_serve_bench.sh build-gpu $OUT/full; echo "full sweep rc=$?"
rm -f $OUT/full/workload.jsonl
cat $OUT/full/serve.csv | cut -d, -f1-16
