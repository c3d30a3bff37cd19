#!/usr/bin/python3
"""Fault injection on the mock's HTTP/1.1 side, seen by http.client and raw
sockets: every fault kind asked for per request (JSON field tokperf_fault or
the X-Tokperf-Fault header), the seeded server-wide draw, and the
connection-level faults on the HTTP port.  Each check also reads what the
server counted.

usage: test_mock_http_faults.py PATH/TO/mock_harness

Output: TAP.
"""

import http.client
import json
import socket
import sys
import time

sys.dont_write_bytecode = True
import mock_common as mc  # noqa: E402

SCALE = mc.SCALE
OUT = 6


def post(port, path, body, headers=None, timeout=10.0):
    """One request on a fresh connection; returns (status, headers, body,
    error) where error names an exception that ended the read."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout * SCALE)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    try:
        c.request("POST", path, body=json.dumps(body).encode(), headers=h)
        r = c.getresponse()
    except Exception as e:  # noqa: BLE001 - the test classifies it
        c.close()
        return None, None, b"", type(e).__name__
    err = None
    try:
        b = r.read()
    except http.client.IncompleteRead as e:
        b, err = e.partial, "IncompleteRead"
    except Exception as e:  # noqa: BLE001
        b, err = b"", type(e).__name__
    c.close()
    return r.status, r, b, err


def datas(body):
    out = []
    for block in body.split(b"\n\n"):
        line = block.split(b"\n")[0]
        if line.startswith(b"data:"):
            v = line[5:]
            out.append(v[1:] if v.startswith(b" ") else v)
    return out


def raw(port, req, until=None, timeout=3.0):
    """Sends a request on a raw socket; reads until `until` is seen, the
    server closes, or the timeout.  Returns (bytes, how) with how one of
    'eof', 'reset', 'timeout', 'until'."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout * SCALE)
    s.sendall(req)
    got, how = b"", "eof"
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            got += d
            if until and until in got:
                how = "until"
                break
    except socket.timeout:
        how = "timeout"
    except ConnectionResetError:
        how = "reset"
    s.close()
    return got, how


def raw_post(path, body, headers=b""):
    b = json.dumps(body).encode()
    return b"POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n%s\r\n%s" % (path.encode(), len(b), headers, b)


def per_request(tap, h):
    port = h.http_port
    st0 = h.stats()

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x"}, {"X-Tokperf-Fault": "http_status:429:slow down"})
    j = json.loads(b or b"{}")
    tap.check(s == 429 and j.get("error", {}).get("message") == "slow down" and j["error"].get("code") == 429,
              "X-Tokperf-Fault http_status:429: 429 with the vLLM error body", b)
    s, r, b, _ = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                     "tokperf_fault": "grpc_status:14:down"})
    tap.check(s == 503 and b"down" in b, "tokperf_fault grpc_status:14 in the body: 503", b)
    s, r, b, _ = post(port, "/v2/models/ensemble/generate", {"text_input": "x", "max_tokens": 4,
                                                             "parameters": {"tokperf_fault": "http_status:500:kaput"}})
    tap.check(s == 500 and json.loads(b or b"{}").get("error") == "kaput",
              "generate, fault in parameters: 500 {\"error\":\"kaput\"}", b)

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "http_status:503",
                                                "tokperf_fault_after": 2})
    ds = datas(b)
    err = json.loads(ds[2]) if len(ds) > 2 else {}
    tap.check(s == 200 and len(ds) == 4 and "error" in err and err["error"].get("code") == 503 and ds[3] == b"[DONE]",
              "http_status after 2 tokens of a stream: 2 chunks, an error event, [DONE]", b[:600])

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "tokperf_fault": "inband_error:engine died"})
    tap.check(s == 500 and b"engine died" in b, "inband_error, not streaming: 500 with the message", b)
    s, r, b, _ = post(port, "/v2/models/vllm_model/generate_stream",
                      {"text_input": "x", "parameters": {"stream": True, "tokperf_fault": "inband_error:gone",
                                                         "tokperf_fault_after": 1}})
    ds = datas(b)
    tap.check(s == 200 and len(ds) == 2 and json.loads(ds[1]) == {"error": "gone"},
              "inband_error after 1 on generate_stream: one event, then data: {\"error\": ...}", b)

    # stall: the stream's head comes, then nothing.
    t0 = time.monotonic()
    got, how = raw(port, raw_post("/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "stall"}),
                   timeout=0.5)
    tap.check(how == "timeout" and got.startswith(b"HTTP/1.1 200") and b"data:" not in got,
              "stall: the head, then silence until the client gives up", got[:200])

    # trickle: every byte about 1 ms after the previous one.
    t0 = time.monotonic()
    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "tokperf_fault": "trickle"})
    dt = time.monotonic() - t0
    n = len(b) + 100  # the head is trickled as well
    tap.check(s == 200 and json.loads(b).get("usage", {}).get("completion_tokens") == OUT and dt >= 0.8e-3 * n,
              "trickle: the whole answer, one byte per ms (%d bytes, %.2f s)" % (n, dt))

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "sse_garbage",
                                                "tokperf_fault_after": 1})
    ds = datas(b)
    bad = []
    for d in ds[:-1]:
        try:
            json.loads(d)
        except ValueError:
            bad.append(d)
    tap.check(s == 200 and len(ds) == 3 and len(bad) == 1 and ds[-1] == b"[DONE]",
              "sse_garbage after 1: a good chunk, an event that is not JSON, [DONE]", b)
    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "tokperf_fault": "malformed"})
    try:
        json.loads(b)
        parsed = True
    except ValueError:
        parsed = False
    tap.check(s == 200 and not parsed and int(r.getheader("Content-Length")) == len(b),
              "malformed, not streaming: 200 with a body that is not JSON (length right)", b)

    # oversize: a chunk declaring 5,000,000 bytes (hex 4c4b40) carries them.
    got, how = raw(port, raw_post("/v1/completions", {"prompt": "x", "stream": True,
                                                      "tokperf_fault": "oversize:5000000"}), timeout=2)
    head, _, body = got.partition(b"\r\n\r\n")
    tap.check(body.startswith(b"4c4b40\r\ndata: xxx") and len(body) >= 5000000 and how == "timeout",
              "oversize:5000000 on a stream: one chunk of 5,000,000 bytes ('data: xxx...'), then silence",
              "%r... %d bytes, %s" % (body[:20], len(body), how))
    got, how = raw(port, raw_post("/v1/completions", {"prompt": "x", "tokperf_fault": "oversize"}),
                   until=b"\r\n\r\n", timeout=2)
    tap.check(b"Content-Length: 83886080\r\n" in got, "oversize, not streaming: Content-Length 80 MiB", got[:300])

    s, r, b, _ = post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "stream": True,
                                                     "tokperf_fault": "invalid_utf8", "tokperf_fault_after": 1})
    ds = datas(b)
    tap.check(s == 200 and len(ds) == OUT + 2 and b'"content":"\xff\xfe' in ds[2] and
              all(b"\xff" not in d for i, d in enumerate(ds) if i != 2),
              "invalid_utf8 after 1: the second content chunk starts with bytes ff fe", ds[:3])

    s2 = socket.create_connection(("127.0.0.1", port), timeout=5 * SCALE)
    s2.sendall(raw_post("/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "endless"}))
    buf = b""
    while buf.count(b"data: {") < 5 * OUT:
        d = s2.recv(65536)
        if not d:
            break
        buf += d
    s2.close()
    tap.check(buf.count(b"data: {") >= 5 * OUT, "endless: %d chunks and more (output_tokens %d)" % (5 * OUT, OUT))

    got, how = raw(port, raw_post("/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "close_conn",
                                                      "tokperf_fault_after": 2}))
    tap.check(how == "eof" and got.count(b"data: {") == 2 and not got.endswith(b"0\r\n\r\n"),
              "close_conn after 2: two chunks, then FIN without the last chunk", got[-200:])
    got, how = raw(port, raw_post("/v1/completions", {"prompt": "x", "stream": True, "tokperf_fault": "rst_stream",
                                                      "tokperf_fault_after": 1}))
    tap.check(how == "reset", "rst_stream after 1 on HTTP: the connection is reset", how)

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "tokperf_fault": "goaway"})
    tap.check(s == 200 and r.getheader("Connection") == "close" and json.loads(b).get("choices"),
              "goaway on HTTP: a whole answer with Connection: close", b)

    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x", "tokperf_fault": "boom"})
    tap.check(s == 400 and b"unknown fault kind 'boom'" in b, "an unknown fault kind: 400 naming it", b)
    s, r, b, _ = post(port, "/v1/completions", {"prompt": "x"}, {"X-Tokperf-Fault-After": "-3"})
    tap.check(s == 400, "a negative X-Tokperf-Fault-After: 400", b)

    st = h.wait_stats(lambda x: x["faults_injected"] - st0["faults_injected"] >= 17)
    tap.equal(st["faults_injected"] - st0["faults_injected"], 17, "server counted the 17 injected faults")


def drawn(tap, exe):
    seed, rate, n = 3, 0.5, 24
    h = mc.Harness(exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, seed=seed, fault_kind="http_status:503:drawn",
                   fault_rate=rate)
    try:
        c = http.client.HTTPConnection("127.0.0.1", h.http_port, timeout=10 * SCALE)
        failed = []
        for i in range(n):
            c.request("POST", "/v1/completions", body=json.dumps({"prompt": "x"}).encode())
            r = c.getresponse()
            r.read()
            if r.status != 200:
                failed.append(i)
        c.close()
        want = [i for i in range(n) if mc.fault_drawn(seed, i, rate)]
        tap.check(failed == want and 0 < len(want) < n,
                  "HTTP, fault_rate 0.5, seed 3: exactly the drawn requests get 503 (%d of %d)" % (len(want), n),
                  "failed %r\nwant   %r" % (failed, want))
        st = h.stats()
        tap.check(st["connections"] == 1 and st["faults_injected"] == len(want),
                  "errors keep the connection alive; every drawn fault counted")
    finally:
        h.finish(tap, "drawn faults")


def connections(tap, exe):
    h = mc.Harness(exe, ttft_ms=1, itl_ms=0.5, output_tokens=2, refuse_connections=1, goaway_after_streams=2)
    try:
        port = h.http_port
        try:
            got, how = raw(port, b"GET /v2/health/live HTTP/1.1\r\n\r\n", timeout=2)
            reset = how == "reset" or got == b""
        except ConnectionResetError:
            reset = True
        tap.check(reset, "refuse_connections 1 on the HTTP port: the first connection is reset")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * SCALE)
        closes = []
        for _ in range(2):
            c.request("POST", "/v1/completions", body=json.dumps({"prompt": "x"}).encode())
            r = c.getresponse()
            r.read()
            closes.append(r.getheader("Connection"))
        c.close()
        tap.equal(closes, ["keep-alive", "close"], "goaway_after_streams 2: the second answer closes the connection")
        st = h.stats()
        tap.equal((st["connections"], st["connections_refused"]), (2, 1), "HTTP connections counted, one refused")
    finally:
        h.finish(tap, "HTTP connection faults")
    h = mc.Harness(exe, refuse_connections_ms=int(300 * SCALE))
    try:
        refused = False
        try:
            socket.create_connection(("127.0.0.1", h.http_port), timeout=2).close()
        except ConnectionRefusedError:
            refused = True
        time.sleep(0.4 * SCALE)
        got, how = raw(h.http_port, b"GET /v2/health/live HTTP/1.1\r\nConnection: close\r\n\r\n")
        tap.check(refused and got.startswith(b"HTTP/1.1 200"),
                  "refuse_connections_ms on the HTTP port: refused, then served")
    finally:
        h.finish(tap, "HTTP refuse window")


def main():
    if len(sys.argv) < 2:
        print("usage: test_mock_http_faults.py PATH/TO/mock_harness", file=sys.stderr)
        return 2
    exe = sys.argv[1]
    tap = mc.Tap()
    h = mc.Harness(exe, ttft_ms=2, itl_ms=1, output_tokens=OUT)
    try:
        per_request(tap, h)
    except Exception:
        tap.crashed("per-request faults")
    finally:
        h.finish(tap, "per-request HTTP faults")
    for fn in (drawn, connections):
        try:
            fn(tap, exe)
        except Exception:
            tap.crashed(fn.__name__)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
