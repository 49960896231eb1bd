#!/usr/bin/env bash
# test_experiment.sh - the experiment runner end to end: grid expansion with a baseline, one
# row per run in runs.csv, samples.jsonl lines, meta.json; a second invocation skips finished
# runs (resume); --force redoes them; SHARD=i/N splits; --gpus 0,1 (a worker per GPU on one
# folder) and a merge of shard folders write the one-process sweep's rows and samples; bad
# definitions fail with the key named.
# Args: ZIPAGE TMPDIR SRCDIR
set -u
Z=$1; T=$2/experiment; S=$3
rm -rf "$T"; mkdir -p "$T"
fails=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fails=$((fails+1)); fi; }
E="$S/tests/data/experiments/tiny_sweep.json"
"$Z" run "$E" --results "$T" > "$T/log1" 2>&1; check '[ $? -eq 0 ]' "first run"
R="$T/tiny_sweep"
check '[ "$(wc -l < "$R/runs.csv")" -eq 4 ]' "3 runs (full baseline + 2 budgets) + header in runs.csv"
check '[ "$(wc -l < "$R/samples.jsonl")" -eq 12 ]' "12 samples (3 runs x 2 problems x 2 samples)"
check 'python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert len(m[\"runs\"])==3" "$R/meta.json"' "meta.json lists 3 runs"
check '[ "$(grep -c "^sample 0 of " "$T/log1")" -eq 3 ]' "each run prints its first sample"
check 'grep -q "\"zipage\",\"{}\",\"1\"" "$R/runs.csv" && grep -q "\"full\"" "$R/runs.csv"' "rows for full and zipage nmax 1"
"$Z" run "$E" --results "$T" > "$T/log2" 2>&1
check 'grep -q "0 runs done, 3 already finished" "$T/log2" && [ "$(wc -l < "$R/runs.csv")" -eq 4 ]' "resume skips finished runs"
# zipage grade of the folder while a sweep writes to it: every row and sample kept (the folder lock)
rm -rf "$T/live"
"$Z" run "$E" --results "$T/live" > "$T/log41" 2>&1 &
pid=$!
graded=0
while kill -0 $pid 2>/dev/null; do
  [ -f "$T/live/tiny_sweep/runs.csv" ] && "$Z" grade "$T/live/tiny_sweep" > "$T/log42" 2>&1 && graded=$((graded+1))
  sleep 0.05
done
wait $pid; rc=$?
"$Z" grade "$T/live/tiny_sweep" > "$T/log42" 2>&1
check '[ $rc -eq 0 ] && [ $graded -ge 1 ] && [ "$(wc -l < "$T/live/tiny_sweep/runs.csv")" -eq 4 ] && [ "$(wc -l < "$T/live/tiny_sweep/samples.jsonl")" -eq 12 ] && grep -q "12 samples of 3 runs graded" "$T/log42"' "grade during a live sweep: no row or sample lost ($graded grades)"
# --force reruns every run and replaces its row and samples in place: one row per run id
"$Z" run "$E" --results "$T" --force > "$T/log38" 2>&1
check 'grep -q "3 runs done, 0 already finished" "$T/log38" && [ "$(wc -l < "$R/runs.csv")" -eq 4 ] && [ "$(tail -n +2 "$R/runs.csv" | cut -d, -f1 | sort -u | wc -l)" -eq 3 ] && [ "$(wc -l < "$R/samples.jsonl")" -eq 12 ]' "--force: one row per run id, its samples once"
# a runs.csv with a run id twice (appended by an older --force) is refused by the table, naming it
cp "$R/runs.csv" "$T/dup_runs.csv"; tail -1 "$R/runs.csv" >> "$T/dup_runs.csv"; mkdir -p "$T/dup"; cp "$T/dup_runs.csv" "$T/dup/runs.csv"
dup_id=$(tail -1 "$R/runs.csv" | cut -d, -f1 | tr -d '"')
"$Z" table dup --results "$T" > "$T/log39" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "run $dup_id has more than one row" "$T/log39"' "table: a run id with two rows is refused, named"
rm -rf "$R"; SHARD=1/2 "$Z" run "$E" --results "$T" > "$T/log3" 2>&1
check '[ "$(wc -l < "$R/runs.csv")" -eq 2 ]' "SHARD=1/2 runs one of three runs"
# kill mid-sweep (after the first run's row), rerun: every run once, no duplicate or lost rows/samples
rm -rf "$R"
"$Z" run "$E" --results "$T" > "$T/log6" 2>&1 &
pid=$!
for i in $(seq 1 600); do [ -f "$R/runs.csv" ] && [ "$(wc -l < "$R/runs.csv")" -ge 2 ] && break; sleep 0.1; done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rows_before=$(wc -l < "$R/runs.csv")
"$Z" run "$E" --results "$T" > "$T/log7" 2>&1
check '[ "$rows_before" -lt 4 ] && [ "$(wc -l < "$R/runs.csv")" -eq 4 ]' "resume after kill completes the sweep"
check '[ "$(tail -n +2 "$R/runs.csv" | cut -d, -f1 | sort | uniq -d | wc -l)" -eq 0 ]' "no duplicate run ids after the kill"
check '[ "$(wc -l < "$R/samples.jsonl")" -eq 12 ]' "12 samples after the kill, none lost or doubled"
# --gpus 0,1: a worker process per GPU on one folder gives the one-process sweep's rows and samples
rm -rf "$T/gpus"; "$Z" run "$E" --results "$T/gpus" --gpus 0,1 > "$T/log17" 2>&1; rc=$?
G="$T/gpus/tiny_sweep"
check '[ $rc -eq 0 ] && [ -s "$G/logs/gpu0.log" ] && [ -s "$G/logs/gpu1.log" ] && grep -q "CUDA_VISIBLE_DEVICES=1" "$G/logs/gpu1.log"' "--gpus 0,1: two workers, a log each"
check '[ "$(cat "$G"/logs/gpu*.log | grep -o "[0-9]* runs done" | awk "{ s += \$1 } END { print s }")" -eq 3 ]' "--gpus: the 3 runs ran once between the workers"
same_rows() { python3 "$S/tests/same_rows.py" "$1" "$2" 3; }
check 'same_rows "$R/runs.csv" "$G/runs.csv"' "--gpus: runs.csv rows equal the one-process sweep's (run ids, outputs; timing columns aside)"
check 'diff <(sort "$R/samples.jsonl") <(sort "$G/samples.jsonl") > /dev/null' "--gpus: the same samples, line for line"
"$Z" run "$E" --results "$T/gpus" --gpus 0,1 > "$T/log18" 2>&1
check '[ $? -eq 0 ] && [ "$(wc -l < "$G/runs.csv")" -eq 4 ] && [ "$(grep -c "^GPU [01]: experiment tiny_sweep: 0 runs done, 3 already finished" "$T/log18")" -eq 2 ]' "--gpus: a second sweep resumes (nothing to run)"
"$Z" run "$E" --results "$T/gpus" --gpus 0,,1 > "$T/log19" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "\-\-gpus: \"0,,1\" has an empty entry" "$T/log19"' "--gpus: an empty entry is refused"
"$Z" run "$E" --results "$T/gpus" --gpus 0,1 --force > "$T/log26" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "\-\-gpus with \-\-force would redo a run once per worker" "$T/log26" && [ "$(wc -l < "$G/runs.csv")" -eq 4 ]' "--gpus with --force is refused, nothing rerun"
"$Z" run "$E" --results "$T/gpus" --gpus 1,1 > "$T/log20" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "GPU 1 is listed twice" "$T/log20"' "--gpus: a GPU listed twice is refused"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"max_tokens":4,"device":"cuda:1"}' > "$T/dev1.json"
"$Z" run "$T/dev1.json" --results "$T/gpus" --gpus 0,1 > "$T/log21" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "names device \"cuda:1\"" "$T/log21"' "--gpus: a run naming cuda:N is refused"
# tensor-parallel runs: a worker per GPU pair, the rows of a one-process sweep
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":2,"max_tokens":6,"tp":2,"policy":["full","zipage"],"nmax":1,"window":4,"block_size":16}' > "$T/tp2.json"
"$Z" run "$T/tp2.json" --results "$T/tp_one" > "$T/log27" 2>&1; rc1=$?
"$Z" run "$T/tp2.json" --results "$T/tp_gpus" --gpus 0,1 > "$T/log28" 2>&1; rc2=$?
check '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ -s "$T/tp_gpus/tp2/logs/gpu0-1.log" ] && grep -q "CUDA_VISIBLE_DEVICES=0,1" "$T/tp_gpus/tp2/logs/gpu0-1.log"' "--gpus 0,1 with tp 2: one worker on both GPUs"
check 'python3 "$S/tests/same_rows.py" "$T/tp_one/tp2/runs.csv" "$T/tp_gpus/tp2/runs.csv" 2' "--gpus with tp 2: the one-process sweep's rows"
"$Z" run "$T/tp2.json" --results "$T/tp_gpus" --gpus 0,1,2 > "$T/log29" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "3 GPUs do not split into groups of tp 2" "$T/log29"' "--gpus: a list that does not split into tp groups is refused"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"max_tokens":4,"tp":3}' > "$T/tp3.json"
"$Z" run "$T/tp3.json" --results "$T/tp_one" > "$T/log30" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "do not split into 3" "$T/log30"' "tp 3 of a model with 2 KV heads is refused naming the count"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"kv_pool_tokens":16,"block_size":16}' > "$T/bad3.json"
"$Z" run "$T/bad3.json" --results "$T/gpus" --gpus 0,1 > "$T/log22" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "workers failed, first on GPU" "$T/log22" && grep -q "the pool has 1" "$T/log22"' "--gpus: a failed worker is reported with its error and log"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm9k"}' > "$T/bad4.json"
"$Z" run "$T/bad4.json" --results "$T/gpus" --gpus 0,1 > "$T/log31" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "unknown dataset \"gsm9k\"" "$T/log31" && ! grep -q "worker" "$T/log31"' "--gpus: a sweep that cannot run is refused before any worker starts"
# table and plot data from the CSV
"$Z" table tiny_sweep --results "$T" > "$T/table" 2>&1
"$Z" table "$R" > "$T/table_abs" 2>&1
check 'cmp -s <(tail -n +2 "$T/table") <(tail -n +2 "$T/table_abs")' "table of a folder given as a path (not results//path)"
check 'grep -q "| full KV |" "$T/table" && grep -q "| Zipage N=1 w=4 |" "$T/table" && grep -q "1.00x" "$T/table"' "Markdown table"
"$Z" table tiny_sweep --results "$T" --plot-data "$T/plot.tsv" > "$T/vars" 2>&1
check '[ "$(grep -vc "^#" "$T/plot.tsv")" -eq 3 ] && grep -q "policies=.zipage." "$T/vars"' "plot data"
# shards merge by run id; the CSV header is the documented schema
rm -rf "$T/s0" "$T/s1"
SHARD=0/2 "$Z" run "$E" --results "$T/s0" > "$T/log8" 2>&1
SHARD=1/2 "$Z" run "$E" --results "$T/s1" > "$T/log9" 2>&1
"$Z" merge "$T/merged.csv" "$T/s0/tiny_sweep/runs.csv" "$T/s1/tiny_sweep/runs.csv" "$T/s0/tiny_sweep/runs.csv" > "$T/log10" 2>&1
check '[ "$(wc -l < "$T/merged.csv")" -eq 4 ] && grep -q "3 rows added" "$T/log10"' "merge: 3 distinct runs, duplicates dropped"
H='"run_id","time","git_commit","model","dataset","n_problems","n_samples","policy","policy_params","nmax","window","layer_budget","max_concurrency","block_size","kv_pool_tokens","scheduler","async","prefix_cache","temperature","top_p","max_tokens","seed","pass_at_1","ci_low","ci_high","mean_output_tokens","truncated_share","generated_tokens","wall_seconds","tps","requests_per_s","peak_running","mean_running","peak_kv_bytes","compressions","compression_seconds","device","grader","admission_reserve","kv_dtype","head_budget","head_floor","budget","budget_tau","budget_floor","mean_retained"'
check '[ "$(head -1 "$T/merged.csv")" = "$H" ]' "runs.csv header (schema)"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","nmaxx":[1]}' > "$T/bad.json"
"$Z" run "$T/bad.json" --results "$T" > "$T/log4" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "unknown key \"nmaxx\"" "$T/log4"' "unknown key named"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm9k"}' > "$T/bad2.json"
"$Z" run "$T/bad2.json" --results "$T" > "$T/log5" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "unknown dataset \"gsm9k\" (known: aime24, aime25, amc23, gsm8k" "$T/log5"' "unknown dataset named, the known ones listed"
# a sweep is checked whole before its first run: a second run's dataset, window or model fails before the first starts
printf '{"model":"preset:tiny-qwen3-vocab","dataset":["gsm8k","gsm9k"],"limit":1,"max_tokens":4}' > "$T/pre1.json"
"$Z" run "$T/pre1.json" --results "$T" > "$T/log32" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "pre1.json: run 2 of 2 (policy full, nmax 0, dataset gsm9k), before any run started: \"dataset\": unknown dataset \"gsm9k\"" "$T/log32" && [ ! -e "$T/pre1/runs.csv" ] && ! grep -q "^run 1/2" "$T/log32"' "preflight: a missing dataset in run 2 stops the sweep before run 1"
printf '{"model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"max_tokens":4,"block_size":16,"policy":["full","zipage"],"window":64}' > "$T/pre2.json"
"$Z" run "$T/pre2.json" --results "$T" > "$T/log33" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "run 2 of 2 (policy zipage, nmax 8, dataset gsm8k), before any run started: engine settings: window 64 must be in \[1, block_size 16\]" "$T/log33" && [ ! -e "$T/pre2/runs.csv" ]' "preflight: the window error names the window"
printf '{"model":"%s","dataset":"gsm8k"}' "$T/no_model" > "$T/pre3.json"
"$Z" run "$T/pre3.json" --results "$T" > "$T/log34" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "\"model\": model folder $T/no_model does not exist" "$T/log34"' "preflight: a missing model folder is named"
# a policy's statistics file (TriAttention's): missing, or of another model (tiny-llama's 4 layers for a 2-layer model), named before run 1
"$Z" mkmodel --preset tiny-qwen3-vocab --out "$T/tqv" > /dev/null 2>&1 && "$Z" mkmodel --preset tiny-llama --out "$T/tl" > /dev/null 2>&1 && \
  "$Z" calibrate --model "$T/tl" --prompt-ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 --out "$T/tl_stats.safetensors" > /dev/null 2>&1
check '[ -s "$T/tl_stats.safetensors" ]' "calibrate: tiny-llama's statistics for the preflight checks"
for k in 1 2; do
  st="$T/no_stats.safetensors"; [ $k = 2 ] && st="$T/tl_stats.safetensors"
  printf '{"model":"%s","dataset":"gsm8k","limit":1,"max_tokens":4,"block_size":16,"policy":["full","triattention"],"nmax":2,"policy_params":{"triattention":{"stats":"%s"}}}' "$T/tqv" "$st" > "$T/pre_st$k.json"
  "$Z" run "$T/pre_st$k.json" --results "$T" > "$T/log_st$k" 2>&1; echo $? > "$T/rc_st$k"
done
check '[ "$(cat "$T/rc_st1")" -ne 0 ] && grep -q "run 2 of 2 (policy triattention, nmax 2, dataset gsm8k), before any run started: \"policy_params\": policy triattention: its statistics file $T/no_stats.safetensors cannot be read" "$T/log_st1" && [ ! -e "$T/pre_st1/runs.csv" ]' "preflight: a missing statistics file is named"
check '[ "$(cat "$T/rc_st2")" -ne 0 ] && grep -q "before any run started: \"policy_params\": $T/tl_stats.safetensors: tensor layer.2.q_mean_real is beyond the model.s 2 layers" "$T/log_st2" && [ ! -e "$T/pre_st2/runs.csv" ]' "preflight: another model's statistics file is named"
mkdir -p "$T/empty_model"; printf '{"model":"%s","dataset":"gsm8k"}' "$T/empty_model" > "$T/pre4.json"
"$Z" run "$T/pre4.json" --results "$T" > "$T/log35" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "model folder $T/empty_model is empty" "$T/log35"' "preflight: an empty model folder is named"
# a fidelity experiment's last line names its fidelity.csv
printf '{"kind":"fidelity","model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"gen":8,"kl_window":4,"block_size":16,"window":4,"policy":"zipage","nmax":1}' > "$T/fid.json"
"$Z" run "$T/fid.json" --results "$T" > "$T/log36" 2>&1; rc=$?
check '[ $rc -eq 0 ] && tail -1 "$T/log36" | grep -q "(in $T/fid/fidelity.csv)$"' "a fidelity experiment's finish line names fidelity.csv"
"$Z" run "$T/fid.json" --results "$T" --force > "$T/log40" 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$T/fid/fidelity.csv")" -eq 2 ]' "--force on a fidelity run replaces its row"
# kv_dtype in a fidelity sweep: the reference stays auto, so full KV in fp8 moves (KL > 0, its own
# row and kv_dtype) while full KV in auto is the reference itself (KL 0, agreement 1)
printf '{"kind":"fidelity","model":"preset:tiny-qwen3-vocab","dataset":"gsm8k","limit":1,"gen":8,"kl_window":4,"block_size":16,"window":4,"policy":["full","zipage"],"nmax":1,"kv_dtype":["auto","fp8"]}' > "$T/fid8.json"
"$Z" run "$T/fid8.json" --results "$T" > "$T/log41" 2>&1; rc=$?
F8="$T/fid8/fidelity.csv"
check '[ $rc -eq 0 ] && [ "$(head -1 "$F8")" = "run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,first_disagreement,retained_share,layer_budget,kv_dtype,head_budget,head_floor,budget,budget_tau,budget_floor,policy_params" ] && [ "$(tail -n +2 "$F8" | cut -d, -f2,15 | sort | tr "\n" " ")" = "full,auto full,fp8 zipage,auto zipage,fp8 " ]' "fidelity.csv: a row per policy and cache type, kv_dtype its column 15"
check 'awk -F, '"'"'$2 == "full" && $15 == "auto" && !($9 == 0 && $11 == 1) { bad = 1 } $2 == "full" && $15 == "fp8" && !($9 > 0) { bad = 1 } END { exit bad }'"'"' "$F8"' "fidelity: full KV in auto is the reference (KL 0, agreement 1), in fp8 it moves (KL > 0)"
# a fidelity.csv of the layout before kv_dtype is upgraded in place: its rows get auto
mkdir -p "$T/fidold"
printf 'run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,first_disagreement,retained_share,layer_budget,policy_params\nabcdabcdabcdabcd,snapkv,2,8,16,gsm8k,1,8,0.5,0.6,0.9,3.0,0.5000,uniform,"{""a"": 1}"\n' > "$T/fidold/fidelity.csv"
cp "$T/fid.json" "$T/fidold.json"
"$Z" run "$T/fidold.json" --results "$T" > "$T/log42" 2>&1; rc=$?
check '[ $rc -eq 0 ] && head -1 "$T/fidold/fidelity.csv" | grep -q ",layer_budget,kv_dtype,head_budget,head_floor,budget,budget_tau,budget_floor,policy_params$" && grep -q "^abcdabcdabcdabcd,snapkv,2,8,16,gsm8k,1,8,0.5,0.6,0.9,3.0,0.5000,uniform,auto,uniform,0.2,fixed,0.9,1,\"{\"\"a\"\": 1}\"$" "$T/fidold/fidelity.csv" && [ "$(wc -l < "$T/fidold/fidelity.csv")" -eq 3 ] && grep -q "upgraded to the columns added since (its earlier rows: kv_dtype auto, head budgets uniform 0.2, budget fixed 0.9 1)" "$T/log42"' "an older fidelity.csv gets kv_dtype auto, the uniform head budgets and the fixed budget in its rows, then the new row"
# one written before the budget columns (after head_floor) gets those alone
printf 'run_id,policy,nmax,window,block_size,dataset,problems,gen,mean_kl,worst_window_kl,agreement,first_disagreement,retained_share,layer_budget,kv_dtype,head_budget,head_floor,policy_params\nabcdabcdabcdabcd,snapkv,2,8,16,gsm8k,1,8,0.5,0.6,0.9,3.0,0.5000,uniform,fp8,adakv,0.3,{}\n' > "$T/fidold/fidelity.csv"
"$Z" run "$T/fidold.json" --results "$T" > "$T/log44" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "^abcdabcdabcdabcd,snapkv,2,8,16,gsm8k,1,8,0.5,0.6,0.9,3.0,0.5000,uniform,fp8,adakv,0.3,fixed,0.9,1,{}$" "$T/fidold/fidelity.csv" && grep -q "(its earlier rows: budget fixed 0.9 1)" "$T/log44"' "a fidelity.csv of the head-budget columns gets the fixed budget's in its rows"
printf 'something,else\n1,2\n' > "$T/fidold/fidelity.csv"
"$Z" run "$T/fidold.json" --results "$T" --force > "$T/log43" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "fidelity.csv: its first line is not a fidelity.csv header" "$T/log43" && [ "$(cat "$T/fidold/fidelity.csv")" = "$(printf "something,else\n1,2")" ]' "a file that is not a fidelity.csv is refused and left as it was"
# Ctrl-C: what was kept and how to resume, exit 130
rm -rf "$T/int"
"$Z" run "$E" --results "$T/int" > "$T/log37" 2>&1 &
pid=$!
for i in $(seq 1 600); do [ -f "$T/int/tiny_sweep/runs.csv" ] && [ "$(wc -l < "$T/int/tiny_sweep/runs.csv")" -ge 2 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
kept=$(($(wc -l < "$T/int/tiny_sweep/runs.csv") - 1))
said=$(sed -n 's/^interrupted: \([0-9]*\) runs finished and kept; rerun the same command to resume$/\1/p' "$T/log37")
# (a row appended in the instant before the signal may not be counted yet)
check '[ $rc -eq 130 ] && [ -n "$said" ] && [ $kept -ge 1 ] && { [ "$said" -eq $kept ] || [ "$said" -eq $((kept - 1)) ]; }' "Ctrl-C says what was kept and how to resume (exit 130; said $said, kept $kept)"
# merge: a source without its final newline, a headerless one, --help
head -c -1 "$T/s1/tiny_sweep/runs.csv" > "$T/nonl.csv"
"$Z" merge "$T/merged2.csv" "$T/s0/tiny_sweep/runs.csv" "$T/nonl.csv" > "$T/log13" 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$T/merged2.csv")" -eq 4 ] && [ "$(awk -F, "{print NF}" "$T/merged2.csv" | sort -u | wc -l)" -eq 1 ]' "merge: a last line without newline is not glued"
tail -n +2 "$T/s1/tiny_sweep/runs.csv" > "$T/headerless.csv"
"$Z" merge "$T/merged3.csv" "$T/s0/tiny_sweep/runs.csv" "$T/headerless.csv" > "$T/log14" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "headerless.csv: first line is not the results header" "$T/log14"' "merge: a headerless source is refused, named"
# folders: the shards' runs.csv, samples.jsonl and meta.json into one results folder
"$Z" merge "$T/mdir/tiny_sweep" "$T/s0/tiny_sweep" "$T/s1/tiny_sweep" > "$T/log23" 2>&1; rc=$?
M="$T/mdir/tiny_sweep"
check '[ $rc -eq 0 ] && same_rows "$R/runs.csv" "$M/runs.csv" && diff <(sort "$R/samples.jsonl") <(sort "$M/samples.jsonl") > /dev/null && [ -s "$M/meta.json" ]' "merge of shard folders: the one-process sweep's rows and samples, and meta.json"
"$Z" merge "$M" "$T/s1/tiny_sweep" "$T/s0/tiny_sweep" > "$T/log24" 2>&1
check '[ $? -eq 0 ] && grep -q "0 rows added" "$T/log24" && [ "$(wc -l < "$M/samples.jsonl")" -eq 12 ]' "merge of folders again: nothing added, no sample doubled"
"$Z" merge "$M" "$T/s0/tiny_sweep" "$T/s1/tiny_sweep/runs.csv" > "$T/log25" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "give folders or CSV files, not both" "$T/log25"' "merge: folders and files mixed are refused"
"$Z" merge --help > "$T/log15" 2>&1; rc1=$?; "$Z" prompts --help > "$T/log16" 2>&1; rc2=$?
check '[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && grep -q "usage: zipage merge" "$T/log15" && grep -q "usage: zipage prompts" "$T/log16"' "merge and prompts answer --help"
# no shell: quotes and shell syntax in the experiment's name and the results path are plain text
mkdir -p "$T/inj" && cp "$E" "$T/inj/a';touch PWNED;'.json" && cp "$E" "$T/inj/bob's.json"
(cd "$T/inj" && "$Z" run "a';touch PWNED;'.json" --results "q'dir" > "$T/log11" 2>&1 && "$Z" run "bob's.json" --results "q'dir" >> "$T/log11" 2>&1); rc=$?
check '[ $rc -eq 0 ] && [ ! -e "$T/inj/PWNED" ] && [ ! -e PWNED ] && [ "$(wc -l < "$T/inj/q'"'"'dir/bob'"'"'s/runs.csv")" -eq 4 ]' "names with quotes run, inject nothing"
"$Z" run "$E" --results /dev/full/x > "$T/log12" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "/dev/full: exists and is not a directory" "$T/log12"' "results folder that cannot be made is named"
# a full disk at every fill level: either the sweep completes, or it stops with the file named,
# non-zero, and every row written has all its samples (rows are written after their samples)
if unshare -m true 2>/dev/null; then
  for kb in 4 8 12 16 20 24 28 32 48; do
    F="$T/full$kb"; mkdir -p "$F"
    unshare -m bash -c "mount -t tmpfs -o size=${kb}k tmpfs '$F' && '$Z' run '$E' --results '$F' > '$T/logfull$kb' 2>&1; echo \$? > '$T/rcfull$kb'; \
      cp -r '$F/tiny_sweep' '$T/copy$kb' 2>/dev/null; true"
    rc=$(cat "$T/rcfull$kb"); C="$T/copy$kb"
    rows=$( [ -f "$C/runs.csv" ] && tail -n +2 "$C/runs.csv" | cut -d, -f1 | tr -d '"' || true)
    ok=1
    for id in $rows; do [ "$(grep -c "\"run_id\":\"$id\"" "$C/samples.jsonl" 2>/dev/null)" -eq 4 ] || ok=0; done
    if [ "$rc" -eq 0 ]; then [ "$(echo $rows | wc -w)" -eq 3 ] || ok=0
    else grep -q "No space left on device" "$T/logfull$kb" || ok=0; fi
    check '[ $ok -eq 1 ]' "disk full at ${kb} KB: rc $rc, $(echo $rows | wc -w) rows, each with its samples"
  done
else
  echo "test_experiment: disk-full checks skipped (no mount namespace here: needs root or user namespaces)"
fi
if [ $fails -eq 0 ]; then echo "test_experiment: all checks passed"; exit 0; fi
cat "$T"/log*; echo "test_experiment: $fails failure(s)"; exit 1
