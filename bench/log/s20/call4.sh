#!/usr/bin/env bash
# bench/log/s20/call4.sh: call 4 of session 20 (issue 38): after the streams format their chunks
# outside the server's mutex (only the piece is copied under it), the Zipage server at rate inf
# and zipage bench on the same requests, in one call (the session's last device seconds).
set -uo pipefail
source tests/device/gpu_env.sh
cmake -S . -B build-gpu -DZIPAGE_CUDA=ON -DZIPAGE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS/usr" \
  -DZP_OPENBLAS_LIB="$DEPS/usr/lib/$A/openblas-openmp/libopenblas.so" -DZP_CBLAS_INCLUDE="$DEPS/usr/include/$A/openblas-openmp" > $OUT/build.log 2>&1 \
  && cmake --build build-gpu -j "$(nproc)" --target zipage >> $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
date
POLICY=zipage RATES=inf timeout 170 bash bench/run_serve_bench.sh build-gpu $OUT/zipage; echo "zipage rc=$?"
rm -f $OUT/zipage/workload.jsonl
cut -d, -f1-12 $OUT/zipage/serve.csv
