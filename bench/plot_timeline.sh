#!/usr/bin/env bash
# plot_timeline.sh - tokens/s (or another column) against time through each run of a
# `zipage bench --timeline` CSV, one curve per label and pool, with gnuplot; prints each
# curve's mean over the second half of its rows next to the first half's (a rate still
# falling at the cut is not yet at capacity). Not here: the summary rows (plot_pool.sh draws those).
# Usage: bash bench/plot_timeline.sh timeline.csv [out.png] [title] [COLUMN (default tps)]
set -euo pipefail
CSV=$1; PNG=${2:-${CSV%.csv}_timeline.png}; TITLE=${3:-$(basename "$CSV")}; COL=${4:-tps}
[ -s "$CSV" ] || { echo "plot_timeline: $CSV is missing or empty" >&2; exit 1; }
head -1 "$CSV" | grep -q '^label,pool,t_s,' || { echo "plot_timeline: $CSV has no zipage bench --timeline header" >&2; exit 1; }
DAT=$(mktemp); trap 'rm -f "$DAT"' EXIT
python3 - "$CSV" "$DAT" "$COL" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
col = sys.argv[3]
if not rows:
    sys.exit("plot_timeline: %s has no rows" % sys.argv[1])
if col not in rows[0]:
    sys.exit("plot_timeline: %s has no column %s" % (sys.argv[1], col))
curves = {}
for r in rows:
    key = (r["label"] + ("@" + r["pool"] if r["pool"] else "")).replace(" ", "_").replace(",", "_")
    curves.setdefault(key, []).append((float(r["t_s"]), float(r[col])))
with open(sys.argv[2], "w") as f:
    for k in sorted(curves):
        for t, v in curves[k]:
            f.write(f"{k},{t},{v}\n")
for k in sorted(curves):  # halves by rows (a slow first step can take half the time alone)
    pts = curves[k]
    h = (len(pts) + 1) // 2
    a, b = [v for _, v in pts[:h]], [v for _, v in pts[h:]]
    mean = lambda xs: f"{sum(xs) / len(xs):.1f}" if xs else "n/a"
    print(f"{k}: {col} first half {mean(a)}, second half {mean(b)} ({len(pts)} rows to {pts[-1][0]:.1f} s)")
PY
CURVES=$(cut -d, -f1 "$DAT" | sort -u | tr '\n' ' ')
command -v gnuplot >/dev/null || { echo "plot_timeline: gnuplot not found, so no $PNG (the report above stands; make deps installs it)" >&2; exit 3; }
sh "$(dirname "$0")/../plots/gnuplot_strict.sh" -e "data='$DAT'; out='$PNG'; title='$TITLE'; curves='$CURVES'; metric='$COL'" "$(dirname "$0")/../plots/bench_timeline.gp"
echo "plot: $PNG"
