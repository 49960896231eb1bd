#!/usr/bin/env bash
# test_serve_bench.sh - the load test of `zipage serve` end to end on the CPU (tiny-qwen3-vocab,
# random weights, Zipage with compressions under way): bench/run_serve_bench.sh at two rates with a
# cutoff, then its rows and the server's state after; bench/serve_bench.py over a whole run, where
# every request must get exactly its max_tokens (ignore_eos) and the completion tokens must add up
# to the workload's; bench/plot_serve.sh draws the rows; serve_bench's refusals. The saturated
# ratio against zipage bench is the GPU run's to judge (bench/RESULTS.md), not a CPU test's.
# Skipped (77) in a build without libmicrohttpd or without aiohttp in PYTHON.
# Usage: test_serve_bench.sh ZIPAGE TMPDIR PYTHON
set -u
Z=$1; T=$2/serve_bench; PY=$3; rm -rf "$T"; mkdir -p "$T"
cd "$(dirname "$0")/.."
"$Z" serve --help | grep -q "POST /v1/completions" || { echo "SKIP: zipage serve is not in this build"; exit 77; }
"$PY" -c "import aiohttp" 2>/dev/null || { echo "SKIP: no aiohttp in $PY (make deps)"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
B=$(dirname "$Z")
PRESET=tiny-qwen3-vocab DEVICE=cpu F=512 REQ=24 RATES=16,inf CUT=3 WARM=1 POOL=0.02GiB BLOCK=16 PYTHON="$PY" \
  bash bench/run_serve_bench.sh "$B" "$T/sweep" > "$T/sweep.log" 2>&1 || { cat "$T/sweep.log"; fail "run_serve_bench.sh"; }
grep -q "server exit status 0" "$T/sweep.log" || fail "the server's exit status: $(grep 'exit status' "$T/sweep.log")"
grep -q "server / bench" "$T/sweep.log" || fail "no saturated comparison in the sweep's log"
"$PY" - "$T/sweep/serve.csv" "$T/sweep/metrics_zipage.txt" "$T/sweep/bench.csv" <<'PYCHECK' || fail "the sweep's rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["rate"] for r in rows] == ["16", "inf"], [r["rate"] for r in rows]
for r in rows:
    n, fin, cut, bad = (int(r[k]) for k in ("requests", "finished", "cut", "failed"))
    assert n > 0 and bad == 0 and fin + cut == n, r
    assert float(r["output_tok_s"]) > 0 and r["output_tok_source"] == "zipage_generation_tokens_total", r
    assert float(r["ttft_p50_ms"]) <= float(r["ttft_p99_ms"]), r
    # the engine thread over the window: its steps, and a step's time inside and between steps
    assert int(r["engine_steps"]) > 0 and float(r["engine_step_ms"]) > 0 and float(r["engine_between_ms"]) >= 0, r
    assert float(r["engine_between_ms"]) < 10 * float(r["engine_step_ms"]), r
assert int(rows[1]["requests"]) == 24, rows[1]  # rate inf sends every request at once
m = {l.split()[0]: float(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("zipage_") and "{" not in l}
assert m["zipage_requests_running"] == 0 and m["zipage_kv_blocks_used"] == 0, m  # the cut streams ended on the server
assert m["zipage_compressions_total"] > 0, m
b = list(csv.DictReader(open(sys.argv[3])))
assert b and b[-1]["label"] == "bench-zipage" and float(b[-1]["tps_steady"]) > 0, b
print("sweep rows ok")
PYCHECK
# a whole run: 8 requests to their end, each exactly its max_tokens
head -8 "$T/sweep/workload.jsonl" > "$T/w8.jsonl"
"$Z" serve --preset tiny-qwen3-vocab --port 0 --policy zipage --nmax 2 --window 4 --block-size 16 > "$T/out" 2> "$T/err" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/out" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving .* on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out")
if [ -n "$PORT" ]; then
  "$PY" bench/serve_bench.py --base-url "http://127.0.0.1:$PORT" --model tiny-qwen3-vocab --workload "$T/w8.jsonl" --rates inf \
    --label whole --csv "$T/whole.csv" > "$T/whole.log" 2>&1 || { cat "$T/whole.log"; fail "serve_bench over a whole run"; }
  "$PY" - "$T/whole.csv" "$T/w8.jsonl" <<'PYCHECK' || fail "the whole run's tokens"
import csv, json, sys
r = next(csv.DictReader(open(sys.argv[1])))
want = sum(json.loads(l)["gen"] for l in open(sys.argv[2]))
assert r["finished"] == "8" and r["cut"] == "0" and r["output_tok_source"] == "usage", r
assert int(r["completion_tokens"]) == want, (r["completion_tokens"], want)
print(f"whole run: 8 requests, {want} tokens as asked")
PYCHECK
  kill -TERM $PID; wait $PID || fail "the second server's exit status"
else
  fail "the second server did not start: $(cat "$T/err")"; kill $PID
fi
if command -v gnuplot > /dev/null; then
  bash bench/plot_serve.sh "$T/sweep/serve.csv" "$T/serve.png" test > "$T/plot.log" 2>&1 && [ -s "$T/serve.png" ] || { cat "$T/plot.log"; fail "plot_serve.sh"; }
  grep -q "^zipage: saturates at rate" "$T/plot.log" || fail "plot_serve.sh's saturation line"
  # a window where no request made two tokens (a slow machine): no TPOT, and still a picture
  python3 - "$T/sweep/serve.csv" "$T/notpot.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    for c in ("tpot_mean_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms"):
        r[c] = ""
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=list(rows[0]))
w.writeheader()
w.writerows(rows)
PY
  bash bench/plot_serve.sh "$T/notpot.csv" "$T/notpot.png" test > "$T/plot2.log" 2>&1 && [ -s "$T/notpot.png" ] || { cat "$T/plot2.log"; fail "plot_serve.sh without TPOT"; }
fi
# refusals: one clear message and exit 2
bad() { # MESSAGE ARGS...
  local want=$1; shift
  "$PY" bench/serve_bench.py --model m --csv "$T/x.csv" "$@" > "$T/bad" 2>&1; local rc=$?
  [ $rc = 2 ] && grep -q -- "$want" "$T/bad" || fail "serve_bench $*: rc $rc, wanted \"$want\": $(cat "$T/bad")"
}
bad "must be a positive number" --workload "$T/w8.jsonl" --rates 0
bad "neither a number nor inf" --workload "$T/w8.jsonl" --rates fast
bad "holds only 8 requests" --workload "$T/w8.jsonl" --requests 9
bad "must be below --cutoff" --workload "$T/w8.jsonl" --cutoff 2 --warmup 3
printf '{"prompt": [1, 2], "gen": 0}\n' > "$T/badw.jsonl"
bad "badw.jsonl:1: \"gen\" must be a positive integer" --workload "$T/badw.jsonl"
printf '{"prompt": [], "gen": 3}\n' > "$T/badw.jsonl"
bad "badw.jsonl:1: \"prompt\" must be a non-empty list" --workload "$T/badw.jsonl"
bad "No such file" --workload "$T/none.jsonl"
echo "test_serve_bench: $fails failure(s)"
[ $fails = 0 ]
