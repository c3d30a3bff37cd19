#!/usr/bin/env python3
"""Request ids (docs/metrics.md, "Request ids") against the built-in mock,
on OpenAI chat, Triton generate (HTTP) and Triton gRPC, with --traceparent:
every record carries the id it was sent with and the server's own id, and
both match the mock's log of what it received and answered; the
traceparent is well formed (W3C Trace Context, version 00), unique per
request, and the one the mock received; the AIPerf and tokperf per-request
exports carry the ids.  Then, against a small Python server whose chunks
carry no id, the server's id is the x-request-id header it answered with;
and without --traceparent nothing is sent.  Prints TAP."""
import glob
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_reqids_")
TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01")


def load_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def run(kind, extra):
    d = os.path.join(tmp, kind)
    os.makedirs(d, exist_ok=True)
    log, recs, art = (os.path.join(d, n) for n in ("mock.jsonl", "records.jsonl", "art"))
    cmd = [TOKPERF, "profile", "--mock", "--service-kind", kind, "--mock-ttft-ms", "5", "--mock-itl-ms", "1",
           "--max-tokens", "8", "--concurrency", "4", "--request-count", "24", "--warmup-request-count", "2",
           "--mock-log", log, "--records", recs, "--artifact-dir", art] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    return p, load_jsonl(recs), load_jsonl(log), art


for kind, server_id_is in (("openai", "the mock's completion id"), ("triton-generate", "the id echoed"),
                           ("triton", "the response id")):
    p, recs, log, art = run(kind, ["--traceparent"])
    check(p.returncode == 0 and len(recs) == 26, "%s: the run (%d records)" % (kind, len(recs)), p.stderr[-1500:])
    reqs = [e for e in log if e.get("ev") == "request"]
    by_id = {}
    for e in reqs:
        by_id.setdefault(e.get("request_id"), []).append(e)
    with_ids = [r for r in recs if isinstance(r.get("request_id"), str) and r["request_id"] and
                isinstance(r.get("server_request_id"), str) and r["server_request_id"]]
    check(recs and len(with_ids) == len(recs), "%s: 100%% of records carry both ids (%d of %d)" %
          (kind, len(with_ids), len(recs)), [r.get("request_id") for r in recs if r not in with_ids][:5])
    check(all(r["request_id"] == r["id"] for r in recs) and len({r["request_id"] for r in recs}) == len(recs),
          "%s: the id sent is the record's id, unique" % kind)
    check(len(reqs) == len(recs) and all(len(by_id.get(r["request_id"], [])) == 1 for r in recs),
          "%s: the mock logged each id it received once (%d requests)" % (kind, len(reqs)),
          [r["request_id"] for r in recs if len(by_id.get(r["request_id"], [])) != 1][:5])
    bad = [(r["request_id"], r["server_request_id"], by_id.get(r["request_id"], [{}])[0].get("id"))
           for r in recs if by_id.get(r["request_id"], [{}])[0].get("id") != r["server_request_id"]]
    check(recs and not bad, "%s: the server id is %s, as the mock logged it" % (kind, server_id_is), bad[:5])
    if kind == "openai":
        check(all(r["server_request_id"].startswith("chatcmpl-") and r["server_request_id"] != r["request_id"]
                  for r in recs), "openai: the server's id is its own, not the one sent")
    tps = [TRACEPARENT.fullmatch(r.get("traceparent") or "") for r in recs]
    check(recs and all(tps) and all(int(m.group(1), 16) and int(m.group(2), 16) for m in tps),
          "%s: every record's traceparent is version 00, sampled, ids not zero" % kind,
          [r.get("traceparent") for r in recs][:3])
    check(len({m.group(1) for m in tps if m}) == len(recs), "%s: a trace id of its own per request" % kind)
    bad = [r["request_id"] for r in recs
           if by_id.get(r["request_id"], [{}])[0].get("traceparent") != r.get("traceparent")]
    check(recs and not bad, "%s: the traceparent is the one the mock received" % kind, bad[:5])
    # The per-request exports.
    aiperf = [x for f in glob.glob(os.path.join(art, "**", "aiperf", "profile_export.jsonl"), recursive=True)
              for x in load_jsonl(f)]
    measured = {r["request_id"] for r in recs if r.get("measured")}
    got = {x.get("metadata", {}).get("x_request_id") for x in aiperf}
    check(aiperf and got == measured, "%s: AIPerf's records name each measured request's x_request_id (%d)" %
          (kind, len(aiperf)), sorted(got ^ measured)[:5])
    resp = [x for f in glob.glob(os.path.join(art, "**", "responses.jsonl"), recursive=True) for x in load_jsonl(f)]
    server_of = {r["request_id"]: r["server_request_id"] for r in recs}
    check(resp and all(server_of.get(x.get("request_id")) == x.get("server_request_id") for x in resp),
          "%s: responses.jsonl carries both ids (%d)" % (kind, len(resp)))

# Without --traceparent: none is sent or recorded; the ids are.
p, recs, log, _ = run("openai", ["--no-artifacts"])
reqs = [e for e in log if e.get("ev") == "request"]
check(p.returncode == 0 and recs and not any("traceparent" in r for r in recs) and
      not any("traceparent" in e for e in reqs) and all(r.get("server_request_id") for r in recs),
      "without --traceparent nothing is sent; the ids still are")


# A server whose chunks carry no id: its x-request-id header is its id.
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        got = self.headers.get("x-request-id")
        Handler.seen.append((got, self.headers.get("traceparent")))
        chunks = [b'data: {"choices":[{"index":0,"delta":{"content":"a b"},"finish_reason":null}]}\n\n',
                  b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', b"data: [DONE]\n\n"]
        body = b"".join(chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "srv-" + (got or "none"))
        self.end_headers()
        self.wfile.write(body)


# The mock answers with the x-request-id it received (as vLLM does with
# --enable-request-id-headers), streamed or not, and logs it.
port = free_port()
mlog = os.path.join(tmp, "echo.jsonl")
mock = subprocess.Popen([TOKPERF, "mock", "--http-port", str(port), "--grpc-port", "0", "--log", mlog],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
echoed = []
if wait_port(port, 20 * SCALE):
    for stream in (True, False):
        body = json.dumps({"model": "vllm_model", "messages": [{"role": "user", "content": "hi"}],
                           "max_tokens": 2, "stream": stream}).encode()
        rq = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, data=body,
                                    headers={"Content-Type": "application/json",
                                             "X-Request-Id": "echo-%d" % stream})
        with urllib.request.urlopen(rq, timeout=20 * SCALE) as resp:
            resp.read()
            echoed.append(resp.headers.get("x-request-id"))
mock.terminate()
mock.wait(timeout=20 * SCALE)
logged = [e.get("request_id") for e in load_jsonl(mlog) if e.get("ev") == "request"]
check(echoed == ["echo-1", "echo-0"] and logged == ["echo-1", "echo-0"],
      "the mock echoes and logs the x-request-id it received", (echoed, logged))

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
recs_path = os.path.join(tmp, "plain.jsonl")
p = subprocess.run([TOKPERF, "profile", "--service-kind", "openai", "--url", "http://127.0.0.1:%d/v1" %
                    srv.server_address[1], "-m", "m", "--concurrency", "2", "--request-count", "6", "--traceparent",
                    "--records", recs_path, "--no-artifacts"], capture_output=True, text=True, timeout=60 * SCALE)
srv.shutdown()
recs = load_jsonl(recs_path)
check(p.returncode == 0 and len(recs) == 6, "a plain server: the run", p.stderr[-800:])
check(recs and all(r["server_request_id"] == "srv-" + r["request_id"] for r in recs),
      "its x-request-id header is the server's id when its chunks carry none",
      [(r["request_id"], r["server_request_id"]) for r in recs][:3])
sent = {s[0]: s[1] for s in Handler.seen}
check(recs and all(sent.get(r["request_id"]) == r.get("traceparent") for r in recs),
      "it received each request's x-request-id and traceparent headers", Handler.seen[:3])
done()
