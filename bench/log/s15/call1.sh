#!/usr/bin/env bash
# bench/log/s15/call1.sh (.xfer/before.tgz = git archive 0651498, the session's start): call 1 of session 15: the GPU suites
# on the position-shift tree (test_cuda_ops' shifted keys, test_cuda_scoring's streaming position_shift case, test_cuda_engine's
# position_shift cases), then the fixed 256/256/256 throughput after / before, ROUNDS 2
set -uo pipefail
timeout 340 bash tests/device/run_gpu_tests.sh --suites > $OUT/suites.log 2>&1; echo "suites rc=$?"
grep -E "position_shift|shifted keys|test_cuda_.*(Passed|Failed)|tests passed|failed|ERROR SUMMARY|CHECK failed" $OUT/suites.log | head -40
ROUNDS=2 timeout 230 bash bench/before_after.sh .xfer/before.tgz build-gpu fixed > $OUT/fixed.log 2>&1; echo "fixed rc=$?"; tail -5 $OUT/fixed.log
