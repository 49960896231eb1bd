#!/usr/bin/env bash
# test_serve.sh - `zipage serve` on a loopback ephemeral port (tiny-qwen3-vocab with random weights,
# Zipage at N_max 2, blocks of 16: compressions under way), driven by tests/serve_client.py; the
# oracle is `zipage generate`'s greedy tokens for the same prompt ids, decoded by `zipage tokenize`.
# Then SIGTERM while a long request is in flight: it is answered, and the server exits 0. Then
# hostile and careless clients (tests/serve_hostile.py: refusals on the headers, slow clients
# closed after the idle timeout, values out of range, NUL, trailing bytes, error bodies in UTF-8),
# and after SIGTERM a new connection refused at once. Also the command line's refusals. Skipped (77) in a build without libmicrohttpd. With PYTHON (an
# environment with the official openai package: test_serve_openai) the client is
# tests/serve_openai.py instead, and the rest is left out.
# Usage: test_serve.sh ZIPAGE TMPDIR [PYTHON]
set -u
Z=$1; OAI=${3:-}; T=$2/serve${OAI:+_openai}; rm -rf "$T"; mkdir -p "$T"
fails=0
"$Z" serve --help | grep -q "POST /v1/completions" || { echo "SKIP: zipage serve is not in this build"; exit 77; }
"$Z" mkmodel --preset tiny-qwen3-vocab --out "$T/m" >/dev/null || exit 1
ENGINE="--policy zipage --nmax 2 --window 4 --block-size 16"
# the oracle (JSON): generate's greedy tokens for three prompts, two seeded samples of the first
# (request 0: what a seeded request's two choices must draw), and a chat turn rendered by the
# model's template (with a system message; Qwen3's thinking off), decoded by zipage tokenize
(cd "$(dirname "$0")/.." && python3 - "$Z" "$T" $ENGINE) > "$T/oracle.json" <<'PY' || exit 1
import json, subprocess, sys
z, t, engine = sys.argv[1], sys.argv[2], sys.argv[3:]
def gen(*flags):
    subprocess.run([z, "generate", "--model", f"{t}/m", "--ignore-eos", "--max-tokens", "24", *engine, *flags,
                    "--out", f"{t}/g.json"], check=True, stdout=subprocess.DEVNULL)
    out = []
    for s in json.load(open(f"{t}/g.json"))["samples"]:
        open(f"{t}/ids", "w").write(",".join(map(str, s["tokens"])))
        out.append(subprocess.run([z, "tokenize", "--model", f"{t}/m", "--decode", f"{t}/ids"], check=True, capture_output=True).stdout.decode())
    return out
greedy = [[ids, gen("--prompt-ids", ids, "--greedy")[0]] for ids in ("1,2,3", "5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21", "300,301")]
# a conversation of several turns: Qwen3's Jinja template's rendering (the golden, thinking on),
# tokenized by zipage tokenize, then generate's greedy tokens for those ids
conv = next(json.loads(l) for l in open("tests/data/chat/golden_conversations.jsonl") if json.loads(l)["family"] == "qwen3")
open(f"{t}/conv.txt", "w").write(conv["text"])
conv_ids = subprocess.run([z, "tokenize", "--model", f"{t}/m", f"{t}/conv.txt"], check=True, capture_output=True).stdout.decode().strip()
print(json.dumps({"greedy": greedy, "sampled": gen("--prompt-ids", "1,2,3", "--temperature", "0.8", "--top-p", "0.95", "--seed", "7", "--n", "2"),
                  "chat": gen("--prompt", "What is 2+2?", "--system", "Be brief.", "--greedy")[0],
                  "chat_nothink": gen("--prompt", "What is 2+2?", "--no-thinking", "--greedy")[0],
                  "conversation": [conv["messages"], gen("--prompt-ids", conv_ids, "--greedy")[0]]}))
PY
"$Z" serve --model "$T/m" --port 0 --api-key sk-test --served-model-name tiny --max-waiting 48 --shutdown-timeout 0 $ENGINE > "$T/out" 2> "$T/err" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/out" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving tiny on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out")
[ -n "$PORT" ] || { echo "FAIL: the server did not start"; cat "$T/out" "$T/err"; kill $PID; exit 1; }
if [ -n "$OAI" ]; then
  "$OAI" "$(dirname "$0")/serve_openai.py" "$PORT" sk-test "$T/oracle.json" tiny || fails=$((fails+1))
  kill -TERM $PID; wait $PID || { echo "FAIL: the server's exit status"; fails=$((fails+1)); }
  echo "test_serve_openai: $fails failure(s)"; [ $fails = 0 ]; exit
fi
python3 "$(dirname "$0")/serve_client.py" "$PORT" sk-test "$T/oracle.json" tiny || fails=$((fails+1))
# SIGTERM with a request in flight: answered in full, then exit 0
python3 - "$PORT" > "$T/long" 2>&1 <<'PY' &
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
c.request("POST", "/v1/completions", json.dumps({"model": "tiny", "prompt": [1, 2], "max_tokens": 600, "temperature": 0, "ignore_eos": True}),
          {"Authorization": "Bearer sk-test", "Content-Type": "application/json"})
print("sent", flush=True)
r = json.load(c.getresponse())
print(r["usage"]["completion_tokens"], r["choices"][0]["finish_reason"])
PY
CLIENT=$!
for _ in $(seq 300); do # until the request runs in the engine (/metrics), so that it is in flight at the signal
  python3 -c "import sys, urllib.request; sys.exit('\nzipage_requests_running 1\n' not in urllib.request.urlopen('http://127.0.0.1:$PORT/metrics').read().decode())" \
    2>/dev/null && break; sleep 0.1
done
kill -TERM $PID
wait $CLIENT
wait $PID; rc=$?
[ $rc = 0 ] && grep -q "^600 length$" "$T/long" && grep -q "SIGTERM: no new connections" "$T/err" \
  || { echo "FAIL: SIGTERM with a request in flight (exit $rc)"; cat "$T/long" "$T/err"; fails=$((fails+1)); }
# --reasoning-parser deepseek_r1: a chat answer splits at its first </think> (before: reasoning_content;
# after: content; none: all reasoning), whole and streamed, against the rule applied here to the
# oracle's text (the greedy answer of the one-turn chat)
"$Z" serve --model "$T/m" --port 0 --served-model-name tiny --reasoning-parser deepseek_r1 $ENGINE > "$T/out2" 2> "$T/err2" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/out2" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving tiny on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out2")
python3 - "$PORT" "$T/oracle.json" <<'PY' || { echo "FAIL: the reasoning parser"; fails=$((fails+1)); }
import http.client, json, sys
port, text = int(sys.argv[1]), json.load(open(sys.argv[2]))["chat"]
body = {"model": "tiny", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}],
        "max_tokens": 24, "temperature": 0, "ignore_eos": True}
t = text[len("<think>"):] if text.startswith("<think>") else text
want_r, sep, want_c = t.partition("</think>")
def post(b):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/chat/completions", json.dumps(b), {"Content-Type": "application/json"})
    return c.getresponse().read().decode()
m = json.loads(post(body))["choices"][0]["message"]
assert m["reasoning_content"] == want_r and m["content"] == (want_c or None), (m, want_r, want_c)
ev = [json.loads(l[6:]) for l in post({**body, "stream": True}).split("\n") if l.startswith("data: {")]
d = [e["choices"][0]["delta"] for e in ev]
assert "".join(x.get("reasoning_content", "") for x in d) == want_r and "".join(x.get("content") or "" for x in d) == want_c, d
print(f"reasoning parser: {len(want_r)} bytes of reasoning, {len(want_c)} of content, whole and streamed")
PY
kill -TERM $PID; wait $PID || { echo "FAIL: the second server's exit status"; fails=$((fails+1)); }
# hostile and careless clients (tests/serve_hostile.py) against a server with a 1-second idle timeout
# and a 3-second request timeout
"$Z" serve --model "$T/m" --port 0 --api-key sk-h --served-model-name tiny --idle-timeout 1 --request-timeout 3 --shutdown-timeout 2 $ENGINE \
  > "$T/out3" 2> "$T/err3" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/out3" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving tiny on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out3")
timeout 900 python3 "$(dirname "$0")/serve_hostile.py" "$PORT" sk-h tiny || { echo "FAIL: hostile clients"; tail -5 "$T/err3"; fails=$((fails+1)); }
# SIGTERM with a long request in flight (--shutdown-timeout 2): from the signal on, a new connection
# is refused at once (the listening socket is closed); 2 s later the unfinished request ends with a
# 503 naming the shutdown (not a cut answer passed off as whole), and the server exits 0
python3 - "$PORT" > "$T/long3" 2>&1 <<'PY' &
import http.client, json, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=300)
c.request("POST", "/v1/completions", json.dumps({"model": "tiny", "prompt": [1, 2], "max_tokens": 4000, "temperature": 0, "ignore_eos": True}),
          {"Authorization": "Bearer sk-h", "Content-Type": "application/json"})
r = c.getresponse()
print(r.status, json.load(r)["error"]["message"])
PY
CLIENT=$!
for _ in $(seq 300); do
  python3 -c "import sys, urllib.request; sys.exit('\nzipage_requests_running 1\n' not in urllib.request.urlopen('http://127.0.0.1:$PORT/metrics').read().decode())" \
    2>/dev/null && break; sleep 0.1
done
kill -TERM $PID
for _ in $(seq 50); do grep -q "SIGTERM: no new connections" "$T/err3" && break; sleep 0.1; done
python3 - "$PORT" <<'PY' || { echo "FAIL: a connection after SIGTERM was not refused at once"; fails=$((fails+1)); }
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(2)
    got = s.recv(100)
    sys.exit(f"connected after SIGTERM and got {got!r}")
except ConnectionRefusedError:
    print("after SIGTERM: a new connection is refused at once")
PY
t0=$(date +%s)
wait $CLIENT
wait $PID; rc=$?
[ $rc = 0 ] && grep -q "^503 the server shut down (--shutdown-timeout 2 s)" "$T/long3" && [ $(( $(date +%s) - t0 )) -lt 60 ] \
  || { echo "FAIL: the shutdown's grace period: the request in flight or the exit (exit $rc)"; cat "$T/long3"; fails=$((fails+1)); }
# admission limits held exactly (tests/serve_limits.py): --max-num-seqs 2, --max-waiting 3
"$Z" serve --model "$T/m" --port 0 --served-model-name tiny --max-num-seqs 2 --max-waiting 3 $ENGINE > "$T/out4" 2> "$T/err4" &
PID=$!
for _ in $(seq 100); do grep -q "^serving" "$T/out4" && break; sleep 0.1; done
PORT=$(sed -n 's/^serving tiny on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/out4")
timeout 900 python3 "$(dirname "$0")/serve_limits.py" "$PORT" tiny || { echo "FAIL: admission limits"; tail -5 "$T/err4"; fails=$((fails+1)); }
kill -TERM $PID; wait $PID || { echo "FAIL: the limits server's exit status"; fails=$((fails+1)); }
# the command line's refusals: one line naming the flag, non-zero exit
bad() { local want=$1; shift; "$@" > "$T/bad" 2>&1 && { echo "FAIL: accepted: $*"; fails=$((fails+1)); return; }
  grep -q -- "$want" "$T/bad" || { echo "FAIL: $* did not say \"$want\""; cat "$T/bad"; fails=$((fails+1)); }; }
bad "--model DIR or --preset NAME is required" "$Z" serve --port 0
bad "unknown flag --frob" "$Z" serve --model "$T/m" --frob 1
bad "--port" "$Z" serve --model "$T/m" --port 70000
bad "not an IPv4 address" "$Z" serve --model "$T/m" --port 0 --host nowhere
bad "neither deepseek_r1 nor qwen3" "$Z" serve --model "$T/m" --port 0 --reasoning-parser r1
bad "--idle-timeout" "$Z" serve --model "$T/m" --port 0 --idle-timeout -1
bad "--request-timeout" "$Z" serve --model "$T/m" --port 0 --request-timeout 1e9
bad "--shutdown-timeout" "$Z" serve --model "$T/m" --port 0 --shutdown-timeout x
echo "test_serve: $fails failure(s)"
[ $fails = 0 ]
