#!/usr/bin/env bash
# bench/log/s21/call2.sh: call 2 of session 21 (issue 38): the request-rate sweep of the full-KV
# server (1, 2, 4, inf req/s) and zipage bench on the same requests, from the build of 2fb3fbb
# (call 3 runs Zipage's sweep from the same source tree).
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
POLICY=full RATES=1,2,4,inf timeout 480 bash bench/run_serve_bench.sh build-gpu $OUT/full; echo "full sweep rc=$?"
rm -f $OUT/full/workload.jsonl
