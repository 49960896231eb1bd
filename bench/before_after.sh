#!/usr/bin/env bash
# before_after.sh - one workload on two commits in the same device call, alternating between
# them, so that a change's throughput is compared with its parent's under the same machine
# state (the refactor gates of bench/RESULTS.md). BEFORE is a `git archive` tarball of the
# earlier commit, carried into the call; it is built once into /tmp/before-src/build-gpu
# (kept while the machine stays warm). Each run goes through the current tree's
# bench/run_bench.sh (its correctness gate first), with OUT=$OUT/before or $OUT/after:
#   fixed      run_bench.sh fixedg (fixed 256/256/256, graphs), ROUNDS times each (default 2),
#              before then after; prints every tok/s and the after/before ratio of the medians
#   reasoning  run_bench.sh reasoning at POOL (default 27GiB; REQ, MAXT, RT, WARM as there),
#              Zipage before, Zipage after, full KV before, full KV after; prints the
#              Zipage/full ratio (tps_steady) of each commit and after/before of those ratios
# Usage there:  bash bench/before_after.sh BEFORE.tgz AFTER_BUILD fixed|reasoning [POOL]
set -uo pipefail
TGZ=${1:?before tarball}; AB=${2:?after build}; STEP=${3:?fixed or reasoning}; POOL=${4:-27GiB}
O=${OUT:-/tmp}; S=/tmp/before-src; ROUNDS=${ROUNDS:-2}
source tests/device/gpu_env.sh
if [ ! -x $S/build-gpu/zipage ]; then
  rm -rf $S && mkdir -p $S && tar xzf "$TGZ" -C $S || exit 1
  gpu_build $S $S/build-gpu || { echo "before_after: the BEFORE tree does not build"; exit 1; }
fi
run() { OUT=$O/$1 bash bench/run_bench.sh "$2" "$3" ${4:-} | grep -vE "^label,|^zipage|^full" ; }
mkdir -p $O/before $O/after
case $STEP in
  fixed)
    for r in $(seq "$ROUNDS"); do run before $S/build-gpu fixedg; run after "$AB" fixedg; done ;;
  reasoning)
    for pol in zipage full; do POLICIES=$pol run before $S/build-gpu reasoning "$POOL"; POLICIES=$pol run after "$AB" reasoning "$POOL"; done ;;
  *) echo "before_after: unknown step $STEP (fixed, reasoning)"; exit 2 ;;
esac
python3 - "$O" "$STEP" <<'PY'
import csv, statistics, sys
o, step = sys.argv[1:]
rows = {w: list(csv.DictReader(open(f"{o}/{w}/bench.csv"))) for w in ("before", "after")}
if step == "fixed":
    tps = {w: [float(r["tps"]) for r in rows[w]] for w in rows}
    for w in tps: print(f"{w:6s} fixed tok/s: " + ", ".join(f"{x:,.1f}" for x in tps[w]))
    print(f"after / before (medians): {statistics.median(tps['after']) / statistics.median(tps['before']):.4f}")
else:
    ratio = {}
    for w in rows:
        by = {r["policy"]: float(r["tps_steady"]) for r in rows[w]}
        ratio[w] = by["zipage"] / by["full"]
        print(f"{w:6s} reasoning tps_steady: zipage {by['zipage']:,.1f}, full {by['full']:,.1f}: ratio {ratio[w]:.3f}")
    print(f"after / before (ratios): {ratio['after'] / ratio['before']:.4f}")
PY
