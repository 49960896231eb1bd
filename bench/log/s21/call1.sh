#!/usr/bin/env bash
# bench/log/s21/call1.sh: call 1 of session 21 (issue 38, 39): the GPU suites (the async
# compressor's device buffers grown under the recording lock, f3161b2; logprobs with device
# sampling, test_cuda_engine), the fp8 goldens against torch's cast (issue 39), then the Zipage
# server at rate inf and zipage bench on the same requests with the engine thread's time inside
# and between steps (/metrics, columns engine_step_ms / engine_between_ms).
set -uo pipefail
timeout 300 bash tests/device/run_gpu_tests.sh --suites > $OUT/suites.log 2>&1; echo "suites rc=$?"
grep -E "Test +#|tests passed|logprobs|memcheck|run_gpu_tests:|error" $OUT/suites.log | head -40
source tests/device/gpu_env.sh
timeout 60 python3 tests/device/check_fp8_torch.py 2>&1 | tail -8; echo "fp8 rc=${PIPESTATUS[0]}"
POLICY=zipage RATES=inf timeout 200 bash bench/run_serve_bench.sh build-gpu $OUT/zipage; echo "zipage rc=$?"
rm -f $OUT/zipage/workload.jsonl
python3 - $OUT/zipage/serve.csv $OUT/zipage/bench.csv <<'PY'
import csv, sys
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        print({k: r[k] for k in r if k in ("label", "rate", "output_tok_s", "tps_steady", "engine_steps", "engine_step_ms", "engine_between_ms",
                                            "decode_steps", "decode_step_ms", "mean_running", "tpot_p50_ms", "preemptions", "compressions")})
PY
