# bench_timeline.gp - a column of `zipage bench --timeline` rows (tokens/s by default) against
# the time into each run, one line per label and pool (bench/plot_timeline.sh prepares the
# data and calls this). Variables (gnuplot -e): data (CSV lines curve,t,value), out (PNG
# path), title, curves (space separated), metric (the column plotted).
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator ","
set key top right noenhanced
set grid
set yrange [0:*]
set title "progress through each run: ".title noenhanced
set xlabel "seconds into the run"
set ylabel metric noenhanced
sel(c) = strcol(1) eq c ? column(3) : 1/0
set output out
plot for [c in curves] data using 2:(sel(c)) with linespoints lw 2 pt 7 ps 0.5 title c
