#!/usr/bin/env bash
# run_bench.sh - the throughput issue's measurements on the H200, in steps that each fit one
# call of the device tool (10 minutes); every step appends rows to $OUT/bench.csv (or
# /tmp/bench.csv) and begins with the correctness gate, so no figure is reported from a build
# whose CUDA engine disagrees with the CPU engine:
#   gate        the CUDA engine (fp32 storage) generates the CPU engine's greedy tokens on
#               tiny-qwen3, full KV and Zipage (300 tokens x 4 samples, block 16)
#   fixed       Qwen3-8B shape, batch 256, prompt 256, gen 256, full KV: zipage bench, then the
#               transformers peers (bench/peer_hf.py: static cache, compiled; then generate_batch,
#               continuous batching over a paged cache), same CSV
#   fixedg      the fixed workload with graphs only (one row, label zipage-fixed-graphs)
#   batch1      Qwen3-8B shape, batch-1 decode (roofline ratio); fixed and batch1 launch every
#               kernel (--no-cuda-graphs), the reference for the graphs step
#   graphs      fixed and batch-1 again with decode steps replayed as CUDA graphs (the default),
#               then fixed with ZIPAGE_GEMM_TUNE=1 (cublasLt algorithms timed per GEMM shape)
#   profile     fixed with --profile (CUDA events around every op: the GEMM / attention /
#               elementwise / sampling / host shares of the decode step; slower than graphs)
#   reasoning   Qwen3-8B shape, REQ reasoning requests (default 256, --max-tokens MAXT 32768:
#               the workload; each run cut at RT seconds, default 200, so that both
#               policies fit one call at one pool) at the KV-pool sizes POOL (tokens, or memory such as 9GiB,18GiB: the same bytes of KV
#               state for both policies; comma-separated: one row per size, weights loaded
#               once per policy): Zipage (N_max 8, block 256, w 16, hybrid, async, prefix
#               cache), then full KV; each run (each pool) stops RT seconds into its workload
#               (RT= empty: runs to the end) and is still reported (--max-seconds: tokens/s at
#               capacity, the CSV's `finished` column counts the requests done; WARM=W,
#               default 60: tps_steady leaves out the first W seconds); then plot. POLICIES=zipage or
#               POLICIES=full runs one of them (a throughput figure needs many more requests
#               than slots, e.g. REQ=128: one call per policy); POLICIES=...,hf adds the same
#               requests on transformers' continuous batching (bench/peer_hf_reasoning.py, full KV,
#               the same K/V bytes; memory pools only); graphs on (GRAPHS=0: off);
#               ASYNC=0 runs Zipage's compression synchronously (label zipage-sync: its
#               compression time is then all on the critical path, a measure of its cost);
#               every run's progress goes to $OUT/timeline.csv (a row every 5 s: is it at
#               capacity, or still drifting when cut?)
#   knobs       Zipage on the reasoning workload (REQ, MAXT, one pool POOL, graphs) once per
#               CUDA tuning knob: defaults, ZIPAGE_COMPRESS_PRIORITY=low, each cut at KRT
#               seconds (default 100); same CSV, labels zipage-knob-*
#   admission   Zipage on the reasoning workload (REQ, MAXT, RT, WARM, POOL; graphs) once per admission:
#               the hybrid scheduler admitting a prompt's blocks (the reference's), holding back ADMIT
#               shares of each request's cap (default "0.5 1": --admission-reserve), and the strict
#               scheduler (STRICT=0 leaves it out); labels zipage-admit-0, zipage-admit-R, zipage-strict
#   paper       the paper's measurement as a scaled replica: PAPER_REQ (default 960) reasoning requests
#               to completion at the one KV memory POOL (e.g. 27GiB), each output length, the block (256)
#               and the pool divided by SCALE (default 8: block 32, 27GiB -> 3.375GiB; the cap N_max x
#               block follows the block), prompts, request count, scheduler limits and weights kept;
#               Zipage (async) then full KV, POLICIES as in reasoning (at 27 GiB one policy per call:
#               full KV needs about 410 s), a run cut at PAPER_RT seconds if given (default: none);
#               labels zipage-xSCALE, full-xSCALE; completion_s is blank for a cut run. PAPER_ZIPAGE (default
#               "async") runs Zipage once per entry: async (the reference), sync (compression on the critical
#               path, label zipage-sync-xSCALE), reserve1 (--admission-reserve 1, zipage-admit1-xSCALE), strict
#               (the strict scheduler, zipage-strict-xSCALE), e.g. PAPER_ZIPAGE="async sync" for issue 40's
#               async-against-sync over a whole run
#   fp8         the fixed workload with graphs, K/V cache auto then fp8 (labels zipage-fixed-graphs-auto,
#               -fp8: issue 39's tokens/s ratio from one call)
#   fp8reasoning the reasoning step once per cache type of KVD (default "auto fp8"; --kv-dtype, labels with
#               -auto / -fp8), POLICIES, REQ, RT, WARM and POOL as there (issue 39's rows at 27 and 100 GiB:
#               e.g. REQ=960 RT=200 WARM=60 POLICIES=full, then zipage, one call each)
#   papercheck  the replica against the full-size workload over the same part, in one call: full size (block
#               256, POOL) cut at CHECK_RT seconds (default 200) for Zipage then full KV, then the replica
#               (SCALE) cut at CHECK_RT / SCALE; bench/paper_check.py prints each pair's Zipage / full KV
#               ratio of the tokens generated by the cut and over its second half (about 9.5 minutes at 200)
#   kernels     device time of every kernel of one fixed-workload decode step (batch 256, gen 3,
#               no graphs), by Nsight Compute (ncu, one kernel at a time), summed by
#               bench/ncu_step.py; raw table in $OUT/ncu.csv
#   redundancy  the lightning vs raw redundancy kernels (bench_redundancy)
#   sampler     the device sampler alone (bench_sample: 960 rows of the Qwen3 vocabulary, greedy,
#               temperature, the reasoning workload's top-k/top-p, a peaked nucleus)
#   attention   the attention kernels alone (bench_attention): decode at batch 256 / 32 / 8 with
#               short and long contexts, blocks in order and scattered, each shape also through
#               the kernel lab (dev_decode_attention all: the mainline op and the variants of
#               dev/cuda/, each validated against the CPU reference); causal prefill
#   tp          tensor parallelism over NCCL (needs TPN GPUs, default 2): the gate at tp TPN (the
#               CUDA group's fp32 greedy tokens = the CPU engine's, full KV and Zipage), then the
#               fixed workload at tp 1 and tp TPN without graphs (a group runs none) and at tp 1
#               with graphs, labels zipage-fixed-tp1, zipage-fixed-tpN, zipage-fixed-graphs
#   tpreasoning the reasoning workload (REQ, MAXT, RT, WARM, POOL: the group's KV memory, the same
#               blocks at every tp) at tp 1 and tp TPN, POLICIES as in reasoning (one policy per call
#               at RT 200), labels zipage-tp1, full-tpN, ...
#   plot        bench/plot_pool.sh on the CSV, bench/plot_timeline.sh on the timeline
#   quick       all of it on the Qwen3-0.6B shape with small sizes (a smoke run)
# Needs a CUDA build in BUILD (tests/device/run_gpu_tests.sh makes build-gpu).
# Usage there:  bash bench/run_bench.sh BUILD STEP [POOL, default 9GiB]
#   e.g.  bash bench/run_bench.sh build-gpu reasoning 9GiB      (the headline ratio, about 8 minutes)
#         RT=90 WARM=30 bash bench/run_bench.sh build-gpu reasoning 4.5GiB,27GiB   (more of the curve)
#         POLICIES=zipage bash bench/run_bench.sh build-gpu reasoning 54GiB,100GiB   (then POLICIES=full:
#               the 32k curve to the most one H200 holds beside the 8B weights, about 8 minutes each)
set -uo pipefail
B=${1:?build folder}; STEP=${2:?step}; POOL=${3:-9GiB}
O=${OUT:-/tmp}; CSV=$O/bench.csv; TL=$O/timeline.csv   # TL: the reasoning runs' progress, a row every 5 s
P=Qwen3-8B; BATCH=256; PROMPT=256; GEN=256; REQ=${REQ:-256}; MAXT=${MAXT:-32768}; RT=${RT-200}; WARM=${WARM-60}
POLICIES=${POLICIES:-zipage,full}; GRAPHS=${GRAPHS:-1}; ASYNC=${ASYNC:-1}
ZIPAGE="--policy zipage --nmax 8 --window 16 --block-size 256 --scheduler hybrid" # the Zipage configuration
SCHED="--max-num-seqs 512 --max-num-batched-tokens 63840" # the Zipage reference's scheduler limits (reasoning and knobs, both policies)
if [ "$STEP" = quick ]; then P=Qwen3-0.6B; BATCH=32; PROMPT=128; GEN=64; REQ=16; MAXT=2048; POOL=16384,65536; RT=; WARM=; fi

gate() {
  $B/zipage mkmodel --preset tiny-qwen3 --out /tmp/gate >/dev/null || exit 1
  for pol in full zipage; do
    for dev in cpu cuda; do
      $B/zipage generate --model /tmp/gate --device $dev --precision fp32 --prompt-ids 1,2,3,4,5,6,7,8 --n 4 --greedy \
        --max-tokens 300 --ignore-eos --policy $pol --nmax 2 --window 8 --block-size 16 --out /tmp/gate_$dev.json >/dev/null || exit 1
    done
    python3 -c "
import json
a, b = (json.load(open(f'/tmp/gate_{d}.json'))['samples'] for d in ('cpu', 'cuda'))
assert [s['tokens'] for s in a] == [s['tokens'] for s in b]" || { echo "gate FAILED: CUDA tokens differ from the CPU engine's ($pol)"; exit 1; }
    echo "gate $pol: CUDA greedy tokens identical to the CPU engine's"
  done
}
fixed() {
  $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --no-cuda-graphs --csv $CSV --label zipage-fixed
  python3 bench/peer_hf.py --preset $P --batch $BATCH --prompt $PROMPT --gen $GEN --csv $CSV --label hf-static-compiled
  python3 bench/peer_hf.py --preset $P --batch $BATCH --prompt $PROMPT --gen $GEN --csv $CSV --engine continuous --label hf-continuous
}
batch1() { $B/zipage bench --preset $P --device cuda --batch 1 --prompt 128 --gen 512 --no-cuda-graphs --csv $CSV --label zipage-batch1; }
reasoning() {
  local common="--preset $P --device cuda --workload reasoning --requests $REQ --max-tokens $MAXT --pools $POOL --csv $CSV $SCHED"
  local g="" a="--async" zl=zipage
  common="$common --timeline $TL --timeline-interval 5"
  if [ "$GRAPHS" = 1 ]; then g="-graphs"; common="$common --cuda-graphs"; else common="$common --no-cuda-graphs"; fi
  [ "$ASYNC" = 0 ] && a="" && zl=zipage-sync
  [ -n "$RT" ] && common="$common --max-seconds $RT"
  [ -n "$WARM" ] && common="$common --warmup-seconds $WARM"
  local kd=""; [ -n "${KV_DTYPE:-}" ] && kd="-$KV_DTYPE" && common="$common --kv-dtype $KV_DTYPE"
  case ",$POLICIES," in *,zipage,*)
    $B/zipage bench $common $ZIPAGE $a --label $zl$g$kd \
      || echo "reasoning: zipage failed";; esac
  case ",$POLICIES," in *,full,*)
    $B/zipage bench $common --label full$g$kd || echo "reasoning: full KV failed";; esac
  case ",$POLICIES," in *,hf,*) # the same requests on transformers' continuous batching, the same K/V bytes
    $B/zipage bench --preset $P --workload reasoning --requests $REQ --max-tokens $MAXT --dump-workload $O/workload.jsonl || return
    for pool in ${POOL//,/ }; do
      case $pool in *GiB) ;; *) echo "reasoning: hf peer skipped at pool $pool (give memory sizes, e.g. 9GiB)"; continue;; esac
      python3 bench/peer_hf_reasoning.py --preset $P --workload-file $O/workload.jsonl --kv-gib ${pool%GiB} ${RT:+--max-seconds $RT} \
        ${WARM:+--warmup-seconds $WARM} --csv $CSV || echo "reasoning: hf peer failed at $pool"
    done;; esac
}
fixedg() { $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --cuda-graphs --csv $CSV --label zipage-fixed-graphs; }
graphs() {
  fixedg
  $B/zipage bench --preset $P --device cuda --batch 1 --prompt 128 --gen 512 --cuda-graphs --csv $CSV --label zipage-batch1-graphs
  ZIPAGE_GEMM_TUNE=1 $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --cuda-graphs --csv $CSV \
    --label zipage-fixed-graphs-gemm-tune    # GEMM algorithms timed per shape (L2 flushed), tuned in the warm-up run
}
fp8() { # issue 39: the fixed workload with the K/V cache in the storage type and in fp8, one call
  local kd
  for kd in auto fp8; do
    $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --cuda-graphs --kv-dtype $kd --csv $CSV \
      --label zipage-fixed-graphs-$kd || echo "fp8: fixed $kd failed"
  done
}
fp8reasoning() { # issue 39: the reasoning workload at POOL once per cache type in KVD (default "auto fp8")
  local kd
  for kd in ${KVD:-auto fp8}; do KV_DTYPE=$kd reasoning; done
}
profile() { $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen $GEN --profile --csv $CSV --label zipage-fixed-profile; }
knobs() {
  local common="--preset $P --device cuda --workload reasoning --requests $REQ --max-tokens $MAXT --pools ${POOL%%,*} --csv $CSV $SCHED"
  common="$common $ZIPAGE --async --max-seconds ${KRT:-100} --timeline $TL --timeline-interval 5"
  $B/zipage bench $common --label zipage-knob-default || echo "knobs: default failed"
  ZIPAGE_COMPRESS_PRIORITY=low $B/zipage bench $common --label zipage-knob-priority-low || echo "knobs: priority low failed"
}
admission() {
  local common="--preset $P --device cuda --workload reasoning --requests $REQ --max-tokens $MAXT --pools $POOL --csv $CSV $SCHED"
  common="$common --policy zipage --nmax 8 --window 16 --block-size 256 --async --cuda-graphs --timeline $TL --timeline-interval 5"
  [ -n "$RT" ] && common="$common --max-seconds $RT"
  [ -n "$WARM" ] && common="$common --warmup-seconds $WARM"
  for r in 0 ${ADMIT:-0.5 1}; do
    $B/zipage bench $common --scheduler hybrid --admission-reserve $r --label zipage-admit-$r || echo "admission: reserve $r failed"
  done
  [ "${STRICT:-1}" = 1 ] && { $B/zipage bench $common --scheduler strict --label zipage-strict || echo "admission: strict failed"; }
}
paper() { # the scaled replica to completion (bench/RESULTS.md's paper workload row: 2.64x at 27 GiB / 8)
  local F=${SCALE:-8} pool=${POOL%%,*} n=${PAPER_REQ:-960}
  case $pool in *GiB) ;; *) echo "paper: give the KV memory as NGiB (got $pool)"; return 1;; esac
  local sp; sp=$(python3 -c "print(f'{${pool%GiB} / $F:g}GiB')") || return 1
  local bs=$((256 / F)); [ $((bs * F)) -eq 256 ] && [ $bs -ge 1 ] || { echo "paper: SCALE must divide 256 (got $F)"; return 1; }
  local common="--preset $P --device cuda --workload reasoning --requests $n --max-tokens $MAXT --length-scale $F --block-size $bs"
  common="$common --pools $sp $SCHED --cuda-graphs --csv $CSV --timeline $TL --timeline-interval 5"
  [ -n "${PAPER_RT:-}" ] && common="$common --max-seconds $PAPER_RT"
  local z="--policy zipage --nmax 8 --window 16" v
  case ",$POLICIES," in *,zipage,*)
    for v in ${PAPER_ZIPAGE:-async}; do # the reference configuration and the variants issue 40 compares it with
      case $v in
        async) $B/zipage bench $common $z --scheduler hybrid --async --label zipage-x$F || echo "paper: zipage failed";;
        sync) $B/zipage bench $common $z --scheduler hybrid --label zipage-sync-x$F || echo "paper: zipage-sync failed";;
        reserve1) $B/zipage bench $common $z --scheduler hybrid --async --admission-reserve 1 --label zipage-admit1-x$F \
          || echo "paper: zipage-admit1 failed";;
        strict) $B/zipage bench $common $z --scheduler strict --async --label zipage-strict-x$F || echo "paper: zipage-strict failed";;
        *) echo "paper: PAPER_ZIPAGE entry $v is none of async, sync, reserve1, strict"; return 1;;
      esac
    done;; esac
  case ",$POLICIES," in *,full,*) $B/zipage bench $common --label full-x$F || echo "paper: full KV failed";; esac
}
papercheck() { # issue 40's check of the replica: full size and replica over the same part, one call
  local F=${SCALE:-8} rt=${CHECK_RT:-200} pool=${POOL%%,*}
  case $pool in *GiB) ;; *) echo "papercheck: give the KV memory as NGiB (got $pool)"; return 1;; esac
  local common="--preset $P --device cuda --workload reasoning --requests ${PAPER_REQ:-960} --max-tokens $MAXT $SCHED --cuda-graphs"
  common="$common --csv $CSV --timeline $TL --timeline-interval 5"
  $B/zipage bench $common --pools $pool --block-size 256 --max-seconds $rt --policy zipage --nmax 8 --window 16 --scheduler hybrid --async \
    --label zipage-x1 || echo "papercheck: zipage failed"
  $B/zipage bench $common --pools $pool --block-size 256 --max-seconds $rt --label full-x1 || echo "papercheck: full KV failed"
  SCALE=$F PAPER_RT=$(python3 -c "print(f'{$rt / $F:g}')") POLICIES=zipage,full paper
  python3 bench/paper_check.py "$TL" "$rt" "$F"
}
kernels() {
  ncu --clock-control none --cache-control none --csv --page raw --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
    $B/zipage bench --preset $P --device cuda --batch $BATCH --prompt $PROMPT --gen 3 --no-warmup-run --no-cuda-graphs --csv /tmp/ncu_bench.csv \
    > $O/ncu.csv 2> $O/ncu.err || { echo "kernels: ncu failed ($(tail -1 $O/ncu.err))"; return; }
  python3 bench/ncu_step.py $O/ncu.csv
}
redundancy() { $B/bench_redundancy 16; }
sampler() { $B/bench_sample 960; }
attention() {
  for a in "256 384" "256 384 256 --scatter" "256 4096" "32 8192" "8 32768" "256 384 16"; do
    $B/bench_attention decode $a
    $B/dev_decode_attention all $a | sed 's/^/lab: /'
  done
  $B/bench_attention prefill 64 1024; $B/bench_attention prefill 8 8192
}
tp() {
  local N=${TPN:-2}
  for pol in full zipage; do
    $B/zipage generate --model /tmp/gate --device cuda --precision fp32 --tp $N --prompt-ids 1,2,3,4,5,6,7,8 --n 4 --greedy \
      --max-tokens 300 --ignore-eos --policy $pol --nmax 2 --window 8 --block-size 16 --out /tmp/gate_tp.json >/dev/null || { echo "tp gate: tp $N failed"; return; }
    $B/zipage generate --model /tmp/gate --device cpu --prompt-ids 1,2,3,4,5,6,7,8 --n 4 --greedy \
      --max-tokens 300 --ignore-eos --policy $pol --nmax 2 --window 8 --block-size 16 --out /tmp/gate_cpu.json >/dev/null || return
    python3 -c "
import json
a, b = (json.load(open(f))['samples'] for f in ('/tmp/gate_cpu.json', '/tmp/gate_tp.json'))
assert [s['tokens'] for s in a] == [s['tokens'] for s in b]" || { echo "tp gate FAILED: tp $N tokens differ from the CPU engine's ($pol)"; return; }
    echo "tp gate $pol: CUDA tp $N greedy tokens identical to the CPU engine's"
  done
  for t in 1 $N; do
    $B/zipage bench --preset $P --device cuda --tp $t --batch $BATCH --prompt $PROMPT --gen $GEN --no-cuda-graphs --csv $CSV --label zipage-fixed-tp$t
  done
  fixedg
}
tpreasoning() {
  local N=${TPN:-2}
  local common="--preset $P --device cuda --workload reasoning --requests $REQ --max-tokens $MAXT --pools $POOL --csv $CSV $SCHED --no-cuda-graphs"
  [ -n "$RT" ] && common="$common --max-seconds $RT"
  [ -n "$WARM" ] && common="$common --warmup-seconds $WARM"
  for t in 1 $N; do
    case ",$POLICIES," in *,zipage,*) $B/zipage bench $common --tp $t $ZIPAGE --async --label zipage-tp$t || echo "tpreasoning: zipage tp $t failed";; esac
    case ",$POLICIES," in *,full,*) $B/zipage bench $common --tp $t --label full-tp$t || echo "tpreasoning: full tp $t failed";; esac
  done
}
plot() {
  bash bench/plot_pool.sh $CSV $O/bench_pool.png "$P, $REQ reasoning requests"
  [ -s $TL ] && bash bench/plot_timeline.sh $TL $O/bench_timeline.png "$P, $REQ reasoning requests"
}

gate
case $STEP in
  gate) ;;
  fixed) fixed ;;
  fixedg) fixedg ;;
  batch1) batch1 ;;
  graphs) graphs ;;
  profile) profile ;;
  reasoning) reasoning ;;
  knobs) knobs ;;
  admission) admission ;;
  paper) paper ;;
  papercheck) papercheck ;;
  fp8) fp8 ;;
  fp8reasoning) fp8reasoning ;;
  kernels) kernels ;;
  redundancy) redundancy ;;
  sampler) sampler ;;
  attention) attention ;;
  tp) tp ;;
  tpreasoning) tpreasoning ;;
  plot) plot ;;
  quick) fixed; batch1; graphs; reasoning; redundancy; plot ;;
  *) echo "run_bench: unknown step $STEP (gate, fixed, fixedg, batch1, graphs, profile, reasoning, knobs, admission, paper, kernels, redundancy, sampler, attention, tp, tpreasoning, plot, quick)"; exit 2 ;;
esac
echo "== rows so far"; cat $CSV 2>/dev/null
