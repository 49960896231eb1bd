#!/usr/bin/env bash
# test_calibrate.sh - `zipage calibrate` (TriAttention's statistics, compress/trig_calibrate.c)
# against Hugging Face transformers: on the tiny Qwen3 checkpoint transformers wrote
# (tests/data/triattention/calib, tests/reference/make_calib_goldens.py) and its 96 calibration
# tokens, the statistics the engine loads back (trig_stats_dump) equal those computed from
# transformers' own queries after q_norm, before RoPE, within 1e-5 of each field's largest value;
# the file is what the policy reads (the engine's loader takes it for the model); bad command
# lines are refused by name.
# Usage: test_calibrate.sh ZIPAGE TRIG_STATS_DUMP SOURCE_DIR TMP_DIR
set -u
Z=${1:?zipage}; DUMP=${2:?trig_stats_dump}; SRC=${3:?source dir}; T=${4:?tmp}/calibrate; PY="$SRC/.venv-grade/bin/python"
[ -x "$PY" ] || { echo "test_calibrate: skipped (no .venv-grade with numpy: make deps)"; exit 77; }
mkdir -p "$T"
D="$SRC/tests/data/triattention/calib"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
"$Z" calibrate --model "$D/model" --prompt-ids "$(cat "$D/ids.txt")" --chunk 40 --out "$T/stats.safetensors" > "$T/out" 2>&1 ||
  fail "calibrate: $(cat "$T/out")"
"$DUMP" "$T/stats.safetensors" "$D/model" > "$T/loaded.json" 2> "$T/err" || fail "the engine's loader: $(cat "$T/err")"
"$PY" - "$T/loaded.json" "$D/expected.json" <<'PY' || fail "the statistics against transformers'"
import json, sys
import numpy as np
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["stats"]
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
worst = {}
for name in ("q_mean_real", "q_mean_imag", "q_abs_mean"):
    a = np.array([got[k][name] for k in sorted(want)])
    b = np.array([want[k][name] for k in sorted(want)])
    worst[name] = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
print("calibrate against transformers' queries: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
assert max(worst.values()) <= 1e-5, worst
PY
bad() { # NEEDLE ARGS...
  local needle=$1; shift
  "$Z" calibrate "$@" > "$T/bad" 2>&1 && { fail "calibrate $* was accepted"; return; }
  grep -q -- "$needle" "$T/bad" || fail "calibrate $*: no \"$needle\" in: $(cat "$T/bad")"
}
bad "give one of --text FILE or --prompt-ids LIST" --model "$D/model" --out "$T/x" --prompt-ids 1,2 --text "$D/ids.txt"
bad "--model and --out are required" --model "$D/model" --prompt-ids 1,2
bad "nowhere.txt" --model "$D/model" --out "$T/x" --text "$T/nowhere.txt"
echo "test_calibrate: $fails failure(s)"
[ $fails = 0 ]
