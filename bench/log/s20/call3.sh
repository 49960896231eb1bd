#!/usr/bin/env bash
# bench/log/s20/call3.sh: call 3 of session 20 (issue 38): after the server stages each step's
# tokens and takes its lock once per step (not per token), the Zipage sweep and zipage bench on
# the same requests in one call (the server's saturated tokens/s against the engine's).
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
POLICY=zipage RATES=2,4,8,inf timeout 470 bash bench/run_serve_bench.sh build-gpu $OUT/zipage; echo "zipage sweep rc=$?"
rm -f $OUT/zipage/workload.jsonl
cut -d, -f1-17 $OUT/zipage/serve.csv
