# bench_pool.gp - throughput against KV-pool size, one line per policy, for the reasoning
# workload (bench/plot_pool.sh prepares the data from `zipage bench` CSV rows and calls this).
# Variables (gnuplot -e): data (CSV lines policy,pool,tps), out (PNG path), title, policies
# (space separated), unit (the pool's unit: tokens or GiB), metric (the CSV column plotted).
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator ","
set key top left
set grid
set yrange [0:*]
set logscale x 2
stats data using 2 nooutput # one pool size: a range around it (gnuplot warns on an empty one)
if (STATS_min == STATS_max) { set xrange [STATS_min / 2 : STATS_max * 2] }
set title "throughput vs KV pool: ".title noenhanced
set xlabel (unit eq "GiB" ? "KV state memory (GiB: K/V, plus score and query caches)" : "KV pool (tokens)")
set ylabel "throughput (generated tokens/s, ".metric.")" noenhanced
sel(p) = strcol(1) eq p ? column(3) : 1/0
set output out
set key noenhanced
plot for [p in policies] data using 2:(sel(p)) smooth unique with linespoints lw 2 title p
