#!/usr/bin/env python3
"""Server URLs as users write them (issue #13): the OpenAI SDK's base URL
(https://host/v1), a full endpoint URL, no path at all; --endpoint with
them; a model list that answers 501 (a warning) or 401 (an error); and one
clear message for each wrong port: https:// against plain HTTP, the OpenAI
client against a gRPC port, the gRPC client against an HTTP port.  Runs
against `tokperf mock` and a small Python server, on 127.0.0.1 only.
Prints TAP."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_urls_")
SHORT = ["--request-count", "2", "--concurrency", "1", "--artifact-dir", os.path.join(tmp, "art")]


def run(args, timeout=60):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout * SCALE, cwd=tmp)
    return p.returncode, p.stdout, p.stderr


def start_mock(*extra):
    grpc, http = free_port(), free_port()
    p = subprocess.Popen([TOKPERF, "mock", "--grpc-port", str(grpc), "--http-port", str(http), "--ttft-ms", "1",
                          "--itl-ms", "1", "--output-tokens", "4", "-q", *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not (wait_port(grpc, 10 * SCALE) and wait_port(http, 10 * SCALE)):
        p.kill()
        raise RuntimeError("the mock did not start")
    return p, grpc, http


class ModelsOnly(http.server.BaseHTTPRequestHandler):
    """Answers GET /v1/models with the status the test sets, anything else
    with 404, and keeps every request line."""
    status = 501
    seen = []

    def log_message(self, *a):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        ModelsOnly.seen.append("GET " + self.path)
        if self.path == "/v1/models":
            self.answer(ModelsOnly.status, {"error": {"message": "models list says %d" % ModelsOnly.status}})
        else:
            self.answer(404, {"error": {"message": "not here"}})

    def do_POST(self):
        ModelsOnly.seen.append("POST " + self.path)
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.answer(404, {"error": {"message": "not here"}})


succeeded = "2 succeeded, 0 failed"
mock, grpc_port, http_port = start_mock()
faulty, _, faulty_http = start_mock("--fault", "http_status:500")
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ModelsOnly)
threading.Thread(target=server.serve_forever, daemon=True).start()
py_port = server.server_address[1]
try:
    h = "127.0.0.1:%d" % http_port
    oai = ["profile", "--service-kind", "openai"] + SHORT

    # ---- the URL joins the API's path ---------------------------------------------------
    for url, more, what in [
            ("http://%s/v1" % h, [], "the OpenAI SDK's base URL (http://HOST/v1) reaches /v1/chat/completions"),
            ("http://%s/v1/" % h, ["--endpoint-type", "completions"], "base URL with a slash, completions"),
            ("http://%s/v1/chat/completions" % h, [], "a full endpoint URL is used as given"),
            ("http://%s/v1/completions" % h, ["--endpoint-type", "completions"], "full completions URL as given"),
            ("http://%s" % h, [], "no path: the default path of the endpoint type"),
            (h, [], "no scheme and no path (HOST:PORT)"),
            ("http://%s/v1" % h, ["--endpoint", "/v1/chat/completions"], "--endpoint /PATH is a path on the host"),
            ("http://%s/v1" % h, ["--endpoint", "chat/completions"], "--endpoint without '/' joins the API base"),
            ("http://%s/v1" % h, ["--endpoint", "http://%s/v1/chat/completions" % h], "--endpoint a full URL")]:
        rc, out, err = run(oai + ["-u", url] + more)
        check(rc == 0 and succeeded in err, "%s (%s %s)" % (what, url, " ".join(more)), err)
    rc, out, err = run(["profile", "--service-kind", "triton", "-i", "http", "-m", "ensemble", "-u",
                        "http://%s/v2" % h] + SHORT)
    check(rc == 0 and succeeded in err, "Triton generate: a base URL ending in /v2", err)

    rc, out, err = run(oai + ["-u", "http://%s/v1/completions" % h])
    check(rc == 2 and "'/v1/completions' names another endpoint" in err and "--endpoint-type" in err,
          "a URL naming the completions endpoint for chat: exit 2, both named", err)
    # --endpoint is checked as the URL's path is: another API's endpoint is a
    # usage error that names both (nothing is sent), a path no API names is used.
    for ep, more in [("v1/completions", ["--endpoint-type", "chat"]), ("/v1/chat/completions", ["--endpoint-type",
                     "completions"]), ("http://%s/v1/models" % h, [])]:
        rc, out, err = run(oai + ["-u", "http://%s" % h] + more + ["--endpoint", ep])
        check(rc == 2 and ("--endpoint '%s' names another endpoint than this API's" % ep) in err and
              "--endpoint-type" in err, "--endpoint %s %s: exit 2, both named" % (ep, " ".join(more)), err)
    rc, out, err = run(oai + ["-u", "http://%s" % h, "--endpoint-type", "completions", "--endpoint", "v1/completions"])
    check(rc == 0 and succeeded in err, "--endpoint naming the endpoint type's own path is used", err)
    rc, out, err = run(oai + ["-u", "ftp://%s" % h])
    check(rc == 2 and "tokperf: --url: URL" in err and "unknown scheme 'ftp'" in err, "unknown scheme: exit 2, named", err)
    rc, out, err = run(["profile", "-u", "127.0.0.1:%d/v2" % grpc_port] + SHORT)
    check(rc == 2 and "a gRPC address has no path" in err, "gRPC URL with a path: exit 2, said", err)

    # Per-request errors name the whole URL the request went to.
    records = os.path.join(tmp, "faulty.jsonl")
    rc, out, err = run(oai + ["-u", "http://127.0.0.1:%d/v1" % faulty_http, "--records", records])
    msgs = []
    if os.path.exists(records):
        with open(records) as f:
            msgs = [json.loads(line).get("error", "") or "" for line in f if line.strip()]
    want = "HTTP 500 from http://127.0.0.1:%d/v1/chat/completions" % faulty_http
    check(msgs and all(want in str(m) for m in msgs), "a failed request's message names the whole URL", msgs[:2] or err)

    # ---- the model list -------------------------------------------------------------------
    py = "http://127.0.0.1:%d/v1" % py_port
    ModelsOnly.status, ModelsOnly.seen = 501, []
    rc, out, err = run(oai + ["-u", py, "-m", "m1"])
    check("warning: GET http://127.0.0.1:%d/v1/models answered HTTP 501" % py_port in err and "m1" in err,
          "/v1/models answering 501: a warning naming the URL and the status", err)
    check("POST /v1/chat/completions" in ModelsOnly.seen, "after the 501 warning the run sends its requests",
          ModelsOnly.seen)
    rc, out, err = run(oai + ["-u", py])
    check(rc == 3 and "no model name given" in err and "HTTP 501" in err and "--model" in err,
          "501 and no --model: exit 3, asks for --model", err)
    ModelsOnly.status, ModelsOnly.seen = 401, []
    rc, out, err = run(oai + ["-u", py, "-m", "m1"])
    check(rc == 3 and "GET http://127.0.0.1:%d/v1/models was refused with HTTP 401" % py_port in err and
          "API key" in err and "--api-key-file" in err, "401: still an error, exit 3, the API key option named", err)
    check(not any(s.startswith("POST") for s in ModelsOnly.seen), "401: no request is sent", ModelsOnly.seen)
    ModelsOnly.status = 403
    rc, out, err = run(oai + ["-u", py, "-m", "m1"])
    check(rc == 3 and "HTTP 403" in err and "API key" in err, "403: still an error", err)

    nothing = free_port()
    rc, out, err = run(oai + ["-u", "http://127.0.0.1:%d/v1" % nothing])
    check(rc == 3 and "cannot connect to http://127.0.0.1:%d/v1/models" % nothing in err,
          "connection refused: still an error, the whole URL named", err)

    # A query may hold a key (?key=...): messages leave it out.
    rc, out, err = run(oai + ["-u", "http://127.0.0.1:%d/v1?key=SECRET123" % nothing])
    check(rc == 3 and "cannot connect to http://127.0.0.1:%d/v1/models" % nothing in err and "SECRET123" not in err,
          "a URL's query (which may hold a key) stays out of messages", err)
    ModelsOnly.status, ModelsOnly.seen = 501, []
    rc, out, err = run(oai + ["-u", py + "?key=SECRET123", "-m", "m1"])
    check("SECRET123" not in err and "GET /v1/models?key=SECRET123" in ModelsOnly.seen and
          "POST /v1/chat/completions?key=SECRET123" in ModelsOnly.seen,
          "the query goes with every request, never into messages", (err, ModelsOnly.seen))

    # ---- the wrong port -------------------------------------------------------------------
    rc, out, err = run(oai + ["-u", "https://%s/v1" % h])
    check(rc == 3 and "TLS handshake with https://%s/v1/models failed" % h in err and "may not speak TLS" in err
          and "http://" in err, "https:// against a plaintext port: the port may not speak TLS, use http://", err)
    rc, out, err = run(oai + ["-u", "http://127.0.0.1:%d/v1" % grpc_port])
    check(rc == 3 and "http://127.0.0.1:%d/v1/models" % grpc_port in err and "gRPC/HTTP2" in err and
          "--service-kind triton" in err, "the OpenAI client against a gRPC port: says gRPC, suggests triton", err)
    rc, out, err = run(["profile", "-u", h, "-m", "ensemble"] + SHORT)
    check(rc == 3 and "answers HTTP/1.x" in err and "an HTTP port" in err and "--service-kind openai" in err,
          "the gRPC client against an HTTP port: says HTTP/1, suggests openai", err)
finally:
    server.shutdown()
    for p in (mock, faulty):
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
done()
