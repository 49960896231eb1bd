# bench_pool.gp - throughput against KV-pool size, one line per policy, from the CSV rows of
# `zipage bench --workload reasoning` (bench/run_bench.sh step 3; bench/plot_pool.sh calls this).
# Variables (gnuplot -e): data (CSV with zipage bench's header), out (PNG path), title,
# policies (space separated: the ones with reasoning rows).
# Columns used: 4 workload, 8 policy, 11 block_size, 12 kv_blocks, 17 tps.
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator ","
set key top left
set grid
set logscale x 2
set title "reasoning workload: throughput vs KV pool — ".title
set xlabel "KV pool (tokens)"
set ylabel "throughput (generated tokens/s)"
sel(p) = (strcol(8) eq p && strcol(4) eq "reasoning") ? column(17) : 1/0
pool(p) = (strcol(8) eq p && strcol(4) eq "reasoning") ? column(11) * column(12) : 1/0
set output out
plot for [p in policies] data using (pool(p)):(sel(p)) every ::1 smooth unique \
     with linespoints lw 2 title p
