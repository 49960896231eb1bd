#!/usr/bin/env bash
# bench/log/s14/call3.sh (.xfer/before.tgz = git archive 01558a9): call 3 of session 14: the GPU suites on the per-layer budget tree (test_cuda_engine's pyramid cases), then the
# fixed 256/256/256 throughput after / before (before = 01558a9, this session's start), ROUNDS 2
set -uo pipefail
timeout 330 bash tests/device/run_gpu_tests.sh --suites > $OUT/suites.log 2>&1; echo "suites rc=$?"
grep -E "pyramid|test_cuda_.*(Passed|Failed)|tests passed|failed|ERROR SUMMARY|run_gpu_tests" $OUT/suites.log | head -40
ROUNDS=2 timeout 250 bash bench/before_after.sh .xfer/before.tgz build-gpu fixed > $OUT/fixed.log 2>&1; echo "fixed rc=$?"; tail -5 $OUT/fixed.log
