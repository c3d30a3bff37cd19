#!/usr/bin/env python3
"""Issue #13, HTTP/2 side: connections the server closes.

The mock plays servers that end connections a client means to reuse: a GOAWAY
after every finished stream (a limit on streams per connection), a GOAWAY
after N streams, and a GOAWAY after a connection has been idle a few ms.  The
mock never processes a stream above the last_stream_id it announced (it
refuses those), so a request that crosses a GOAWAY must be sent again by
tokperf on another connection.  For each dialect, over ModelStreamInfer and
unary ModelInfer, 1,000 requests at concurrency 8 (or a rate that leaves
the connection idle now and then): no request fails, JSON `reconnects` equals
the records with resends > 0, the mock processed every request exactly once,
and where the race is certain it happened.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
N = 1000
FAST = ["--mock-ttft-ms", "2", "--mock-itl-ms", "1", "--mock-prefill-us-per-token", "0",
        "--mock-prefill-queue-ms", "0", "--mock-itl-us-per-seq", "0", "--output-tokens-mean", "4"]
tmp = tempfile.mkdtemp(prefix="tp_h2_reconnect_")

# name, tokperf args, whether the race is certain (reconnects > 0 asserted).
# close_after_stream: with 8 streams in flight, the next request always
# follows an answer whose connection is ending.  Idle close: requests at a
# Poisson rate leave the connection idle for about the idle limit now and
# then, so some cross the GOAWAY (not every run).
DIALECTS = [
    ("close_after_stream", ["--concurrency", "8", "--mock-close-after-stream"], True),
    ("goaway_after_streams 5", ["--concurrency", "8", "--mock-goaway-after-streams", "5"], True),
    ("idle_close 2 ms", ["--request-rate", "300", "--arrival", "poisson", "--max-concurrency", "8",
                         "--mock-idle-close-ms", "2"], False),
]
MODES = [("streaming", []), ("unary", ["--no-streaming"])]
# The same with the client reading its sockets on a thread of its own: a
# connection that ends must leave the reader before its socket closes.
READER = [("close_after_stream", ["--concurrency", "8", "--mock-close-after-stream", "--reader-thread"], True),
          ("goaway_after_streams 5", ["--concurrency", "8", "--mock-goaway-after-streams", "5", "--reader-thread"],
           True)]


def run(tag, args):
    js = os.path.join(tmp, tag + ".json")
    recs = os.path.join(tmp, tag + ".jsonl")
    mlog = os.path.join(tmp, tag + ".mock.jsonl")
    t0 = time.time()
    p = subprocess.run([TOKPERF, "profile", "--mock", "-q", "--no-artifacts", "--json", js, "--records", recs,
                        "--mock-log", mlog, "--request-count", str(N)] + FAST + args,
                       capture_output=True, text=True, timeout=120 * SCALE)
    secs = time.time() - t0
    doc = json.load(open(js)) if os.path.exists(js) else None
    records = [json.loads(l) for l in open(recs)] if os.path.exists(recs) else []
    requests = []
    if os.path.exists(mlog):
        for line in open(mlog):
            ev = json.loads(line)
            if ev.get("ev") == "request":
                requests.append(ev)
    return p, doc, records, requests, secs


CASES = [(d, a, c, m, ma) for d, a, c in DIALECTS for m, ma in MODES] + \
        [(d, a, c, "streaming, --reader-thread", []) for d, a, c in READER]
for dname, dargs, certain, mname, margs in CASES:
    name = "%s, %s" % (dname, mname)
    p, doc, records, requests, secs = run(dname.split()[0] + "_" + mname.replace(", --", "_"), dargs + margs)
    ok = p.returncode == 0 and doc is not None
    check(ok, "%s: the run completes (%.1f s)" % (name, secs), p.stderr[-800:])
    if not ok:
        continue
    lv = doc["levels"][0]
    ebc = {k: v for k, v in lv["errors_by_class"].items() if v}
    check(lv["requests"] == N and lv["failed"] == 0,
          "%s: %d requests, none failed" % (name, N),
          "requests %d failed %d %r, first error %r" % (lv["requests"], lv["failed"], ebc, lv["first_error"]))
    resent = sum(1 for r in records if r.get("resends", 0) > 0)
    check(len(records) == N and lv["reconnects"] == resent,
          "%s: reconnects %d equals the records re-sent" % (name, lv["reconnects"]),
          "records %d, re-sent %d" % (len(records), resent))
    check(all(r.get("resends", 0) <= 3 for r in records), "%s: no request is re-sent more than 3 times" % name)
    if certain:
        check(lv["reconnects"] > 0, "%s: requests crossed a GOAWAY and were re-sent (%d)" % (name, lv["reconnects"]))
    # Each request processed exactly once: the refused copy never reached
    # the model, and nothing was answered twice.
    ids = [ev["id"] for ev in requests]
    check(len(ids) == N and len(set(ids)) == N and doc["mock"]["requests"] == N,
          "%s: the mock processed each request exactly once" % name,
          "log %d (%d distinct), mock requests %d" % (len(ids), len(set(ids)), doc["mock"]["requests"]))
    # A re-sent request's send time is the copy the model got: the mock's
    # arrival stamp (a kernel stamp, on another clock path, so a little
    # slack either way) follows it closely, and its first answer is one
    # TTFT (2 ms) or more later (less in slow sanitizer builds, where the
    # client stamps its send a little after the bytes left).
    arrival = {ev["id"]: ev["t_ns"] for ev in requests}
    bad = [(r["id"], arrival.get(r["id"], 0) - r["sent_ns"]) for r in records if r.get("resends") and
           not (-2e6 * SCALE <= arrival.get(r["id"], 0) - r["sent_ns"] <= 20e6 * SCALE and
                r["first_token_ns"] - r["sent_ns"] >= 1.5e6 / SCALE)]
    check(not bad, "%s: re-sent requests are timed from the re-send" % name, "bad (id, arrival - sent ns): %r" % bad[:5])
    if "idle" in dname or "close_after" in dname:
        check(doc["mock"]["connections"] > 1, "%s: the mock closed connections (%d opened)" %
              (name, doc["mock"]["connections"]))

done()
