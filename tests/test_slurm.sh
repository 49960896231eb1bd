#!/usr/bin/env bash
# test_slurm.sh - experiments/slurm/ without a cluster: submit.sh against a stand-in sbatch
# (an array of N tasks, the merge queued afterok on the array's id); the three tasks of
# sweep.sbatch run here under the SLURM_ARRAY_* variables Slurm sets (one with two "GPUs",
# through --gpus) and merge.sbatch joins them into the rows and samples of a one-process
# sweep; a task outside an array, or outside its array's range, is refused.
# Args: ZIPAGE TMPDIR SRCDIR
set -u
Z=$1; T=$2/slurm; S=$3
rm -rf "$T"; mkdir -p "$T/bin"
fails=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fails=$((fails+1)); fi; }
E="$S/tests/data/experiments/tiny_sweep.json"
# submit.sh: a stand-in sbatch records its arguments and answers job ids 101, 102
cat > "$T/bin/sbatch" <<'SB'
#!/usr/bin/env bash
n=$(($(cat "$SBATCH_LOG" 2>/dev/null | wc -l) + 1))
echo "$*" >> "$SBATCH_LOG"
echo "$((100 + n));cluster"
SB
chmod +x "$T/bin/sbatch"
PATH="$T/bin:$PATH" SBATCH_LOG="$T/sbatch.log" RESULTS="$T/r" bash "$S/experiments/slurm/submit.sh" "$E" 3 --gpus-per-task=1 > "$T/log1" 2>&1; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l < "$T/sbatch.log")" -eq 2 ]' "submit.sh: two sbatch calls"
check 'head -1 "$T/sbatch.log" | grep -q -- "--parsable --array=0-2 --gpus-per-task=1 .*sweep.sbatch $E $T/r$"' "submit.sh: an array of 3 tasks with the caller's flags"
check 'tail -1 "$T/sbatch.log" | grep -q -- "--dependency=afterok:101 .*merge.sbatch $E $T/r$"' "submit.sh: the merge after the array (federated id cut)"
bash "$S/experiments/slurm/submit.sh" "$E" 0 > "$T/log2" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "not a positive number of tasks" "$T/log2"' "submit.sh: N=0 refused"
# the array's tasks, then the merge, as Slurm would run them (ids 4-6: SHARD is the id minus the first)
for id in 4 5 6; do
  devs=; [ $id -eq 5 ] && devs=0,1
  CUDA_VISIBLE_DEVICES=$devs SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 ZIPAGE="$Z" \
    bash "$S/experiments/slurm/sweep.sbatch" "$E" "$T/r" > "$T/task$id.log" 2>&1
  check '[ $? -eq 0 ]' "sweep.sbatch task $id"
done
check 'grep -q "task 1 of 3" "$T/task5.log" && [ -s "$T/r/shards/1/tiny_sweep/logs/gpu1.log" ]' "task 5 is shard 1, on its two GPUs through --gpus"
ZIPAGE="$Z" bash "$S/experiments/slurm/merge.sbatch" "$E" "$T/r" > "$T/merge.log" 2>&1; rc=$?
"$Z" run "$E" --results "$T/plain" > "$T/plain.log" 2>&1
P="$T/plain/tiny_sweep"; M="$T/r/tiny_sweep"
same_rows() { python3 "$S/tests/same_rows.py" "$1" "$2" 3; }
check '[ $rc -eq 0 ] && grep -q "3 rows added" "$T/merge.log" && grep -q "| full KV |" "$T/merge.log"' "merge.sbatch: 3 rows, then the table"
check 'same_rows "$P/runs.csv" "$M/runs.csv" && diff <(sort "$P/samples.jsonl") <(sort "$M/samples.jsonl") > /dev/null' "the merged shards equal a one-process sweep (rows, samples)"
env -u SLURM_ARRAY_TASK_ID bash "$S/experiments/slurm/sweep.sbatch" "$E" "$T/r" > "$T/log3" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "not a job array task" "$T/log3"' "sweep.sbatch outside an array is refused"
SLURM_ARRAY_TASK_ID=9 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 bash "$S/experiments/slurm/sweep.sbatch" "$E" "$T/r" > "$T/log4" 2>&1; rc=$?
check '[ $rc -eq 2 ] && grep -q "array task 9 is not in 0..2" "$T/log4"' "a task id beyond the array's count is refused"
ZIPAGE="$Z" bash "$S/experiments/slurm/merge.sbatch" "$E" "$T/none" > "$T/log5" 2>&1; rc=$?
check '[ $rc -ne 0 ] && grep -q "no shard folders" "$T/log5"' "merge.sbatch without shards is refused"
if [ $fails -ne 0 ]; then tail -n 20 "$T"/*.log; echo "test_slurm: $fails check(s) failed"; exit 1; fi
echo "test_slurm: all checks passed"
