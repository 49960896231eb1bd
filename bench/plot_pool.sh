#!/usr/bin/env bash
# plot_pool.sh - the TPS-vs-KV-pool curve (one line per policy) of the reasoning rows of a
# zipage bench CSV, with gnuplot, the ratio at every pool both policies have a row for, and
# where the curves cross (each pair of neighbouring pools between which the leader changes).
# Rows are keyed by the pool they were asked for: the `pool` column (`--pools` entries:
# tokens, or the KV state's memory as 9.5GiB / 512MiB, the same memory for every policy), or
# for older CSVs block_size x kv_blocks tokens.  Usage: bash bench/plot_pool.sh bench.csv [out.png] [title]
set -euo pipefail
CSV=$1; PNG=${2:-${CSV%.csv}_pool.png}; TITLE=${3:-$(basename "$CSV")}
[ -s "$CSV" ] || { echo "plot_pool: $CSV is missing or empty" >&2; exit 1; }
head -1 "$CSV" | grep -q '^label,device,model,workload,' || { echo "plot_pool: $CSV has no zipage bench header" >&2; exit 1; }
DAT=$(mktemp); trap 'rm -f "$DAT" "$DAT.unit"' EXIT
# DAT: policy,x,tps per row (x: tokens, or GiB for memory pools); then the report
python3 - "$CSV" "$DAT" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["workload"] == "reasoning"]
if not rows:
    sys.exit("plot_pool: %s has no reasoning rows" % sys.argv[1])
def pool_of(r):
    spec = (r.get("pool") or "").strip()
    if not spec:
        return int(r["block_size"]) * int(r["kv_blocks"]), "tokens"
    if spec.endswith("GiB"): return float(spec[:-3]), "GiB"
    if spec.endswith("MiB"): return float(spec[:-3]) / 1024, "GiB"
    return float(spec), "tokens"
tps, units = {}, set()
for r in rows:
    x, u = pool_of(r)
    units.add(u)
    tps.setdefault(r["policy"], {})[x] = float(r["tps"])
if len(units) > 1:
    sys.exit("plot_pool: the CSV mixes token pools and memory pools; plot them apart")
unit = units.pop()
with open(sys.argv[2], "w") as f:
    for p in sorted(tps):
        for x in sorted(tps[p]):
            f.write(f"{p},{x},{tps[p][x]}\n")
fmt = (lambda x: f"{x:9.0f} tokens") if unit == "tokens" else (lambda x: f"{x:8.3f} GiB")
full, zip_ = tps.get("full", {}), tps.get("zipage", {})
pools = sorted(set(full) & set(zip_))
for p in pools:
    print(f"pool {fmt(p)}: full {full[p]:9.1f} tok/s, zipage {zip_[p]:9.1f} tok/s, ratio {zip_[p] / full[p]:.2f}")
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
            print(f"the curves cross between pools of {fmt(a).strip()} and {fmt(b).strip()}: {lead} leads from {fmt(b).strip()}")
with open(sys.argv[2] + ".unit", "w") as f:
    f.write(unit)
PY
UNIT=$(cat "$DAT.unit")
POL=$(cut -d, -f1 "$DAT" | sort -u | tr '\n' ' ')
gnuplot -e "data='$DAT'; out='$PNG'; title='$TITLE'; policies='$POL'; unit='$UNIT'" "$(dirname "$0")/../plots/bench_pool.gp"
echo "plot: $PNG"
