# fidelity.gp - plot of a fidelity experiment (results/<exp>/fidelity.csv): top-1 agreement
# with full KV against the share of the context kept, one curve per policy (its N_max
# points), and mean KL against the same axis. Variables: data, outdir, title, policies.
# Columns: 1 run_id 2 policy 3 nmax 4 window 5 block 6 dataset 7 problems 8 gen 9 mean_kl
#          10 worst_window_kl 11 agreement 12 first_disagreement 13 retained_share 14 layer_budget
# A curve is a policy, streaming+shift for StreamingLLM with its position shift (its parameters,
# columns 15.., say true: its only boolean), and +pyramid for runs with per-layer budgets (column
# 14; files written before it existed have the parameters there, and every run counts as uniform);
# the names of `zipage table --plot-data` (results_curve).
set terminal pngcairo size 900,600 enhanced font "Sans,11"
set datafile separator ","
set key outside right top
set grid
shifted() = strcol(2) eq "streaming" && strstrt(strcol(15).strcol(16), "true") > 0
curve() = strcol(2).(shifted() ? "+shift" : "").(strcol(14) eq "pyramid" ? "+pyramid" : "")
sel(p, col) = curve() eq p ? column(col) : 1/0
set output outdir."/fidelity_agreement.png"
set title "teacher-forced top-1 agreement with full KV — ".title
set xlabel "retained share of the context (physical / logical tokens)"
set ylabel "top-1 agreement with full KV (share of steps)"
plot for [p in policies] data every ::1 using (sel(p, 13)):(sel(p, 11)) with linespoints lw 2 pt 7 title p
set output outdir."/fidelity_kl.png"
set title "teacher-forced KL(full || compressed) — ".title
set ylabel "mean KL per step (nats)"
set logscale y
set format y "10^{%L}"
plot for [p in policies] data every ::1 using (sel(p, 13)):(sel(p, 9)) with linespoints lw 2 pt 7 title p
