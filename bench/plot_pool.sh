#!/usr/bin/env bash
# plot_pool.sh - the TPS-vs-KV-pool curve (one line per policy) of the reasoning rows of a
# zipage bench CSV, with gnuplot, the ratio at every pool both policies have a row for, and
# where the curves cross (each pair of neighbouring pools between which the leader changes).
# One curve per policy, or per label when a policy has several rows at one pool (sync and
# async Zipage): each evicting curve is then compared with each full-KV curve.
# Rows are keyed by the pool they were asked for: the `pool` column (`--pools` entries:
# tokens, or the KV state's memory as 9.5GiB / 512MiB, the same memory for every policy), or
# for older CSVs block_size x kv_blocks tokens. The throughput column is tps, or COLUMN (e.g.
# tps_steady or tps_saturated: throughput at capacity). A row of 0 tok/s is a pool too small
# for one request of the workload (zipage bench --pools writes it and goes on).
# Usage: bash bench/plot_pool.sh bench.csv [out.png] [title] [COLUMN]
set -euo pipefail
CSV=$1; PNG=${2:-${CSV%.csv}_pool.png}; TITLE=${3:-$(basename "$CSV")}; COL=${4:-tps}
[ -s "$CSV" ] || { echo "plot_pool: $CSV is missing or empty" >&2; exit 1; }
head -1 "$CSV" | grep -q '^label,device,model,workload,' || { echo "plot_pool: $CSV has no zipage bench header" >&2; exit 1; }
DAT=$(mktemp); trap 'rm -f "$DAT" "$DAT.unit"' EXIT
# DAT: policy,x,tps per row (x: tokens, or GiB for memory pools); then the report
python3 - "$CSV" "$DAT" "$COL" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["workload"] == "reasoning"]
col = sys.argv[3]
if not rows:
    sys.exit("plot_pool: %s has no reasoning rows" % sys.argv[1])
if any(not (r.get(col) or "").strip() for r in rows):
    sys.exit("plot_pool: a reasoning row of %s has no %s value" % (sys.argv[1], col))
def pool_of(r):
    spec = (r.get("pool") or "").strip()
    if not spec:
        return int(r["block_size"]) * int(r["kv_blocks"]), "tokens"
    if spec.endswith("GiB"): return float(spec[:-3]), "GiB"
    if spec.endswith("MiB"): return float(spec[:-3]) / 1024, "GiB"
    return float(spec), "tokens"
def curve_of(r):  # the policy, and the K/V cache type when it is fp8 (a curve of its own)
    return r["policy"] + ("+fp8" if r.get("kv_dtype", "auto") == "fp8" else "")
tps, units, pol, seen, dup = {}, set(), {}, set(), False
for r in rows:
    x, u = pool_of(r)
    units.add(u)
    dup = dup or (curve_of(r), x) in seen
    seen.add((curve_of(r), x))
if len(units) > 1:
    sys.exit("plot_pool: the CSV mixes token pools and memory pools; plot them apart")
unit = units.pop()
# one curve per policy, or per label where one policy has several configurations (e.g. the
# sync and async Zipage rows of run_bench's ASYNC=0)
for r in rows:
    key = (r["label"] if dup else curve_of(r)).replace(" ", "_").replace(",", "_")
    pol[key] = r["policy"]
    tps.setdefault(key, {})[pool_of(r)[0]] = float(r[col])
with open(sys.argv[2], "w") as f:
    for p in sorted(tps):
        for x in sorted(tps[p]):
            f.write(f"{p},{x},{tps[p][x]}\n")
fmt = (lambda x: f"{x:9.0f} tokens") if unit == "tokens" else (lambda x: f"{x:8.3f} GiB")
fulls = [k for k in sorted(tps) if pol[k] == "full"]
zips = [k for k in sorted(tps) if pol[k] != "full"]
for fk in fulls:
    for zk in zips:
        full, zip_ = tps[fk], tps[zk]
        pools = sorted(set(full) & set(zip_))
        for p in pools:
            ratio = f"{zip_[p] / full[p]:.2f}" if full[p] > 0 else f"inf ({fk} generated nothing: the pool cannot hold one of its requests)"
            print(f"pool {fmt(p)}: {fk} {full[p]:9.1f} tok/s, {zk} {zip_[p]:9.1f} tok/s, ratio {ratio}")
        if not pools:
            print(f"no pool size has both a {fk} and a {zk} row")
        elif all(zip_[p] >= full[p] for p in pools):
            print(f"{zk} >= {fk} at every pool measured")
        elif all(zip_[p] < full[p] for p in pools):
            print(f"{zk} stays below {fk} at every pool measured")
        else:  # every sign change along the sorted pools is a crossing
            for a, b in zip(pools, pools[1:]):
                if (zip_[a] >= full[a]) != (zip_[b] >= full[b]):
                    lead = zk if zip_[b] >= full[b] else "full KV" if fk == "full" else fk
                    print(f"the curves cross between pools of {fmt(a).strip()} and {fmt(b).strip()}: {lead} leads from {fmt(b).strip()}")
if not fulls or not zips:
    print("no pool size has both a full KV and a zipage row")
with open(sys.argv[2] + ".unit", "w") as f:
    f.write(unit)
PY
UNIT=$(cat "$DAT.unit")
POL=$(cut -d, -f1 "$DAT" | sort -u | tr '\n' ' ')
command -v gnuplot >/dev/null || { echo "plot_pool: gnuplot not found, so no $PNG (the report above stands; make deps installs it)" >&2; exit 3; }
sh "$(dirname "$0")/../plots/gnuplot_strict.sh" -e "data='$DAT'; out='$PNG'; title='$TITLE'; policies='$POL'; unit='$UNIT'; metric='$COL'" "$(dirname "$0")/../plots/bench_pool.gp"
echo "plot: $PNG"
