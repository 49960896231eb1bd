#!/usr/bin/env bash
# test_triattention_stats.sh - tools/triattention_stats.py (the authors' .pt statistics to the
# harness's safetensors, without torch) on the fixtures of tests/data/triattention: the values
# equal what torch.load reads from the same file (tiny_stats_expected.json), the model check
# passes for the right shape, and each bad input is refused by name with exit 2: a missing head,
# a head count the model does not have, an interleaved RoPE style, bf16 tensors, a pickle that
# asks for anything but torch's tensor rebuild (nothing is executed). Then the engine's loader
# (compress/trig_stats.c, through trig_stats_dump) reads the converted file for a model of its shape
# (2 layers, 3 query heads, head_dim 8) with exactly torch.load's values, and refuses it for a
# model of 4 heads.
# Usage: test_triattention_stats.sh SOURCE_DIR TMP_DIR TRIG_STATS_DUMP
set -u
SRC=${1:?source dir}; T=${2:?tmp dir}/triattention_stats; DUMP=${3:?trig_stats_dump}; PY="$SRC/.venv-grade/bin/python"
[ -x "$PY" ] || { echo "test_triattention_stats: skipped (no .venv-grade with numpy: make deps)"; exit 77; }
mkdir -p "$T"
D="$SRC/tests/data/triattention"; TOOL="$SRC/tools/triattention_stats.py"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
"$PY" "$TOOL" "$D/tiny_stats.pt" "$T/s.safetensors" --layers 2 --heads 3 > "$T/out" 2>&1 || fail "the good file: $(cat "$T/out")"
"$PY" - "$T/s.safetensors" "$D/tiny_stats_expected.json" <<'PY' || fail "the converted values"
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
assert h["__metadata__"] == {"format": "triattention-stats", "num_layers": "2", "num_heads": "3", "head_dim": "8", "source": "tiny"}, h["__metadata__"]
want = json.load(open(sys.argv[2]))["stats"]
for l in range(2):
    for name in ("q_mean_real", "q_mean_imag", "q_abs_mean"):
        e = h[f"layer.{l}.{name}"]
        assert e["dtype"] == "F32" and e["shape"] == [3, 4], e
        a, b = e["data_offsets"]
        got = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(3, 4)
        for hd in range(3):
            exp = np.array(want[f"layer{l:02d}_head{hd:02d}"][name], dtype=np.float32)
            assert np.array_equal(got[hd], exp), (l, name, hd, got[hd], exp)
print("converted values equal torch.load's")
PY
bad() { # MESSAGE FILE ARGS...
  local msg=$1 f=$2; shift 2
  "$PY" "$TOOL" "$f" "$T/bad.safetensors" "$@" > "$T/bad" 2>&1; local rc=$?
  [ $rc = 2 ] && grep -q -- "$msg" "$T/bad" || fail "$(basename "$f") $*: wanted exit 2 and \"$msg\", got $rc: $(cat "$T/bad")"
}
bad "layer 1 has no statistics for query head 2" "$D/tiny_missing.pt"
bad "layer 0 has no statistics for query head 3" "$D/tiny_stats.pt" --heads 4
bad "beyond the model's 1 layers" "$D/tiny_stats.pt" --layers 1
bad "only \"half\"" "$D/tiny_interleaved.pt"
bad "must be float32" "$D/tiny_bf16.pt"
"$PY" - "$T/evil.pt" <<'PY'
import pickle, sys, zipfile
class Evil:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned > /dev/null",))
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("evil/data.pkl", pickle.dumps({"stats": Evil()}, protocol=2))
PY
bad "which a statistics file has no use for" "$T/evil.pt"
bad "not a torch zip file" "$D/README.md"
# the engine's loader of the converted file, for a model of its shape and for one of 4 heads
for heads in 3 4; do
  mkdir -p "$T/model$heads"
  printf '{"architectures": ["Qwen3ForCausalLM"], "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": %d, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 64, "vocab_size": 100}\n' $heads > "$T/model$heads/config.json"
done
"$DUMP" "$T/s.safetensors" "$T/model3" > "$T/loaded.json" 2> "$T/loaded.err" || fail "the engine's loader: $(cat "$T/loaded.err")"
"$PY" - "$T/loaded.json" "$D/tiny_stats_expected.json" <<'PY' || fail "the engine's loaded values"
import json, sys
import numpy as np
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["stats"]
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for k in want:
    for name in ("q_mean_real", "q_mean_imag", "q_abs_mean"):
        a, b = np.array(got[k][name], dtype=np.float32), np.array(want[k][name], dtype=np.float32)
        assert np.array_equal(a, b), (k, name, a, b)
print("the engine's loader reads torch.load's values")
PY
"$DUMP" "$T/s.safetensors" "$T/model4" > /dev/null 2> "$T/loaded4.err" && fail "the loader took the statistics for a model of 4 heads"
grep -q "the model needs \[4, 4\]" "$T/loaded4.err" || fail "the loader's refusal for 4 heads: $(cat "$T/loaded4.err")"
echo "test_triattention_stats: $fails failure(s)"
[ $fails = 0 ]
