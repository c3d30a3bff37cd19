#!/usr/bin/env python3
"""The preflight's connections (issue #30): against a server built on Python's
http.server (HTTP/1.1 keep-alive, Nagle's algorithm left on, as llama.cpp's
server leaves it), the first measured request must not go out on the
connection the GET /v1/models check used: that connection is closed before the
first measured request arrives.  The server's own log of its connections (by
the client's port) is the evidence.  Prints TAP."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_preflight_")
LOG = []
LOCK = threading.Lock()


def log(what, port):
    with LOCK:
        LOG.append((what, port, time.monotonic_ns()))


class Peer(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server as a few lines of http.server: the model
    list, and chat completions streamed as server-sent events, each event
    its own small write (so Nagle's algorithm holds the later ones back
    until the client acknowledges)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        log("open", self.client_address[1])

    def finish(self):
        super().finish()
        log("close", self.client_address[1])

    def do_GET(self):
        log("GET " + self.path, self.client_address[1])
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        log("POST " + self.path, self.client_address[1])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(4):
            ev = "data: %s\n\n" % json.dumps({"choices": [{"index": 0, "delta": {"content": "w%d " % i}}]})
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev.encode()))
        ev = b"data: [DONE]\n\n"
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(ev), ev))


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Peer)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
rec = os.path.join(tmp, "records.jsonl")
try:
    p = subprocess.run([TOKPERF, "profile", "--service-kind", "openai", "-u", "http://127.0.0.1:%d/v1" % port, "-m", "m",
                        "--concurrency", "1", "--request-count", "4", "--no-artifacts", "--records", rec],
                       capture_output=True, text=True, timeout=60 * SCALE)
    check(p.returncode == 0 and "4 succeeded, 0 failed" in p.stderr, "the run against http.server succeeds",
          p.stderr[-800:])
    time.sleep(0.2)  # the server's handler threads log the last close
    with LOCK:
        events = list(LOG)
    gets = [e for e in events if e[0].startswith("GET /v1/models")]
    posts = [e for e in events if e[0].startswith("POST ")]
    check(len(gets) == 1 and len(posts) == 4, "the peer saw the model list check and the 4 requests",
          "\n".join(map(str, events)))
    if gets and posts:
        first = posts[0]
        pre = gets[0][1]
        check(first[1] != pre, "the first measured request goes out on a connection of its own (port %d, the "
              "check's was %d)" % (first[1], pre), "\n".join(map(str, events)))
        closed = [e for e in events if e[0] == "close" and e[1] == pre]
        check(closed and closed[0][2] < first[2], "the check's connection was closed before the first measured "
              "request arrived", "\n".join(map(str, events)))
        check(all(e[1] != pre for e in posts), "no measured request used the check's connection")
    # What it is for: the first request's time to first token is not held
    # back by the check's connection (printed, not judged: it depends on
    # the kernel's delayed ACK and the machine's load).
    recs = [json.loads(line) for line in open(rec)] if os.path.exists(rec) else []
    ttft = ["%.1f" % ((r["first_token_ns"] - r["sent_ns"]) / 1e6) for r in recs if r["ok"]]
    print("# time to first token per request (ms): %s" % ", ".join(ttft))
finally:
    server.shutdown()
    subprocess.run(["rm", "-rf", tmp])
done()
