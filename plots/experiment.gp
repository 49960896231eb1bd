# experiment.gp - the plots of one experiment, from the TSV of `zipage table EXP --plot-data`.
# Variables (gnuplot -e): data (TSV), outdir, title (model, dataset), policies (space
# separated, without full), dataset (the one to plot). Writes five PNGs (pngcairo):
#   pass1_vs_nmax, tps_vs_nmax, tps_vs_accuracy, tps_vs_concurrency, tps_vs_kvpool.
# Columns: 1 policy 2 dataset 3 nmax 4 window 5 M 6 kv_pool_tokens 7 pass1 8 ci_low 9 ci_high 10 tps 11 mean_running
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator "\t"
set key outside right top
set grid
sel(p, col) = (strcol(1) eq p && strcol(2) eq dataset) ? column(col) : 1/0
full(col) = (strcol(1) eq "full" && strcol(2) eq dataset) ? column(col) : 1/0

set output outdir."/pass1_vs_nmax.png"
set title "pass\\@1 vs budget N_{max} — ".title
set xlabel "N_{max} (blocks kept per request)"
set ylabel "pass\\@1 (%, 95% bootstrap CI)"
stats data using (full(7)) nooutput
full_p1 = STATS_records > 0 ? STATS_max * 100 : 1/0
plot for [p in policies] data using (sel(p, 3)):(100*sel(p, 7)):(100*sel(p, 8)):(100*sel(p, 9)) with yerrorlines lw 2 title p, \
     full_p1 with lines dt 2 lw 2 lc rgb "black" title "full KV"

set output outdir."/tps_vs_nmax.png"
set title "throughput vs budget N_{max} — ".title
set ylabel "throughput (generated tokens/s)"
stats data using (full(10)) nooutput
full_tps = STATS_records > 0 ? STATS_max : 1/0
plot for [p in policies] data using (sel(p, 3)):(sel(p, 10)) with linespoints lw 2 title p, \
     full_tps with lines dt 2 lw 2 lc rgb "black" title "full KV"

set output outdir."/tps_vs_accuracy.png"
set title "throughput vs accuracy — ".title
set xlabel "pass\\@1 (%)"
set ylabel "throughput (generated tokens/s)"
plot for [p in policies] data using (100*sel(p, 7)):(sel(p, 10)) with linespoints lw 2 pt 7 title p, \
     data using (100*full(7)):(full(10)) with points pt 5 ps 2 lc rgb "black" title "full KV"

set output outdir."/tps_vs_concurrency.png"
set title "throughput vs concurrency M — ".title
set xlabel "M (query slots; 0 = derived from the pool)"
set ylabel "throughput (generated tokens/s)"
plot for [p in policies] data using (sel(p, 5)):(sel(p, 10)) with linespoints lw 2 title p

set output outdir."/tps_vs_kvpool.png"
set title "throughput vs KV-pool size — ".title
set xlabel "KV pool (tokens)"
set ylabel "throughput (generated tokens/s)"
plot for [p in policies] data using (sel(p, 6)):(sel(p, 10)) with linespoints lw 2 title p, \
     data using (full(6)):(full(10)) with linespoints dt 2 lw 2 lc rgb "black" title "full KV"
