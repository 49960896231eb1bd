#!/usr/bin/env bash
# test_plots.sh - every plot script of experiments on real output of the runner (a tiny model
# with random weights): plots/draw.sh (as `make plots` runs it) draws experiment.gp's PNGs for a
# N_max sweep and for a pool x concurrency sweep (and only the plots of the axes that were
# swept), fidelity.gp's for a fidelity sweep, each through gnuplot_strict.sh, where any gnuplot
# message fails. A warning of gnuplot and a broken script fail draw.sh. `make table` prints the
# table without build chatter; `make test`'s last line names the labels it left out. (The bench
# scripts' plots run in test_cli.sh.) Skipped (77)
# without gnuplot: make deps installs it.
# Args: ZIPAGE TMPDIR SRCDIR
set -u
command -v gnuplot >/dev/null || { echo "test_plots: skipped (no gnuplot: make deps installs it)"; exit 77; }
Z=$1; T=$2/plots; S=$3
rm -rf "$T"; mkdir -p "$T"
fails=0
fail() { echo "FAIL: $1"; [ -f "$T/out" ] && cat "$T/out"; fails=$((fails+1)); }
draw() { bash "$S/plots/draw.sh" "$Z" "$T/res" "$1" > "$T/out" 2>&1; }
png() { [ -s "$T/res/$1" ] && [ "$(head -c 4 "$T/res/$1" | tail -c 3)" = PNG ]; }
cat > "$T/nmax.json" <<'J'
{"model": "preset:tiny-qwen3-vocab", "dataset": "passkey-128", "limit": 2, "temperature": 0, "max_tokens": 4, "block_size": 16,
 "kv_pool_tokens": 2048, "window": 4, "policy": ["full", "streaming", "zipage"], "nmax": [1, 2]}
J
cat > "$T/pool.json" <<'J'
{"model": "preset:tiny-qwen3-vocab", "dataset": "passkey-128", "limit": 2, "temperature": 0, "max_tokens": 4, "block_size": 16,
 "window": 4, "policy": "zipage", "nmax": 2, "kv_pool_tokens": [1024, 2048], "max_concurrency": [1, 2], "baseline": true}
J
cat > "$T/fid.json" <<'J'
{"kind": "fidelity", "model": "preset:tiny-qwen3-vocab", "dataset": "passkey-128", "limit": 1, "gen": 24, "kl_window": 8,
 "block_size": 16, "window": 4, "policy": ["streaming", "zipage"], "nmax": [1, 2], "policy_params": {"streaming": {"position_shift": [false, true]}}}
J
cat > "$T/fid1.json" <<'J'
{"kind": "fidelity", "model": "preset:tiny-qwen3-vocab", "dataset": "passkey-128", "limit": 1, "gen": 24, "kl_window": 8,
 "block_size": 16, "window": 4, "policy": "zipage", "nmax": 1}
J
for e in nmax pool fid fid1; do "$Z" run "$T/$e.json" --results "$T/res" > "$T/run_$e.log" 2>&1 || fail "run $e: $(tail -1 "$T/run_$e.log")"; done
D=passkey-128
# a passkey folder re-grades to the same verdicts (RULER's string match)
"$Z" grade "$T/res/nmax" > "$T/out" 2>&1 && grep -q "0 verdicts changed" "$T/out" || fail "zipage grade of a passkey folder"
draw nmax || fail "draw nmax"
for p in pass1_vs_nmax tps_vs_nmax tps_vs_accuracy; do png "nmax/$D/$p.png" || fail "nmax: $p.png not drawn"; done
for p in tps_vs_concurrency tps_vs_kvpool; do [ ! -e "$T/res/nmax/$D/$p.png" ] || fail "nmax: $p.png drawn over an axis that was not swept"; done
draw pool || fail "draw pool"
for p in tps_vs_concurrency tps_vs_kvpool tps_vs_accuracy; do png "pool/$D/$p.png" || fail "pool: $p.png not drawn"; done
for p in pass1_vs_nmax tps_vs_nmax; do [ ! -e "$T/res/pool/$D/$p.png" ] || fail "pool: $p.png drawn with one N_max"; done
draw fid || fail "draw fid"
for p in fidelity_agreement fidelity_kl; do png "fid/$p.png" || fail "fid: $p.png not drawn"; done
# one run: one point, a KL axis around its value (an empty range is a gnuplot warning)
draw fid1 || fail "draw fid1 (a single run)"
for p in fidelity_agreement fidelity_kl; do png "fid1/$p.png" || fail "fid1: $p.png not drawn"; done
[ "$(cut -f1 "$T/res/fid/fidelity_plot.tsv" | sort -u | tr '\n' ' ')" = "streaming streaming+shift zipage " ] || fail "fid: the curves $(cut -f1 "$T/res/fid/fidelity_plot.tsv" | sort -u | tr '\n' ' ')"
# a gnuplot warning (no data to plot) is an error with the script's name
: > "$T/empty.dat"
sh "$S/plots/gnuplot_strict.sh" -e "set terminal pngcairo; set output '$T/w.png'" -e "plot '$T/empty.dat'" > "$T/out" 2>&1 && fail "gnuplot_strict accepted a warning"
grep -q "plot failed: gnuplot plot '$T/empty.dat'" "$T/out" || fail "gnuplot_strict's message"
# a script that fails fails draw.sh, which names it
mkdir -p "$T/plots"; cp "$S"/plots/*.gp "$S"/plots/*.sh "$T/plots/"; echo "plot no_such_function(x)" >> "$T/plots/experiment.gp"
bash "$T/plots/draw.sh" "$Z" "$T/res" nmax > "$T/out" 2>&1 && fail "draw.sh passed a broken experiment.gp"
grep -q "plot failed: gnuplot .*experiment.gp" "$T/out" || fail "draw.sh's message names the script"
# make table: the table, not the build's lines
make -s --no-print-directory -C "$S" table EXP=nmax RESULTS="$T/res" BUILD="$(dirname "$Z")" > "$T/out" 2>&1 || fail "make table"
grep -q "^| full KV | " "$T/out" && ! grep -q "Built target\|Building C" "$T/out" || fail "make table prints build chatter or no table"
# make test's last line: the labels it left out, counted in this tree
bash "$S/tests/left_out.sh" "$(dirname "$Z")" > "$T/out" 2>&1
grep -Eq "^make test ran the tests labelled cpu; left out: [0-9]+ slow \(make test-slow\) and [0-9]+ gpu \(on a GPU machine: cd .* && ctest -L gpu; tests/device/README.md\)$" "$T/out" \
  || fail "left_out.sh: $(cat "$T/out")"
echo "test_plots: $fails failures"
[ "$fails" -eq 0 ]
