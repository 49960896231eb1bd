#!/usr/bin/env bash
# plot_pool.sh - the TPS-vs-KV-pool curve (one line per policy) of the reasoning rows of a
# zipage bench CSV, with gnuplot, the ratio at every pool both policies have a row for, and
# where the curves cross (each pair of neighbouring pools between which the leader changes).  Usage: bash bench/plot_pool.sh bench.csv [out.png] [title]
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
if not pools:
    print("no pool size has both a full KV and a zipage row")
elif all(zip_[p] >= full[p] for p in pools):
    print("zipage >= full KV at every pool measured")
elif all(zip_[p] < full[p] for p in pools):
    print("zipage stays below full KV at every pool measured")
else:  # every sign change along the sorted pools is a crossing
    for a, b in zip(pools, pools[1:]):
        if (zip_[a] >= full[a]) != (zip_[b] >= full[b]):
            lead = "zipage" if zip_[b] >= full[b] else "full KV"
            print(f"the curves cross between pools of {a} and {b} tokens: {lead} leads from {b}")
PY
echo "plot: $PNG"
