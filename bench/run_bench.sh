#!/usr/bin/env bash
# run_bench.sh - the throughput issue's measurements in one device call, on the H200:
#   0. correctness gate: the CUDA engine (fp32 storage) generates the CPU engine's greedy tokens
#      on tiny-qwen3, full KV and Zipage; nothing is reported if it fails;
#   1. copy bandwidth and the fixed workload (Qwen3-8B shape, batch 256, prompt 256, gen 256,
#      full KV): zipage bench, then the transformers peer (bench/peer_hf.py), same CSV;
#   2. batch-1 decode (Qwen3-8B shape): roofline ratio;
#   3. reasoning workload (Qwen3-8B shape): Zipage (N_max 8, block 256, w 16, hybrid, async,
#      prefix cache) and full KV at the same KV-pool sizes (the TPS-vs-pool curve);
#   4. the lightning vs raw redundancy kernel (bench_redundancy).
# Needs a CUDA build in BUILD (run_gpu_tests.sh makes build-gpu). Results: $OUT/bench.csv.
# Usage there: bash bench/run_bench.sh [BUILD] [--quick]   (--quick: 0.6B shape, small sizes)
set -uo pipefail
B=${1:-build-gpu}; Q=${2:-}
O=${OUT:-/tmp}; CSV=$O/bench.csv
P=Qwen3-8B; BATCH=256; PROMPT=256; GEN=256; REQ=512; POOLS="262144 524288 1048576"
if [ "$Q" = "--quick" ]; then P=Qwen3-0.6B; BATCH=32; PROMPT=128; GEN=64; REQ=32; POOLS="65536"; fi
echo "== 0. correctness gate (tiny-qwen3, CPU vs CUDA fp32, greedy)"
$B/zipage mkmodel --preset tiny-qwen3 --out /tmp/gate >/dev/null || exit 1
for pol in full zipage; do
  for dev in cpu cuda; do
    $B/zipage generate --model /tmp/gate --device $dev --precision fp32 --prompt-ids 1,2,3,4,5,6,7,8 --n 4 --greedy \
      --max-tokens 300 --ignore-eos --policy $pol --nmax 2 --window 8 --block-size 16 --out /tmp/gate_$dev.json >/dev/null || exit 1
  done
  python3 - <<'PY' || { echo "gate failed: CUDA tokens differ from the CPU engine's ($pol)"; exit 1; }
import json
a, b = (json.load(open(f"/tmp/gate_{d}.json"))["samples"] for d in ("cpu", "cuda"))
assert [s["tokens"] for s in a] == [s["tokens"] for s in b]
PY
  echo "gate $pol: identical"
done
echo "== 1. fixed workload, $P, batch $BATCH, prompt $PROMPT, gen $GEN, full KV"
$B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --csv $CSV --label zipage-fixed
python3 bench/peer_hf.py --preset $P --batch $BATCH --prompt $PROMPT --gen $GEN --csv $CSV --label hf-static-compiled
echo "== 2. batch-1 decode, $P"
$B/zipage bench --preset $P --device cuda --batch 1 --prompt 128 --gen 512 --csv $CSV --label zipage-batch1
echo "== 3. reasoning workload, $P, $REQ requests"
for pool in $POOLS; do
  $B/zipage bench --preset $P --device cuda --workload reasoning --requests $REQ --kv-pool-tokens $pool --csv $CSV --label full-$pool
  $B/zipage bench --preset $P --device cuda --workload reasoning --requests $REQ --kv-pool-tokens $pool --policy zipage --nmax 8 \
    --window 16 --block-size 256 --scheduler hybrid --async --csv $CSV --label zipage-$pool
done
echo "== 4. redundancy kernels"
$B/bench_redundancy 16
echo "== rows"
cat $CSV
bash bench/plot_pool.sh $CSV $O/bench_pool.png "$P, $REQ reasoning requests"
