#!/usr/bin/env bash
# bench/log/s21/call1.sh: call 1 of session 21 (issue 38, 39): the GPU suites (the async
# compressor's device buffers grown under the recording lock, f3161b2; logprobs with device
# sampling, test_cuda_engine), the fp8 goldens against torch's cast (issue 39), then the Zipage
# server at rate inf and zipage bench on the same requests, before (31960b3: the mutex taken
# three times a step, streams woken under it) and after (2fb3fbb: once, woken after), with the
# engine thread's time inside and between steps (engine_step_ms / engine_between_ms).
# The before server is built in the same tree from the carried .xfer/before/server/ files.
set -uo pipefail
timeout 300 bash tests/device/run_gpu_tests.sh --suites > $OUT/suites.log 2>&1; echo "suites rc=$?"
grep -E "Test +#|tests passed|logprobs|memcheck|run_gpu_tests:|rror" $OUT/suites.log | head -40
source tests/device/gpu_env.sh
timeout 60 python3 tests/device/check_fp8_torch.py 2>&1 | tail -8; echo "fp8 rc=${PIPESTATUS[0]}"
mkdir -p /tmp/after build-before && cp server/serve_engine.c server/serve_internal.h server/serve.c build-gpu/zipage /tmp/after/
cp .xfer/before/server/* server/ && cmake --build build-gpu -j 16 --target zipage 2>&1 | grep -E "error|warning"
cp build-gpu/zipage build-before/ && cp /tmp/after/serve* server/ && cp /tmp/after/zipage build-gpu/zipage
cmp -s build-gpu/zipage build-before/zipage && echo "before and after binaries are the same: wrong"
for t in before gpu; do
  POLICY=zipage RATES=inf timeout 190 bash bench/run_serve_bench.sh build-$t $OUT/$t > $OUT/$t.log 2>&1; echo "$t rc=$?"; tail -2 $OUT/$t.log
  rm -f $OUT/$t/workload.jsonl
done
python3 - $OUT/before/serve.csv $OUT/before/bench.csv $OUT/gpu/serve.csv $OUT/gpu/bench.csv <<'PY'
import csv, sys
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        print(f, {k: r[k] for k in r if k in ("rate", "output_tok_s", "tps_steady", "engine_steps", "engine_step_ms", "engine_between_ms",
                                            "decode_steps", "decode_step_ms", "mean_running", "tpot_p50_ms", "preemptions", "compressions")})
PY
