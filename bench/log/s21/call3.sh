#!/usr/bin/env bash
# bench/log/s21/call3.sh: call 3 of session 21 (issue 38, 39): the request-rate sweep of the Zipage
# server (2, 4, 8, inf req/s) and zipage bench on the same requests, same source tree as call 2;
# then the fp8 goldens against torch's cast (the script's array fixed after call 1).
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
POLICY=zipage RATES=2,4,8,inf timeout 420 bash bench/run_serve_bench.sh build-gpu $OUT/zipage; echo "zipage sweep rc=$?"
rm -f $OUT/zipage/workload.jsonl
timeout 60 python3 tests/device/check_fp8_torch.py 2>&1 | tail -4; echo "fp8 rc=${PIPESTATUS[0]}"
