#!/usr/bin/env bash
# bench/log/s18/call2.sh: call 2 of session 18 (issue 40), one tree: the radix sampler at two blocks a
# multiprocessor (32 registers) with 16-byte row loads: the gpu sampling checks, the sampler alone, and
# Zipage's op shares on the reasoning workload (960 requests, 27 GiB, --profile, 45 s); Zipage's
# compression asynchronous against synchronous (27 GiB, each cut at 50 s); admission under a cap at
# 100 GiB, the reference's admission against a whole-cap reservation (--admission-reserve 1, 50 s each).
set -uo pipefail
source tests/device/gpu_env.sh
gpu_build . build-gpu > $OUT/build.log 2>&1 || { echo "build failed"; tail -30 $OUT/build.log; exit 1; }
(cd build-gpu && timeout 150 ctest -R "test_cuda_ops|test_cuda_engine" --output-on-failure -V > $OUT/ctest.log 2>&1); echo "ctest rc=$?"
grep -E "sample (gaussian|peaked)|sampling T|tests passed|CHECK failed|Passed|Failed" $OUT/ctest.log | grep -v "Test command" | head -30
mkdir -p /tmp/async0 /tmp/async1 /tmp/adm
timeout 40 build-gpu/bench_sample 960 2>&1 | tee $OUT/bench_sample.txt
Z="--preset Qwen3-8B --device cuda --workload reasoning --requests 960 --max-tokens 32768 --pools 27GiB --max-num-seqs 512 --max-num-batched-tokens 63840 --policy zipage --nmax 8 --window 16 --block-size 256 --scheduler hybrid --async --profile --max-seconds 45 --warmup-seconds 15"
timeout 80 build-gpu/zipage bench $Z --csv $OUT/runs.csv --label zipage-profile > /tmp/profile.log 2>&1; echo "profile rc=$?"
for a in 1 0; do OUT=/tmp/async$a ASYNC=$a POLICIES=zipage REQ=960 RT=50 WARM=15 timeout 90 bash bench/run_bench.sh build-gpu reasoning 27GiB > /tmp/async$a.log 2>&1; echo "async=$a rc=$?"; tail -n +2 /tmp/async$a/bench.csv >> $OUT/runs.csv; done
OUT=/tmp/adm STRICT=0 ADMIT=1 REQ=960 RT=50 WARM=15 timeout 180 bash bench/run_bench.sh build-gpu admission 100GiB > /tmp/admission.log 2>&1; echo "admission rc=$?"
tail -n +2 /tmp/adm/bench.csv >> $OUT/runs.csv; cat /tmp/async1/timeline.csv /tmp/async0/timeline.csv /tmp/adm/timeline.csv | grep -v "^label," > $OUT/timeline.csv
python3 - $OUT <<'PY'
import csv, sys
o = sys.argv[1]
for r in csv.DictReader(open(f"{o}/runs.csv")):
    print(r['label'], 'pool', r['pool'], 'async', r['async'], 'tps', r['tps'], 'steady', r['tps_steady'], 'step_ms', r['decode_step_ms'], 'running', r['mean_running'],
          'finished', r['finished'], 'roofline', r['roofline_ratio'], 'compressions', r['compressions'], 'preemptions', r['preemptions'], 'prefill', r['prefill_tok_s'],
          'shares', ' '.join(f"{k[6:]} {float(r[k]):.3f}" for k in r if k.startswith('share_')))
last = {}
for r in csv.reader(open(f"{o}/timeline.csv")):
    last[r[0]] = r  # label,pool,t_s,generated_tokens,tps,mean_running,finished,prefill_tokens,preemptions,compressions
for k, r in last.items():
    print(k, 't_s', r[2], 'preemptions', r[8], 'prefill_tokens', r[7], 'finished', r[6])
PY
