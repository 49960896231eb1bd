#!/usr/bin/env bash
# test_layering.sh - the build enforces the layering (docs/architecture.md): a source of each
# library below may include its own folder's headers and those of the libraries it is allowed to
# use, and an include against the grain does not compile. Each case configures the probe of
# CMakeLists.txt (ZIPAGE_LAYER_PROBE=LIB:HEADER: one file compiled with zipage_LIB's include
# folders) in one scratch build and compiles it; an "allowed" case must build, a "forbidden" one
# must fail because the header is not found (any other failure fails the test).
# Usage: test_layering.sh SOURCE_DIR SCRATCH_DIR
set -u
SRC=${1:?source dir}; B=${2:?scratch dir}/layering
mkdir -p "$B"
fail=0
probe() { # want LIB HEADER
  local want=$1 lib=$2 hdr=$3 out
  if ! out=$(cmake -S "$SRC" -B "$B" -DZIPAGE_CUDA=OFF -DZIPAGE_LAYER_PROBE="$lib:$hdr" 2>&1); then
    echo "test_layering: configuring the probe $lib:$hdr failed:"; echo "$out" | tail -5; fail=1; return
  fi
  out=$(cmake --build "$B" --target zp_layer_probe 2>&1); local rc=$?
  if [ "$want" = allowed ] && [ $rc -eq 0 ]; then echo "  $lib may include $hdr: builds"
  elif [ "$want" = forbidden ] && [ $rc -ne 0 ] && grep -q "$hdr: No such file" <<<"$out"; then echo "  $lib including $hdr: does not build ($hdr not found)"
  else echo "test_layering: $lib including $hdr should be $want, but the probe's build says (rc $rc):"; echo "$out" | grep -E "error|fatal" | head -3; fail=1; fi
}
probe allowed   base     files.h
probe forbidden base     engine.h
probe forbidden base     scorers.h
probe allowed   scorers  status.h
probe forbidden scorers  policy.h
probe forbidden scorers  engine.h
probe allowed   policies scorers.h
probe forbidden policies engine.h
probe allowed   model    policy.h
probe forbidden model    compress.h
probe forbidden model    scheduler.h
probe forbidden model    engine.h
probe allowed   compress model.h
probe forbidden compress scheduler.h
probe forbidden compress engine.h
probe allowed   engine   compress.h
probe allowed   engine   policy.h
probe forbidden engine   experiment.h
probe forbidden engine   dataset.h
probe forbidden engine   tokenizer.h
probe forbidden datasets engine.h
[ $fail -eq 0 ] && echo "test_layering: all checks passed" || echo "test_layering: FAILED"
exit $fail
