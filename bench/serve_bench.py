#!/usr/bin/env python3
"""serve_bench.py - a load test of an OpenAI-compatible completions server (`zipage serve`, or
vLLM's / SGLang's for comparison), after vLLM's serving benchmark: requests arrive as a Poisson
process at a rate (or all at once), optionally under a concurrency cap, and stream their tokens;
the client measures the time to first token (TTFT), the time per output token after the first
(TPOT, per request), the gaps between streamed chunks (ITL), end-to-end latency, request and
output-token throughput, and goodput (finished requests per second within a TTFT and a TPOT
objective). One CSV row per rate.

The requests are the engine benchmark's own: `zipage bench --workload reasoning ... --dump-workload
FILE` writes them as JSON lines {"prompt": [token ids], "gen": tokens to generate}; each is sent with
max_tokens = gen and ignore_eos, so that the server generates what `zipage bench` would, with the
reasoning workload's sampling (temperature 0.6, top-p 0.95, top-k 20, as zipage bench's default).

--cutoff S measures a window rather than a whole run: every stream still open S seconds after the
first request is closed (the server ends those requests and frees their blocks), and output tokens/s
is the server's own counter (`zipage_generation_tokens_total` on /metrics; --metric names another)
between --warmup W and S, divided by S - W. Without --cutoff every request runs to its end and output
tokens/s is the finished requests' completion tokens over the whole run. TPOT and end-to-end
latency are of the requests that finished before the cutoff; TTFT is of every request sent, one
still without a token at the cutoff counting its wait until then (a lower bound: the column
no_first_token says how many); ITL is per streamed chunk (a chunk may carry more than one token when the client reads slower
than the server samples).

Deliberately not here: starting the server (bench/run_serve_bench.sh does), plots
(bench/plot_serve.sh), chat requests.
"""
import argparse
import asyncio
import csv
import json
import math
import os
import random
import sys
import time

import aiohttp

COLUMNS = ["label", "rate", "max_concurrency", "requests", "finished", "cut", "failed", "no_first_token", "duration_s", "window_s",
           "output_tok_s", "output_tok_source", "request_s", "ttft_mean_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
           "tpot_mean_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms",
           "e2e_p50_s", "e2e_p90_s", "e2e_p99_s", "slo_ttft_ms", "slo_tpot_ms", "goodput_req_s", "prompt_tokens", "completion_tokens",
           "engine_steps", "engine_step_ms", "engine_between_ms"]


def die(msg):
    print(f"serve_bench: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_workload(path, n):
    reqs = []
    try:
        f = open(path)
    except OSError as e:
        die(f"--workload {path}: {e.strerror}")
    with f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                die(f"--workload {path}:{i}: not JSON ({e.msg})")
            p, g = d.get("prompt") if isinstance(d, dict) else None, d.get("gen") if isinstance(d, dict) else None
            if not isinstance(p, list) or not p or not all(isinstance(t, int) and t >= 0 for t in p):
                die(f"--workload {path}:{i}: \"prompt\" must be a non-empty list of token ids")
            if not isinstance(g, int) or isinstance(g, bool) or g < 1:
                die(f"--workload {path}:{i}: \"gen\" must be a positive integer")
            reqs.append((p, g))
    if n > len(reqs):
        die(f"--requests {n}: {path} holds only {len(reqs)} requests")
    return reqs[:n] if n > 0 else reqs


def parse_rate(s):
    if s == "inf":
        return math.inf
    try:
        r = float(s)
    except ValueError:
        die(f"--rates: \"{s}\" is neither a number nor inf")
    if not r > 0 or math.isinf(r) or math.isnan(r):
        die(f"--rates: {s} must be a positive number of requests per second, or inf")
    return r


def pct(xs, q):
    """The q-th percentile by linear interpolation (numpy's default), blank for no values."""
    if not xs:
        return ""
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def scrape_page(session, url):
    """The server's /metrics as {name (with labels): value}; empty when it has none."""
    page = {}
    try:
        async with session.get(url) as r:
            if r.status != 200:
                return page
            for line in (await r.text()).splitlines():
                if line and not line.startswith("#"):
                    name, _, v = line.rpartition(" ")
                    try:
                        page[name] = float(v)
                    except ValueError:
                        pass
    except aiohttp.ClientError:
        pass
    return page


async def scrape(session, url, metric):
    """The server's counter, or None when it has no /metrics or not that metric."""
    return (await scrape_page(session, url)).get(metric)


async def one_request(session, a, prompt, gen, rec, t0):
    body = {"model": a.model, "prompt": prompt, "max_tokens": gen, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}, "temperature": a.temperature, "top_p": a.top_p}
    if a.top_k > 0:
        body["top_k"] = a.top_k
    rec["start"] = time.monotonic() - t0
    rec["chunks"] = []
    async with session.post(a.base_url + "/v1/completions", json=body, headers=a.headers) as r:
        if r.status != 200:
            rec["error"] = f"HTTP {r.status}: {(await r.text())[:200]}"
            return
        async for raw in r.content:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                rec["done"] = time.monotonic() - t0
                return
            d = json.loads(data)
            if d.get("error"):  # the server failed the request mid-stream
                rec["error"] = f"error event: {json.dumps(d['error'])[:200]}"
                continue
            if d.get("usage"):
                rec["usage"] = d["usage"]
            for c in d.get("choices") or []:
                if c.get("text"):
                    rec["chunks"].append(time.monotonic() - t0)
                if c.get("finish_reason"):
                    rec["finish"] = c["finish_reason"]
    rec["error"] = rec.get("error") or "the stream ended without [DONE]"


async def run_rate(a, reqs, rate):
    rng = random.Random(a.seed)
    sem = asyncio.Semaphore(a.max_concurrency) if a.max_concurrency > 0 else None
    recs = [{} for _ in reqs]
    timeout = aiohttp.ClientTimeout(total=None, sock_read=a.read_timeout)
    conn = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(timeout=timeout, connector=conn) as session:
        metrics_url = a.base_url + "/metrics"
        t0 = time.monotonic()
        marks = {}

        async def mark(name, at):
            await asyncio.sleep(max(0.0, at - (time.monotonic() - t0)))
            page = await scrape_page(session, metrics_url)
            marks[name] = (page.get(a.metric), time.monotonic() - t0, page)

        async def send(i, at):
            await asyncio.sleep(max(0.0, at - (time.monotonic() - t0)))
            if sem:
                async with sem:
                    await one_request(session, a, reqs[i][0], reqs[i][1], recs[i], t0)
            else:
                await one_request(session, a, reqs[i][0], reqs[i][1], recs[i], t0)

        at, tasks = 0.0, []
        for i in range(len(reqs)):
            if a.cutoff and at >= a.cutoff:
                break
            tasks.append(asyncio.create_task(send(i, at)))
            at += 0 if math.isinf(rate) else rng.expovariate(rate)
        marks_t = [asyncio.create_task(mark("warmup", a.warmup))]
        if a.cutoff:
            done, pending = await asyncio.wait(tasks, timeout=max(0.0, a.cutoff - (time.monotonic() - t0)))
            page = await scrape_page(session, metrics_url)
            marks["end"] = (page.get(a.metric), time.monotonic() - t0, page)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        else:
            await asyncio.gather(*tasks, return_exceptions=True)
            page = await scrape_page(session, metrics_url)
            marks["end"] = (page.get(a.metric), time.monotonic() - t0, page)
        await asyncio.gather(*marks_t, return_exceptions=True)
        for i, t in enumerate(tasks):
            if t.done() and not t.cancelled() and t.exception() is not None:
                recs[i]["error"] = repr(t.exception())[:200]
        return [r for r in recs[:len(tasks)] if "start" in r], marks  # not those the cutoff left unsent


def summarize(a, rate, recs, marks):
    fin = [r for r in recs if "done" in r and "usage" in r and "error" not in r]
    failed = [r for r in recs if "error" in r]
    cut = len(recs) - len(fin) - len(failed)
    end = marks["end"][1]
    # a request with no token by the cutoff waited at least until then: its TTFT counts as that
    # lower bound (censored), so that the percentiles are not only of the requests that got in
    no_first = [r for r in recs if not r.get("chunks") and "error" not in r and "done" not in r]
    ttft = [1e3 * (r["chunks"][0] - r["start"]) for r in recs if r.get("chunks")] + [1e3 * (end - r["start"]) for r in no_first]
    tpot, e2e, itl, good = [], [], [], 0
    for r in fin:
        n = r["usage"]["completion_tokens"]
        if n > 1 and r["chunks"]:
            tpot.append(1e3 * (r["done"] - r["chunks"][0]) / (n - 1))
        e2e.append(r["done"] - r["start"])
        ok_ttft = not a.slo_ttft_ms or (r["chunks"] and 1e3 * (r["chunks"][0] - r["start"]) <= a.slo_ttft_ms)
        ok_tpot = not a.slo_tpot_ms or (not tpot or n <= 1 or tpot[-1] <= a.slo_tpot_ms)
        good += bool(ok_ttft and ok_tpot)
    for r in recs:
        c = r.get("chunks") or []
        itl += [1e3 * (y - x) for x, y in zip(c, c[1:])]
    w0, w1 = marks.get("warmup", (None, 0.0)), marks["end"]
    if a.cutoff and w0[0] is not None and w1[0] is not None and w1[1] > w0[1]:
        out_tps, src, window = (w1[0] - w0[0]) / (w1[1] - w0[1]), a.metric, w1[1] - w0[1]
    elif a.cutoff:
        die(f"--cutoff needs the server's {a.metric} on /metrics (at {a.base_url}/metrics), or none was read at --warmup")
    else:
        out_tps, src, window = sum(r["usage"]["completion_tokens"] for r in fin) / end, "usage", end
    mean = lambda xs: sum(xs) / len(xs) if xs else ""
    # the engine thread over the window (zipage serve's counters; empty for another server):
    # steps, mean wall time of a step, and the server's time between steps, per step
    p0, p1 = (w0[2] if len(w0) > 2 else {}), w1[2] if len(w1) > 2 else {}
    d = lambda k: p1[k] - p0[k] if k in p0 and k in p1 else None
    steps, step_s, between_s = d("zipage_engine_steps_total"), d("zipage_engine_step_seconds_total"), d("zipage_engine_between_steps_seconds_total")
    per_step = lambda x: 1e3 * x / steps if steps and x is not None else ""
    row = {"label": a.label, "rate": "inf" if math.isinf(rate) else rate, "max_concurrency": a.max_concurrency, "requests": len(recs),
           "finished": len(fin), "cut": cut, "failed": len(failed), "no_first_token": len(no_first), "duration_s": end, "window_s": window, "output_tok_s": out_tps,
           "output_tok_source": src, "request_s": len(fin) / end, "ttft_mean_ms": mean(ttft), "ttft_p50_ms": pct(ttft, 50),
           "ttft_p90_ms": pct(ttft, 90), "ttft_p99_ms": pct(ttft, 99), "tpot_mean_ms": mean(tpot), "tpot_p50_ms": pct(tpot, 50),
           "tpot_p90_ms": pct(tpot, 90), "tpot_p99_ms": pct(tpot, 99), "itl_p50_ms": pct(itl, 50), "itl_p90_ms": pct(itl, 90),
           "itl_p99_ms": pct(itl, 99), "e2e_p50_s": pct(e2e, 50), "e2e_p90_s": pct(e2e, 90), "e2e_p99_s": pct(e2e, 99),
           "slo_ttft_ms": a.slo_ttft_ms or "", "slo_tpot_ms": a.slo_tpot_ms or "", "goodput_req_s": good / end,
           "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in fin), "completion_tokens": sum(r["usage"]["completion_tokens"] for r in fin),
           "engine_steps": "" if steps is None else int(steps), "engine_step_ms": per_step(step_s), "engine_between_ms": per_step(between_s)}
    for r in failed[:3]:
        print(f"serve_bench: a request failed: {r['error']}", file=sys.stderr)
    return row


async def wait_idle(a):
    """Before a rate: until the server holds no running or waiting request (/metrics), at most 60 s."""
    async with aiohttp.ClientSession() as s:
        for _ in range(600):
            run = await scrape(s, a.base_url + "/metrics", "zipage_requests_running")
            wait = await scrape(s, a.base_url + "/metrics", "zipage_requests_waiting")
            if run is None or (run == 0 and not wait):
                return
            await asyncio.sleep(0.1)
    die("the server still holds requests 60 s after the previous rate")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", default="http://127.0.0.1:8000")
    p.add_argument("--model", required=True, help="the model's name on the server")
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", ""))
    p.add_argument("--workload", required=True, help="JSON lines from `zipage bench --workload reasoning --dump-workload FILE`")
    p.add_argument("--requests", type=int, default=0, help="the first N requests of the file (default: all)")
    p.add_argument("--rates", default="inf", help="comma-separated requests/s of the Poisson arrivals, or inf (all at once); one row each")
    p.add_argument("--max-concurrency", type=int, default=0, help="at most this many requests in flight (default: no cap)")
    p.add_argument("--cutoff", type=float, default=0, help="close every open stream S seconds after the first request (a window)")
    p.add_argument("--warmup", type=float, default=0, help="with --cutoff: output tokens/s counts from W seconds on")
    p.add_argument("--metric", default="zipage_generation_tokens_total", help="the server's generated-tokens counter on /metrics")
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--top-k", type=int, default=20, help="0: not sent")
    p.add_argument("--seed", type=int, default=0, help="the arrival process's seed")
    p.add_argument("--slo-ttft-ms", type=float, default=0, help="goodput: a finished request counts when its TTFT is within this")
    p.add_argument("--slo-tpot-ms", type=float, default=0, help="goodput: and its TPOT within this")
    p.add_argument("--read-timeout", type=float, default=600, help="seconds a stream may stay silent before it counts as failed")
    p.add_argument("--label", default="", help="the CSV's label column (e.g. the policy)")
    p.add_argument("--csv", required=True, help="rows are appended (the header written once)")
    a = p.parse_args()
    if a.requests < 0 or a.max_concurrency < 0 or a.cutoff < 0 or a.warmup < 0:
        die("--requests, --max-concurrency, --cutoff and --warmup must not be negative")
    if a.cutoff and a.warmup >= a.cutoff:
        die(f"--warmup {a.warmup} must be below --cutoff {a.cutoff}")
    a.base_url = a.base_url.rstrip("/")
    a.headers = {"Authorization": f"Bearer {a.api_key}"} if a.api_key else {}
    rates = [parse_rate(s) for s in a.rates.split(",")]
    reqs = load_workload(a.workload, a.requests)
    new = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
    for rate in rates:
        asyncio.run(wait_idle(a))
        recs, marks = asyncio.run(run_rate(a, reqs, rate))
        row = summarize(a, rate, recs, marks)
        with open(a.csv, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            if new:
                w.writeheader()
                new = False
            w.writerow({k: f"{v:.4g}" if isinstance(v, float) else v for k, v in row.items()})
        print(f"{a.label or 'server'} rate {row['rate']}: {row['finished']}/{row['requests']} finished ({row['cut']} cut, {row['failed']} failed) "
              f"in {row['duration_s']:.1f} s; output {row['output_tok_s']:.1f} tok/s ({row['output_tok_source']}); "
              f"TTFT p50 {row['ttft_p50_ms'] or 0:.1f} ms, TPOT p50 {row['tpot_p50_ms'] or 0:.2f} ms, ITL p99 {row['itl_p99_ms'] or 0:.1f} ms", flush=True)
        if row["failed"]:
            sys.exit(1)
    asyncio.run(wait_idle(a))  # the last rate's closed streams ended on the server too


if __name__ == "__main__":
    main()
