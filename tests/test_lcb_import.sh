#!/usr/bin/env bash
# test_lcb_import.sh - tools/lcb/import_lcb.py: --select keeps the base file's problems, order and
# extra fields with the official tests; malformed release rows (bad base64, a pickle that is not
# one string, a missing field), an unknown problem and a bad output name are refused with an
# error naming the file and line; the dataset loader refuses a mix of problems with and without
# private tests. Usage: test_lcb_import.sh ZIPAGE_BIN TMPDIR PROJECT_DIR
set -u
ZP=$1; T=$2/lcb_import; P=$3
IMP="python3 $P/tools/lcb/import_lcb.py"
SAMPLE=$P/tests/data/lcb/official_sample.jsonl
rm -rf "$T"; mkdir -p "$T"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

# a base file in the shipped format: two problems, reversed order, an extra field, parsed tests
python3 - "$T/livecodebench_base.jsonl" <<'PY'
import json, sys
rows = [{"id": "lcb-9001", "question_id": "9001", "question": "q", "test_type": "functional", "fn_name": "addAll",
         "public_tests": [{"input": "[1, 2, 3]\n10", "output": "16"}], "private_tests": [], "prompt_qwq": "P1"},
        {"id": "lcb-zzz001_a", "question_id": "zzz001_a", "question": "q", "test_type": "stdin", "fn_name": None,
         "public_tests": [{"input": "1 2", "output": "3"}], "private_tests": [], "prompt_qwq": "P2"}]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
out=$($IMP "$SAMPLE" --select "$T/livecodebench_base.jsonl" --out "$T/livecodebench_sel.jsonl")
check "--select runs" '[ $? -eq 0 ]'
check "--select reports replaced public tests" '[[ "$out" == *"2 problems, 5 private tests"*"1 of them had public tests other"* ]]'
check "--select keeps order and extra fields" 'python3 -c "
import json,sys
r=[json.loads(l) for l in open(sys.argv[1])]
assert [x[\"question_id\"] for x in r]==[\"9001\",\"zzz001_a\"] and r[0][\"prompt_qwq\"]==\"P1\"
assert r[1][\"public_tests\"]==[{\"input\":\"1 2\n\",\"output\":\"3\n\"},{\"input\":\"40 2\n\",\"output\":\"42\n\"}]
assert len(r[1][\"private_tests\"])==3 and r[0][\"private_tests_available\"] is True
" "$T/livecodebench_sel.jsonl"'

refused() { # name, expected message, jsonl-row-editing python expression on `r`
  python3 - "$SAMPLE" "$T/bad.jsonl" "$3" <<'PY'
import base64, json, pickle, sys, zlib
rows = [json.loads(l) for l in open(sys.argv[1])]
r = rows[1]
exec(sys.argv[3])
open(sys.argv[2], "w").write("".join(json.dumps(x) + "\n" for x in rows))
PY
  msg=$($IMP "$T/bad.jsonl" --out "$T/livecodebench_bad.jsonl" 2>&1); rc=$?; want=$2
  check "refused: $1" '[ $rc -eq 1 ] && [[ "$msg" == *"$want"* ]] && [ ! -e "$T/livecodebench_bad.jsonl" ]'
  [ $rc -eq 1 ] && [[ "$msg" == *"$want"* ]] || echo "     got (rc $rc): $msg"
}
refused "bad base64" "bad.jsonl:2:" 'r["private_test_cases"] = "eJ!!not base64"'
refused "pickled list" "pickle opcode" 'r["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps([1, 2], protocol=4))).decode()'
refused "pickled object" "bad.jsonl:2: pickle" 'r["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(Exception("x"), protocol=4))).decode()'
refused "missing field" "field metadata is missing" 'del r["metadata"]'
refused "bad testtype" "testtype" 'r["public_test_cases"] = json.dumps([{"input": "1", "output": "2", "testtype": "file"}])'
refused "duplicate question" "appears twice" 'rows.append(dict(r))'
msg=$($IMP "$SAMPLE" --out "$T/other.jsonl" 2>&1); rc=$?
check "refused: output name without livecodebench" '[ $rc -ne 0 ] && [[ "$msg" == *"must contain"* ]]'
python3 -c "import json; open('$T/livecodebench_base2.jsonl','w').write(json.dumps({'id':'lcb-x','question_id':'nope','fn_name':None})+'\n')"
msg=$($IMP "$SAMPLE" --select "$T/livecodebench_base2.jsonl" --out "$T/livecodebench_x.jsonl" 2>&1); rc=$?
check "refused: --select problem missing from the release" '[ $rc -eq 1 ] && [[ "$msg" == *"livecodebench_base2.jsonl:1: question_id '"'"'nope'"'"'"* ]]'

# the loader: private tests for some problems only
python3 - "$T/livecodebench_sel.jsonl" "$T/livecodebench_mixed.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
r[1]["private_tests"] = []
open(sys.argv[2], "w").write("".join(json.dumps(x) + "\n" for x in r))
PY
: > "$T/empty.jsonl"
msg=$("$ZP" grade --dataset "$T/livecodebench_mixed.jsonl" --outputs "$T/empty.jsonl" --out "$T/g.jsonl" 2>&1); rc=$?
check "loader refuses a mix of private and no private tests" '[ $rc -ne 0 ] && [[ "$msg" == *"1 of 2 problems have private tests, line 2 (lcb-zzz001_a) has none"* ]]'
[ $fail -eq 0 ] && echo "test_lcb_import: all checks passed"
exit $fail
