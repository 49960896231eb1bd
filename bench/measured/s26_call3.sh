#!/usr/bin/env bash
# s26 call 3: test_cuda_engine twice on one build (is the tiny-llama R-KV fp8 split deterministic?); fp8 stages 5 vs 7
set -uo pipefail
source tests/device/gpu_env.sh
O=/tmp/o; mkdir -p $O
mkdir -p /tmp/S7; tar xzf .devrun/fp8-s7.tgz -C /tmp/S7
gpu_build . /tmp/B/b || exit 1; echo "built B at ${SECONDS}s"
cmake -S /tmp/S7 -B /tmp/S7/b -DZIPAGE_CUDA=ON -DZIPAGE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS/usr" \
  -DZP_OPENBLAS_LIB="$DEPS/usr/lib/$A/openblas-openmp/libopenblas.so" -DZP_CBLAS_INCLUDE="$DEPS/usr/include/$A/openblas-openmp" >/dev/null
cmake --build /tmp/S7/b -j 16 --target zipage 2>&1 | grep -E "error|Built target zipage$"; echo "built S7 at ${SECONDS}s"
for r in 1 2; do timeout 100 /tmp/B/b/tests/test_cuda_engine > $O/tce$r.log 2>&1; echo "tce$r rc=$? at ${SECONDS}s"; grep -E "tiny-llama rkv|check\(s\) failed|all checks" $O/tce$r.log; done
F="--preset Qwen3-8B --device cuda --batch 256 --prompt 256 --gen 256"
for r in 1 2; do for n in B S7; do
  timeout 90 /tmp/$n/b/zipage bench $F --profile --no-cuda-graphs --kv-dtype fp8 --csv $O/prof.csv --label $n-fp8-prof > /dev/null 2>&1 || echo "$n prof failed"
done; done; echo "profiles at ${SECONDS}s"
python3 - $O <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1] + "/prof.csv")):
    print(r["label"], {k: r.get(k) for k in ("tps", "decode_step_ms", "share_attention", "attention_roof_share", "roofline_compute_ratio")})
PY
tar czf $OUT/call3.tgz -C $O .
