#!/usr/bin/env bash
# test_kill.sh (label slow) - 100 kill -9 trials at random moments of a sweep: each trial starts
# the tiny sweep, kills it after a random 0.05-4 s, and resumes it to the end; every file must
# stay parseable (runs.csv with one header and whole rows, samples.jsonl one JSON object a
# line, meta.json), no run id may appear twice, every row must have all its samples and no
# sample may lack its row beyond the one run in progress, and the final set of run ids must be
# the uninterrupted sweep's. Args: ZIPAGE TMPDIR SRCDIR [TRIALS]
set -u
Z=$1; T=$2/kill; S=$3; N=${4:-100}
E="$S/tests/data/experiments/tiny_sweep.json"
rm -rf "$T"; mkdir -p "$T"
"$Z" run "$E" --results "$T/ref" > "$T/ref.log" 2>&1 || { echo "reference sweep failed"; cat "$T/ref.log"; exit 1; }
want=$(tail -n +2 "$T/ref/tiny_sweep/runs.csv" | cut -d, -f1 | sort | tr '\n' ' ')
check_files() {  # folder -> 0 when consistent
  python3 - "$1" <<'PY'
import csv, json, sys, collections
d = sys.argv[1]
rows = list(csv.reader(open(f"{d}/runs.csv"))) if __import__("os").path.exists(f"{d}/runs.csv") else []
if rows:
    assert rows[0][0] == "run_id", "runs.csv: no header"
    assert all(len(r) == len(rows[0]) for r in rows), "runs.csv: a partial row"
ids = [r[0] for r in rows[1:]]
assert len(ids) == len(set(ids)), "runs.csv: a run twice"
per = collections.Counter()
import os
if os.path.exists(f"{d}/samples.jsonl"):
    for line in open(f"{d}/samples.jsonl"):
        per[json.loads(line)["run_id"]] += 1
for i in ids:
    assert per[i] == 4, f"run {i}: {per[i]} samples"
assert len([k for k in per if k not in ids]) <= 1, "samples of more than one unfinished run"
json.load(open(f"{d}/meta.json")) if os.path.exists(f"{d}/meta.json") else None
PY
}
fails=0
for i in $(seq 1 "$N"); do
  D="$T/t$i"
  delay=$(python3 -c "import random; random.seed($i); print(round(random.uniform(0.05, 4.0), 2))")
  "$Z" run "$E" --results "$D" > "$D.log1" 2>&1 &
  pid=$!
  sleep "$delay"; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  if [ -d "$D/tiny_sweep" ] && ! check_files "$D/tiny_sweep" > "$D.chk1" 2>&1; then
    echo "trial $i (killed at ${delay}s): inconsistent files"; cat "$D.chk1"; fails=$((fails+1)); continue
  fi
  "$Z" run "$E" --results "$D" > "$D.log2" 2>&1 || { echo "trial $i: resume failed"; tail -3 "$D.log2"; fails=$((fails+1)); continue; }
  got=$(tail -n +2 "$D/tiny_sweep/runs.csv" | cut -d, -f1 | sort | tr '\n' ' ')
  if ! check_files "$D/tiny_sweep" > "$D.chk2" 2>&1 || [ "$got" != "$want" ]; then
    echo "trial $i (killed at ${delay}s): after resume"; cat "$D.chk2"; echo "runs: $got vs $want"; fails=$((fails+1))
  fi
  rm -rf "$D"
done
if [ $fails -eq 0 ]; then echo "test_kill: $N kill -9 trials, nothing lost, every file parseable"; exit 0; fi
echo "test_kill: $fails of $N trials failed"; exit 1
