#!/usr/bin/env bash
# bench/log/s19/call1.sh: call 1 of session 19 (issue 40): the committed radix sampler through the whole
# gpu suite (ctest -L gpu), the sampler alone, Zipage's op shares on the reasoning workload (960 requests,
# 27 GiB, --profile, 45 s), and fixed 256/256/256 (graphs) before (bed793b) and after (HEAD), one round each.
set -uo pipefail
source tests/device/gpu_env.sh
S=/tmp/before-src
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
( rm -rf $S && mkdir -p $S && tar xzf .xfer/before.tgz -C $S && gpu_build $S $S/build-gpu > /tmp/build_before.log 2>&1; echo "before build rc=$?" ) &
BP=$!
(cd build-gpu && timeout 240 ctest -L gpu --output-on-failure > $OUT/ctest.log 2>&1); echo "ctest -L gpu rc=$?"
grep -E "tests passed|Passed|Failed|CHECK failed" $OUT/ctest.log | head -20
timeout 40 build-gpu/bench_sample 960 > $OUT/bench_sample.txt 2>&1; echo "bench_sample rc=$?"; cat $OUT/bench_sample.txt | tail -12
Z="--preset Qwen3-8B --device cuda --workload reasoning --requests 960 --max-tokens 32768 --pools 27GiB --max-num-seqs 512 --max-num-batched-tokens 63840 --policy zipage --nmax 8 --window 16 --block-size 256 --scheduler hybrid --async --profile --max-seconds 45 --warmup-seconds 15 --csv $OUT/profile.csv"
timeout 130 build-gpu/zipage bench $Z --label zipage-profile > /tmp/profile.log 2>&1; echo "profile rc=$?"; tail -3 /tmp/profile.log
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/profile.csv')):
    print(r['label'], 'step_ms', r['decode_step_ms'], 'running', r['mean_running'], ' '.join(f'{k[6:]} {float(r[k]):.3f}' for k in r if k.startswith('share_')), 'tps', r['tps'])"
wait $BP
ROUNDS=1 OUT=$OUT/ba timeout 260 bash bench/before_after.sh .xfer/before.tgz build-gpu fixed 2>&1 | tail -8
