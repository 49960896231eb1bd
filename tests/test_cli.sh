#!/usr/bin/env bash
# test_cli.sh - the zipage command line end to end: mkmodel -> generate / logits / bench, and
# one clear error line with a non-zero exit for each kind of bad input. Args: ZIPAGE TMPDIR
set -u
Z=$1; T=$2/cli; rm -rf "$T"; mkdir -p "$T"
fails=0
ok()   { if "$@" >"$T/out" 2>&1; then :; else echo "FAIL (exit $?): $*"; cat "$T/out"; fails=$((fails+1)); fi; }
bad()  { # bad EXPECTED_TEXT cmd...: must exit non-zero, print one error line containing the text, no crash
  local want=$1; shift
  "$@" >"$T/out" 2>&1; local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -q "error: .*$want" "$T/out"; then
    echo "FAIL (exit $rc, wanted error mentioning '$want'): $*"; cat "$T/out"; fails=$((fails+1)); fi; }

ok "$Z" mkmodel --preset tiny-qwen2 --out "$T/m" --seed 3
ok "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --max-tokens 8 --block-size 16 --out "$T/g.json"
grep -q '"tokens": \[' "$T/g.json" || { echo "FAIL: generate --out wrote no tokens"; fails=$((fails+1)); }
ok "$Z" logits --model "$T/m" --prompt-ids 1,2,3,4 --all --out "$T/l.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['logits'])==4 and len(d['logits'][0])==1024" "$T/l.json" \
  || { echo "FAIL: logits JSON"; fails=$((fails+1)); }
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16
grep -q '^zipage,cpu,m,fixed,2,8.0,4.0,full,.*,0\.0,,[0-9.]*,2,[0-9.]*,1,0,1,0\(,[0-9.]*\)\{4\},auto\(,[0-9.]*\)\{5\}$' "$T/out" || { echo "FAIL: bench CSV row"; cat "$T/out"; fails=$((fails+1)); }
# the fixed workload runs once untimed first (its counters zeroed: the row counts one run), unless --no-warmup-run
grep -q '^# warm-up run: ' "$T/out" || { echo "FAIL: bench fixed without its warm-up run"; cat "$T/out"; fails=$((fails+1)); }
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --no-warmup-run
grep -q '^# warm-up run' "$T/out" && { echo "FAIL: --no-warmup-run still warmed up"; fails=$((fails+1)); }
grep -q '^zipage,cpu,m,fixed,2,8.0,4.0,full,.*,0\.0,,[0-9.]*,2,[0-9.]*,1,0,1,0\(,[0-9.]*\)\{4\},auto\(,[0-9.]*\)\{5\}$' "$T/out" || { echo "FAIL: bench --no-warmup-run row"; cat "$T/out"; fails=$((fails+1)); }
# a tensor-parallel group of 2 CPU ranks (2 KV heads): the row says tp 2; the tokens are tp 1's (test_tp_engine);
# the checkpoint m has 1 KV head: tp 3 (and 2) refused naming the count
ok "$Z" bench --preset tiny-qwen3-vocab --batch 2 --prompt 8 --gen 4 --block-size 16 --tp 2
grep -q '^zipage,cpu,tiny-qwen3-vocab,fixed,2,8.0,4.0,full,.*,[0-9.]*,2,[0-9.]*,2,0,1,0\(,[0-9.]*\)\{4\},auto\(,[0-9.]*\)\{5\}$' "$T/out" && grep -q 'on rank 0 of the tensor-parallel group' "$T/out" \
  || { echo "FAIL: bench --tp 2 row"; cat "$T/out"; fails=$((fails+1)); }
"$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --tp 3 > "$T/out" 2>&1 \
  && { echo "FAIL: bench --tp 3 of a model with 2 KV heads ran"; fails=$((fails+1)); }
grep -q 'do not split into 3' "$T/out" || { echo "FAIL: bench --tp 3 error"; cat "$T/out"; fails=$((fails+1)); }
# the roofline's bytes per decode step: every weight but the untied embedding table (tiny-qwen2
# unties it; a step reads its 2 tokens' rows), plus the K/V attended (fp32 on the CPU)
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --csv "$T/bytes.csv"
ok "$Z" bench --model "$T/m" --batch 64 --prompt 8 --gen 4 --block-size 16 --csv "$T/bytes.csv" --label b64
python3 - "$T/m" "$T/bytes.csv" <<'PY' || { echo "FAIL: bench step bytes"; cat "$T/bytes.csv"; fails=$((fails+1)); }
import csv, json, struct, sys
d = sys.argv[1]
c = json.load(open(f"{d}/config.json"))
raw = open(f"{d}/model.safetensors", "rb").read()
hdr = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
params = sum(eval("*".join(map(str, t["shape"])) or "1") for k, t in hdr.items() if k != "__metadata__")
assert not c["tie_word_embeddings"]
H, D = c["hidden_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
weights = 4 * (params - c["vocab_size"] * H + 2 * H)           # per step: 2 rows of the table
kv = 4 * 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * D * 2 * (9 + 10 + 11) / 3  # kv lengths 9, 10, 11
row = list(csv.DictReader(open(sys.argv[2])))[0]
want = (weights + kv) / 1e9
assert row["decode_steps"] == "3", row["decode_steps"]
assert abs(float(row["step_gbytes_mean"]) - want) < 2e-6, (row["step_gbytes_mean"], want)
# the roof with the compute roof: per step max(weights / bandwidth, 2 rows params / matmul rate) +
# max(K/V bytes / bandwidth, 4 L Hq D flops per K/V token / matmul rate); never below the
# bandwidth roof, and at 64 rows a step is compute-bound on this CPU (the compute term decides)
L, Hq = c["num_hidden_layers"], c["num_attention_heads"]
kvt = 4 * 2 * L * c["num_key_value_heads"] * D
P = params - c["vocab_size"] * H
for r, B in zip(csv.DictReader(open(sys.argv[2])), (2, 64)):
    bw, F = float(r["copy_gbps"]) * 1e9, float(r["matmul_tflops"]) * 1e12
    ideal = sum(max((4 * P + B * 4 * H) / bw, B * 2 * P / F) + max(B * n * kvt / bw, B * n * 4 * L * Hq * D / F) for n in (9, 10, 11))
    decode = 3 * float(r["decode_step_ms"]) / 1e3
    got, bw_only = float(r["roofline_compute_ratio"]), float(r["roofline_ratio"])
    assert F > 0 and abs(got - ideal / decode) <= 0.03 * ideal / decode + 2e-4, (B, got, ideal / decode)
    assert got >= bw_only - 1e-3, (B, got, bw_only)
    if B == 64:
        assert B * 2 * P / F > (4 * P + B * 4 * H) / bw and got > 1.2 * bw_only, (F, bw, got, bw_only)
    assert float(r["gemm_roof_share"]) == 0 and float(r["attention_roof_share"]) == 0, r  # not profiled
    assert float(r["graph_replay_share"]) == 0, r  # no graphs on the CPU
PY
# --csv naming a file of another header (an older version's) is refused before anything runs, the file as it was
printf 'label,device,model\nold,cpu,m\n' > "$T/old.csv"
"$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --csv "$T/old.csv" > "$T/out" 2>&1 \
  && { echo "FAIL: bench appended to a CSV of another header"; fails=$((fails+1)); }
grep -q "old.csv: its first line is not this zipage bench's header" "$T/out" && [ "$(cat "$T/old.csv")" = "$(printf 'label,device,model\nold,cpu,m')" ] \
  && ! grep -q '^zipage,cpu' "$T/out" || { echo "FAIL: bench --csv header refusal"; cat "$T/out"; fails=$((fails+1)); }
ok "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --max-tokens 256 --block-size 16 --policy zipage \
  --nmax 2 --window 8 --csv "$T/b.csv" --label r
[ "$(grep -c '' "$T/b.csv")" = 2 ] && grep -q '^r,cpu,tiny-qwen3-vocab,reasoning,2,[0-9.]*,256.0,zipage,2,8,16,' "$T/b.csv" \
  && head -1 "$T/b.csv" | grep -q ',compressions,tps_saturated,pool,kv_state_gib,finished,tps_steady,tp,admission_reserve,length_scale,preemptions,completion_s,latency_p50_s,latency_p90_s,latency_p99_s,kv_dtype,matmul_tflops,roofline_compute_ratio,gemm_roof_share,attention_roof_share,graph_replay_share$' \
  && tail -1 "$T/b.csv" | grep -qE ',[0-9]+,[0-9]*[1-9][0-9]*\.[0-9],,[0-9.]+,2,[0-9.]+,1,0,1,[0-9]+(,[0-9.]+){4},auto(,[0-9.]+){5}$' \
  || { echo "FAIL: bench reasoning CSV"; cat "$T/out" "$T/b.csv"; fails=$((fails+1)); }
# the completion time and latency quantiles: the whole run's end, p50 <= p90 <= p99 <= completion <= wall;
# a run cut by --max-seconds has no completion time
python3 - "$T/b.csv" <<'PY' || { echo "FAIL: bench completion and latency columns"; cat "$T/b.csv"; fails=$((fails+1)); }
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[-1]
c, p50, p90, p99, wall = (float(r[k]) for k in ("completion_s", "latency_p50_s", "latency_p90_s", "latency_p99_s", "wall_s"))
assert r["finished"] == "2" and 0 < p50 <= p90 <= p99 <= c <= wall + 1e-3, r
PY
ok "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --max-tokens 4096 --block-size 16 --max-seconds 0.5 --csv "$T/cut1.csv" --label cut1
python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[-1]; assert int(r['finished']) < 2 and r['completion_s'] == '', r" "$T/cut1.csv" \
  || { echo "FAIL: a cut bench run has a completion time"; cat "$T/cut1.csv"; fails=$((fails+1)); }
# the scaled replica (--length-scale 4: each output length / 4) with a whole-cap admission, labelled in the row
ok "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --max-tokens 256 --length-scale 4 --block-size 16 --policy zipage \
  --nmax 2 --window 8 --admission-reserve 1 --csv "$T/b4.csv" --label r4
grep -q '^r4,cpu,tiny-qwen3-vocab,reasoning,2,[0-9.]*,64.0,zipage,2,8,16,' "$T/b4.csv" && tail -1 "$T/b4.csv" | grep -qE ',1,1,4,0(,[0-9.]+){4},auto(,[0-9.]+){5}$' \
  || { echo "FAIL: bench --length-scale / --admission-reserve row"; cat "$T/out" "$T/b4.csv"; fails=$((fails+1)); }
# the K/V cache in fp8: the row says so, and a decode step's K/V bytes are one per element
ok "$Z" bench --preset tiny-qwen3-vocab --batch 2 --prompt 8 --gen 4 --block-size 16 --kv-dtype fp8 --csv "$T/b8.csv" --label f8
ok "$Z" bench --preset tiny-qwen3-vocab --batch 2 --prompt 8 --gen 4 --block-size 16 --csv "$T/b8.csv" --label f32
python3 - "$T/b8.csv" <<'PY' || { echo "FAIL: bench --kv-dtype fp8 row"; cat "$T/b8.csv"; fails=$((fails+1)); }
import csv, sys
r8, r32 = list(csv.DictReader(open(sys.argv[1])))
assert r8["kv_dtype"] == "fp8" and r32["kv_dtype"] == "auto", (r8["kv_dtype"], r32["kv_dtype"])
assert float(r8["step_gbytes_mean"]) < float(r32["step_gbytes_mean"]), (r8["step_gbytes_mean"], r32["step_gbytes_mean"])
assert r8["kv_blocks"] == r32["kv_blocks"], (r8["kv_blocks"], r32["kv_blocks"])  # a pool in tokens: the same tokens (test_kv_fp8: in bytes, four times)
PY
# the transformers peers (run on the GPU machine, torch there): at least they parse here
for py in peer_hf.py peer_hf_reasoning.py; do
  python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])" "$(dirname "$0")/../bench/$py" \
    || { echo "FAIL: bench/$py does not parse"; fails=$((fails+1)); }
done
# bench/ncu_step.py (run_bench.sh kernels): an ncu raw table cut into steps at each embedding
# kernel, the last step summed by kernel name and shape; a file without the table is one error
cat > "$T/ncu.csv" <<'CSV'
==PROF== Connected to process 1
"ID","Kernel Name","gpu__time_duration.sum","launch__grid_size","launch__block_size"
"","","ns","",""
"0","void embed_kernel<bf16>(float *)","9,000","256","256"
"1","gemm_a","100,000","132","384"
"2","void embed_kernel<bf16>(float *)","8,000","256","256"
"3","gemm_a","50,000","132","384"
"4","rmsnorm","5,000","256","256"
"5","gemm_a","40,000","132","384"
CSV
python3 "$(dirname "$0")/../bench/ncu_step.py" "$T/ncu.csv" > "$T/ncu.out" 2>&1 \
  && grep -q '^step at kernel 0: 2 kernels, 109.0 us$' "$T/ncu.out" && grep -q '^step at kernel 2: 4 kernels, 103.0 us$' "$T/ncu.out" \
  && grep -qE '^ +90.0 \| +2 \| +45.0 \| +132 \| +384 \| gemm_a$' "$T/ncu.out" \
  && grep -q '^last step, shares: gemm 0.874, attention 0.000, elementwise 0.126, sampling 0.000, compression 0.000$' "$T/ncu.out" \
  || { echo "FAIL: bench/ncu_step.py summary"; cat "$T/ncu.out"; fails=$((fails+1)); }
python3 "$(dirname "$0")/../bench/ncu_step.py" "$T/b.csv" > "$T/ncu.out" 2>&1 && { echo "FAIL: ncu_step.py took a bench CSV"; fails=$((fails+1)); }
grep -q 'no kernel table' "$T/ncu.out" || { echo "FAIL: ncu_step.py error"; cat "$T/ncu.out"; fails=$((fails+1)); }
# --dump-workload: the same requests as that run, as JSON lines (prompt ids, tokens to generate), no model run
ok "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --max-tokens 256 --dump-workload "$T/wl.jsonl"
python3 - "$T/wl.jsonl" "$T/b.csv" <<'PY' || { echo "FAIL: bench --dump-workload"; cat "$T/wl.jsonl"; fails=$((fails+1)); }
import csv, json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
row = list(csv.DictReader(open(sys.argv[2])))[0]
assert len(reqs) == 2 and all(isinstance(t, int) and 0 <= t < 151936 for r in reqs for t in r["prompt"]), reqs
assert abs(sum(len(r["prompt"]) for r in reqs) / 2 - float(row["prompt_mean"])) < 0.06, row["prompt_mean"]
assert [r["gen"] for r in reqs] == [256, 256], [r["gen"] for r in reqs]
assert reqs[0]["prompt"][0] == 151644  # <|im_start|>: the chat template
PY
bad "needs --workload reasoning" "$Z" bench --preset tiny-qwen3 --dump-workload "$T/x.jsonl"
# a model folder that is missing or empty is said to be so (the tokenizer is often read first)
mkdir -p "$T/empty_model"
bad "model folder $T/no_model does not exist" "$Z" tokenize --model "$T/no_model"
bad "model folder $T/empty_model is empty" "$Z" generate --model "$T/empty_model" --prompt hi
bad "model folder $T/no_model does not exist" "$Z" generate --model "$T/no_model" --prompt hi
# the window's error names the window, N_max's names N_max
bad "window 64 must be in \[1, block_size 16\]" "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --policy zipage --nmax 2 --block-size 16 --window 64
bad "window 32 must be in \[1, block_size 16\] (it is the policy's default window" "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --policy morphkv --nmax 2 --block-size 16
bad "nmax 1000000 must be at least 1, with nmax x block_size 4096 at most 2^30" "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --policy zipage --nmax 1000000 --block-size 4096
# a list with an empty entry is refused, not run without it
bad '--pools: "1MiB,,2MiB" has an empty entry' "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --pools 1MiB,,2MiB
bad '--datasets: ",aime24" has an empty entry' "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --datasets ,aime24
bad "--length-scale" "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --length-scale 0
bad '--policies: "zipage," has an empty entry' "$Z" fidelity --model "$T/m" --policies zipage,
bad "cannot open" "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 2 --dump-workload "$T/no/such/dir/w.jsonl"
if command -v gnuplot >/dev/null; then
  ok bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/b.csv" "$T/pool.png" test
  [ -s "$T/pool.png" ] && grep -q "no pool size has both" "$T/out" || { echo "FAIL: plot_pool"; cat "$T/out"; fails=$((fails+1)); }
  # the crossing report on a sweep where Zipage leads at small pools and full KV at large ones
  { head -1 "$T/b.csv"; for r in "zipage 128 100" "zipage 256 150" "zipage 512 160" "full 128 50" "full 256 140" "full 512 170"; do
      set -- $r; echo "x,cuda,m,reasoning,8,1,1,$1,8,16,256,$2,0,0,1,1,$3"; done; } > "$T/cross.csv"
  ok bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/cross.csv" "$T/cross.png" test
  grep -q "pool     32768 tokens: full      50.0 tok/s, zipage     100.0 tok/s, ratio 2.00" "$T/out" \
    && grep -q "cross between pools of 65536 tokens and 131072 tokens: full KV leads from 131072 tokens" "$T/out" \
    || { echo "FAIL: plot_pool crossing report"; cat "$T/out"; fails=$((fails+1)); }
  # a full-KV row of 0 tok/s (a pool too small for one of its requests): an infinite ratio, said why
  { head -1 "$T/b.csv"; for r in "zipage 128 100" "full 128 0" "zipage 256 150" "full 256 140"; do
      set -- $r; echo "x,cuda,m,reasoning,8,1,1,$1,8,16,256,$2,0,0,1,1,$3"; done; } > "$T/zero.csv"
  ok bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/zero.csv" "$T/zero.png" test
  grep -q "pool     32768 tokens: full       0.0 tok/s, zipage     100.0 tok/s, ratio inf (full generated nothing" "$T/out" \
    && grep -q "zipage >= full at every pool measured" "$T/out" \
    || { echo "FAIL: plot_pool with a 0 tok/s row"; cat "$T/out"; fails=$((fails+1)); }
  # two Zipage configurations at the same pools (sync and async): one curve per label
  { head -1 "$T/b.csv"; for r in "zs zipage 128 90" "za zipage 128 120" "fk full 128 60"; do
      set -- $r; echo "$1,cuda,m,reasoning,8,1,1,$2,8,16,256,$3,0,0,1,1,$4"; done; } > "$T/labels.csv"
  ok bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/labels.csv" "$T/labels.png" test
  grep -q "pool     32768 tokens: fk      60.0 tok/s, za     120.0 tok/s, ratio 2.00" "$T/out" \
    && grep -q "pool     32768 tokens: fk      60.0 tok/s, zs      90.0 tok/s, ratio 1.50" "$T/out" \
    || { echo "FAIL: plot_pool curves per label"; cat "$T/out"; fails=$((fails+1)); }
fi
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --pools 64,128 --csv "$T/p.csv" --label p
# a pool too small for one request: its row says 0 tok/s, the next pool still runs, the command fails
"$Z" bench --model "$T/m" --batch 2 --prompt 20 --gen 4 --block-size 16 --pools 16,64 --csv "$T/u.csv" --label u >"$T/out" 2>&1 \
  && { echo "FAIL: bench accepted a pool smaller than one request"; fails=$((fails+1)); }
grep -q "pool 16 cannot serve the workload: request 0: 20 prompt + 4 max tokens need 2 blocks of 16, the pool has 1; the other rows were written" "$T/out" \
  && [ "$(cut -d, -f1,12,17,38,40 "$T/u.csv" | tail -n +2 | tr '\n' ' ')" = "u,1,0.0,16,0 u,4,$(sed -n 3p "$T/u.csv" | cut -d, -f17),64,2 " ] \
  || { echo "FAIL: bench unservable pool rows"; cat "$T/out" "$T/u.csv"; fails=$((fails+1)); }
[ "$(cut -d, -f1,12 "$T/p.csv" | tail -n +2 | tr '\n' ' ')" = "p,4 p,8 " ] \
  || { echo "FAIL: bench --pools rows (one per pool, 4 then 8 blocks)"; cat "$T/out" "$T/p.csv"; fails=$((fails+1)); }
# --max-seconds: each run cut at the limit is still reported (unfinished requests dropped), and
# the next pool runs on the reinitialised engine
ok "$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 4 --max-tokens 16384 --block-size 16 --policy zipage \
  --nmax 2 --window 8 --async --max-seconds 1 --warmup-seconds 0.3 --pools 2048,4096 --csv "$T/cut.csv" --label cut \
  --timeline "$T/tl.csv" --timeline-interval 0.1
[ "$(grep -c '^# stopped after [0-9.]* s (--max-seconds): [0-3] of 4 requests finished' "$T/out")" = 2 ] \
  || { echo "FAIL: bench --max-seconds report"; cat "$T/out"; fails=$((fails+1)); }
python3 - "$T/cut.csv" <<'PY' || { echo "FAIL: bench --max-seconds rows"; cat "$T/cut.csv"; fails=$((fails+1)); }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["pool"] for r in rows] == ["2048", "4096"], rows
for r in rows:
    assert int(r["finished"]) < 4 and float(r["tps"]) > 0 and 1.0 <= float(r["wall_s"]) < 30, r
    assert float(r["tps_steady"]) > 0, r  # tokens/s after the 0.3 s warm-up
PY
# --timeline: rows through each run; its last row ends where the run's summary row does
python3 - "$T/cut.csv" "$T/tl.csv" <<'PY' || { echo "FAIL: bench --timeline rows"; cat "$T/tl.csv"; fails=$((fails+1)); }
import csv, sys
runs = list(csv.DictReader(open(sys.argv[1])))
tl = list(csv.DictReader(open(sys.argv[2])))
for r in runs:
    rows = [x for x in tl if x["pool"] == r["pool"] and x["label"] == "cut"]
    assert len(rows) >= 2, (r["pool"], rows)  # a slow first step (a loaded machine) may take most of the 0.3 s
    t = [float(x["t_s"]) for x in rows]
    g = [int(x["generated_tokens"]) for x in rows]
    assert t == sorted(t) and g == sorted(g) and g[-1] > 0, rows
    assert abs(t[-1] - float(r["wall_s"])) < 0.05, (t[-1], r["wall_s"])
    assert abs(g[-1] - float(r["tps"]) * float(r["wall_s"])) <= 0.01 * g[-1] + 1, (g[-1], r["tps"], r["wall_s"])
    assert int(rows[-1]["finished"]) == int(r["finished"]), (rows[-1], r["finished"])
    assert all(0 < float(x["mean_running"]) <= 4 for x in rows), rows
    # the interval rates add up to the tokens generated
    tot = sum(float(x["tps"]) * (b - a) for x, a, b in zip(rows, [0.0] + t[:-1], t))
    assert abs(tot - g[-1]) <= 0.02 * g[-1] + 2, (tot, g[-1])
PY
# SIGTERM (`timeout`; Ctrl-C's SIGINT alike) cuts the run in progress like --max-seconds: its row
# is written, the later pools are not run, one error line, a non-zero exit below 128 (no crash)
"$Z" bench --preset tiny-qwen3-vocab --workload reasoning --requests 4 --max-tokens 16384 --block-size 16 --policy zipage \
  --nmax 2 --window 8 --async --pools 2048,4096 --csv "$T/sig.csv" --label sig --timeline "$T/sigtl.csv" --timeline-interval 0.1 >"$T/out" 2>&1 &
pid=$!
for _ in $(seq 300); do [ "$(cat "$T/sigtl.csv" 2>/dev/null | wc -l)" -ge 3 ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid; wait $pid; rc=$?
{ [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q '^# stopped after [0-9.]* s (SIGTERM): [0-3] of 4 requests finished' "$T/out" \
  && grep -q 'error: stopped by SIGTERM: .*, the later pools were not run' "$T/out"; } \
  || { echo "FAIL (exit $rc): bench after SIGTERM"; cat "$T/out"; fails=$((fails+1)); }
python3 - "$T/sig.csv" <<'PY' || { echo "FAIL: bench row after SIGTERM"; cat "$T/sig.csv"; fails=$((fails+1)); }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["pool"] for r in rows] == ["2048"], rows
assert int(rows[0]["finished"]) < 4 and float(rows[0]["tps"]) > 0, rows
PY
bad "--timeline-interval" "$Z" bench --preset tiny-qwen3 --timeline "$T/x.csv" --timeline-interval 0
bad "cannot open the timeline" "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --timeline "$T/no/such/dir/tl.csv"
# without a warm-up the steady tokens/s is the whole run's
python3 - "$T/b.csv" <<'PY' || { echo "FAIL: tps_steady without warm-up"; cat "$T/b.csv"; fails=$((fails+1)); }
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[-1]
assert abs(float(r["tps_steady"]) - float(r["tps"])) <= 0.02 * float(r["tps"]) + 0.2, (r["tps"], r["tps_steady"])
PY
bad "--warmup-seconds" "$Z" bench --preset tiny-qwen3 --warmup-seconds -1
if command -v gnuplot >/dev/null; then # the curve of another throughput column; a column the rows lack
  ok bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/cut.csv" "$T/steady.png" test tps_steady
  [ -s "$T/steady.png" ] || { echo "FAIL: plot_pool tps_steady"; fails=$((fails+1)); }
  bash "$(dirname "$0")/../bench/plot_pool.sh" "$T/cut.csv" "$T/nope.png" test nope >"$T/out" 2>&1 && { echo "FAIL: plot_pool accepted a missing column"; fails=$((fails+1)); }
  grep -q "has no nope value" "$T/out" || { echo "FAIL: plot_pool missing-column message"; cat "$T/out"; fails=$((fails+1)); }
  ok bash "$(dirname "$0")/../bench/plot_timeline.sh" "$T/tl.csv" "$T/tl.png" test
  [ -s "$T/tl.png" ] && [ "$(grep -c '^cut@[0-9]*: tps first half [0-9.]*, second half [0-9.]* ([0-9]* rows to ' "$T/out")" = 2 ] \
    || { echo "FAIL: plot_timeline"; cat "$T/out"; fails=$((fails+1)); }
  bash "$(dirname "$0")/../bench/plot_timeline.sh" "$T/cut.csv" "$T/nope.png" >"$T/out" 2>&1 && { echo "FAIL: plot_timeline took a summary CSV"; fails=$((fails+1)); }
  grep -q "has no zipage bench --timeline header" "$T/out" || { echo "FAIL: plot_timeline header message"; cat "$T/out"; fails=$((fails+1)); }
fi
bad "--max-seconds" "$Z" bench --preset tiny-qwen3 --max-seconds 0
# memory pools: the same bytes for both policies, Zipage's score and query caches inside them
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --pools 1MiB --csv "$T/mem.csv" --label f
ok "$Z" bench --model "$T/m" --batch 2 --prompt 8 --gen 4 --block-size 16 --pools 1MiB --policy zipage --nmax 2 --window 8 \
  --csv "$T/mem.csv" --label z
python3 - "$T/mem.csv" <<'PY' || { echo "FAIL: bench memory pools"; cat "$T/mem.csv"; fails=$((fails+1)); }
import csv, sys
f, z = list(csv.DictReader(open(sys.argv[1])))
assert f["pool"] == z["pool"] == "1MiB", (f["pool"], z["pool"])
assert 0 < float(z["kv_state_gib"]) <= 1 / 1024 and 0 < float(f["kv_state_gib"]) <= 1 / 1024
assert int(z["kv_blocks"]) < int(f["kv_blocks"]), (z["kv_blocks"], f["kv_blocks"])
PY
bad "mixes token counts and memory sizes" "$Z" bench --model "$T/m" --pools 1MiB,64
bad "not an integer" "$Z" bench --model "$T/m" --pools 1KiB
bad "exclude each other" "$Z" bench --model "$T/m" --pools 1MiB --kv-pool-gib 1
bad "exclude each other" "$Z" bench --model "$T/m" --pools 64 --kv-pool-tokens 64
bad "not an integer" "$Z" bench --model "$T/m" --pools 64,x
bad "neither fixed nor reasoning" "$Z" bench --preset tiny-qwen3 --workload chat
bad "neither a config file nor a preset" "$Z" bench --preset no-such-model

ok "$Z" generate --model "$T/m" --prompt-ids 1,2,3,4,5 --policy zipage --nmax 2 --window 8 --block-size 16 --max-tokens 2000 --ignore-eos
grep -q "^2000 tokens" "$T/out" && grep -q "policy zipage: 123 compressions" "$T/out" \
  || { echo "FAIL: 2000-token zipage generation"; cat "$T/out"; fails=$((fails+1)); }
# CUDA graphs: on by default where the backend has them (not the CPU), refused when insisted on there
ok "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --max-tokens 4 --block-size 16 --no-cuda-graphs
bad "cuda_graphs needs the CUDA backend" "$Z" generate --model "$T/m" --prompt-ids 1,2,3 --max-tokens 4 --cuda-graphs
# a mistyped CUDA tuning knob: one error naming it, before any device work (so also on a machine
# without a GPU); a build without the CUDA backend says so instead
if ZIPAGE_GEMM_TUNE=on "$Z" generate --model "$T/m" --device cuda --prompt-ids 1,2,3 --max-tokens 4 2>&1 | grep -q "no CUDA backend"; then
  echo "test_cli: built without CUDA: the knob check is not run"
else
  ZIPAGE_GEMM_TUNE=on bad "ZIPAGE_GEMM_TUNE=on: expected 0 or 1" "$Z" generate --model "$T/m" --device cuda \
    --prompt-ids 1,2,3 --max-tokens 4
fi
bad "unknown policy" "$Z" generate --model "$T/m" --prompt-ids 1 --policy lru
bad "unknown parameter" "$Z" generate --model "$T/m" --prompt-ids 1 --policy zipage --policy-params '{"lamda":1}'
bad "window" "$Z" generate --model "$T/m" --prompt-ids 1 --policy zipage --window 64 --block-size 16
M=$(dirname "$0")/../models
printf 'Hello 数学 <think>x</think>' > "$T/text.txt"
ok "$Z" tokenize --model "$M/Qwen3-8B" "$T/text.txt"
grep -qx '9707,47685,47764,220,151667,87,151668' "$T/out" || { echo "FAIL: tokenize ids"; cat "$T/out"; fails=$((fails+1)); }
echo "9707,47685,47764" | "$Z" tokenize --model "$M/Qwen3-8B" --decode > "$T/dec" 2>&1
[ "$(cat "$T/dec")" = "Hello 数学" ] || { echo "FAIL: tokenize --decode"; cat "$T/dec"; fails=$((fails+1)); }
bad "no tokenizer.json" "$Z" tokenize --model "$T/m" "$T/text.txt"
bad "not a token id" sh -c "echo 12,abc | $Z tokenize --model $M/Qwen3-8B --decode"
bad "id 999999 is not in this tokenizer's vocabulary (0..151668)" sh -c "echo 12,999999 | $Z tokenize --model $M/Qwen3-8B --decode"
bad "id -3 is not in this tokenizer's vocabulary" sh -c "echo 12,-3 | $Z tokenize --model $M/Qwen3-8B --decode"
bad "unknown command" "$Z" frobnicate
bad "--model DIR is required" "$Z" generate --prompt-ids 1
mkdir -p "$T/noweights"; cp "$T/m/config.json" "$T/noweights/"
bad "no model.safetensors" "$Z" generate --model "$T/noweights" --prompt-ids 1
bad "model folder $T/nothing-here does not exist" "$Z" generate --model "$T/nothing-here" --prompt-ids 1
bad "not a comma-separated list" "$Z" generate --model "$T/m" --prompt-ids 1,x
bad "outside the vocabulary" "$Z" generate --model "$T/m" --prompt-ids 1,99999
bad "max-tokens" "$Z" generate --model "$T/m" --prompt-ids 1 --max-tokens 0
bad "top-p" "$Z" generate --model "$T/m" --prompt-ids 1 --top-p 2
bad "needs a value" "$Z" generate --model
bad "unknown flag --bogus" "$Z" mkmodel --bogus
cp -r "$T/m" "$T/trunc"; truncate -s 4000 "$T/trunc/model.safetensors"
bad "truncated" "$Z" generate --model "$T/trunc" --prompt-ids 1
printf '{"architectures":["GPT2LMHeadModel"]}' > "$T/gpt2.json"
bad "GPT2LMHeadModel" "$Z" mkmodel --config "$T/gpt2.json" --out "$T/g2"

# a NaN weight is refused at load, naming the tensor (it generated silently before)
"$Z" mkmodel --preset tiny-llama --out "$T/nan" --seed 1 >/dev/null
python3 - "$T/nan/model.safetensors" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
t = json.loads(b[8:8 + n])["model.norm.weight"]
o = 8 + n + t["data_offsets"][0]
b[o:o + (4 if t["dtype"] == "F32" else 2)] = struct.pack("<I", 0x7fc00000) if t["dtype"] == "F32" else struct.pack("<H", 0x7fc0)
open(sys.argv[1], "wb").write(b)
PY
bad "tensor model.norm.weight: value 0 is NaN" "$Z" generate --model "$T/nan" --prompt-ids 1,2,3 --max-tokens 2

# the harness folder is found at run time: a copy of the binary in bin/ of another tree takes
# that tree's presets (none of the build's), ZIPAGE_HOME overrides, and a ZIPAGE_HOME that is not
# a harness folder is refused
H="$T/home"; mkdir -p "$H/bin" "$H/datasets/data" "$H/models/only-here"
cp "$Z" "$H/bin/zipage"
cp "$(dirname "$0")/../models/tiny-qwen3/config.json" "$H/models/only-here/config.json"
ok "$H/bin/zipage" mkmodel --preset only-here --out "$T/oh"
[ -f "$T/oh/model.safetensors" ] || { echo "FAIL: preset beside a copied binary"; fails=$((fails+1)); }
bad "neither a config file nor a preset" "$H/bin/zipage" mkmodel --preset tiny-qwen2 --out "$T/oh2"
ok env ZIPAGE_HOME="$(cd "$(dirname "$0")/.." && pwd)" "$H/bin/zipage" mkmodel --preset tiny-qwen2 --out "$T/oh3"
bad "ZIPAGE_HOME: \"$T\" is not a harness folder" env ZIPAGE_HOME="$T" "$Z" mkmodel --preset tiny-qwen2 --out "$T/oh4"

if [ $fails -eq 0 ]; then echo "test_cli: all checks passed"; exit 0; fi
echo "test_cli: $fails failure(s)"; exit 1
