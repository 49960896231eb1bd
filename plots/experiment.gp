# experiment.gp - the plots of one experiment, from the TSV of `zipage table EXP --plot-data`.
# Variables (gnuplot -e): data (TSV), outdir, title (model, dataset), policies (space
# separated, without full), dataset (the one to plot), sweeps (the axes with more than one value
# among the compressed runs: any of nmax, concurrency, kvpool). Writes PNGs (pngcairo):
#   pass1_vs_nmax and tps_vs_nmax (when N_max is swept), tps_vs_accuracy (always),
#   tps_vs_concurrency (when M is swept), tps_vs_kvpool (when the pool is swept).
# A plot of an axis that was not swept is not drawn; its points are joined by lines only when
# it is the one axis swept (with two, a policy's points at one value of the other axis would be
# joined to those at another): else each run is a point. The TSV is sorted along the curves.
# Full KV is the black reference on each (a dashed level, or a square). pass@1 is on 0..100 %.
# Columns: 1 policy 2 dataset 3 nmax 4 window 5 M 6 kv_pool_tokens 7 pass1 8 ci_low 9 ci_high 10 tps 11 mean_running
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator "\t"
set key outside right top
set grid
sel(p, col) = (strcol(1) eq p && strcol(2) eq dataset) ? column(col) : 1/0
full(col) = (strcol(1) eq "full" && strcol(2) eq dataset) ? column(col) : 1/0
swept(axis) = strstrt(" ".sweeps." ", " ".axis." ") > 0
only(axis) = sweeps eq axis
set macros # the styles, set before the blocks that expand them (a block is read whole)
nmax_err = only("nmax") ? "yerrorlines" : "yerrorbars"
nmax_line = only("nmax") ? "linespoints" : "points"
m_line = only("concurrency") ? "linespoints" : "points"
pool_line = only("kvpool") ? "linespoints" : "points"

stats data using (full(7)) nooutput
full_p1 = STATS_records > 0 ? STATS_max * 100 : 1/0
stats data using (full(10)) nooutput
full_tps = STATS_records > 0 ? STATS_max : 1/0

if (swept("nmax")) {
  stats data using ((strcol(1) ne "full" && strcol(2) eq dataset) ? column(3) : 1/0) nooutput
  set xrange [STATS_min / 1.3 : STATS_max * 1.3]
  set output outdir."/pass1_vs_nmax.png"
  set title "pass\\@1 vs budget N_{max} — ".title
  set xlabel "N_{max} (blocks kept per request)"
  set ylabel "pass\\@1 (%, 95% bootstrap CI)"
  set logscale x 2
  set yrange [0:105]
  plot for [p in policies] data using (sel(p, 3)):(100*sel(p, 7)):(100*sel(p, 8)):(100*sel(p, 9)) with @nmax_err lw 2 title p, \
       full_p1 with lines dt 2 lw 2 lc rgb "black" title "full KV"

  set output outdir."/tps_vs_nmax.png"
  set title "throughput vs budget N_{max} — ".title
  set ylabel "throughput (generated tokens/s)"
  set yrange [0:*]
  plot for [p in policies] data using (sel(p, 3)):(sel(p, 10)) with @nmax_line lw 2 title p, \
       full_tps with lines dt 2 lw 2 lc rgb "black" title "full KV"
  unset logscale x
  set autoscale x
}

set output outdir."/tps_vs_accuracy.png"
set title "throughput vs accuracy (one point per run) — ".title
set xlabel "pass\\@1 (%)"
set ylabel "throughput (generated tokens/s)"
set xrange [-2:102]
set yrange [0:*]
plot for [p in policies] data using (100*sel(p, 7)):(sel(p, 10)) with points pt 7 ps 1.5 title p, \
     data using (100*full(7)):(full(10)) with points pt 5 ps 2 lc rgb "black" title "full KV"
set autoscale x

if (swept("concurrency")) {
  set output outdir."/tps_vs_concurrency.png"
  set title "throughput vs concurrency M — ".title
  set xlabel "M (query slots)"
  set ylabel "throughput (generated tokens/s)"
  plot for [p in policies] data using (sel(p, 5)):(sel(p, 10)) with @m_line lw 2 title p, \
       full_tps with lines dt 2 lw 2 lc rgb "black" title "full KV"
}

if (swept("kvpool")) {
  set output outdir."/tps_vs_kvpool.png"
  set title "throughput vs KV-pool size — ".title
  set xlabel "KV pool (tokens)"
  set ylabel "throughput (generated tokens/s)"
  plot for [p in policies] data using (sel(p, 6)):(sel(p, 10)) with @pool_line lw 2 title p, \
       data using (full(6)):(full(10)) with @pool_line dt 2 lw 2 lc rgb "black" title "full KV"
}
