#!/usr/bin/env bash
# test_serve_special.sh - special tokens in `zipage serve`'s text, on the real SmolLM2-135M-Instruct
# (make models; exit 77 when absent or without libmicrohttpd). A greedy chat answer that ends on
# the end-of-turn token <|im_end|> (SmolLM2's EOS): by default its text leaves that token out, as
# OpenAI's and vLLM's (skip_special_tokens true); with skip_special_tokens false it is there. The
# oracle is Hugging Face's rule applied here: the tokens of the answer (its logprobs' tokens), less
# those tokenizer.json's added_tokens mark "special": true, joined. Whole and streamed, chat and
# completions.
# Usage: test_serve_special.sh ZIPAGE SOURCE_DIR TMPDIR
set -u
Z=$1; SRC=$2; T=$3/serve_special; rm -rf "$T"; mkdir -p "$T"
M=$SRC/models/cache/SmolLM2-135M-Instruct-Q4_1
[ -f "$M/SmolLM2-135M-Instruct.Q4_1.gguf" ] || { echo "SKIP: $M absent (make models)"; exit 77; }
"$Z" serve --help | grep -q "POST /v1/completions" || { echo "SKIP: zipage serve is not in this build"; exit 77; }
"$Z" serve --model "$M" --port 0 --served-model-name smol > "$T/out" 2> "$T/err" &
PID=$!
for _ in $(seq 200); do grep -q "^serving" "$T/out" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving smol on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out")
[ -n "$PORT" ] || { echo "FAIL: the server did not start"; cat "$T/err"; kill $PID; exit 1; }
python3 - "$PORT" "$M/tokenizer.json" <<'PY'
import http.client, json, sys
port, tj = int(sys.argv[1]), sys.argv[2]
special = {a["content"] for a in json.load(open(tj))["added_tokens"] if a["special"]}
fails = []
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return c.getresponse().read().decode()
chat = {"model": "smol", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0, "max_tokens": 64, "logprobs": True}
for skip in (None, True, False):
    body = dict(chat) if skip is None else {**chat, "skip_special_tokens": skip}
    ch = json.loads(post("/v1/chat/completions", body))["choices"][0]
    toks = [t["token"] for t in ch["logprobs"]["content"]]
    want = "".join(t for t in toks if skip is False or t not in special)
    ok = ch["finish_reason"] == "stop" and toks[-1] == "<|im_end|>" and ch["message"]["content"] == want
    print(("ok  " if ok else "FAIL ") + f"chat, skip_special_tokens {skip}: {ch['message']['content']!r} ({ch['finish_reason']}, last token {toks[-1]!r})")
    if not ok: fails.append(skip)
    if skip is None:
        ev = [json.loads(l[6:]) for l in post("/v1/chat/completions", {**body, "stream": True}).split("\n") if l.startswith("data: {")]
        streamed = "".join(e["choices"][0]["delta"].get("content") or "" for e in ev)
        ok = streamed == want
        print(("ok  " if ok else "FAIL ") + f"chat streamed: {streamed!r}")
        if not ok: fails.append("stream")
# completions: the same turn as SmolLM2's chat_template.jinja renders it (its default system message)
prompt = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
for skip in (True, False):
    r = json.loads(post("/v1/completions", {"model": "smol", "prompt": prompt, "temperature": 0, "max_tokens": 64, "logprobs": 0,
                                             "skip_special_tokens": skip}))["choices"][0]
    toks = r["logprobs"]["tokens"]
    want = "".join(t for t in toks if not skip or t not in special)
    ok = r["finish_reason"] == "stop" and toks[-1] == "<|im_end|>" and r["text"] == want and ("<|im_end|>" in r["text"]) == (not skip)
    print(("ok  " if ok else "FAIL ") + f"completions, skip_special_tokens {skip}: {r['text']!r}")
    if not ok: fails.append(("completions", skip))
sys.exit(1 if fails else 0)
PY
rc=$?
kill -TERM $PID; wait $PID || { echo "FAIL: the server's exit status"; rc=1; }
echo "test_serve_special: exit $rc"
exit $rc
