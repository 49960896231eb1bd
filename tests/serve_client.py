"""serve_client.py - drives `zipage serve` (tests/test_serve.sh) over HTTP with the standard
library: health and models; greedy completions equal `zipage generate`'s tokens decoded (the
oracle file: JSON, see test_serve.sh); a stop string across a token boundary;
n = 2; 32 concurrent clients, each answer equal to the serial one; the API key; every refusal
(400 naming the parameter, 401, 404, 405, 413; the 503 of a full queue is in serve_limits.py). Usage: serve_client.py PORT KEY ORACLE MODEL"""
import json, sys, threading, urllib.error, urllib.request

port, key, oracle, model = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
base = f"http://127.0.0.1:{port}"
fails = []


def call(path, body=None, key=key, raw=None, method=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method or ("POST" if data is not None else "GET"))
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, file=sys.stderr)


def complete(prompt, **kw):
    body = {"model": model, "prompt": prompt, "temperature": 0, "ignore_eos": True}
    body.update(kw)
    return call("/v1/completions", body)


st, _ = call("/health", key=None)
check(st == 200, "/health answers 200 without a key")
st, m = call("/v1/models")
check(st == 200 and m["data"][0]["id"] == model and m["data"][0]["max_model_len"] > 0, f"/v1/models lists {model}: {m}")

rows = json.load(open(oracle))["greedy"]  # [ids "a,b,c", greedy text]
serial = {}
for ids, text in rows:
    ids = [int(x) for x in ids.split(",")]
    st, r = complete(ids, max_tokens=24)
    ok = st == 200 and r["choices"][0]["text"] == text and r["usage"]["completion_tokens"] == 24 and r["choices"][0]["finish_reason"] == "length"
    check(ok, f"greedy completion of {ids} equals zipage generate's tokens decoded: {st} {r} vs {text!r}")
    serial[tuple(ids)] = r["choices"][0]["text"] if st == 200 else None

# a stop string across a token boundary: the text is cut where it begins, the request ends early
# (the first five characters that occur first after the text's third character, in the row that has them)
ids, text, stop = next(([int(x) for x in r[0].split(",")], r[1], r[1][c:c + 5]) for r in rows for c in range(3, len(r[1]) - 5)
                       if r[1].index(r[1][c:c + 5]) == c)
print(f"stop string {stop!r} at character {text.index(stop)} of {text!r}")
st, r = complete(ids, max_tokens=24, stop=[stop, "never appears"])
check(st == 200 and r["choices"][0]["text"] == text[:text.index(stop)] and r["choices"][0]["finish_reason"] == "stop"
      and r["usage"]["completion_tokens"] < 24, f"stop {stop!r}: {r}")

st, r = complete([ids, ids], max_tokens=24, n=2)
check(st == 200 and [c["index"] for c in r["choices"]] == [0, 1, 2, 3] and all(c["text"] == text for c in r["choices"])
      and r["usage"]["prompt_tokens"] == 2 * len(ids) and r["usage"]["completion_tokens"] == 4 * 24, f"two prompts x n 2: {r}")

# 32 concurrent clients, 64 tokens each (compressions under way): each gets the serial answer
served = len(rows) + 1 + 4  # choices so far: the oracle's, the stop's, two prompts x 2
for ids, _ in rows:
    p = [int(x) for x in ids.split(",")]
    st, r = complete(p, max_tokens=64)
    serial[tuple(p)] = r["choices"][0]["text"] if st == 200 else None
    served += 1
answers = {}
def client(i):
    p = [int(x) for x in rows[i % len(rows)][0].split(",")]
    answers[i] = (p, complete(p, max_tokens=64))
threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
for t in threads: t.start()
for t in threads: t.join()
check(all(st == 200 and r["choices"][0]["text"] == serial[tuple(p)] for p, (st, r) in answers.values()) and len(answers) == 32,
      "32 concurrent clients get their serial answers")
served += 32

# /metrics (Prometheus text, no key): nothing held once every answer is in; compressions ran
with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
    text = r.read().decode()
m = {}
for line in text.splitlines():
    if line and not line.startswith("#"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
check(m.get("zipage_requests_running") == 0 and m.get("zipage_kv_blocks_used") == 0 and m.get("zipage_requests_waiting") == 0,
      f"/metrics: nothing running or held at rest: {[(k, v) for k, v in m.items() if 'requests_' in k or 'blocks' in k]}")
check(m.get("zipage_compressions_total", 0) > 0 and m.get("zipage_kv_blocks_total", 0) > 0, "/metrics: compressions and the pool")
check(m.get("zipage_time_to_first_token_seconds_count") == served and m.get('zipage_time_to_first_token_seconds_bucket{le="+Inf"}') == served,
      f"/metrics: one first token per choice served ({served}): {m.get('zipage_time_to_first_token_seconds_count')}")
check(m.get('zipage_requests_finished_total{finish_reason="stop"}') == 1 and m.get('zipage_requests_finished_total{finish_reason="length"}') == served - 1,
      "/metrics: finish reasons")

# streaming (server-sent events): the deltas of each choice add up to its serial text; usage last, then [DONE]
import http.client

def stream(body, stop_after=None):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
    c.request("POST", "/v1/completions", json.dumps(body), {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    r = c.getresponse()
    events = []
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("data: "):
            events.append(line[6:])
            if stop_after and len(events) >= stop_after:
                c.sock.close()  # the client leaves mid-stream
                return r.status, events
    return r.status, events

ids, text = [int(x) for x in rows[0][0].split(",")], rows[0][1]
st, ev = stream({"model": model, "prompt": ids, "max_tokens": 24, "temperature": 0, "ignore_eos": True, "n": 2, "stream": True,
                 "stream_options": {"include_usage": True}})
chunks = [json.loads(e) for e in ev[:-1]]
got = {0: "", 1: ""}
fin = {}
for ch in chunks[:-1]:
    for c in ch["choices"]:
        got[c["index"]] += c["text"]
        if c["finish_reason"]:
            fin[c["index"]] = c["finish_reason"]
check(st == 200 and ev[-1] == "[DONE]" and got == {0: text, 1: text} and fin == {0: "length", 1: "length"}
      and chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 48, f"stream n 2: {got} {fin} {chunks[-1]}")
st, ev = stream({"model": model, "prompt": ids, "max_tokens": 24, "temperature": 0, "ignore_eos": True, "stream": True, "stop": [stop]})
chunks = [json.loads(e) for e in ev[:-1]]
check(st == 200 and "".join(c["choices"][0]["text"] for c in chunks) == text[:text.index(stop)] and chunks[-1]["choices"][0]["finish_reason"] == "stop"
      and all("usage" not in c for c in chunks), f"stream with stop {stop!r}: {chunks}")
served += 3

# a client that leaves mid-stream: its request ends (finish reason abort) and frees its blocks
st, ev = stream({"model": model, "prompt": ids, "max_tokens": 3000, "temperature": 0, "ignore_eos": True, "stream": True}, stop_after=3)
served += 1
import time
for _ in range(200):
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        m = {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in r.read().decode().splitlines() if l and not l.startswith("#")}
    if m["zipage_requests_running"] == 0 and m.get('zipage_requests_finished_total{finish_reason="abort"}') == 1:
        break
    time.sleep(0.1)
check(st == 200 and len(ev) == 3 and m["zipage_requests_running"] == 0 and m["zipage_kv_blocks_used"] == 0
      and m.get('zipage_requests_finished_total{finish_reason="abort"}') == 1 and m["zipage_generation_tokens_total"] > 0
      and m["zipage_time_to_first_token_seconds_count"] == served, f"a client that left: {[(k, v) for k, v in m.items() if 'requests' in k or 'blocks_used' in k]}")


# chat: the template's rendering of one turn, as zipage generate --prompt renders it; streamed too
orc = json.load(open(oracle))
chat = {"model": model, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}],
        "max_tokens": 24, "temperature": 0, "ignore_eos": True}
st, r = call("/v1/chat/completions", chat)
check(st == 200 and r["object"] == "chat.completion" and r["choices"][0]["message"] == {"role": "assistant", "content": orc["chat"]}
      and r["usage"]["completion_tokens"] == 24, f"chat: {r} vs {orc['chat']!r}")
st, r = call("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": 24,
                                       "temperature": 0, "ignore_eos": True, "chat_template_kwargs": {"enable_thinking": False}})
check(st == 200 and r["choices"][0]["message"]["content"] == orc["chat_nothink"], f"chat, thinking off: {r}")
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
c.request("POST", "/v1/chat/completions", json.dumps({**chat, "stream": True}), {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
ev = [l[6:] for l in c.getresponse().read().decode().split("\n") if l.startswith("data: ")]
chunks = [json.loads(e) for e in ev[:-1]]
check(ev[-1] == "[DONE]" and all(ch["object"] == "chat.completion.chunk" for ch in chunks) and chunks[0]["choices"][0]["delta"]["role"] == "assistant"
      and "".join(ch["choices"][0]["delta"]["content"] for ch in chunks) == orc["chat"] and chunks[-1]["choices"][0]["finish_reason"] == "length",
      f"chat streamed: {chunks[:2]}")
served += 3
# several turns (an earlier assistant turn's reasoning dropped by Qwen3's rules): the template's
# rendering, as the Jinja golden, and generate's tokens for its ids
msgs, want = orc["conversation"]
st, r = call("/v1/chat/completions", {"model": model, "messages": msgs, "max_tokens": 24, "temperature": 0, "ignore_eos": True})
check(st == 200 and r["choices"][0]["message"]["content"] == want, f"conversation: {r} vs {want!r}")
served += 1


def refused(status, param, body=None, **kw):
    st, r = call("/v1/completions", body, **kw) if "path" not in kw else call(kw.pop("path"), body, **kw)
    e = r.get("error", {})
    check(st == status and (param is None or e.get("param") == param) and e.get("message"), f"refusal {status} {param}: got {st} {r}")

refused(400, None, raw=b'{"model": "x", "prompt": ')
refused(400, "max_tokens", {"model": model, "prompt": "hi", "max_tokens": 1 << 20})
refused(400, "temperature", {"model": model, "prompt": "hi", "temperature": "hot"})
refused(400, "frobnicate", {"model": model, "prompt": "hi", "frobnicate": True})
refused(400, "prompt", {"model": model, "prompt": [1, 99999999]})
refused(404, "model", {"model": "no-such-model", "prompt": "hi"})
refused(401, None, {"model": model, "prompt": "hi"}, key="wrong")
refused(401, None, {"model": model, "prompt": "hi"}, key=None)
# a body declared over the limit is refused on its headers (the body is never sent: a client that
# sends it all first may meet a closed socket; tests/serve_hostile.py has the rest of this class)
import socket
with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as so:
    so.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {9 << 20}\r\n\r\n".encode())
    head = so.recv(4096).decode(errors="replace")
check(head.startswith("HTTP/1.1 413") and "exceeds" in head, f"refusal 413 on the headers: got {head[:200]!r}")
refused(400, "n", {"model": model, "prompt": ["hi"] * 5, "n": 64, "max_tokens": 1})  # 320 choices, more than 256 + 48 held (503s: serve_limits.py)
refused(405, None, path="/v1/completions", method="GET")
refused(400, "messages", {"model": model, "messages": [{"role": "tool", "content": "a"}]}, path="/v1/chat/completions")
# log-probabilities (greedy: each sampled token is its step's most likely, so its logprob is the top one's)
st, r = complete([1, 2, 3], max_tokens=12, temperature=0, ignore_eos=True, logprobs=3)
lp = r["choices"][0]["logprobs"] if st == 200 else {}
check(st == 200 and len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == len(lp["text_offset"]) == 12
      and all(len(d) <= 3 and max(d.values()) == v and d.get(t) == v and v <= 0 for t, v, d in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]))
      and lp["text_offset"] == sorted(lp["text_offset"]), f"completion logprobs: {lp}")
def stream_events(path, body):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=120)
    c.request("POST", path, json.dumps({**body, "stream": True}), {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    return [json.loads(l[6:]) for l in c.getresponse().read().decode().split("\n") if l.startswith("data: {")]
st, r = complete([1, 2, 3], max_tokens=4, temperature=0, ignore_eos=True, logprobs=0)  # no alternatives: the sampled token alone, as OpenAI's
l0 = r["choices"][0]["logprobs"] if st == 200 else {}
check(st == 200 and [list(d.values()) for d in l0["top_logprobs"]] == [[v] for v in l0["token_logprobs"]], f"logprobs 0: {l0}")
# streamed, the chunks' log-probabilities add up to the whole answer's
ev = stream_events("/v1/completions", {"model": model, "prompt": [1, 2, 3], "max_tokens": 12, "temperature": 0, "ignore_eos": True, "logprobs": 3})
parts = [e["choices"][0]["logprobs"] for e in ev if e["choices"] and e["choices"][0].get("logprobs")]
joined = {k: sum((p[k] for p in parts), []) for k in ("tokens", "token_logprobs", "top_logprobs", "text_offset")}
check(joined == lp, f"streamed completion logprobs: {joined} vs {lp}")
st, r = call("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": 8,
                                       "temperature": 0, "ignore_eos": True, "logprobs": True, "top_logprobs": 2})
c = r["choices"][0]["logprobs"]["content"] if st == 200 else []
check(st == 200 and len(c) == 8 and all(len(e["top_logprobs"]) == 2 and e["top_logprobs"][0]["token"] == e["token"]
                                         and e["top_logprobs"][0]["logprob"] == e["logprob"] >= e["top_logprobs"][1]["logprob"]
                                         and e["bytes"] == e["top_logprobs"][0]["bytes"] for e in c), f"chat logprobs: {c[:2]}")
ev = stream_events("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": 8,
                                            "temperature": 0, "ignore_eos": True, "logprobs": True, "top_logprobs": 2})
joined = sum((e["choices"][0]["logprobs"]["content"] for e in ev if e["choices"] and e["choices"][0].get("logprobs")), [])
check(joined == c, f"streamed chat logprobs: {joined[:2]} vs {c[:2]}")
refused(404, None, path="/v1/nothing", method="GET")
# a seed with sampling: the choices draw zipage generate's samples (same seed, request 0, samples 0 and 1), again on a rerun
want = json.load(open(oracle))["sampled"]
for _ in range(2):
    st, r = complete([1, 2, 3], max_tokens=24, temperature=0.8, top_p=0.95, seed=7, n=2)
    check(st == 200 and [c["text"] for c in r["choices"]] == want and want[0] != want[1], f"seeded sampling: {r} vs {want}")

print(f"serve_client: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
