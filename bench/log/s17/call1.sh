#!/usr/bin/env bash
# bench/log/s17/call1.sh: call 1 of session 17, engine-level tensor parallelism: the gpu-labelled suites
# (test_tp_engine_cuda: every policy at tp 2 and 4 with every rank on GPU 0 = tp 1; test_cuda_scoring with
# KV head 0 hashed as head 3; test_tp_engine_nccl and test_tp_nccl2/4 skip on one GPU), --tp 2 over NCCL
# on one GPU (refused, naming the GPU), and the fixed workload before (61048e4) / after (TP 1 through the group code)
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
(cd build-gpu && NCCL_NVLS_ENABLE=0 ctest -L gpu --output-on-failure -V > $OUT/ctest_gpu.log 2>&1); echo "ctest -L gpu rc=$?"
grep -E "Test +#|tests passed|CHECK failed|skipped|DIFFERS" $OUT/ctest_gpu.log | grep -v "Test command" | head -40
grep -E "tp [24]" $OUT/ctest_gpu.log | head -8
NCCL_NVLS_ENABLE=0 build-gpu/zipage bench --preset tiny-qwen3 --device cuda --tp 2 > $OUT/tp2_one_gpu.log 2>&1; echo "bench --tp 2 on one GPU rc=$?"; tail -2 $OUT/tp2_one_gpu.log
ROUNDS=2 bash bench/before_after.sh .xfer/before.tgz build-gpu fixed > $OUT/fixed.log 2>&1; echo "before_after rc=$?"; tail -6 $OUT/fixed.log
