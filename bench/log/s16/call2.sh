#!/usr/bin/env bash
# bench/log/s16/call2.sh (.xfer/before.tgz = git archive f8451a6, the session's start): call 2 of session 16: the gpu-labelled
# suites with NCCL (test_tp_nccl1: a group of one through ncclAllReduce, bit-identical to no communicator; test_tp_nccl2/4 skip
# on one GPU), then the fixed 256/256/256 throughput after / before (the forward's new all-reduce hooks, idle at TP 1)
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
grep -E "nccl|NCCL" $OUT/build.log | head -5
(cd build-gpu && NCCL_NVLS_ENABLE=0 ctest -L gpu --output-on-failure -V > $OUT/ctest_gpu.log 2>&1); echo "ctest -L gpu rc=$?"
grep -E "test_tp|Test +#|tests passed|CHECK failed|skipped" $OUT/ctest_gpu.log | grep -v "Test command" | head -40
ROUNDS=2 timeout 280 bash bench/before_after.sh .xfer/before.tgz build-gpu fixed > $OUT/fixed.log 2>&1; echo "fixed rc=$?"; tail -5 $OUT/fixed.log
