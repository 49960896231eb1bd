#!/usr/bin/env bash
# bench/log/s17/call2.sh: call 2 of session 17, after the group's abort (a rank that fails releases the others):
# the gpu-labelled suites again (test_tp_nccl1 now aborts a group of one through ncclCommAbort; test_tp_engine_cuda
# fails a rank while another waits in a sum), and --tp 2 over NCCL on one GPU (refused, naming GPU 1)
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
(cd build-gpu && NCCL_NVLS_ENABLE=0 timeout 500 ctest -L gpu --output-on-failure -V > $OUT/ctest_gpu.log 2>&1); echo "ctest -L gpu rc=$?"
grep -E "Test +#|tests passed|CHECK failed|skipped|DIFFERS|abort|rank fail" $OUT/ctest_gpu.log | grep -v "Test command" | head -40
NCCL_NVLS_ENABLE=0 build-gpu/zipage bench --preset tiny-qwen3 --device cuda --tp 2 > $OUT/tp2_one_gpu.log 2>&1; echo "bench --tp 2 on one GPU rc=$?"; tail -1 $OUT/tp2_one_gpu.log
