#!/usr/bin/env bash
# plot_serve.sh - latency against throughput from bench/serve_bench.py's CSV, with gnuplot: one
# line per label (policy) through its rates, output tokens/s on x; the left panel the time to first
# token (p50 and p99, log scale), the right the time per output token (p50 and p99). Each point is
# marked with its rate (a label none of whose requests made two tokens in its window has no TPOT
# and no line there; with none at all, the right panel says so). Prints, per label, the rate at which it saturates: the first rate whose
# output tokens/s is within 5% of the label's highest (more requests no longer buy tokens).
# Usage: bash bench/plot_serve.sh serve.csv [out.png] [title]
set -euo pipefail
CSV=$1; PNG=${2:-${CSV%.csv}.png}; TITLE=${3:-$(basename "$CSV")}
[ -s "$CSV" ] || { echo "plot_serve: $CSV is missing or empty" >&2; exit 1; }
head -1 "$CSV" | grep -q '^label,rate,max_concurrency,' || { echo "plot_serve: $CSV has no serve_bench header" >&2; exit 1; }
DAT=$(mktemp -d); trap 'rm -rf "$DAT"' EXIT
python3 - "$CSV" "$DAT" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
labels = []
for r in rows:
    if r["label"] not in labels:
        labels.append(r["label"])
def rate(r):
    return math.inf if r["rate"] == "inf" else float(r["rate"])
for i, lab in enumerate(labels):
    rs = sorted((r for r in rows if r["label"] == lab), key=rate)
    for r in rs:
        for c in ("output_tok_s", "ttft_p50_ms", "ttft_p99_ms"):
            if not r[c].strip():
                sys.exit(f"plot_serve: {lab} at rate {r['rate']} has no {c}")
    with open(f"{sys.argv[2]}/{i}.dat", "w") as f:
        for r in rs:
            f.write(f"{r['output_tok_s']} {r['ttft_p50_ms']} {r['ttft_p99_ms']} {r['tpot_p50_ms'] or 'NaN'} {r['tpot_p99_ms'] or 'NaN'} {r['rate']}\n")
    if any(r["tpot_p50_ms"].strip() for r in rs):
        open(f"{sys.argv[2]}/{i}.tpot", "w").close()
    top = max(float(r["output_tok_s"]) for r in rs)
    sat = next(r for r in rs if float(r["output_tok_s"]) >= 0.95 * top)
    print(f"{lab}: saturates at rate {sat['rate']} req/s: {float(sat['output_tok_s']):.0f} output tok/s "
          f"(highest {top:.0f}); TTFT p50 there {float(sat['ttft_p50_ms']):.0f} ms")
open(f"{sys.argv[2]}/labels", "w").write("\n".join(labels) + "\n")
PY
N=$(wc -l < "$DAT/labels")
plot_ttft="" plot_tpot=""
for ((i = 0; i < N; i++)); do
  L=$(sed -n "$((i + 1))p" "$DAT/labels")
  plot_ttft+="'$DAT/$i.dat' u 1:2 w lp lw 2 pt 7 lc $((i + 1)) t '$L p50', '' u 1:3 w lp lw 1 dt 2 pt 6 lc $((i + 1)) t '$L p99', '' u 1:2:6 w labels offset 0,1 notitle, "
  [ -e "$DAT/$i.tpot" ] && plot_tpot+="'$DAT/$i.dat' u 1:4 w lp lw 2 pt 7 lc $((i + 1)) t '$L p50', '' u 1:5 w lp lw 1 dt 2 pt 6 lc $((i + 1)) t '$L p99', '' u 1:4:6 w labels offset 0,1 notitle, "
done
gnuplot <<EOF
set terminal pngcairo size 1400,560 font ",11"
set output "$PNG"
set multiplot layout 1,2 title "$TITLE (points: request rate, req/s)"
set grid
set key top left
set xlabel "output tokens/s"
set ylabel "time to first token (ms)"
set logscale y
plot ${plot_ttft%, }
unset logscale y
set ylabel "time per output token (ms)"
$(if [ -n "$plot_tpot" ]; then echo "set yrange [0:*]"; echo "plot ${plot_tpot%, }"; else
  echo 'set label 1 "no time per output token: no request made two tokens in its window" at graph 0.5,0.5 center'
  echo 'set yrange [0:1]'; echo 'set xrange [0:1]'; echo 'plot 2 notitle'; fi)
unset multiplot
EOF
echo "plot_serve: $PNG"
