#!/usr/bin/env bash
# bench/log/s14/call2.sh (run from the repository root with .xfer/before.tgz = git archive cb431ff carried): call 2 of session 14: racecheck of test_cuda_ops on the current tree; the before tree (cb431ff) built,
# its gpu suites, hf_compare and memcheck, concurrently (different processes share the GPU)
set -uo pipefail
source tests/device/gpu_env.sh
S=/tmp/before-src
( rm -rf $S && mkdir -p $S && tar xzf .xfer/before.tgz -C $S && gpu_build $S $S/build-gpu && echo "before built" &&
  (cd $S/build-gpu && ctest -L gpu --output-on-failure 2>&1 | tail -8) &&
  (cd $S && bash tests/device/prepare_hf_compare.sh build-gpu /tmp/hfb --device cuda --precision fp32 >/dev/null && python3 tests/device/hf_compare.py /tmp/hfb 2>&1 | tail -10) &&
  for t in test_cuda_ops test_cuda_scoring; do compute-sanitizer --tool memcheck --error-exitcode 9 $S/build-gpu/tests/$t > /tmp/bm_$t.log 2>&1; echo "before $t memcheck exit $? $(grep 'ERROR SUMMARY' /tmp/bm_$t.log|tail -1)"; done
) > $OUT/before.log 2>&1 &
BP=$!
gpu_build . build-gpu || exit 1
echo "after built at $SECONDS s"
timeout ${RACE_S:-420} compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/test_cuda_ops > $OUT/race_ops.log 2>&1
s=$?; echo "after test_cuda_ops racecheck: exit $s at $SECONDS s; $(grep 'RACECHECK SUMMARY' $OUT/race_ops.log | tail -1)"
grep -E "Race reported|access at" $OUT/race_ops.log | grep -vE nvjet_ | head -5
echo "hazard kernels:"; grep -oE "in [a-zA-Z_0-9]+(<|\()" $OUT/race_ops.log | sort | uniq -c | head
wait $BP; echo "== before"; cat $OUT/before.log
