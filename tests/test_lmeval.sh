#!/usr/bin/env bash
# test_lmeval.sh (label slow) - lm-evaluation-harness drives `zipage serve` as it drives vLLM's:
# `lm_eval --model local-completions` on the first GSM8K test items (datasets/data/gsm8k.jsonl, a
# task file written from tests/data/lmeval/gsm8k_local.yaml.in: lm-eval's gsm8k settings, zero-shot,
# 64 tokens), two prompts per request, four requests at once, against the server on a loopback port
# (tiny-qwen3-vocab with random weights, Zipage at N_max 2, blocks of 16: compressions under way).
# Checks: lm_eval exits 0 with both filters' exact_match in [0, 1] over every item; each logged
# response is the oracle's text: `zipage generate`'s greedy tokens for the same prompt (tokenized by
# `zipage tokenize`), decoded and cut before the first of the task's stop strings; the server ends
# with no running request, no block in use, and exits 0 on SIGTERM.
# The pinned environment (.venv-lmeval, tools/lmeval/requirements.txt; lm-eval needs torch) is made
# by `make lmeval-venv` when missing or older than its requirements (about 3 GB from PyPI). Skipped (77) in a build without
# libmicrohttpd. Usage: test_lmeval.sh ZIPAGE TMPDIR [ITEMS]
set -u
Z=$1; T=$2/lmeval; N=${3:-6}; rm -rf "$T"; mkdir -p "$T/tasks"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; exit 1; }
"$Z" serve --help | grep -q "POST /v1/completions" || { echo "SKIP: zipage serve is not in this build"; exit 77; }
PY=$ROOT/.venv-lmeval/bin/python
make -C "$ROOT" --no-print-directory lmeval-venv > "$T/venv.log" 2>&1 || fail "the lm-eval environment could not be made (make lmeval-venv)"
"$Z" mkmodel --preset tiny-qwen3-vocab --out "$T/m" >/dev/null || fail "mkmodel"
ENGINE=(--policy zipage --nmax 2 --window 4 --block-size 16)
"$Z" serve --model "$T/m" "${ENGINE[@]}" --port 0 --served-model-name tiny > "$T/serve.out" 2> "$T/serve.err" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/serve.out" && break; kill -0 $PID 2>/dev/null || break; sleep 0.2; done
PORT=$(sed -n 's/^serving .* on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/serve.out")
[ -n "$PORT" ] || fail "the server did not start: $(tail -3 "$T/serve.err")"
sed "s|@GSM8K@|$ROOT/datasets/data/gsm8k.jsonl|" "$ROOT/tests/data/lmeval/gsm8k_local.yaml.in" > "$T/tasks/gsm8k_local.yaml"
HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 HF_HOME="$T/hf" TOKENIZERS_PARALLELISM=false "$PY" -m lm_eval --model local-completions \
  --model_args "model=tiny,base_url=http://127.0.0.1:$PORT/v1/completions,tokenizer_backend=None,tokenized_requests=False,num_concurrent=4,max_retries=1" \
  --batch_size 2 --include_path "$T/tasks" --tasks zipage_gsm8k_local --limit "$N" --log_samples --output_path "$T/out" > "$T/lm_eval.log" 2>&1 \
  || fail "lm_eval: $(tail -15 "$T/lm_eval.log")"
curl -s "http://127.0.0.1:$PORT/metrics" > "$T/metrics.txt"
kill -TERM $PID; wait $PID; rc=$?; PID=
[ $rc = 0 ] || fail "the server's exit status $rc"
"$PY" - "$Z" "$T" "$N" "${ENGINE[@]}" <<'PY' || fail "the oracle's comparison"
import glob, json, subprocess, sys
z, t, n, engine = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
res = json.load(open(sorted(glob.glob(f"{t}/out/**/results_*.json", recursive=True))[-1]))["results"]["zipage_gsm8k_local"]
for f in ("strict-match", "flexible-extract"):
    v = res[f"exact_match,{f}"]
    assert 0 <= v <= 1, (f, v)
samples = [json.loads(l) for p in glob.glob(f"{t}/out/**/samples_zipage_gsm8k_local_*.jsonl", recursive=True) for l in open(p)]
by_doc = {s["doc_id"]: s for s in samples}  # a line per item and filter: the same response
assert sorted(by_doc) == list(range(n)) and all(s["resps"] == by_doc[s["doc_id"]]["resps"] for s in samples), sorted(by_doc)
for s in by_doc.values():
    ctx, kw = s["arguments"]["gen_args_0"]["arg_0"], s["arguments"]["gen_args_0"]["arg_1"]
    open(f"{t}/ctx.txt", "w").write(ctx)
    ids = subprocess.run([z, "tokenize", "--model", f"{t}/m", f"{t}/ctx.txt"], check=True, capture_output=True).stdout.decode().strip()
    subprocess.run([z, "generate", "--model", f"{t}/m", "--prompt-ids", ids, "--greedy", "--max-tokens", str(kw["max_gen_toks"]), *engine,
                    "--out", f"{t}/g.json"], check=True, stdout=subprocess.DEVNULL)
    open(f"{t}/ids", "w").write(",".join(map(str, json.load(open(f"{t}/g.json"))["samples"][0]["tokens"])))
    text = subprocess.run([z, "tokenize", "--model", f"{t}/m", "--decode", f"{t}/ids"], check=True, capture_output=True).stdout.decode()
    cut = min([text.find(u) for u in kw["until"] if u in text] or [len(text)])
    want, got = text[:cut], s["resps"][0][0]
    assert got == want, (s["doc_id"], got[:120], want[:120])
m = {l.split()[0]: float(l.split()[1]) for l in open(f"{t}/metrics.txt") if l.startswith("zipage_") and "{" not in l}
assert m["zipage_requests_running"] == 0 and m["zipage_kv_blocks_used"] == 0 and m["zipage_compressions_total"] > 0, m
print(f"lm-eval local-completions: {n} GSM8K items, exact_match strict {res['exact_match,strict-match']:.3f} "
      f"flexible {res['exact_match,flexible-extract']:.3f} (random weights); every response equals zipage generate's greedy text")
PY
echo "test_lmeval: passed"
