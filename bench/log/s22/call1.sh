#!/usr/bin/env bash
# bench/log/s22/call1.sh: call 1 of session 22 (issues 38, 39): the GPU suites on c41b866 (the CUDA
# kernels take zp_attn_dims with the K/V element type, issue 39 step 2; never run on the GPU yet),
# then issue 38 at full size: the server at rate inf and zipage bench on the same requests, the
# reasoning workload's own output lengths (F = 1, block 256, 27 GiB of KV for both policies).
# Everything that comes back is packed into one tarball ($OUT holds at most 8 files).
set -uo pipefail
mkdir -p /tmp/o
timeout 300 bash tests/device/run_gpu_tests.sh --suites > /tmp/o/suites.log 2>&1; echo "suites rc=$? at ${SECONDS}s"
grep -E "Test +#|tests passed|memcheck|run_gpu_tests:|rror" /tmp/o/suites.log | head -30
for p in zipage full; do
  F=1 POOL=27GiB BLOCK=256 RATES=inf CUT=45 WARM=15 POLICY=$p timeout 200 bash bench/run_serve_bench.sh build-gpu /tmp/o/$p \
    > /tmp/o/$p.log 2>&1; echo "$p rc=$? at ${SECONDS}s"; tail -2 /tmp/o/$p.log
  rm -f /tmp/o/$p/workload.jsonl
done
python3 - /tmp/o <<'PY'
import csv, sys, os
for p in ("zipage", "full"):
    for f in ("serve.csv", "bench.csv"):
        path = os.path.join(sys.argv[1], p, f)
        if not os.path.exists(path): print(path, "missing"); continue
        for r in csv.DictReader(open(path)):
            print(p, f, {k: r[k] for k in r if k in ("rate", "output_tok_s", "tps_steady", "engine_step_ms", "engine_between_ms",
                  "decode_step_ms", "mean_running", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "preemptions", "compressions")})
PY
tar czf $OUT/s22_call1.tgz -C /tmp/o .
