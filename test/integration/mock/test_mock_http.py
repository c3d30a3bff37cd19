#!/usr/bin/python3
"""The mock's HTTP/1.1 side against the stdlib's http.client and raw
sockets: every endpoint, the four SSE dialects, keep-alive, pipelining,
HTTP/1.0, refused heads, and the log of true send times.

usage: test_mock_http.py PATH/TO/mock_harness

Output: TAP.
"""

import http.client
import json
import os
import socket
import sys
import time

sys.dont_write_bytecode = True
import mock_common as mc  # noqa: E402

ic = mc.ic
SCALE = mc.SCALE
OUT = 5
TTFT_MS = 30
ITL_MS = 5
PROMPT = "the water of the world is blue"  # 7 words


def events(body):
    """SSE events of a body: list of (field, value) per event."""
    out = []
    for block in body.split(b"\n\n"):
        if not block:
            continue
        line = block.split(b"\n")[0]
        if line.startswith(b":"):
            out.append((":", line[1:]))
            continue
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        out.append((field.decode(), value))
    return out


def datas(body):
    return [v for f, v in events(body) if f == "data"]


class Http:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * SCALE)

    def req(self, method, path, body=None, headers=None):
        h = {"Content-Type": "application/json"} if body is not None else {}
        h.update(headers or {})
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        t0 = time.monotonic()
        self.conn.request(method, path, body=data, headers=h)
        r = self.conn.getresponse()
        t_head = time.monotonic() - t0
        b = r.read()
        return r, b, t_head, time.monotonic() - t0

    def close(self):
        self.conn.close()


def jload(b):
    try:
        return json.loads(b)
    except ValueError:
        return None


def raw_exchange(port, data, timeout=5.0):
    """Sends bytes on a fresh socket and reads until the server closes (or the
    timeout); returns what came back."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout * SCALE)
    s.sendall(data)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    s.close()
    return got


def endpoints(tap, h):
    c = Http(h.http_port)
    n_http = 0
    r, b, _, _ = c.req("GET", "/v2/health/live")
    n_http += 1
    tap.check(r.status == 200 and b == b"", "GET /v2/health/live: 200, empty body")
    r, b, _, _ = c.req("GET", "/v2/health/ready")
    n_http += 1
    tap.check(r.status == 200 and r.getheader("Connection") == "keep-alive", "GET /v2/health/ready: 200, keep-alive")
    r, b, _, _ = c.req("GET", "/v2/models/ensemble/ready")
    n_http += 1
    tap.equal(r.status, 200, "GET /v2/models/ensemble/ready: 200")
    r, b, _, _ = c.req("GET", "/v2/models/nope/ready")
    n_http += 1
    j = jload(b)
    tap.check(r.status == 400 and j and "'nope' is not found" in j.get("error", ""),
              "ready of an unknown model: 400 {\"error\": ...}", b)
    r, b, _, _ = c.req("GET", "/v2/models/vllm_model/versions/1")
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 200 and j.get("platform") == "vllm" and
              [i["name"] for i in j.get("inputs", [])][:2] == ["text_input", "stream"],
              "GET /v2/models/vllm_model/versions/1: metadata", b[:200])
    r, b, _, _ = c.req("GET", "/v2")
    n_http += 1
    tap.check(r.status == 200 and "statistics" in (jload(b) or {}).get("extensions", []),
              "GET /v2: server metadata lists statistics")
    r, b, _, _ = c.req("GET", "/v1/models")
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 200 and j.get("object") == "list" and
              sorted(m["id"] for m in j.get("data", [])) == ["ensemble", "vllm_model"],
              "GET /v1/models lists both models")
    r, b, _, _ = c.req("GET", "/nowhere")
    n_http += 1
    tap.equal(r.status, 404, "unknown path: 404")
    r, b, _, _ = c.req("GET", "/v1/completions")
    n_http += 1
    tap.check(r.status == 405 and r.getheader("Allow"), "GET on a POST endpoint: 405 with Allow")

    # Completions, non-streaming.
    r, b, _, dt = c.req("POST", "/v1/completions", {"model": "vllm_model", "prompt": PROMPT, "max_tokens": 3})
    n_http += 1
    j = jload(b) or {}
    ch = (j.get("choices") or [{}])[0]
    u = j.get("usage") or {}
    tap.check(r.status == 200 and j.get("object") == "text_completion" and len(ch.get("text", "").split()) == OUT
              and ch.get("finish_reason") == "length" and u.get("prompt_tokens") == 7
              and u.get("completion_tokens") == OUT and u.get("prompt_tokens_details", {}).get("cached_tokens") == 0,
              "POST /v1/completions: %d words, usage 7 + %d, cached 0, finish length" % (OUT, OUT), b)
    tap.check(dt >= (TTFT_MS + (OUT - 1) * ITL_MS) / 1000 * 0.9, "non-streaming answer waits for the last token",
              "%.3f s" % dt)

    # Chat, streaming with usage.
    r, b, t_head, dt = c.req("POST", "/v1/chat/completions",
                             {"messages": [{"role": "system", "content": "be brief"},
                                           {"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                              "stream": True, "stream_options": {"include_usage": True}})
    n_http += 1
    ds = datas(b)
    objs = [jload(d) for d in ds[:-1]]
    tap.check(r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
              and r.getheader("Transfer-Encoding") == "chunked", "chat stream: 200, text/event-stream, chunked")
    tap.check(len(ds) == OUT + 3 and ds[-1] == b"[DONE]", "chat stream: role + %d chunks + usage + [DONE]" % OUT,
              "%d events" % len(ds))
    if len(objs) == OUT + 2 and all(objs):
        d0 = objs[0]["choices"][0]["delta"]
        tap.check(d0 == {"role": "assistant", "content": ""}, "chat stream: role-only first chunk", d0)
        texts = [o["choices"][0]["delta"].get("content") for o in objs[1:OUT + 1]]
        tap.check(all(t and t.startswith(" ") for t in texts), "chat stream: one ' word' per chunk", texts)
        fins = [o["choices"][0]["finish_reason"] for o in objs[1:OUT + 1]]
        tap.check(fins == [None] * (OUT - 1) + ["length"], "chat stream: finish_reason on the last text chunk")
        ids = {o["id"] for o in objs}
        tap.check(len(ids) == 1 and ids.pop().startswith("chatcmpl-") and "usage" not in objs[1],
                  "chat stream: one chatcmpl- id; vLLM chat chunks have no usage key")
        u = objs[-1].get("usage", {})
        tap.check(objs[-1]["choices"] == [] and u.get("prompt_tokens") == 9 and u.get("completion_tokens") == OUT
                  and u.get("total_tokens") == 9 + OUT,
                  "chat stream: usage chunk, prompt words of all messages (9)", objs[-1])
    else:
        tap.check(False, "chat stream: chunks parse as JSON", b[:500])

    r, b, _, _ = c.req("POST", "/v1/completions", {"prompt": PROMPT, "stream_options": {"include_usage": True}})
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 400 and j.get("error", {}).get("type") == "BadRequestError" and j["error"].get("code") == 400,
              "stream_options without stream: 400, vLLM error shape", b)
    r, b, _, _ = c.req("POST", "/v1/completions", {"model": "gpt-9", "prompt": "x"})
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 404 and j.get("error", {}).get("type") == "NotFoundError" and "gpt-9" in j["error"]["message"],
              "unknown model: 404 NotFoundError", b)
    r, b, _, _ = c.req("POST", "/v1/chat/completions", b"{not json")
    n_http += 1
    tap.equal(r.status, 400, "a body that is not JSON: 400")

    # Triton generate.
    r, b, _, _ = c.req("POST", "/v2/models/ensemble/generate", {"text_input": PROMPT, "max_tokens": 3})
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 200 and j.get("model_name") == "ensemble" and j.get("model_version") == "1"
              and j.get("text_output", "").startswith(PROMPT) and len(j["text_output"].split()) == 7 + OUT
              and "id" not in j, "generate (ensemble): prompt + %d words, no id" % OUT, b)
    r, b, _, _ = c.req("POST", "/v2/models/vllm_model/generate",
                       {"id": "g1", "text_input": PROMPT, "parameters": {"max_tokens": 3, "exclude_input_in_output": True}})
    n_http += 1
    j = jload(b) or {}
    tap.check(r.status == 200 and j.get("id") == "g1" and len(j.get("text_output", "").split()) == OUT,
              "generate (vllm, parameters object): id echoed, prompt excluded", b)
    r, b, _, _ = c.req("POST", "/v2/models/ensemble/generate", {"text_input": PROMPT})
    n_http += 1
    tap.check(r.status == 400 and "max_tokens" in (jload(b) or {}).get("error", ""),
              "generate (ensemble) without max_tokens: 400", b)
    r, b, _, _ = c.req("POST", "/v2/models/ensemble/generate", {"text_input": PROMPT, "max_tokens": 3, "stream": True})
    n_http += 1
    tap.check(r.status == 400 and "generate stream" in (jload(b) or {}).get("error", ""),
              "generate with stream=true: 400, use generate_stream", b)
    r, b, _, _ = c.req("POST", "/v2/models/ensemble/generate_stream",
                       {"id": "s1", "text_input": PROMPT, "max_tokens": 3, "stream": True})
    n_http += 1
    ds = datas(b)
    js = [jload(d) for d in ds]
    tap.check(r.status == 200 and len(ds) == OUT and all(j and j.get("id") == "s1" and j["model_name"] == "ensemble"
                                                       and j["text_output"].startswith(" ") for j in js),
              "generate_stream: %d events with the id, no [DONE]" % OUT, b[:300])
    r, b, _, _ = c.req("POST", "/v2/models/vllm_model/generate_stream", {"text_input": PROMPT})
    n_http += 1
    ds = datas(b)
    tap.check(r.status == 200 and len(ds) == 1 and len((jload(ds[0]) or {}).get("text_output", "").split()) == 7 + OUT,
              "generate_stream without the stream input: one event with the whole text", b[:300])
    r, b, _, _ = c.req("POST", "/v2/models/nope/generate", {"text_input": "x"})
    n_http += 1
    tap.equal(r.status, 404, "generate on an unknown model: 404")
    c.close()
    st = h.stats()
    tap.check(st["http_requests"] == n_http and st["connections"] == 1,
              "server counted %d HTTP requests on one keep-alive connection" % n_http,
              "stats %r" % st)
    return n_http


def wire(tap, h):
    port = h.http_port
    # Pipelining: two requests in one write, two answers in order.
    got = raw_exchange(port, b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
                             b"GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n")
    tap.check(got.count(b"HTTP/1.1 200 OK") == 2 and got.index(b"Content-Length: 0") < got.index(b"\"object\":\"list\"")
              and b"Connection: close" in got, "pipelined requests: answered in order, then closed", got[:300])
    # HTTP/1.0: no keep-alive by default; a stream is close-delimited.
    got = raw_exchange(port, b"GET /v2/health/ready HTTP/1.0\r\n\r\n")
    tap.check(got.startswith(b"HTTP/1.1 200") and b"Connection: close" in got, "HTTP/1.0: answered, then closed")
    body = json.dumps({"prompt": "a b", "stream": True}).encode()
    got = raw_exchange(port, b"POST /v1/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    head, _, rest = got.partition(b"\r\n\r\n")
    tap.check(b"Transfer-Encoding" not in head and len(datas(rest)) == OUT + 1 and datas(rest)[-1] == b"[DONE]",
              "HTTP/1.0 stream: close-delimited, not chunked", got[:400])
    # Refused heads.
    got = raw_exchange(port, b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n")
    tap.check(got.startswith(b"HTTP/1.1 400") and b"Connection: close" in got, "malformed head: 400 and close")
    got = raw_exchange(port, b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    tap.check(got.startswith(b"HTTP/1.1 411"), "chunked request body: 411")
    got = raw_exchange(port, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    tap.check(got.startswith(b"HTTP/1.1 505"), "h2c preface on the HTTP port: 505")
    got = raw_exchange(port, b"GET / HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n")
    tap.check(got.startswith(b"HTTP/1.1 431"), "head over 64 KiB: 431")
    # A head that trickles in byte by byte is still answered.
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * SCALE)
    for ch in b"GET /v2/health/live HTTP/1.1\r\nHost: y\r\n\r\n":
        s.sendall(bytes([ch]))
    got = s.recv(1000)
    s.close()
    tap.check(got.startswith(b"HTTP/1.1 200"), "a head sent one byte at a time is answered")


def timing_and_log(tap, exe, tmp):
    log = os.path.join(tmp, "http.jsonl")
    ttft_ms, itl_ms = 50, 20
    h = mc.Harness(exe, ttft_ms=ttft_ms, itl_ms=itl_ms, output_tokens=OUT, prefill_us_per_token=0,
                   prefill_queue_ms=0, itl_us_per_seq=0, log_path=log)
    try:
        s = socket.create_connection(("127.0.0.1", h.http_port), timeout=5 * SCALE)
        body = json.dumps({"prompt": PROMPT, "stream": True}).encode()
        t0 = time.monotonic()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        arrivals = []
        buf = b""
        while not buf.endswith(b"0\r\n\r\n"):
            d = s.recv(65536)
            if not d:
                break
            now = time.monotonic() - t0
            arrivals += [now] * d.count(b"data: {")
            buf += d
        s.close()
        tap.check(len(arrivals) == OUT and arrivals[0] >= ttft_ms / 1000 * 0.95,
                  "stream: first token after the configured TTFT (%.1f ms)" % (arrivals[0] * 1000 if arrivals else -1))
        # Tokens arrive spread out, not in one piece at the end (a loaded
        # machine may delay one of them, so the whole span is checked).
        span = arrivals[-1] - arrivals[0] if arrivals else 0
        tap.check(span >= 0.5 * (OUT - 1) * itl_ms / 1000, "stream: tokens arrive over ~%d ms, as they are made"
                  % ((OUT - 1) * itl_ms), arrivals)
    finally:
        h.finish(tap, "timing and log")
    lines = [json.loads(x) for x in open(log)]
    reqs = [x for x in lines if x["ev"] == "request"]
    resps = [x for x in lines if x["ev"] == "response"]
    tap.check(len(reqs) == 1 and reqs[0]["id"].startswith("cmpl-") and reqs[0]["prompt_tokens"] == 7,
              "log: the HTTP request with its cmpl- id and prompt words", reqs)
    ts = [x["t_ns"] for x in resps]
    gaps = sorted((b - a) / 1e6 for a, b in zip(ts, ts[1:]))
    ttft = (ts[0] - reqs[0]["t_ns"]) / 1e6 if ts and reqs else -1
    tap.check(len(resps) == OUT and ts == sorted(ts) and resps[-1]["final"] and ttft_ms <= ttft < ttft_ms + 20 * SCALE
              and abs(gaps[len(gaps) // 2] - itl_ms) < 5 * SCALE,
              "log: %d responses with send times, the first at TTFT, the median gap the ITL" % OUT,
              "ttft %.2f ms, gaps %r" % (ttft, gaps))


DIALECT_CASES = [
    # dialect, check(body bytes) -> (ok, description)
    ("tgi", lambda b: (b.startswith(b"data:{") and b"data: " not in b and
                       all(json.loads(d)["choices"][0]["delta"].get("role") == "assistant"
                           for d in datas(b)[:-2]) and datas(b)[-1] == b"[DONE]",
                       "tgi: 'data:' without a space, role in every delta, usage chunk, [DONE]")),
    ("llamacpp", lambda b: (list(json.loads(datas(b)[0]).keys())[0] == "choices" and
                            "timings" in json.loads(datas(b)[-3]) and
                            json.loads(datas(b)[-3])["choices"][0]["finish_reason"] == "length" and
                            json.loads(datas(b)[-2])["choices"] == [],
                            "llamacpp: choices first, finish chunk with timings, usage chunk")),
    ("trtllm-serve", lambda b: (b.split(b"\n\n")[0].endswith(b"} ") and b"null" not in b and
                                "content" not in json.loads(datas(b)[0])["choices"][0]["delta"],
                                "trtllm-serve: role chunk without content and a trailing space, no nulls")),
]


def dialects(tap, exe):
    for name, check in DIALECT_CASES:
        h = mc.Harness(exe, ttft_ms=2, itl_ms=1, output_tokens=3, http_dialect=name)
        try:
            c = Http(h.http_port)
            r, b, _, _ = c.req("POST", "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": "hi"}], "stream": True,
                                "stream_options": {"include_usage": True}})
            try:
                ok, desc = check(b)
            except Exception as e:  # a shape the check cannot even read
                ok, desc = False, "%s: stream shape (%s)" % (name, e)
            tap.check(r.status == 200 and ok, desc, b[:600])
            r, b, _, _ = c.req("POST", "/v1/completions", {"model": "any-name", "prompt": "x", "stream_options": {}})
            if name == "trtllm-serve":
                tap.check(r.status in (400, 404) and (jload(b) or {}).get("object") == "error",
                          "trtllm-serve: flat error object", b)
            else:
                tap.equal(r.status, 200, "%s: any model name is served" % name)
            c.close()
        finally:
            h.finish(tap, "dialect " + name)
    # TGI's keep-alive comments, made frequent for the test.
    h = mc.Harness(exe, ttft_ms=60, itl_ms=1, output_tokens=2, http_dialect="tgi", sse_keepalive_ms=10)
    try:
        c = Http(h.http_port)
        r, b, _, _ = c.req("POST", "/v1/completions", {"prompt": "x", "stream": True})
        evs = events(b)
        comments = [e for e in evs if e[0] == ":"]
        tap.check(len(comments) >= 3 and evs[0][0] == ":", "tgi: keep-alive comments while the first token is due",
                  "%d comments" % len(comments))
        c.close()
    finally:
        h.finish(tap, "tgi keep-alive")
    try:
        h = mc.Harness(exe, http_dialect="sglang")
        h.kill()
        tap.check(False, "an unknown dialect is refused at start")
    except RuntimeError as e:
        tap.check("unknown HTTP dialect 'sglang'" in str(e), "an unknown dialect is refused at start, by name", e)


def main():
    if len(sys.argv) < 2:
        print("usage: test_mock_http.py PATH/TO/mock_harness", file=sys.stderr)
        return 2
    exe = sys.argv[1]
    tap = mc.Tap()
    tmp = ic.make_tmpdir("tp-mock-http-")
    try:
        h = mc.Harness(exe, ttft_ms=TTFT_MS, itl_ms=ITL_MS, output_tokens=OUT)
        try:
            endpoints(tap, h)
            wire(tap, h)
        except Exception:
            tap.crashed("endpoints")
        finally:
            h.finish(tap, "endpoints")
        for fn, args in ((timing_and_log, (tap, exe, tmp)), (dialects, (tap, exe))):
            try:
                fn(*args)
            except Exception:
                tap.crashed(fn.__name__)
    finally:
        ic.remove_tmpdir(tmp)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
