#!/usr/bin/env bash
# run_serve_bench.sh - the request-rate sweep of `zipage serve` for one policy on the GPU machine
# (issue 38), and `zipage bench` on the same requests for the engine's own saturated tokens/s:
#   1. the reasoning workload's requests (`zipage bench --dump-workload`), output lengths divided
#      by F (the scaled replica of bench/RESULTS.md's `paper workload` row: block and pool / F too);
#   2. `zipage serve --preset Qwen3-8B` (random weights) with the policy, at the pool's KV memory;
#   3. bench/serve_bench.py at each rate: Poisson arrivals, every stream closed CUT seconds after
#      the first request, output tokens/s from the server's counter between WARM and CUT;
#   4. the server stopped (SIGTERM), then `zipage bench` on the same requests, all at once, cut at
#      CUT with the same WARM: the rate-inf row's output tokens/s against its tps_steady.
# Usage: POLICY=zipage|full bash bench/run_serve_bench.sh BUILD OUTDIR
# Settings (environment): F (8), REQ (960), RATES (1,2,4,8,inf), CUT (45), WARM (15), POOL
# (3.375GiB), BLOCK (32), PRESET (Qwen3-8B), DEVICE (cuda), PYTHON (python3, with aiohttp). Deliberately not here: the build (the
# caller's), plots (bench/plot_serve.sh).
set -uo pipefail
B=${1:?usage: POLICY=zipage|full bash bench/run_serve_bench.sh BUILD OUTDIR}; O=${2:?OUTDIR}
POLICY=${POLICY:-zipage}; F=${F:-8}; REQ=${REQ:-960}; RATES=${RATES:-1,2,4,8,inf}; CUT=${CUT:-45}; WARM=${WARM:-15}
POOL=${POOL:-3.375GiB}; BLOCK=${BLOCK:-32}; PRESET=${PRESET:-Qwen3-8B}; DEVICE=${DEVICE:-cuda}; PYTHON=${PYTHON:-python3}
mkdir -p "$O"
case $POLICY in
  zipage) P="--policy zipage --nmax 8 --window 16 --scheduler hybrid --async" ;;
  full) P="" ;;
  *) echo "run_serve_bench: POLICY=$POLICY is neither zipage nor full" >&2; exit 2 ;;
esac
M="--preset $PRESET --device $DEVICE --block-size $BLOCK --max-num-seqs 512 --max-num-batched-tokens 63840"
W="--workload reasoning --requests $REQ --max-tokens 32768 --length-scale $F"
"$B/zipage" bench $M $W --dump-workload "$O/workload.jsonl" || exit 1
"$B/zipage" serve $M --kv-pool-gib "${POOL%GiB}" $P --port 0 --max-waiting 4096 --served-model-name random-$PRESET \
  > "$O/serve_$POLICY.out" 2> "$O/serve_$POLICY.err" &
PID=$!
for _ in $(seq 240); do grep -q "^serving" "$O/serve_$POLICY.out" && break; kill -0 $PID 2>/dev/null || break; sleep 0.5; done
PORT=$(sed -n 's/^serving .* on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$O/serve_$POLICY.out")
[ -n "$PORT" ] || { echo "run_serve_bench: the server did not start"; tail -5 "$O/serve_$POLICY.err"; kill $PID 2>/dev/null; exit 1; }
"$PYTHON" bench/serve_bench.py --base-url "http://127.0.0.1:$PORT" --model random-$PRESET --workload "$O/workload.jsonl" \
  --rates "$RATES" --cutoff "$CUT" --warmup "$WARM" --slo-ttft-ms 2000 --slo-tpot-ms 50 --label "$POLICY" --csv "$O/serve.csv"
rc=$?
curl -s "http://127.0.0.1:$PORT/metrics" > "$O/metrics_$POLICY.txt" 2>/dev/null
kill -TERM $PID; wait $PID; echo "server exit status $?"
[ $rc = 0 ] || exit $rc
# the next process's cuBLAS failed (status 13) while the server's memory was still being given
# back: wait until the device's memory is free, at most 60 s
for _ in $(seq 120); do
  used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
  [ -z "$used" ] || [ "$used" -lt 4096 ] && break; sleep 0.5
done
"$B/zipage" bench $M $W --pools "$POOL" $P --max-seconds "$CUT" --warmup-seconds "$WARM" --label "bench-$POLICY" \
  --csv "$O/bench.csv" > "$O/bench_$POLICY.log" 2>&1 || { tail -5 "$O/bench_$POLICY.log"; exit 1; }
"$PYTHON" - "$O/serve.csv" "$O/bench.csv" "$POLICY" <<'PY'
import csv, sys
s = [r for r in csv.DictReader(open(sys.argv[1])) if r["label"] == sys.argv[3] and r["rate"] == "inf"][-1]
b = [r for r in csv.DictReader(open(sys.argv[2])) if r["label"] == "bench-" + sys.argv[3]][-1]
print(f"{sys.argv[3]}: server saturated {float(s['output_tok_s']):.1f} tok/s, zipage bench {float(b['tps_steady']):.1f} tok/s: "
      f"server / bench {float(s['output_tok_s']) / float(b['tps_steady']):.4f}")
PY
