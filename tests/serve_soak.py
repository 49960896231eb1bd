#!/usr/bin/env python3
"""serve_soak.py - a soak of `zipage serve` (issue 50): for MINUTES, 8 clients stream chat
completions one after another (random lengths, temperature 0.7), a quarter of them leaving
mid-stream, while 20 slowloris connections trickle a header byte every half second. Every request
a client does not abandon must be answered 200 and end with [DONE] (no legitimate request
refused). The server's RSS (/proc/PID/status) and /metrics are sampled every 10 s into CSV. At the
end, once the clients are done: /metrics must show 0 running and 0 KV blocks in use, and the RSS
must be flat after the warm-up (the last sample within 10% of the sample at a quarter of the run).
Usage: serve_soak.py PORT MODEL SERVER_PID MINUTES CSV"""
import csv, http.client, json, random, socket, sys, threading, time, urllib.request

port, model, pid, minutes, out_csv = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
end = time.monotonic() + minutes * 60
lock = threading.Lock()
stats = {"done": 0, "aborted": 0, "refused": 0, "broken": 0, "tokens": 0}
errors = []


def rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return -1


def metrics():
    m = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in m.split("\n") if l.startswith("zipage_") and " " in l and "{" not in l}


QUESTIONS = ["What is 17 times 23?", "Name three prime numbers.", "Explain recursion briefly.", "Write a haiku about rain.",
             "What is the capital of Japan?", "Solve x + 5 = 12.", "Why is the sky blue?", "List the planets."]


def client(k):
    rng = random.Random(k)
    while time.monotonic() < end:
        body = {"model": model, "messages": [{"role": "user", "content": rng.choice(QUESTIONS)}], "max_tokens": rng.randint(16, 128),
                "temperature": 0.7, "stream": True, "stream_options": {"include_usage": True}}
        leave = rng.random() < 0.25
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                with lock:
                    stats["refused"] += 1
                    errors.append(f"status {r.status}: {r.read()[:200]!r}")
                continue
            got, n = b"", 0
            while b"data: [DONE]" not in got:
                chunk = r.read1(65536)
                if not chunk:
                    break
                got += chunk
                n += 1
                if leave and n >= 3:
                    break
            c.close()
            with lock:
                if leave and b"data: [DONE]" not in got:
                    stats["aborted"] += 1
                elif b"data: [DONE]" in got:
                    stats["done"] += 1
                    usage = [json.loads(l[6:]) for l in got.decode().split("\n") if l.startswith("data: {") and '"usage":{' in l]
                    stats["tokens"] += usage[-1]["usage"]["completion_tokens"] if usage else 0
                else:
                    stats["broken"] += 1
                    errors.append(f"stream ended without [DONE]: {got[-200:]!r}")
        except OSError as e:
            with lock:
                stats["broken"] += 1
                errors.append(f"{type(e).__name__}: {e}")


def slowloris():
    socks = []
    while time.monotonic() < end:
        while len(socks) < 20:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
                socks.append(s)
            except OSError:
                break
        for s in list(socks):
            try:
                s.sendall(b"X")
            except OSError:
                socks.remove(s)
        time.sleep(0.5)
    for s in socks:
        s.close()


threads = [threading.Thread(target=client, args=(k,)) for k in range(8)] + [threading.Thread(target=slowloris)]
t0 = time.monotonic()
for t in threads:
    t.start()
rows = []
while any(t.is_alive() for t in threads):
    m = metrics()
    with lock:
        rows.append({"t_s": round(time.monotonic() - t0, 1), "rss_mb": round(rss_mb(), 1), "running": m.get("zipage_requests_running"),
                     "blocks_used": m.get("zipage_kv_blocks_used"), "done": stats["done"], "aborted": stats["aborted"],
                     "refused": stats["refused"], "broken": stats["broken"]})
    print(rows[-1], flush=True)
    time.sleep(10)
for t in threads:
    t.join()
time.sleep(1)
m = metrics()
rows.append({"t_s": round(time.monotonic() - t0, 1), "rss_mb": round(rss_mb(), 1), "running": m["zipage_requests_running"],
             "blocks_used": m["zipage_kv_blocks_used"], **{k: stats[k] for k in ("done", "aborted", "refused", "broken")}})
with open(out_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
quarter = next(r for r in rows if r["t_s"] >= rows[-1]["t_s"] / 4)
flat = rows[-1]["rss_mb"] <= quarter["rss_mb"] * 1.10
print(f"soak {minutes:g} min: {stats['done']} streams done ({stats['tokens']} tokens), {stats['aborted']} left mid-stream, "
      f"{stats['refused']} refused, {stats['broken']} broken; at the end {m['zipage_requests_running']:.0f} running, "
      f"{m['zipage_kv_blocks_used']:.0f} blocks used; RSS {quarter['rss_mb']:.1f} MB at {quarter['t_s']:.0f} s, {rows[-1]['rss_mb']:.1f} MB at the end")
for e in errors[:10]:
    print("  ", e)
ok = stats["refused"] == 0 and stats["broken"] == 0 and m["zipage_requests_running"] == 0 and m["zipage_kv_blocks_used"] == 0 and flat and stats["done"] > 0
print("serve_soak:", "passed" if ok else "FAILED")
sys.exit(0 if ok else 1)
