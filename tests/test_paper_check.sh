#!/usr/bin/env bash
# test_paper_check.sh - bench/paper_check.py (run_bench.sh papercheck, issue 40) on timelines of
# known rates: full size Zipage 300 and full KV 100 tokens/s for 200 s, the replica 270 and 100 for
# 25 s: ratios 3.000 and 2.700, replica / full size 0.900, read at the same time for both policies;
# a replica run cut short is read at its end and said; missing labels and bad arguments refused.
set -u
T=${1:?tmp dir}/paper_check; S=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$T"
fails=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fails=$((fails+1)); fi; }
timeline() { # label rate end [label rate end ...]
  echo "label,pool,t_s,generated_tokens,tps,mean_running,finished,prefill_tokens,preemptions,compressions"
  while [ $# -ge 3 ]; do
    awk -v l="$1" -v r="$2" -v e="$3" 'BEGIN { for (t = 5; t <= e + 1e-9; t += 5) printf "%s,27GiB,%.3f,%.0f,0,0,0,0,0,0\n", l, t, r * t }'
    shift 3
  done
}
timeline zipage-x1 300 200 full-x1 100 205 zipage-x8 270 25 full-x8 100 30 > "$T/a.csv"
python3 "$S/bench/paper_check.py" "$T/a.csv" 200 8 > "$T/a.out" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^full size: by 200.0 s Zipage 60000, full KV 20000 tokens: ratio 3.000; second half 3.000$" "$T/a.out"' "full size read at the cut"
check 'grep -q "^replica F = 8: by 25.0 s Zipage 6750, full KV 2500 tokens: ratio 2.700; second half 2.700$" "$T/a.out"' "replica read at the cut / F, both policies at the same time"
check 'grep -q "^replica / full size: 0.900 (by the cut), 0.900 (second half)$" "$T/a.out"' "the replica's ratio over the full size's"
timeline zipage-x1 300 200 full-x1 100 200 zipage-x8 270 15 full-x8 100 25 > "$T/b.csv"
python3 "$S/bench/paper_check.py" "$T/b.csv" 200 8 > "$T/b.out" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "replica F = 8: the runs. rows end at 15.0 s, before the cut at 25.0 s; read there" "$T/b.out" && grep -q "by 15.0 s Zipage 4050, full KV 1500" "$T/b.out"' "a run that ended early is read at its end, and said"
timeline zipage-x1 300 200 full-x1 100 200 > "$T/c.csv"
python3 "$S/bench/paper_check.py" "$T/c.csv" 200 8 > "$T/c.out" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "lacks the rows of zipage-x8 or full-x8" "$T/c.out"' "missing replica rows refused by name"
python3 "$S/bench/paper_check.py" "$T/a.csv" 0 8 > "$T/d.out" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "CUT 0.0 must be above 0" "$T/d.out"' "a cut of 0 refused"
[ $fails -eq 0 ] && echo "test_paper_check: all checks passed"
exit $fails
