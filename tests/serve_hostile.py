#!/usr/bin/env python3
"""serve_hostile.py - `zipage serve` against hostile and careless clients (issue 50), over raw
sockets on loopback, each check bounded in time. The server runs with --idle-timeout 1 and an
API key (test_serve.sh starts it). What each class of probe expects:
- refused on the headers: no key (or a wrong one) with a huge declared body, a declared body over
  the limit: the answer (401, 413) comes before a byte of the body is sent;
- slow or silent clients: connections that send part of their headers, part of a declared body,
  nothing after connecting, or that leave a keep-alive connection idle, are closed after the idle
  timeout, and meanwhile /health and a completion are answered at once; a client that trickles its
  headers or body, never silent for the idle timeout, is closed at the request timeout
  (--request-timeout 3, from the connection's start or its previous answer);
- a body sent in chunks past the limit: the connection is closed, not buffered;
- a request that waits for the engine longer than the idle timeout is not idle: answered in full,
  whole or streamed (a long prefill before the first event);
- values: max_tokens near 2^31 (whole and streamed), a NUL in a prompt, a message or a stop
  string, an empty stop string, bytes after the JSON body: 400s naming the field; every error body
  is valid UTF-8 JSON, also when it quotes invalid bytes the client sent.
Usage: serve_hostile.py PORT KEY MODEL"""
import json, socket, sys, time

port, key, model = int(sys.argv[1]), sys.argv[2], sys.argv[3]
IDLE = 1.0  # the server's --idle-timeout
REQUEST = 3.0  # its --request-timeout
fails = []


def check(cond, what):
    print(("ok  " if cond else "FAIL ") + what, flush=True)
    if not cond:
        fails.append(what)


def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def head(path="/v1/completions", length=None, auth=True, extra=""):
    h = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if auth:
        h += f"Authorization: Bearer {key}\r\n"
    if length is not None:
        h += f"Content-Length: {length}\r\n"
    return (h + extra + "\r\n").encode()


def read_response(s, limit=30.0):
    """(status, headers text, body bytes) of one HTTP/1.1 response with a Content-Length; status 0 if
    the server closed the connection first."""
    s.settimeout(limit)
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            chunk = b""
        if not chunk:
            return 0, "", data
        data += chunk
    hdr, _, body = data.partition(b"\r\n\r\n")
    lines = hdr.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    n = next((int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:")), None)
    while n is not None and len(body) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, "\r\n".join(lines), body


def closed_within(s, seconds):
    """Seconds until the server closes s (reads EOF or a reset), or None if still open after `seconds`."""
    t0 = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - t0 < seconds:
        try:
            if s.recv(65536) == b"":
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - t0
    return None


def request(body, path="/v1/completions", raw=None):
    """A whole request on a fresh connection: (status, parsed JSON or None, raw body)."""
    data = raw if raw is not None else json.dumps(body).encode()
    with conn() as s:
        s.sendall(head(path, len(data)) + data)
        st, _, b = read_response(s, 120)
    try:
        j = json.loads(b.decode("utf-8"))  # strict: an error body must be valid UTF-8 JSON
    except (UnicodeDecodeError, ValueError):
        j = None
    return st, j, b


def health_fast():
    t0 = time.monotonic()
    with conn() as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        st, _, _ = read_response(s, 10)
    return st == 200 and time.monotonic() - t0 < 1.0


# ---- refused on the headers: nothing of the body is sent
for auth, want, label in ((False, 401, "no key"), (True, 413, "a key, 100 MiB declared")):
    with conn() as s:
        t0 = time.monotonic()
        s.sendall(head(length=100 << 20, auth=auth))
        st, hdr, body = read_response(s, 5)
        check(st == want and time.monotonic() - t0 < 2, f"{label}: {want} on the headers, no body sent (got {st} in {time.monotonic() - t0:.2f} s)")
with conn() as s:
    s.sendall(head(length=100 << 20, auth=False, extra="Authorization: Bearer wrong\r\n"))
    st, _, _ = read_response(s, 5)
    check(st == 401, f"a wrong key, 100 MiB declared: 401 on the headers (got {st})")

# ---- slow and silent clients are closed after the idle timeout; others are served meanwhile
slow = []
for i in range(12):
    s = conn()
    if i % 4 == 0:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHo")          # headers cut short
    elif i % 4 == 1:
        s.sendall(head(length=1000) + b'{"model": "')               # a body shorter than declared
    elif i % 4 == 2:
        pass                                                        # nothing after connecting
    else:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")        # answered, then left idle (keep-alive)
        read_response(s, 5)
    slow.append(s)
check(health_fast(), "/health answered at once while 12 slow clients hold connections")
st, j, _ = request({"model": model, "prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0})
check(st == 200 and j and j["usage"]["completion_tokens"] == 4, f"a completion served while slow clients wait (got {st})")
waits = [closed_within(s, IDLE + 4) for s in slow]
check(all(w is not None for w in waits), f"every slow client closed within {IDLE + 4:.0f} s of idling (seconds: {waits})")
for s in slow:
    s.close()

# ---- headers or a body trickled a byte every IDLE / 3 s: never idle, closed at the request timeout
# (counted from the connection's start; on a kept-alive connection, from its previous answer)
def trickled(s, first, piece):
    """Seconds from `first` sent until the server closes s while a byte of `piece` goes every IDLE / 3 s."""
    s.sendall(first)
    t0, i = time.monotonic(), 0
    try:
        while time.monotonic() - t0 < REQUEST + 4:
            s.sendall(piece[i % len(piece):i % len(piece) + 1])
            i += 1
            if closed_within(s, IDLE / 3) is not None:
                return time.monotonic() - t0
    except (BrokenPipeError, ConnectionResetError):
        return time.monotonic() - t0
    return None


endless = b"X-Pad: " + b"a" * 4000  # a header line that never ends (under the server's header size limit)
for label, first, piece, keep in (("headers", b"", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + endless, False),
                                  ("a body", head(length=1000), b" ", False),
                                  ("the next request's headers on a kept-alive connection", b"", endless, True)):
    with conn() as s:
        if keep:  # a first request trickled over 2/3 of the timeout and answered: the next one's clock starts afresh
            req, n = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 7
            for k in range(n):
                time.sleep(REQUEST * 2 / 3 / n if k else 0)
                s.sendall(req[k * len(req) // n:(k + 1) * len(req) // n])
            st, _, _ = read_response(s, 5)
            check(st == 200, f"a request trickled over {REQUEST * 2 / 3 * (n - 1) / n:.1f} s is answered (got {st})")
            first = b"GET /health HTTP/1.1\r\nHost: x\r\n"
        closed = trickled(s, first, piece)
        check(closed is not None and REQUEST - 0.5 <= closed <= REQUEST + 1,
              f"{label} trickled under the idle timeout: closed at the request timeout of {REQUEST:.0f} s (after {closed} s)")
check(health_fast(), "/health answered at once after the trickling clients")

# ---- a chunked body past the limit (8 MiB): closed as it streams in, not buffered
with conn() as s:
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.encode() +
              b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"a" * (1 << 20)
    sent, cut = 0, False
    try:
        for _ in range(16):
            s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError):
        cut = True
    cut = cut or closed_within(s, 5) is not None
    check(cut and sent < (16 << 20), f"a chunked body past 8 MiB: the connection closed after {sent >> 20} MiB sent")

# ---- waiting for the engine is not idling: a generation longer than the idle timeout
t0 = time.monotonic()
st, j, _ = request({"model": model, "prompt": [1, 2], "max_tokens": 200, "temperature": 0, "ignore_eos": True})
took = time.monotonic() - t0
check(took > IDLE and st == 200 and j["usage"]["completion_tokens"] == 200,
      f"a whole answer taking {took:.1f} s (idle timeout {IDLE:.0f} s): 200 with every token (got {st})")

# a stream whose first token comes after more than the idle timeout (a long prompt's prefill)
body = json.dumps({"model": model, "prompt": list(range(100, 4090)), "max_tokens": 4, "temperature": 0, "ignore_eos": True,
                   "stream": True}).encode()
t0 = time.monotonic()
with conn() as s:
    s.sendall(head(length=len(body)) + body)
    s.settimeout(120)
    got = b""
    while b"data: [DONE]" not in got:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
took = time.monotonic() - t0
events = [l for l in got.decode(errors="replace").split("\n") if l.startswith("data: {")]
check(took > IDLE and b"data: [DONE]" in got and len(events) >= 4,
      f"a stream whose prefill takes {took:.1f} s (idle timeout {IDLE:.0f} s): every event and [DONE] ({len(events)} events)")

# ---- values checked in their type's range; every error body valid UTF-8 JSON naming the field
big = 2147483647
cases = [
    ({"model": model, "prompt": "hi", "max_tokens": big}, "max_tokens"),
    ({"model": model, "prompt": "hi", "max_tokens": big, "stream": True}, "max_tokens"),
    ({"model": model, "prompt": "hi", "max_tokens": big - 1}, "max_tokens"),
    ({"model": model, "prompt": "a\u0000b"}, "prompt"),
    ({"model": model, "prompt": "hi", "stop": "x\u0000"}, "stop"),
    ({"model": model, "prompt": "hi", "stop": ""}, "stop"),
    ({"model": model, "prompt": "hi", "skip_special_tokens": "no"}, "skip_special_tokens"),
]
for body, param in cases:
    st, j, raw = request(body)
    e = (j or {}).get("error", {})
    check(st == 400 and e.get("param") == param and e.get("message"), f"400 naming {param} for {json.dumps(body)[:70]}: got {st} {raw[:120]!r}")
st, j, raw = request(None, path="/v1/chat/completions",
                     raw=json.dumps({"model": model, "messages": [{"role": "user", "content": "hi\u0000there"}]}).encode())
check(st == 400 and j and j["error"]["param"] == "messages", f"400 naming messages for a NUL in a message: got {st} {raw[:120]!r}")
st, j, raw = request(None, raw=json.dumps({"model": model, "prompt": "hi"}).encode() + b' {"prompt": "x"}')
check(st == 400 and j and "after its JSON value" in j["error"]["message"], f"bytes after the JSON body: 400 (got {st} {raw[:120]!r})")
st, j, raw = request(None, raw=b'{"model": "caf\xc3\x28\xff", "prompt": "hi"}')
check(st == 404 and j is not None, f"an error quoting invalid UTF-8 the client sent: valid UTF-8 JSON (got {st} {raw[:120]!r})")
check(health_fast(), "/health answered at once at the end")

print(f"serve_hostile: {len(fails)} failure(s)")
sys.exit(1 if fails else 0)
