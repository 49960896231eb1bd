#!/usr/bin/env python3
"""serve_limits.py - `zipage serve`'s admission limits hold exactly (issue 50), against a server with
--max-num-seqs 2 --max-waiting 3 (test_serve.sh starts it):
- 8 requests at once: 2 run and 3 wait (5 answered 200), the other 3 get 503 with Retry-After; the
  running requests never exceed 2 (/metrics sampled throughout);
- no head-of-line wait: while a long request runs, short requests one after another are each
  answered at once (a choice never waits for another's internal slot), and the long one is still
  running after the last of them.
Usage: serve_limits.py PORT MODEL"""
import http.client, json, sys, threading, time, urllib.request

port, model = int(sys.argv[1]), sys.argv[2]
fails = []


def check(cond, what):
    print(("ok  " if cond else "FAIL ") + what, flush=True)
    if not cond:
        fails.append(what)


def post(body, out=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    res = (r.status, r.getheader("Retry-After"), json.loads(r.read() or b"{}"))
    if out is not None:
        out.append(res)
    return res


def metric(name):
    m = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return float(next(l.split()[1] for l in m.split("\n") if l.startswith(name + " ")))


res, peak, stop = [], [0], [False]
def sample():
    while not stop[0]:
        peak[0] = max(peak[0], metric("zipage_requests_running"))
        time.sleep(0.02)
sampler = threading.Thread(target=sample)
sampler.start()
ts = [threading.Thread(target=post, args=({"model": model, "prompt": [1, 2, i], "max_tokens": 60, "temperature": 0, "ignore_eos": True}, res))
      for i in range(8)]
for t in ts:
    t.start()
for t in ts:
    t.join()
stop[0] = True
sampler.join()
ok = [r for r in res if r[0] == 200]
full = [r for r in res if r[0] == 503]
check(len(ok) == 5 and len(full) == 3 and all(r[2]["usage"]["completion_tokens"] == 60 for r in ok),
      f"8 at once with 2 running and 3 waiting: {len(ok)} answered, {len(full)} refused with 503 (statuses {sorted(r[0] for r in res)})")
check(all(r[1] == "1" and "waiting queue is full" in r[2]["error"]["message"] for r in full), f"each 503 says why, with Retry-After: {[r[1] for r in full]}")
check(peak[0] == 2, f"running requests at most --max-num-seqs 2 (peak {peak[0]:.0f})")

long_res = []
lt = threading.Thread(target=post, args=({"model": model, "prompt": [9, 9], "max_tokens": 600, "temperature": 0, "ignore_eos": True}, long_res))
lt.start()
while metric("zipage_requests_running") < 1:
    time.sleep(0.02)
waits = []
for i in range(5):
    t0 = time.monotonic()
    st, _, r = post({"model": model, "prompt": [3, i], "max_tokens": 2, "temperature": 0})
    waits.append(round(time.monotonic() - t0, 2))
    if st != 200:
        waits.append(f"status {st}")
still = not long_res
check(all(isinstance(w, float) and w < 5 for w in waits) and still,
      f"5 short requests one after another beside a long one: each answered in {waits} s; the long one still running: {still}")
lt.join()
check(long_res and long_res[0][0] == 200, "the long request answered in full")
print(f"serve_limits: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
