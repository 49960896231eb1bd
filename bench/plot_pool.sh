#!/usr/bin/env bash
# plot_pool.sh - the TPS-vs-KV-pool curve (one line per policy) of the reasoning rows of a
# zipage bench CSV, with gnuplot, and the pool size where Zipage overtakes full KV (the first
# pool of the sorted list at which Zipage's tokens/s is at least full KV's; both must have a
# row at that pool).  Usage: bash bench/plot_pool.sh bench.csv [out.png] [title]
set -euo pipefail
CSV=$1; PNG=${2:-${CSV%.csv}_pool.png}; TITLE=${3:-$(basename "$CSV")}
[ -s "$CSV" ] || { echo "plot_pool: $CSV is missing or empty" >&2; exit 1; }
head -1 "$CSV" | grep -q '^label,device,model,workload,' || { echo "plot_pool: $CSV has no zipage bench header" >&2; exit 1; }
POL=$(python3 -c "import csv,sys; print(' '.join(sorted({r['policy'] for r in csv.DictReader(open(sys.argv[1])) if r['workload']=='reasoning'})))" "$CSV")
[ -n "$POL" ] || { echo "plot_pool: $CSV has no reasoning rows" >&2; exit 1; }
gnuplot -e "data='$CSV'; out='$PNG'; title='$TITLE'; policies='$POL'" "$(dirname "$0")/../plots/bench_pool.gp"
python3 - "$CSV" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["workload"] == "reasoning"]
tps = {}
for r in rows:
    tps.setdefault(r["policy"], {})[int(r["block_size"]) * int(r["kv_blocks"])] = float(r["tps"])
full, zip_ = tps.get("full", {}), tps.get("zipage", {})
pools = sorted(set(full) & set(zip_))
for p in pools:
    print(f"pool {p:>9} tokens: full {full[p]:9.1f} tok/s, zipage {zip_[p]:9.1f} tok/s, ratio {zip_[p] / full[p]:.2f}")
cross = next((p for p in pools if zip_[p] >= full[p]), None)
if not pools:
    print("no pool size has both a full KV and a zipage row")
else:
    print("zipage >= full KV from a pool of %s tokens" % cross if cross else "zipage stays below full KV at every pool measured")
PY
echo "plot: $PNG"
