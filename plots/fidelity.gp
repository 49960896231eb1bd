# fidelity.gp - plot of a fidelity experiment: top-1 agreement with full KV against the share of
# the context kept, one curve per policy (its N_max points), and mean KL against the same axis.
# Variables: data, outdir, title, policies. data is the TSV that `make plots` makes of
# results/<exp>/fidelity.csv (gnuplot does not read its quoted policy_params), one row a run:
#   1 curve 2 nmax 3 retained_share 4 agreement 5 mean_kl
# A curve is a policy, streaming+shift for StreamingLLM with its position shift, +pyramid for
# runs with per-layer budgets, +fp8 for runs with an FP8 K/V cache (full+fp8: full KV in FP8 against
# the reference): the names of `zipage table --plot-data` (results_curve).
# Full KV in the storage type is the reference: agreement 1 (drawn), KL 0 (said on the axis).
set terminal pngcairo size 1000,600 enhanced font "Sans,11"
set datafile separator "\t"
# the key beside the plot (many curves would hide points under it); a +fp8 curve dashed
set key outside right top box
set grid
sel(p, col) = strcol(1) eq p ? column(col) : 1/0
set output outdir."/fidelity_agreement.png"
set title "teacher-forced top-1 agreement with full KV — ".title
set xlabel "retained share of the context (physical / logical tokens)"
set ylabel "top-1 agreement with full KV (share of steps)"
set xrange [0:1]
set yrange [0:1.05]
fp8(p) = strstrt(p, "+fp8") > 0 ? 2 : 1
plot for [i=1:words(policies)] data using (sel(word(policies, i), 3)):(sel(word(policies, i), 4)) with linespoints lw 2 \
       pt (4 + i % 10) dt fp8(word(policies, i)) title word(policies, i), \
     1 with lines dt 2 lw 2 lc rgb "black" title "full KV (the reference)"
set output outdir."/fidelity_kl.png"
set title "teacher-forced KL(full || compressed) — ".title
set ylabel "mean KL per step from full KV (nats; full KV: 0)"
set yrange [*:*]
# a log axis needs two distinct positive values: one run, or equal KLs, gets a decade around its
# value (gnuplot warns on an empty range); KL 0 everywhere (prompts that fit the budget) a linear axis
stats data using 5 nooutput
kl_max = STATS_max
if (kl_max > 0) { stats data using ($5 > 0 ? $5 : 1/0) nooutput; if (STATS_min == kl_max) { set yrange [kl_max / 3.2 : kl_max * 3.2] } }
if (kl_max > 0) { set logscale y; set format y "10^{%L}" } else { set yrange [0:1] }
plot for [i=1:words(policies)] data using (sel(word(policies, i), 3)):(sel(word(policies, i), 5)) with linespoints lw 2 \
       pt (4 + i % 10) dt fp8(word(policies, i)) title word(policies, i)
