#!/usr/bin/env bash
# bench/log/s16/call3.sh: call 3 of session 16, the final tree (after the review's change to the model's shard at load): the
# gpu-labelled suites again (test_tp_cuda, test_tp_nccl1, test_cuda_*; test_tp_nccl2/4 skip on one GPU)
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
(cd build-gpu && NCCL_NVLS_ENABLE=0 ctest -L gpu --output-on-failure -V > $OUT/ctest_gpu.log 2>&1); echo "ctest -L gpu rc=$?"
grep -E "test_tp|Test +#|tests passed|CHECK failed|skipped" $OUT/ctest_gpu.log | grep -v "Test command" | head -40
