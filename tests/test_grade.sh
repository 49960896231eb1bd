#!/usr/bin/env bash
# test_grade.sh - `zipage grade`: a results folder graded again in place with the builtin grader
# leaves samples.jsonl and runs.csv byte for byte as the runner wrote them and a second pass
# changes nothing; a foreign JSONL is graded against a dataset; a runs.csv of an older column
# set is refused by `zipage run` and upgraded by `zipage grade`. With MODE=math-verify (its own
# CTest, skipped with exit 77 where `make deps` could not make .venv-grade): Math-Verify credits
# an unboxed final answer (as the builtin grader now does), in `zipage grade` and in the runner.
# Args: ZIPAGE TMPDIR SRCDIR [MODE]
set -u
Z=$1; S=$3; MODE=${4:-builtin}; T=$2/grade-$MODE
rm -rf "$T"; mkdir -p "$T"
fails=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fails=$((fails+1)); fi; }
sums() { md5sum "$1"/samples.jsonl "$1"/runs.csv "$1"/meta.json | cut -d' ' -f1 | tr '\n' ' '; }
printf '%s\n' '{"problem_id":"aime24-I-1","output":"Therefore, the final answer is $204$."}' \
  '{"problem_id":"aime24-I-1","output":"<think>maybe \\boxed{7}</think> so \\boxed{204}"}' '{"problem_id":"aime24-I-2","output":"\\boxed{24}"}' > "$T/foreign.jsonl"
if [ "$MODE" = math-verify ]; then
  if [ ! -x "$S/.venv-grade/bin/python" ]; then echo "test_grade math-verify: skipped (no .venv-grade: make deps could not install Math-Verify)"; exit 77; fi
  "$Z" grade --dataset aime24 --outputs "$T/foreign.jsonl" --out "$T/mv.jsonl" --grader math-verify > "$T/log1" 2>&1; rc=$?
  check '[ $rc -eq 0 ] && grep -q "pass@1 0.5000" "$T/log1" && grep -q "math-verify 0.9.0" "$T/log1"' "math-verify credits the unboxed answer (pass@1 0.5)"
  check '[ "$(grep -c "\"correct\":true" "$T/mv.jsonl")" -eq 2 ] && grep -q "\"extracted\":\"204\"" "$T/mv.jsonl"' "math-verify verdicts and extracted answers"
  sed 's/"samples": 2/"samples": 1, "grader": "math-verify"/; s/"nmax": \[1, 2\]/"nmax": [1]/' "$S/tests/data/experiments/tiny_sweep.json" > "$T/mv_sweep.json"
  "$Z" run "$T/mv_sweep.json" --results "$T/r" > "$T/log2" 2>&1; rc=$?
  R="$T/r/mv_sweep"
  check '[ $rc -eq 0 ] && [ "$(tail -n +2 "$R/runs.csv" | grep -c "\"math-verify\",\"0\",\"auto\",\"uniform\",\"0.2\",\"fixed\",\"0.9\",\"1\",\"[0-9.]*\"$")" -eq 2 ] && [ "$(grep -c "\"grader\":\"math-verify\"" "$R/samples.jsonl")" -eq 4 ]' "the runner grades with math-verify when the experiment says so"
else
  "$Z" run "$S/tests/data/experiments/tiny_sweep.json" --results "$T/r" > "$T/log1" 2>&1
  R="$T/r/tiny_sweep"
  before=$(sums "$R")
  "$Z" grade "$R" > "$T/log2" 2>&1; rc=$?
  after=$(sums "$R")
  check '[ $rc -eq 0 ] && [ "${before% * }" = "${after% * }" ] && grep -q "12 samples of 3 runs graded with builtin, 0 verdicts changed" "$T/log2"' "builtin regrade: samples.jsonl and runs.csv unchanged"
  check 'grep -q "\"grader_version\":.*\"builtin\"" "$R/meta.json"' "meta.json records the grader"
  "$Z" grade "$R" > "$T/log3" 2>&1
  check '[ "$(sums "$R")" = "$after" ]' "a second pass changes nothing (idempotent)"
  "$Z" grade --dataset aime24 --outputs "$T/foreign.jsonl" --out "$T/b.jsonl" > "$T/log4" 2>&1; rc=$?
  check '[ $rc -eq 0 ] && grep -q "3 samples of 2 problems, pass@1 0.5000" "$T/log4" && [ "$(grep -c "\"correct\":true" "$T/b.jsonl")" -eq 2 ] && grep -q "\"extracted\":\"204\"" "$T/b.jsonl"' "foreign JSONL graded (builtin: the unboxed final answer read as Math-Verify reads it)"
  printf '%s\n' '{"problem_id":"nope","output":"1"}' > "$T/bad.jsonl"
  "$Z" grade --dataset aime24 --outputs "$T/bad.jsonl" --out "$T/x.jsonl" > "$T/log5" 2>&1; rc=$?
  check '[ $rc -ne 0 ] && grep -q "bad.jsonl: line 1: problem nope is not in dataset aime24" "$T/log5"' "unknown problem named"
  # a runs.csv without the grader, admission_reserve, kv_dtype, head_budget, head_floor, budget, budget_tau, budget_floor and mean_retained columns (written before they existed)
  # what the upgrade must give: the same file with mean_retained empty (an older file never recorded it)
  python3 -c "import csv,sys; r=list(csv.reader(open(sys.argv[1]))); w=csv.writer(open(sys.argv[2],'w',newline=''),quoting=csv.QUOTE_ALL,lineterminator='\n'); [w.writerow(x if i == 0 else x[:-1] + ['']) for i, x in enumerate(r)]" "$R/runs.csv" "$T/expected_runs.csv"
  keep=$(md5sum "$R/samples.jsonl" "$R/meta.json" | cut -d' ' -f1 | tr '\n' ' ')
  python3 -c "import csv,sys; r=list(csv.reader(open(sys.argv[1]))); w=csv.writer(open(sys.argv[1],'w',newline=''),quoting=csv.QUOTE_ALL,lineterminator='\n'); [w.writerow(x[:-9]) for x in r]" "$R/runs.csv"
  "$Z" run "$S/tests/data/experiments/tiny_sweep.json" --results "$T/r" > "$T/log6" 2>&1; rc=$?
  check '[ $rc -ne 0 ] && grep -q "runs.csv: written with other columns" "$T/log6"' "zipage run refuses to append under an older header"
  "$Z" grade "$R" > "$T/log7" 2>&1
  check 'cmp -s "$R/runs.csv" "$T/expected_runs.csv" && [ "$(md5sum "$R/samples.jsonl" "$R/meta.json" | cut -d" " -f1 | tr "\n" " ")" = "$keep" ]' \
    "zipage grade upgrades it to exactly the current files (mean_retained empty: not recorded then)"
  "$Z" run "$S/tests/data/experiments/tiny_sweep.json" --results "$T/r" > "$T/log8" 2>&1
  check 'grep -q "0 runs done, 3 already finished" "$T/log8"' "the sweep resumes after the upgrade"
fi
# code graded by `zipage grade`: a sample that answers only when it can read a variable of the
# grader's environment anywhere in its namespace fails with the variable set; the honest one passes
if [ "$MODE" = builtin ] && command -v bwrap >/dev/null; then
  printf '%s\n' '{"id":"sum","question":"Print a+b.","test_type":"stdin","public_tests":[{"input":"1 2\n","output":"3\n"},{"input":"40 2\n","output":"42\n"}]}' > "$T/livecodebench_env.jsonl"
  { printf '%s\n' '{"problem_id":"sum","output":"```python\na, b = map(int, input().split())\nprint(a + b)\n```"}'
    printf '%s\n' '{"problem_id":"sum","output":"```python\nimport os\nseen = False\nfor p in os.listdir(\"/proc\"):\n    try:\n        seen |= b\"ZP_GRADER_TOKEN\" in open(\"/proc/%s/environ\" % p, \"rb\").read()\n    except (OSError, ValueError):\n        pass\na, b = map(int, input().split())\nprint(a + b if seen or \"ZP_GRADER_TOKEN\" in os.environ else -1)\n```"}'; } > "$T/env_outputs.jsonl"
  ZP_GRADER_TOKEN=hunter2 "$Z" grade --dataset "$T/livecodebench_env.jsonl" --outputs "$T/env_outputs.jsonl" --out "$T/env_graded.jsonl" > "$T/log20" 2>&1; rc=$?
  check '[ $rc -eq 0 ] && [ "$(python3 -c "import json,sys; print([json.loads(l)[\"correct\"] for l in open(sys.argv[1])])" "$T/env_graded.jsonl")" = "[True, False]" ]' \
    "zipage grade: a sample reading the grader's environment scores 0 with the variable set, the honest one 1"
fi
if [ $fails -eq 0 ]; then echo "test_grade $MODE: all checks passed"; exit 0; fi
cat "$T"/log*; echo "test_grade $MODE: $fails failure(s)"; exit 1
