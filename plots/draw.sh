#!/usr/bin/env bash
# draw.sh - the plots of one experiment's results (`make plots` and `make experiment` call it):
# fidelity_agreement.png and fidelity_kl.png from fidelity.csv (plots/fidelity.gp), and for
# runs.csv the PNGs of plots/experiment.gp in one folder per dataset, from the TSV of
# `zipage table --plot-data`. Every gnuplot runs through gnuplot_strict.sh: a gnuplot message
# fails the script (exit 1) after naming the plot; it draws nothing when there are no results.
# Usage: draw.sh ZIPAGE RESULTS EXP
set -u
Z=$1; R=$2/$3; E=$3
here=$(dirname "$0")
strict() { sh "$here/gnuplot_strict.sh" "$@"; }
tex() { printf %s "$1" | sed 's/_/\\_/g'; } # an underscore is a subscript in gnuplot's enhanced text
[ -d "$R" ] || { echo "plots: no results folder $R" >&2; exit 1; }
if [ -f "$R/fidelity.csv" ]; then
  # the policy_params column is quoted JSON, the last column: awk's fields before it are plain
  # (an fp8 cache, column 15, is a curve of its own: +fp8; the adaptive budget, column 18, one per tau)
  tail -n +2 "$R/fidelity.csv" | awk -F, -v OFS='\t' '{ c = $2 ($2 == "streaming" && index($0, "true") ? "+shift" : "") ($14 == "pyramid" ? "+pyramid" : "") ($15 == "fp8" ? "+fp8" : "") ($16 == "adakv" ? "+adakv" : "") ($18 == "adaptive" ? "+adaptive" $19 : "")
    print c, $3, $13, $11, $9 }' > "$R/fidelity_plot.tsv.tmp"
  pols=$(cut -f1 "$R/fidelity_plot.tsv.tmp" | awk '!s[$0]++' | tr '\n' ' ')
  # each curve's rows together, by retained share (a sweep's axes interleave them and a resumed one appends; a line breaks at a row of another curve)
  sort -s -t "$(printf '\t')" -k1,1 -k3,3g "$R/fidelity_plot.tsv.tmp" > "$R/fidelity_plot.tsv" && rm -f "$R/fidelity_plot.tsv.tmp"
  strict -e "data='$R/fidelity_plot.tsv'; outdir='$R'; policies='$pols'; title='$(tex "$E")'" "$here/fidelity.gp" || exit 1
  echo "plots: $R/fidelity_agreement.png, $R/fidelity_kl.png"
fi
[ -f "$R/runs.csv" ] || exit 0
vars=$("$Z" table "$E" --results "$2" --plot-data "$R/plot.tsv") || exit 1
eval "$vars" # policies, datasets, model, sweeps
for d in $datasets; do
  mkdir -p "$R/$d"
  rm -f "$R/$d"/{pass1_vs_nmax,tps_vs_nmax,tps_vs_accuracy,tps_vs_concurrency,tps_vs_kvpool}.png # a plot not drawn now is not left from before
  strict -e "data='$R/plot.tsv'; outdir='$R/$d'; dataset='$d'; policies='$policies'; sweeps='$sweeps'; title='$(tex "$model, $d")'" \
    "$here/experiment.gp" || exit 1
  echo "plots: $(ls "$R/$d"/*.png | tr '\n' ' ')"
done
