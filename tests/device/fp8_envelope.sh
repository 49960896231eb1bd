#!/usr/bin/env bash
# fp8_envelope.sh - how far the CPU reference engine with an fp8 KV cache agrees with itself when
# only its fp32 summation order changes: build/tests/fp8_envelope under two OpenBLAS kernels
# (OPENBLAS_CORETYPE Haswell and Sandybridge: both run on any AVX2 machine), per preset and
# policy, greedy tokens compared up to each request's first difference, and the reference's
# top-two gaps there. A model whose reference splits here cannot hold the CUDA engine to token
# identity past a split either (test_cuda_engine's fp8_parity). CPU only; about a minute.
# Usage: bash tests/device/fp8_envelope.sh BUILD [PRESET ...]
set -euo pipefail
B=${1:?build folder}; shift
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
P=("$@"); [ ${#P[@]} -gt 0 ] || P=(tiny-qwen3 tiny-llama)
for pre in "${P[@]}"; do
  for pol in full streaming h2o snapkv-d rkv keydiff zipage; do
    for ct in Haswell Sandybridge; do OPENBLAS_CORETYPE=$ct "$B/tests/fp8_envelope" "$pre" "$pol" > "$T/$ct" 2>/dev/null; done
    python3 - "$T/Haswell" "$T/Sandybridge" "$pre" "$pol" <<'PY'
import sys
a, b = ([l.split() for l in open(f)] for f in sys.argv[1:3])
agree, splits = 0, []
for x, y in zip(a, b):
    k = 0
    while k < len(x) and x[k].split(":")[0] == y[k].split(":")[0]:
        k += 1
    agree += k
    if k < len(x):
        splits.append(f"step {k}: gaps {float(x[k].split(':')[1]):.1e} / {float(y[k].split(':')[1]):.1e}")
print(f"{sys.argv[3]:10s} {sys.argv[4]:9s} fp8 KV, fp32: {agree}/{sum(map(len, a))} greedy tokens identical across the two kernels"
      + (f"; splits at {', '.join(splits)}" if splits else ""))
PY
  done
done
