#!/usr/bin/python3
"""tokperf's HTTP client (through http_driver) against aiohttp_peer.py, over
HTTP and HTTPS.  Prints TAP.

Checks what the server counted and sent against what the client measured:
texts, the arrival time of every event (both sides read CLOCK_MONOTONIC),
the role-only chat chunk not being a first token, usage, error classes, the
request bodies and headers the server received, connection reuse, TLS
verification with and without the CA, and that the API key reaches the
server as a bearer token and never appears in anything the client prints.

usage: test_http.py HTTP_DRIVER AIOHTTP_PEER
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

DRIVER, PEER = sys.argv[1], sys.argv[2]
SCALE = float(os.environ.get("TP_TEST_TIMEOUT_MULTIPLIER", "1") or 1)
KEY = "sk-tokperf-TEST-3f9a1c77"
WRONG_KEY = "sk-wrong-KEY-7b2e90"
TOKEN_DELAY_MS = 20
FIRST_DELAY_MS = 60
# Arrival may lag the server's write by scheduling noise; generous, scaled.
LAG_NS = int(40e6 * SCALE)
# ... and may precede the server's timestamp a little: the client stamps all
# bytes read in one libcurl call with the time the socket became readable,
# and libcurl reads again within the call while more bytes are there (the
# first chunk right behind the headers).  See lib/transport/tp_http.h.
EARLY_NS = int(2e6 * SCALE)

n_checks = 0
n_failed = 0
ALL_OUTPUT = []
BAD_RUNS = []


def check(cond, what, detail=None):
    global n_checks, n_failed
    n_checks += 1
    if not cond:
        n_failed += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n_checks, what))
    if not cond and detail is not None:
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)
    sys.stdout.flush()


def skip_all(reason):
    print("1..0 # SKIP " + reason)
    sys.exit(0)


try:
    import aiohttp  # noqa: F401  (the peer needs it)
except ImportError:
    skip_all("python3-aiohttp is not installed")
if not shutil.which("openssl"):
    skip_all("openssl is not installed")

# 127.0.0.1 only: no proxy from the environment may get in the way.
ENV = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
ENV["NO_PROXY"] = ENV["no_proxy"] = "127.0.0.1,localhost"
NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# The peers' own log (aiohttp tracebacks) stays out of the TAP stream.
LOG = tempfile.TemporaryFile(mode="w+")


class Peer:
    def __init__(self, *args):
        self.p = subprocess.Popen([sys.executable, PEER, "--port", "0",
                                   "--token-delay-ms", str(TOKEN_DELAY_MS),
                                   "--first-delay-ms", str(FIRST_DELAY_MS)] + list(args),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=LOG, env=ENV,
                                  text=True)
        line = self.p.stdout.readline()
        if not line.startswith("PORT "):
            self.p.kill()
            raise RuntimeError("peer did not start: %r" % line)
        self.port = int(line.split()[1])
        self.tls = "--tls-cert" in args

    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def stats(self):
        if self.tls:
            import ssl
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                 urllib.request.HTTPSHandler(context=ctx))
        else:
            opener = NO_PROXY_OPENER
        with opener.open(self.url() + "/_stats", timeout=10 * SCALE) as r:
            return json.loads(r.read())

    def requests_since(self, k):
        return self.stats()["requests"][k:]

    def stop(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()
            self.p.wait()


def drive(*args, env=None):
    """Runs the driver; returns its JSON lines grouped by kind."""
    cmd = [DRIVER] + [str(a) for a in args]
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=90 * SCALE, env=env or ENV)
    except subprocess.TimeoutExpired as e:
        ALL_OUTPUT.append(str(e.stdout or "") + str(e.stderr or ""))
        BAD_RUNS.append("%s -> timed out" % " ".join(cmd[1:5]))
        return {"timeout": True, "request": [], "stdout": "", "stderr": "timeout"}
    ALL_OUTPUT.append(cp.stdout + cp.stderr)
    if cp.returncode != 0 or cp.stderr.strip():
        BAD_RUNS.append("%s -> rc %d: %s" % (" ".join(cmd[1:5]), cp.returncode, cp.stderr.strip()[:400]))
    res = {"request": [], "stdout": cp.stdout, "stderr": cp.stderr, "rc": cp.returncode}
    for line in cp.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("kind") == "request":
            res["request"].append(o)
        else:
            res[o.get("kind")] = o
    res["request"].sort(key=lambda r: r["i"])
    return res


def loop_clean(res, what):
    check(res.get("loop_closed", {}).get("ok") is True and res.get("rc") == 0,
          "%s: the client closed its loop with no handle left" % what, res.get("stderr"))


def texts(req):
    return "".join(e["text"] for e in req["events"] if not e["reasoning"])


def server_req_for(stats_reqs, prompt_word):
    for r in stats_reqs:
        b = r.get("body") or {}
        p = b.get("prompt") or b.get("text_input") or ((b.get("messages") or [{}])[-1].get("content"))
        if p == prompt_word:
            return r
    return None


def timing_ok(client_events, server_events):
    """Each client event arrives after the server wrote it, and soon."""
    bad = []
    for i, (c, s) in enumerate(zip(client_events, server_events)):
        lag = c["t_ns"] - s["t_ns"]
        if lag < -EARLY_NS or lag > LAG_NS:
            bad.append("event %d (%s): lag %.3f ms" % (i, s["kind"], lag / 1e6))
    return bad


CLASSES = None


def cls(name):
    """Class names the driver reports for the stand-in TLS / HTTP classes."""
    return CLASSES.get(name, name) if CLASSES else name


def main():
    global CLASSES
    tmp = tempfile.mkdtemp(prefix="tokperf-http-")
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    cp = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                        capture_output=True, text=True, timeout=60)
    check(cp.returncode == 0, "openssl made a self-signed certificate for 127.0.0.1", cp.stderr)

    plain = Peer("--api-key", KEY)
    tls = Peer("--api-key", KEY, "--tls-cert", cert, "--tls-key", key)
    nomodels = Peer("--no-models")
    try:
        run_all(plain, tls, nomodels, cert, key)
        run_h2(cert, key, tmp)
    finally:
        plain.stop()
        tls.stop()
        nomodels.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    check(not BAD_RUNS, "every driver run exited 0 with nothing on stderr (sanitizers, leaks)", "\n".join(BAD_RUNS))
    joined = "\n".join(ALL_OUTPUT)
    check(KEY not in joined and WRONG_KEY not in joined,
          "no API key in anything the client printed (%d runs, %d bytes)" % (len(ALL_OUTPUT), len(joined)))
    print("1..%d" % n_checks)
    return 1 if n_failed else 0


def run_all(plain, tls, nomodels, cert, key):
    global CLASSES
    base = ["--url", plain.url(), "--api-key", KEY]

    # ---- chat streaming: role-only chunk, timing, usage, keep-alive ----------
    prompts = ["chat a", "chat b", "chat c", "chat d", "chat e", "chat f"]
    k0 = len(plain.stats()["requests"])
    args = ["--api", "openai-chat", "--model", "m1", "--max-tokens", 5, "--requests", 6, "--concurrency", 2,
            "--preflight"] + base
    for p in prompts:
        args += ["--prompt", p]
    res = drive(*args)
    CLASSES = {"tls": res["classes"]["tls"], "http_status": res["classes"]["http_status"]}
    check(res.get("preflight", {}).get("code") == "ok", "chat: preflight GET /v1/models passes", res.get("preflight"))
    reqs = res["request"]
    check(len(reqs) == 6 and all(r["class"] == "none" and r["status"] == 200 for r in reqs),
          "chat: 6 requests succeeded with HTTP 200", [(r["class"], r["message"]) for r in reqs])
    check(all(texts(r) == "tok0 tok1 tok2 tok3 tok4 " for r in reqs), "chat: every text arrived as sent",
          [texts(r) for r in reqs])
    srv = plain.requests_since(k0)
    posts = [r for r in srv if r["method"] == "POST"]
    check(len(posts) == 6, "chat: the server counted 6 inference requests", len(posts))
    timing_bad, role_bad, order_bad, final_bad, usage_bad = [], [], [], [], []
    for r in reqs:
        s = server_req_for(posts, r["prompt"])
        if s is None:
            timing_bad.append("no server record for " + r["prompt"])
            continue
        sev = [e for e in s["events"] if e["kind"] != "done"]
        cev = r["events"]
        if len(cev) != len(sev):
            timing_bad.append("%s: %d client events for %d server events" % (r["prompt"], len(cev), len(sev)))
            continue
        timing_bad += timing_ok(cev, sev)
        # The role-only chunk is a response without text; the first text is
        # the first content chunk, FIRST_DELAY_MS later.
        first_text = next(i for i, e in enumerate(cev) if e["text"])
        if not (sev[0]["kind"] == "role" and cev[0]["text"] == "" and first_text == 1 and
                cev[1]["t_ns"] - cev[0]["t_ns"] >= (FIRST_DELAY_MS - 5) * 1e6):
            role_bad.append("%s: first text event %d, gap %.1f ms" % (r["prompt"], first_text,
                                                                     (cev[1]["t_ns"] - cev[0]["t_ns"]) / 1e6))
        # Token gaps as the server spaced them: its own record of each write
        # (nominally TOKEN_DELAY_MS apart, but a loaded machine may hold the
        # server back and send two tokens together).
        gaps = [(cev[i + 1]["t_ns"] - cev[i]["t_ns"]) / 1e6 for i in range(1, 5)]
        sgaps = [(sev[i + 1]["t_ns"] - sev[i]["t_ns"]) / 1e6 for i in range(1, 5)]
        if any(g < sg - 5 for g, sg in zip(gaps, sgaps)) or max(sgaps) < TOKEN_DELAY_MS - 5:
            order_bad.append("%s: gaps %s, server's %s" % (r["prompt"], gaps, sgaps))
        if [e["final"] for e in cev] != [False] * (len(cev) - 1) + [True]:
            final_bad.append(r["prompt"])
        last = cev[-1]
        if not (last["text"] == "" and last["completion_tokens"] == 5 and last["prompt_tokens"] == 2 and
                last["cached_tokens"] == 3 and last["server_output_tokens"] == 5):
            usage_bad.append(last)
        if r["sent_ns"] == 0 or not (r["start_ns"] <= r["sent_ns"] <= s["t_recv_ns"] + LAG_NS):
            timing_bad.append("%s: sent_ns %d not between start %d and server receipt %d" % (
                r["prompt"], r["sent_ns"], r["start_ns"], s["t_recv_ns"]))
    check(not timing_bad, "chat: every event arrived within %.0f ms of the server's write" % (LAG_NS / 1e6),
          "\n".join(timing_bad))
    check(not role_bad, "chat: the role-only first chunk is not a first token", "\n".join(role_bad))
    check(not order_bad, "chat: inter-token gaps as the server spaced them (~%d ms)" % TOKEN_DELAY_MS,
          "\n".join(order_bad))
    check(not final_bad, "chat: only the last event is final", final_bad)
    check(not usage_bad, "chat: usage recorded (prompt 2, completion 5, cached 3)", usage_bad)
    body = posts[0]["body"]
    check(sorted(body) == ["max_tokens", "messages", "model", "stream", "stream_options"] and
          body["stream_options"] == {"include_usage": True} and body["model"] == "m1" and body["max_tokens"] == 5 and
          body["messages"][0]["role"] == "user",
          "chat: the body holds only model, messages, max_tokens, stream, stream_options", body)
    hdr = posts[0]["headers"]
    check(hdr.get("authorization") == "Bearer " + KEY, "chat: the API key reached the server as a bearer token")
    check(hdr.get("accept") == "text/event-stream" and hdr.get("content-type") == "application/json",
          "chat: Accept text/event-stream, Content-Type application/json", hdr)
    conns = {r["conn"] for r in posts}
    # The preflight's GET had a connection of its own, closed after it: the
    # client opened one more than the requests used, and no request used it.
    pre = {r["conn"] for r in srv if r["method"] == "GET"}
    check(len(conns) == 2 and res["summary"]["connections"] == 3 and len(pre) == 1 and not pre & conns,
          "chat: 2 in flight over HTTP/1.1 keep-alive: 2 connections for 6 requests, the preflight's apart (server "
          "%d, client %d)" % (len(conns), res["summary"]["connections"]))
    loop_clean(res, "chat")

    # ---- sessions: each keeps to one connection of its own ------------------
    # 12 requests as 4 sessions of 3 turns, 2 sessions at once: every turn of
    # a session arrives on its session's connection, and no two sessions
    # share one (without sessions, 2 connections would carry all 12).
    k0 = len(plain.stats()["requests"])
    args = ["--api", "openai-chat", "--model", "m1", "--max-tokens", 2, "--requests", 12, "--concurrency", 2,
            "--session-turns", 3] + base
    for i in range(12):
        args += ["--prompt", "session turn %d" % i]
    res = drive(*args)
    reqs = res["request"]
    posts = [r for r in plain.requests_since(k0) if r["method"] == "POST"]
    by_session = {}
    for r in reqs:
        srv_req = server_req_for(posts, r["prompt"])
        by_session.setdefault(r["session"], []).append(srv_req["conn"] if srv_req else None)
    check(len(reqs) == 12 and all(r["class"] == "none" for r in reqs) and sorted(by_session) == [1, 2, 3, 4] and
          all(len(v) == 3 for v in by_session.values()),
          "sessions: 12 turns of 4 sessions succeeded", by_session)
    check(all(None not in v and len(set(v)) == 1 for v in by_session.values()),
          "sessions: every turn of a session came over one connection", by_session)
    check(len({v[0] for v in by_session.values() if v}) == 4 and res["summary"]["connections"] == 4,
          "sessions: each session had a connection of its own (server %d, client %d)" % (
              len({v[0] for v in by_session.values() if v}), res["summary"]["connections"]))
    loop_clean(res, "sessions")

    # ---- completions: CRLF, data: without space, split writes, comments --------
    k0 = len(plain.stats()["requests"])
    res = drive("--api", "openai-completions", "--model", "m2", "--max-tokens", 4, "--prompt",
                "crlf nospace split comments", *base)
    r = res["request"][0] if res["request"] else {"events": [], "class": "?", "message": ""}
    check(r["class"] == "none" and texts(r) == "tok0 tok1 tok2 tok3 ",
          "completions: CRLF, 'data:' without space, events split across writes, comments", r)
    s = plain.requests_since(k0)[0]
    sev = [e for e in s["events"] if e["kind"] != "done"]
    check(len(r["events"]) == len(sev) and not timing_ok(r["events"], sev),
          "completions: split events timed at the arrival of their last piece", timing_ok(r["events"], sev))
    check(r["events"] and r["events"][-1]["completion_tokens"] == 4 and r["events"][-1]["final"],
          "completions: usage chunk last and final", r["events"][-1:] if r["events"] else None)
    loop_clean(res, "completions")

    # ---- non-streaming -------------------------------------------------------------
    k0 = len(plain.stats()["requests"])
    res = drive("--api", "openai-completions", "--model", "m1", "--max-tokens", 3, "--no-stream",
                "--prompt", "plain", *base)
    r = res["request"][0]
    check(r["class"] == "none" and len(r["events"]) == 1 and r["events"][0]["final"] and
          r["events"][0]["text"] == "tok0 tok1 tok2 " and r["events"][0]["completion_tokens"] == 3,
          "non-streaming completions: one final event with the text and usage", r)
    s = plain.requests_since(k0)[0]
    check(s["body"].get("stream") is False and "stream_options" not in s["body"] and
          s["headers"].get("accept") == "application/json",
          "non-streaming: stream false, no stream_options, Accept application/json", s["body"])
    lag = r["events"][0]["t_ns"] - s["events"][0]["t_ns"]
    check(-EARLY_NS <= lag <= LAG_NS, "non-streaming: the reply is timed when it arrived (lag %.2f ms)" % (lag / 1e6))

    # ---- chat with reasoning_content ------------------------------------------------
    res = drive("--api", "openai-chat", "--model", "m1", "--max-tokens", 2, "--prompt", "reason", *base)
    r = res["request"][0]
    ev = r["events"]
    reasoning = [e["text"] for e in ev if e["reasoning"]]
    first_content = next((i for i, e in enumerate(ev) if e["text"] and not e["reasoning"]), -1)
    check(reasoning == ["think0 ", "think1 "] and texts(r) == "tok0 tok1 " and first_content == 3,
          "chat: reasoning_content arrives flagged apart from the content", ev)

    # ---- deterministic length, extra inputs, extra headers, endpoint --------------
    k0 = len(plain.stats()["requests"])
    res = drive("--api", "openai-chat", "--model", "m1", "--max-tokens", 3, "--min-tokens", 3, "--prompt", "x",
                "--extra", "temperature:0", "--extra", '{"top_k":1,"stream_options":{"continuous_usage_stats":true}}',
                "--header", "X-Team: perf", "--endpoint", "/custom/path", *base)
    s = plain.requests_since(k0)[0]
    b = s["body"]
    check(res["request"][0]["class"] == "none" and s["path"] == "/custom/path",
          "endpoint override: the request went to /custom/path", s["path"])
    check(b.get("min_tokens") == 3 and b.get("ignore_eos") is True and b.get("temperature") == 0 and
          b.get("top_k") == 1 and b.get("stream_options") == {"include_usage": True, "continuous_usage_stats": True},
          "deterministic mode and extra inputs merged into the body", b)
    check(s["headers"].get("x-team") == "perf", "extra header reached the server", s["headers"])

    # ---- errors ----------------------------------------------------------------------
    res = drive("--api", "openai-chat", "--model", "m1", "--max-tokens", 5, "--requests", 7, "--concurrency", 7,
                "--prompt", "err500", "--prompt", "err400flat", "--prompt", "errstream", "--prompt", "errevent",
                "--prompt", "cut", "--prompt", "nodone", "--prompt", "notjson", *base)
    by = {r["prompt"]: r for r in res["request"]}
    r = by.get("err500", {})
    check(r.get("class") == cls("http_status") and r.get("status") == 500 and
          r.get("message", "").startswith("HTTP 500 from http://127.0.0.1:%d/v1/chat/completions: injected failure"
                                          % plain.port),
          "HTTP 500 with a JSON body: failed request with the body's message", r.get("message"))
    r = by.get("err400flat", {})
    check(r.get("class") == cls("http_status") and r.get("status") == 400 and
          "flat injected failure" in r.get("message", ""), "HTTP 400 with the flat error shape", r.get("message"))
    r = by.get("errstream", {})
    check(r.get("class") == "server_error" and "injected stream error" in r.get("message", "") and
          texts(r) == "tok0 tok1 " and any(e["error"] and "injected stream error" in e["error"] and
                                          e["error_class"] == "server_error" for e in r.get("events", [])),
          "in-stream error chunk: tokens before it kept, request failed as server_error", r)
    r = by.get("errevent", {})
    check(r.get("class") == "server_error" and "event error" in r.get("message", ""),
          "'event: error': request failed as server_error with its message", r.get("message"))
    r = by.get("cut", {})
    check(r.get("class") == "connect" and "lost" in r.get("message", "") and texts(r) == "tok0 tok1 " and
          not any(e["final"] for e in r.get("events", [])),
          "connection dropped mid-body: connect class, no final event", r)
    r = by.get("nodone", {})
    check(r.get("class") == "protocol" and "[DONE]" in r.get("message", ""),
          "stream ending without [DONE] or finish_reason: protocol error", r.get("message"))
    r = by.get("notjson", {})
    check(r.get("class") == "protocol" and any(e["bad"] for e in r.get("events", [])),
          "event data that is not JSON: protocol error, bad message flagged", r)
    loop_clean(res, "errors")

    res = drive("--api", "openai-completions", "--model", "m1", "--max-tokens", 50, "--timeout-ms", 300,
                "--prompt", "slow", *base)
    r = res["request"][0]
    dur = (r["end_ns"] - r["start_ns"]) / 1e6
    check(r["class"] == "timeout" and 250 <= dur <= 300 + 200 * SCALE,
          "request timeout: timeout class after %.0f ms" % dur, r["message"])

    # ---- cancel one request, and all of them, from on_event -------------------------
    res = drive("--api", "openai-chat", "--model", "m1", "--max-tokens", 20, "--prompt", "x", "--cancel-after", 3,
                *base)
    r = res["request"][0]
    check(r["class"] == "cancelled" and len(r["events"]) == 3 and not any(e["final"] for e in r["events"]) and
          (r["end_ns"] - r["start_ns"]) / 1e6 < FIRST_DELAY_MS + 19 * TOKEN_DELAY_MS,
          "cancel at the 3rd event: cancelled, no event after it, ended before the stream would have", r)
    res = drive("--api", "openai-completions", "--model", "m1", "--max-tokens", 20, "--requests", 3,
                "--concurrency", 3, "--prompt", "x", "--cancel-all-after", 2, *base)
    check(len(res["request"]) == 3 and all(r["class"] == "cancelled" and len(r["events"]) <= 2
                                           for r in res["request"]),
          "cancel_all: every request in flight ends cancelled", [(r["class"], len(r["events"])) for r in res["request"]])
    loop_clean(res, "cancel_all")

    # ---- API key ----------------------------------------------------------------------
    res = drive("--api", "openai-chat", "--model", "m1", "--prompt", "x", "--url", plain.url(),
                "--api-key", WRONG_KEY, "--preflight")
    p = res.get("preflight", {})
    check(p.get("code") == "ECONNECT" and "HTTP 401" in p.get("err", "") and "--api-key" in p.get("err", "") and
          "***" in p.get("err", ""), "wrong key: preflight fails with HTTP 401, the echoed key masked", p)
    res = drive("--api", "openai-chat", "--model", "m1", "--prompt", "x", "--url", plain.url(),
                "--api-key", WRONG_KEY)
    r = res["request"][0]
    check(r["class"] == cls("http_status") and r["status"] == 401 and WRONG_KEY not in r["message"],
          "wrong key: request fails with HTTP 401, message without the key", r["message"])
    res = drive("--api", "openai-chat", "--model", "m1", "--prompt", "x", "--url", plain.url(),
                "--api-key", KEY, "--header", "Authorization: Bearer other")
    check(res.get("new_failed", {}).get("code") == "EINVAL", "API key plus an Authorization header is refused",
          res.get("new_failed"))
    res = drive("--api", "openai-chat", "--model", "m1", "--url", plain.url(), "--api-key", "a\r\nX-Evil: 1")
    check(res.get("new_failed", {}).get("code") == "EINVAL" and "X-Evil" not in res.get("new_failed", {}).get("err", "x"),
          "an API key with a line break is refused without being quoted", res.get("new_failed"))

    # ---- preflight variants ---------------------------------------------------------------
    res = drive("--api", "openai-completions", "--prompt", "x", "--max-tokens", 1, "--preflight", *base)
    check(res.get("preflight", {}).get("model") == "m1" and res["request"] and res["request"][0]["class"] == "none",
          "no --model: preflight takes the first model /v1/models lists", res.get("preflight"))
    res = drive("--api", "openai-completions", "--model", "nope", "--preflight", *base)
    p = res.get("preflight", {})
    check(p.get("code") == "ENOTFOUND" and "'nope'" in p.get("err", "") and "'m1'" in p.get("err", ""),
          "unknown model: preflight names it and lists the served ones", p)
    res = drive("--api", "openai-chat", "--model", "m1", "--preflight", "--prompt", "x", "--url", nomodels.url())
    check(res.get("preflight", {}).get("code") == "ok" and res["request"][0]["class"] == "none",
          "server without /v1/models (404): preflight passes, requests run", res.get("preflight"))
    res = drive("--api", "openai-chat", "--model", "m1", "--preflight", "--url", "http://127.0.0.1:1")
    p = res.get("preflight", {})
    check(p.get("code") == "ECONNECT" and p.get("err", "").startswith("cannot connect to http://127.0.0.1:1/v1/models:") and
          "is the server up?" in p.get("err", ""), "nothing listening: preflight says cannot connect", p)
    res = drive("--api", "openai-chat", "--model", "m1", "--prompt", "x", "--url", "http://127.0.0.1:1")
    check(res["request"] and res["request"][0]["class"] == "connect", "nothing listening: request class connect",
          res["request"])

    # ---- proxies from the environment (libcurl's default, kept) -----------------
    penv = dict(ENV)
    penv["http_proxy"] = plain.url()
    penv.pop("NO_PROXY")
    penv.pop("no_proxy")
    k0 = len(plain.stats()["requests"])
    res = drive("--api", "openai-chat", "--model", "m1", "--max-tokens", 2, "--prompt", "x", "--api-key", KEY,
                "--url", "http://proxied.invalid:9", env=penv)
    s = plain.requests_since(k0)
    check(res["request"] and res["request"][0]["class"] == "none" and len(s) == 1 and
          s[0]["headers"].get("host") == "proxied.invalid:9",
          "http_proxy from the environment is used (the peer served as the proxy)", res["request"])

    # ---- Triton generate --------------------------------------------------------------------
    k0 = len(plain.stats()["requests"])
    res = drive("--api", "triton-generate", "--model", "m1", "--max-tokens", 4, "--min-tokens", 4, "--preflight",
                "--prompt", "gen a", "--prompt", "gen b", "--requests", 2, "--concurrency", 2, *base)
    check(res.get("preflight", {}).get("code") == "ok", "triton: preflight (health, ready, metadata) passes",
          res.get("preflight"))
    srv = plain.requests_since(k0)
    paths = [r["path"] for r in srv if r["method"] == "GET"]
    check(paths == ["/v2/health/ready", "/v2/models/m1/ready", "/v2/models/m1"],
          "triton: preflight asked health, model ready and metadata", paths)
    reqs = res["request"]
    check(len(reqs) == 2 and all(r["class"] == "none" and texts(r) == "tok0 tok1 tok2 tok3 " for r in reqs),
          "triton generate_stream: texts arrive, stream ends without [DONE]", [(r["class"], texts(r)) for r in reqs])
    posts = [r for r in srv if r["method"] == "POST"]
    check(all(p["path"] == "/v2/models/m1/generate_stream" for p in posts) and
          posts and posts[0]["body"] == {"text_input": posts[0]["body"]["text_input"], "stream": True,
                                         "max_tokens": 4, "min_tokens": 4, "id": posts[0]["body"].get("id")} and
          sorted(p["body"].get("id") for p in posts) == ["r0", "r1"] and
          all(p["headers"].get("x-request-id") == p["body"]["id"] for p in posts),
          "triton: body text_input, stream, max_tokens, min_tokens (the metadata's name), the request's id "
          "(and its x-request-id header)", posts[0])
    bad = []
    for r in reqs:
        s = server_req_for(posts, r["prompt"])
        if not s or len(s["events"]) != len(r["events"]):
            bad.append("event counts differ")
            continue
        bad += timing_ok(r["events"], s["events"])
        if [e["final"] for e in r["events"]] != [False, False, False, True]:
            bad.append("final flags %s" % [e["final"] for e in r["events"]])
    check(not bad, "triton: every event timed on arrival, the last one final", "\n".join(bad))
    res = drive("--api", "triton-generate", "--model", "m1", "--max-tokens", 4, "--prompt", "errstream", *base)
    r = res["request"][0]
    check(r["class"] == "server_error" and "injected" in r["message"] and texts(r) == "tok0 tok1 ",
          "triton: in-stream error event fails the request", r["message"])
    res = drive("--api", "triton-generate", "--model", "m1", "--max-tokens", 3, "--no-stream", "--prompt", "g",
                "--backend", "vllm", *base)
    r = res["request"][0]
    s = plain.requests_since(len(plain.stats()["requests"]) - 1)[0]
    check(r["class"] == "none" and texts(r) == "tok0 tok1 tok2 " and s["path"] == "/v2/models/m1/generate" and
          s["body"] == {"text_input": "g", "id": "r0", "exclude_input_in_output": True,
                        "parameters": {"max_tokens": 3}},
          "triton generate (vLLM layout, not streaming): one reply, sampling values in parameters", s["body"])
    res = drive("--api", "triton-generate", "--model", "nope", "--preflight", *base)
    p = res.get("preflight", {})
    check(p.get("code") == "ENOTFOUND" and "'nope' is not ready" in p.get("err", ""),
          "triton: unknown model fails preflight with the server's message", p)

    # ---- TLS ------------------------------------------------------------------------------
    tbase = ["--api", "openai-chat", "--model", "m1", "--max-tokens", 3, "--prompt", "t", "--api-key", KEY,
             "--url", tls.url()]
    res = drive(*tbase, "--preflight")
    p = res.get("preflight", {})
    want = "certificate verification failed for https://127.0.0.1:%d/v1/models: " % tls.port
    check(p.get("code") == "ECONNECT" and p.get("err", "").startswith(want) and
          p.get("err", "").endswith("(use --ca-file FILE, or --insecure)") and len(p.get("err", "")) > len(want) + 40,
          "HTTPS without the CA: clear verification error with curl's reason", p.get("err"))
    res = drive(*tbase)
    r = res["request"][0]
    want = "certificate verification failed for https://127.0.0.1:%d/v1/chat/completions: " % tls.port
    check(r["class"] == cls("tls") and r["message"].startswith(want),
          "HTTPS without the CA: the request fails with the TLS class", r)
    k0 = len(tls.stats()["requests"])
    res = drive(*tbase, "--ca-file", cert, "--preflight")
    r = res["request"][0] if res["request"] else {}
    check(res.get("preflight", {}).get("code") == "ok" and r.get("class") == "none" and texts(r) == "tok0 tok1 tok2 ",
          "HTTPS with --ca-file: verified, streamed", r)
    s = tls.requests_since(k0)
    check(len(s) == 2 and s[-1]["headers"].get("authorization") == "Bearer " + KEY,
          "HTTPS: the key reached the server over TLS", len(s))
    sev = [e for e in s[-1]["events"] if e["kind"] != "done"]
    check(len(r.get("events", [])) == len(sev) and not timing_ok(r["events"], sev),
          "HTTPS: events timed on arrival too", timing_ok(r.get("events", []), sev))
    res = drive(*tbase, "--insecure", "--preflight")
    r = res["request"][0] if res["request"] else {}
    check(res.get("preflight", {}).get("code") == "ok" and r.get("class") == "none",
          "HTTPS with --insecure: passes without the CA", r)
    res = drive(*tbase, "--ca-file", "/nonexistent/ca.pem")
    check(res.get("new_failed", {}).get("code") == "EINVAL" and "--ca-file" in res["new_failed"]["err"],
          "unreadable CA file refused up front, naming --ca-file", res.get("new_failed"))
    res = drive("--api", "openai-chat", "--model", "m1", "--prompt", "t", "--url", "http://127.0.0.1:%d" % tls.port,
                "--timeout-ms", 3000)
    r = res["request"][0]
    check(r["class"] in ("connect", "protocol") and r["message"],
          "plain HTTP to an HTTPS port fails as a request, not a crash", r)
    loop_clean(res, "TLS")


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def run_h2(cert, key, tmp):
    """HTTP/2 through ALPN, against nghttpd (Debian's nghttp2-server), which
    serves a canned SSE reply as a static file."""
    names = ["HTTP/2: 8 concurrent streams share one connection (and the preflight had one of its own)",
             "--http1 does not offer h2: the h2-only server hangs up (connect class)", "HTTP/2: the client closed its loop with no handle left"]
    nghttpd = shutil.which("nghttpd") or (os.path.exists("/usr/sbin/nghttpd") and "/usr/sbin/nghttpd")
    if not nghttpd:
        for n in names:
            global n_checks
            n_checks += 1
            print("ok %d - %s # SKIP nghttpd (nghttp2-server) not installed" % (n_checks, n))
        return
    docs = os.path.join(tmp, "htdocs")
    os.makedirs(os.path.join(docs, "v1"))
    with open(os.path.join(docs, "v1", "models"), "w") as f:
        f.write('{"object":"list","data":[{"id":"m1"}]}')
    with open(os.path.join(docs, "stream.sse"), "w") as f:
        f.write('data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
                'data: {"choices":[{"delta":{"content":"h2 "}}]}\n\n'
                'data: {"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
                'data: [DONE]\n\n')
    mime = os.path.join(tmp, "mime.types")
    with open(mime, "w") as f:
        f.write("text/event-stream sse\n")
    port = free_port()
    srv = subprocess.Popen([nghttpd, "--htdocs=" + docs, "--mime-types-file=" + mime, "-a", "127.0.0.1", str(port),
                            key, cert], stdout=LOG, stderr=LOG, env=ENV)
    try:
        import socket
        deadline = time.time() + 10 * SCALE
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        args = ["--api", "openai-chat", "--model", "m1", "--url", "https://127.0.0.1:%d" % port, "--ca-file", cert,
                "--endpoint", "/stream.sse", "--requests", 8, "--concurrency", 8, "--prompt", "x", "--preflight"]
        res = drive(*args)
        reqs = res["request"]
        check(res.get("preflight", {}).get("code") == "ok" and len(reqs) == 8 and
              all(r["class"] == "none" and texts(r) == "h2 ok" for r in reqs) and
              res["summary"]["connections"] == 2, names[0],
              [(r["class"], r["message"], texts(r)) for r in reqs] + [res.get("summary")])
        # nghttpd speaks only h2: a client that does not offer it is hung up on.
        res1 = drive(*([a for a in args if a != "--preflight"] + ["--http1", "--requests", 2, "--concurrency", 2]))
        check(len(res1["request"]) == 2 and all(r["class"] == "connect" and r["end_ns"] >= r["sent_ns"]
                                                for r in res1["request"]),
              names[1], [(r["class"], r["message"]) for r in res1["request"]])
        check(res.get("loop_closed", {}).get("ok") is True, names[2])
    finally:
        srv.terminate()
        srv.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
