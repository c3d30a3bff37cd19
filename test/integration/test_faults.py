#!/usr/bin/env python3
"""The fault matrix of issue #7: for each fault the mock can inject, at
concurrency 16 with about a quarter of the requests faulted and the rest
normal, the run completes, the faulted requests are classed correctly, the
normal ones are all measured, and nothing hangs.  Then a server killed and
restarted mid-run, and records.jsonl after SIGINT and SIGKILL.  Prints TAP;
the matrix is also printed as a table for the closing note."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, wait_port  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")


tmp = tempfile.mkdtemp(prefix="tp_faults_")
FAST = ["--mock-ttft-ms", "5", "--mock-itl-ms", "2", "--mock-prefill-us-per-token", "0", "--mock-prefill-queue-ms",
        "0", "--mock-itl-us-per-seq", "0"]


def profile(args, timeout=120):
    js = os.path.join(tmp, "f.json")
    if os.path.exists(js):
        os.unlink(js)
    t0 = time.time()
    p = subprocess.run([TOKPERF, "profile", "--mock", "-q", "--no-artifacts", "--json", js] + args,
                       capture_output=True, text=True, timeout=timeout * SCALE)
    doc = json.load(open(js)) if os.path.exists(js) else None
    return p, doc, time.time() - t0


# kind, extra tokperf args, the classes its failures may fall in, whether
# every failure is the faulted request itself (False: a connection-level
# fault also takes the other requests on that connection down).
MATRIX = [
    ("rst_stream", [], {"stream_reset"}, True),
    ("grpc_status:14:overloaded", [], {"grpc_status"}, True),
    ("trailers_only:8:too many requests", [], {"grpc_status"}, True),
    ("inband_error:the model failed", [], {"server_error"}, True),
    ("stall", ["--request-timeout", "1s"], {"timeout"}, True),
    ("malformed", [], {"protocol"}, True),
    ("oversize", [], {"protocol"}, True),
    ("endless", ["--max-output-tokens", "200"], {"protocol"}, True),
    ("close_conn", [], {"connect"}, False),
    ("goaway", [], {"stream_reset", "connect"}, False),
]

rows = []
for kind, extra, classes, exact in MATRIX:
    # A connection-level fault takes every stream of its connection down, so
    # it is drawn rarely enough for whole answers to get through between.
    rate = "0.25" if exact else "0.05"
    nreq = 64 if exact else 128
    args = FAST + ["--concurrency", "16", "--request-count", str(nreq), "--output-tokens-mean", "8",
                   "--mock-fault", kind, "--mock-fault-rate", rate, "--mock-fault-after-tokens", "2"] + extra
    p, doc, secs = profile(args)
    name = kind.split(":")[0]
    ok_run = p.returncode in (0, 1) and doc is not None
    check(ok_run, "%s: the run completes in %.1f s" % (name, secs), p.stderr[-600:])
    if not ok_run:
        rows.append((name, "run failed", "", ""))
        continue
    lv = doc["levels"][0]
    ebc = {k: v for k, v in lv["errors_by_class"].items() if v}
    faults = doc.get("mock", {}).get("faults_injected", -1)
    check(lv["requests"] == nreq and lv["succeeded"] + lv["failed"] == nreq,
          "%s: every request is accounted for (%d ok, %d failed)" % (name, lv["succeeded"], lv["failed"]))
    check(lv["failed"] > 0 and set(ebc) <= classes, "%s: failures classed as %s" % (name, "/".join(sorted(classes))),
          "errors_by_class %r, first error %r" % (ebc, lv["first_error"]))
    if exact:
        check(lv["failed"] == faults, "%s: exactly the %d faulted requests failed" % (name, faults),
              "failed %d, faults %d" % (lv["failed"], faults))
    else:
        check(lv["failed"] >= 1 and lv["succeeded"] > 0, "%s: the run recovered (new connections) and went on" % name)
    check(lv["time_to_first_token_ms"] is not None and lv["time_to_first_token_ms"]["n"] == lv["succeeded"],
          "%s: every normal request is measured" % name)
    check(secs < 60 * SCALE, "%s: nothing hangs (%.1f s)" % (name, secs))
    rows.append((name, "%d/%d" % (lv["failed"], nreq), ",".join("%s=%d" % kv for kv in sorted(ebc.items())),
                 "%d" % faults))

# A mix of per-request faults: each faulted request draws one kind, and
# each fails in its kind's class (the mock's log names the kind).
mlog = os.path.join(tmp, "mix.jsonl")
mrec = os.path.join(tmp, "mix_records.jsonl")
p, doc, secs = profile(FAST + ["--concurrency", "16", "--request-count", "96", "--output-tokens-mean", "8",
                               "--mock-fault", "rst_stream,grpc_status,malformed,inband_error",
                               "--mock-fault-rate", "0.5", "--mock-log", mlog, "--records", mrec])
want = {"rst_stream": "stream_reset", "grpc_status": "grpc_status", "malformed": "protocol",
        "inband_error": "server_error"}
kinds = {}
if os.path.exists(mlog):
    for raw in open(mlog, "rb"):
        if b'"ev":"request"' in raw:
            o = json.loads(raw.decode("utf-8", "replace"))
            if "fault" in o:
                kinds[o["id"]] = o["fault"]
mrecs = [json.loads(l) for l in open(mrec)] if os.path.exists(mrec) else []
check(doc is not None and len(mrecs) == 96 and set(kinds.values()) == set(want),
      "mixed faults: every kind of the list was drawn", "kinds %r" % sorted(set(kinds.values())))
check(all(r["error_class"] == want.get(kinds.get(r["id"]), "none") for r in mrecs) and
      doc["levels"][0]["failed"] == len(kinds) == doc.get("mock", {}).get("faults_injected"),
      "mixed faults: each faulted request failed in its kind's class, the others succeeded")
rows.append(("mixed", "%d/96" % (doc["levels"][0]["failed"] if doc else -1), "", "%d" % len(kinds)))

# Trickle: slow but whole answers, no failures.
p, doc, secs = profile(FAST + ["--concurrency", "4", "--request-count", "8", "--output-tokens-mean", "4",
                               "--mock-fault", "trickle"])
check(doc and doc["levels"][0]["succeeded"] == 8, "trickle: one byte at a time still makes whole answers",
      p.stderr[-400:])
rows.append(("trickle", "%d/8" % (doc["levels"][0]["failed"] if doc else -1), "", ""))
# Invalid UTF-8: the answer is kept (as U+FFFD where invalid) and counted.
if WORDS:
    rec = os.path.join(tmp, "u8.jsonl")
    p, doc, secs = profile(FAST + ["--concurrency", "4", "--request-count", "8", "--output-tokens-mean", "4",
                                   "--mock-fault", "invalid_utf8", "--records", rec, "--tokenizer", WORDS])
    recs = [json.loads(l) for l in open(rec)] if os.path.exists(rec) else []
    check(doc and doc["levels"][0]["succeeded"] == 8 and len(recs) == 8 and
          all(isinstance(r["text"], str) and "\ufffd" in r["text"] for r in recs),
          "invalid_utf8: answers kept, invalid bytes as U+FFFD in records.jsonl", p.stderr[-400:])
    rows.append(("invalid_utf8", "0/8", "", ""))

print("# fault matrix (failed/requests, classes, faults the mock injected):")
for r in rows:
    print("#   %-14s %-8s %-36s %s" % r)



def start_mock(port):
    m = subprocess.Popen([TOKPERF, "mock", "-q", "--grpc-port", str(port), "--http-port", "-1", "--ttft-ms", "5",
                          "--itl-ms", "5"], stderr=subprocess.DEVNULL)
    wait_port(port, 10 * SCALE)
    return m


# A server killed and restarted mid-run (a restart is expected, so the level
# is not ended by --max-consecutive-failures).
port = free_port()
mock = start_mock(port)
js = os.path.join(tmp, "restart.json")
rec = os.path.join(tmp, "restart.jsonl")
run = subprocess.Popen([TOKPERF, "profile", "-q", "--no-artifacts", "-u", "127.0.0.1:%d" % port, "--request-rate", "50",
                        "--duration", "6s", "--output-tokens-mean", "4", "--json", js, "--records", rec,
                        "--max-consecutive-failures", "0"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
time.sleep(2)
mock.kill()
mock.wait()
time.sleep(1.5)
mock = start_mock(port)
try:
    out, err = run.communicate(timeout=60 * SCALE)
except subprocess.TimeoutExpired:
    run.kill()
    out, err = run.communicate()
mock.send_signal(signal.SIGINT)
mock.wait(timeout=10)
doc = json.load(open(js)) if os.path.exists(js) else None
check(run.returncode in (0, 1) and doc, "restart: the run completes", err[-600:])
if doc:
    lv = doc["levels"][0]
    recs = sorted((json.loads(l) for l in open(rec)), key=lambda r: r["planned_ns"])
    t0 = recs[0]["planned_ns"]
    fails = [(r["planned_ns"] - t0) / 1e9 for r in recs if not r["ok"]]
    late_ok = [r for r in recs if r["ok"] and (r["planned_ns"] - t0) / 1e9 > 4.5]
    check(lv["failed"] > 0 and set(k for k, v in lv["errors_by_class"].items() if v) <= {"connect", "timeout",
                                                                                            "not_sent"},
          "restart: the failed window is counted, as connect errors or not sent (back-off)",
          "%r" % lv["errors_by_class"])
    check(fails and min(fails) > 1.5 and max(fails) < 4.5, "restart: failures lie in the outage (%.1f-%.1f s)" %
          (min(fails) if fails else -1, max(fails) if fails else -1))
    check(len(late_ok) > 20, "restart: the run resumed once the server was back (%d ok after 4.5 s)" % len(late_ok))
    check(lv["failed"] < 200, "restart: backoff kept the failures bounded (%d)" % lv["failed"])

# records.jsonl after SIGINT (grace period, exit 130) and after SIGKILL.
for sig, want_rc in ((signal.SIGINT, 130), (signal.SIGKILL, -9)):
    rec = os.path.join(tmp, "sig.jsonl")
    if os.path.exists(rec):
        os.unlink(rec)
    run = subprocess.Popen([TOKPERF, "profile", "--mock", "-q", "--no-artifacts", "--mock-itl-ms", "20",
                            "--concurrency", "8", "--request-count", "100000", "--output-tokens-mean", "10",
                            "--records", rec], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2 * SCALE)
    run.send_signal(sig)
    try:
        out, err = run.communicate(timeout=30 * SCALE)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
    name = "SIGINT" if sig == signal.SIGINT else "SIGKILL"
    check(run.returncode == want_rc, "%s: exit %d" % (name, want_rc), "rc %r %s" % (run.returncode, err[-300:]))
    lines = open(rec).read().splitlines() if os.path.exists(rec) else []
    parsed = []
    for l in lines:
        try:
            parsed.append(json.loads(l))
        except ValueError:
            pass
    check(len(lines) > 10 and len(parsed) == len(lines),
          "%s: every line of records.jsonl parses (%d requests finished before)" % (name, len(lines)))
    if sig == signal.SIGINT:
        check("Request latency (ms)" in out, "SIGINT: the measured part is reported")
        check(all(r["ok"] for r in parsed), "SIGINT: in-flight requests finished within the grace period")

subprocess.run(["rm", "-rf", tmp])
done()
