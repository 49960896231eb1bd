#!/usr/bin/env bash
# bench/log/s20/call1.sh: call 1 of session 20 (issue 38): the GPU build with libmicrohttpd (carried
# .devdeps), then the request-rate sweep of `zipage serve` for Zipage on the scaled replica (F 8,
# block 32, 3.375 GiB), and zipage bench on the same requests (bench/run_serve_bench.sh).
set -uo pipefail
source tests/device/gpu_env.sh
ldconfig -p | grep -E "libgnutls|libmicrohttpd" | head -3
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
build-gpu/zipage serve --help | head -2
python3 -c "import aiohttp; print('aiohttp', aiohttp.__version__)"
POLICY=zipage RATES=2,4,8,inf timeout 480 bash bench/run_serve_bench.sh build-gpu $OUT/zipage; echo "zipage sweep rc=$?"
rm -f $OUT/zipage/workload.jsonl
column -s, -t < $OUT/zipage/serve.csv | cut -c1-220
