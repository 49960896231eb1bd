#!/usr/bin/env bash
# run_fuzz.sh - one libFuzzer target: its regression inputs (crashes and hangs found before,
# rebuilt in regress/TARGET) run once, then fuzzing for SECONDS from a corpus seeded with the
# project's real files of that kind (kept in the build tree between runs). Prints libFuzzer's
# final line (execs, coverage). Exit non-zero on any crash, leak, timeout or out-of-memory.
# Usage: run_fuzz.sh FUZZER TARGET SECONDS SRCDIR [RUNS]   (RUNS: stop after that many execs)
set -u
F=$1; T=$2; SEC=$3; S=$4; RUNS=${5:-}
C=$(dirname "$F")/corpus_$T; mkdir -p "$C"
seed() { for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$C/$(echo "$f" | md5sum | cut -c1-12)_$(basename "$f")"; done; return 0; }
case $T in
  config) seed "$S"/models/*/config.json "$S"/models/*/generation_config.json ;;
  safetensors) seed "$S"/tests/fuzz/seeds/safetensors/* ;;
  gguf) seed "$S"/tests/data/gguf/quants.gguf ;;
  tokenizer) seed "$S"/tests/fuzz/seeds/tokenizer/* ;;
  dataset) for d in "$S"/datasets/data/*.jsonl; do head -3 "$d" > "$C/seed_$(basename "$d")"; done ;;
  experiment) seed "$S"/experiments/*.json "$S"/tests/data/experiments/*.json ;;
  math) seed "$S"/tests/fuzz/seeds/math/* ;;
  results) seed "$S"/tests/fuzz/seeds/results/* ;;
  serve) seed "$S"/tests/fuzz/seeds/serve/* ;;
  http) seed "$S"/tests/fuzz/seeds/http/* ;;
esac
R="$S/tests/fuzz/regress/$T"
if [ -d "$R" ] && ls "$R"/* >/dev/null 2>&1; then
  "$F" -timeout=20 -rss_limit_mb=2048 "$R"/* > "$C.regress.log" 2>&1 || { cat "$C.regress.log"; echo "run_fuzz $T: a regression input failed"; exit 1; }
  echo "run_fuzz $T: $(ls "$R" | wc -l) regression inputs pass"
fi
ARGS=(-timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1)
if [ -n "$RUNS" ]; then ARGS+=(-runs="$RUNS"); else ARGS+=(-max_total_time="$SEC"); fi
"$F" "${ARGS[@]}" "$C" > "$C.log" 2>&1
rc=$?
grep -E "^stat::number_of_executed_units|^Done|^#[0-9]+.*DONE" "$C.log" | tail -2
[ $rc -eq 0 ] || { tail -40 "$C.log"; echo "run_fuzz $T: FAILED (exit $rc; the crashing input is in $(pwd))"; }
exit $rc
