#!/usr/bin/env bash
# s26 call 2: the fp8 decode attention, before (f10888d) / A (fp16 MMAs) / B (A + 5 stages) in one call
set -uo pipefail
source tests/device/gpu_env.sh
O=/tmp/o; mkdir -p $O
bt() { # SRC BUILD: zipage only
  cmake -S "$1" -B "$2" -DZIPAGE_CUDA=ON -DZIPAGE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS/usr" \
    -DZP_OPENBLAS_LIB="$DEPS/usr/lib/$A/openblas-openmp/libopenblas.so" -DZP_CBLAS_INCLUDE="$DEPS/usr/include/$A/openblas-openmp" >/dev/null || return 1
  cmake --build "$2" -j 16 --target zipage 2>&1 | grep -E "error|Built target zipage$"
}
for v in before:head-f10888d A:fp8-f16; do n=${v%%:*}; mkdir -p /tmp/$n; tar xzf .devrun/${v#*:}.tgz -C /tmp/$n; bt /tmp/$n /tmp/$n/b; echo "built $n at ${SECONDS}s"; done
gpu_build . /tmp/B/b || exit 1; echo "built B at ${SECONDS}s"
timeout 60 /tmp/B/b/tests/test_cuda_fp8 2>&1 | tail -2
timeout 150 /tmp/B/b/tests/test_cuda_engine > $O/tce.log 2>&1; echo "tce rc=$? at ${SECONDS}s"; grep -E "fp8|FAIL|passed" $O/tce.log | tail -25
F="--preset Qwen3-8B --device cuda --batch 256 --prompt 256 --gen 256"
for r in 1 2; do for n in before A B; do
  timeout 90 /tmp/$n/b/zipage bench $F --profile --no-cuda-graphs --kv-dtype fp8 --csv $O/prof.csv --label $n-fp8-prof > /dev/null 2>&1 || echo "$n prof failed"
done; done; echo "profiles at ${SECONDS}s"
for n in before B; do timeout 90 /tmp/$n/b/zipage bench $F --profile --no-cuda-graphs --kv-dtype auto --csv $O/prof.csv --label $n-auto-prof > /dev/null 2>&1; done
for n in before B before B; do timeout 90 /tmp/$n/b/zipage bench $F --cuda-graphs --kv-dtype fp8 --csv $O/fixed.csv --label $n-fp8-graphs >/dev/null 2>&1; done
echo "fixed at ${SECONDS}s"
python3 - $O <<'PY'
import csv, sys
o = sys.argv[1]
for f in ("prof.csv", "fixed.csv"):
    for r in csv.DictReader(open(f"{o}/{f}")):
        print(r["label"], {k: r.get(k) for k in ("tps", "decode_step_ms", "share_attention", "attention_roof_share", "gemm_roof_share", "roofline_compute_ratio")})
PY
tar czf $OUT/call2.tgz -C $O .
