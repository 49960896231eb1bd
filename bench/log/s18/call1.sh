#!/usr/bin/env bash
# bench/log/s18/call1.sh: call 1 of session 18, the radix sampler (issue 40): the gpu tests that
# check device sampling against the host sampler (test_cuda_ops' new adversarial rows, test_cuda_engine),
# the sampler alone before (bed793b: bisection) and after (bench_sample, built into both trees), and
# Zipage's op shares on the reasoning workload before/after (--profile).
set -uo pipefail
source tests/device/gpu_env.sh
S=/tmp/before-src
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
rm -rf $S && mkdir -p $S && tar xzf .xfer/before.tgz -C $S && cp bench/bench_sample.c $S/bench/ &&
  printf 'add_executable(bench_sample bench/bench_sample.c)\ntarget_link_libraries(bench_sample PRIVATE zipage_engine)\n' >> $S/CMakeLists.txt
gpu_build $S $S/build-gpu > $OUT/build_before.log 2>&1 || { echo "before build failed"; tail -30 $OUT/build_before.log; exit 1; }
(cd build-gpu && timeout 240 ctest -R "test_cuda_ops|test_cuda_engine" --output-on-failure -V > $OUT/ctest.log 2>&1); echo "ctest rc=$?"
grep -E "sample |sampling|tests passed|CHECK failed|Passed|Failed" $OUT/ctest.log | grep -v "Test command" | head -60
for w in before after; do B=build-gpu; [ $w = before ] && B=$S/build-gpu; echo "== bench_sample $w"; timeout 60 $B/bench_sample 960; done 2>&1 | tee $OUT/bench_sample.txt
Z="--preset Qwen3-8B --device cuda --workload reasoning --requests 960 --max-tokens 32768 --pools 27GiB --max-num-seqs 512 --max-num-batched-tokens 63840 --policy zipage --nmax 8 --window 16 --block-size 256 --scheduler hybrid --async --profile --max-seconds 60 --warmup-seconds 20 --csv $OUT/profile.csv"
for w in before after; do B=build-gpu; [ $w = before ] && B=$S/build-gpu; timeout 110 $B/zipage bench $Z --label zipage-profile-$w > $OUT/profile_$w.log 2>&1; echo "profile $w rc=$?"; done
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/profile.csv')):
    print(r['label'], 'step_ms', r['decode_step_ms'], 'running', r['mean_running'], ' '.join(f'{k[6:]} {float(r[k]):.3f}' for k in r if k.startswith('share_')), 'tps', r['tps'])"
