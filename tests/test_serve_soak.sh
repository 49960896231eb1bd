#!/usr/bin/env bash
# test_serve_soak.sh - a short soak of `zipage serve` (slow label; docs/reliability.md has the 20-minute
# run): SmolLM2-135M-Instruct (make models; exit 77 when absent), Zipage at N_max 2, a 2,048-token pool
# (touched whole in the warm-up, so that its pages do not read as growth), MINUTES (default 3) of
# tests/serve_soak.py: 8 streaming clients, a quarter leaving mid-stream, 20 slowloris connections;
# passes when no request was refused or broken, nothing runs or holds a block at the end, and the RSS
# is flat after the first quarter.
# Usage: test_serve_soak.sh ZIPAGE SOURCE_DIR TMPDIR [MINUTES]
set -u
Z=$1; SRC=$2; T=$3/serve_soak; MIN=${4:-3}; rm -rf "$T"; mkdir -p "$T"
M=$SRC/models/cache/SmolLM2-135M-Instruct-Q4_1
[ -f "$M/SmolLM2-135M-Instruct.Q4_1.gguf" ] || { echo "SKIP: $M absent (make models)"; exit 77; }
"$Z" serve --help | grep -q "POST /v1/completions" || { echo "SKIP: zipage serve is not in this build"; exit 77; }
"$Z" serve --model "$M" --port 0 --served-model-name smol --policy zipage --nmax 2 --window 8 --block-size 16 --kv-pool-tokens 2048 \
  > "$T/out" 2> "$T/err" &
PID=$!
for _ in $(seq 200); do grep -q "^serving" "$T/out" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving smol on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out")
[ -n "$PORT" ] || { echo "FAIL: the server did not start"; cat "$T/err"; kill $PID; exit 1; }
python3 "$SRC/tests/serve_soak.py" "$PORT" smol $PID "$MIN" "$T/soak.csv" | tail -12
rc=${PIPESTATUS[0]}
kill -TERM $PID; wait $PID || { echo "FAIL: the server's exit status"; rc=1; }
exit $rc
