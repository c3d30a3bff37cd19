#!/usr/bin/env python3
"""A server that goes away mid-run (issue #30): `tokperf mock` in a process of
its own, killed with SIGKILL 2 s into a 20 s --duration level.

- closed loop at concurrency 64, gRPC and OpenAI HTTP: the requests sent after
  the kill are bounded by --max-consecutive-failures plus one per slot (the
  storm this replaces sent millions), the artifacts stay under a few MB, the
  level ends within the back-off's bound instead of running out its 20 s, the
  run exits 1 with a line that says so, and the text report and the JSON say
  when the server went away;
- open loop: the schedule is kept (every planned request has its record), the
  ones due while the server is away are counted as not_sent, and only the
  back-off's probes open connections; with the default limit the level ends;
- a sessions level (a conversations file) ends the same way;
- a server that comes back: the JSON says when, and requests succeed again.

Times are compared on one clock: tokperf's records carry CLOCK_MONOTONIC
nanoseconds (uv_hrtime), which is Python's time.monotonic_ns().  Prints TAP."""
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
tmp = tempfile.mkdtemp(prefix="tp_gone_")
MB = 1 << 20

# The back-off as docs/metrics.md ("When the server goes away") defines it:
# 10 ms after a slot's first failure in a row, doubled each time, at most 1 s;
# the default limit of requests in a row; and the gRPC transport's own wait
# before it reconnects after a refused connect (at most 2 s), which a gRPC
# request can spend in flight on top of its slot's back-off.
FIRST_S, MAX_S, LIMIT, GRPC_RECONNECT_S = 0.010, 1.0, 100, 2.0


def delay(k):
    return min(FIRST_S * 2 ** (k - 1), MAX_S)


def start_mock(grpc, http, *extra):
    m = subprocess.Popen([TOKPERF, "mock", "-q", "--grpc-port", str(grpc), "--http-port", str(http)] + list(extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not (wait_port(grpc, 10 * SCALE) and wait_port(http, 10 * SCALE)):
        m.kill()
        raise RuntimeError("the mock did not start")
    return m


def kill(m):
    """SIGKILL; returns the monotonic times just before and just after."""
    before = time.monotonic_ns()
    m.kill()
    after = time.monotonic_ns()
    m.wait()
    return before, after


def finish(run, timeout):
    try:
        out, err = run.communicate(timeout=timeout * SCALE)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
    return out, err


def records(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path)]


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, fs in os.walk(d) for f in fs)


def profile(name, target, extra, kill_after_s=2.0, restart_after_s=None):
    """Runs tokperf against a mock of its own, kills the mock kill_after_s
    into the run (and starts it again restart_after_s later).  Returns the
    outcome as a dict."""
    grpc, http = free_port(), free_port()
    mock = start_mock(grpc, http)
    art = os.path.join(tmp, name)
    js = os.path.join(tmp, name + ".json")
    url = ["-u", "127.0.0.1:%d" % grpc] if target == "grpc" else \
        ["--service-kind", "openai", "-u", "http://127.0.0.1:%d" % http, "-m", "vllm_model"]
    t_start = time.monotonic()
    run = subprocess.Popen([TOKPERF, "profile"] + url + ["--artifact-dir", art, "--json", js] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(kill_after_s)
    k0, k1 = kill(mock)
    back = None
    if restart_after_s is not None:
        time.sleep(restart_after_s)
        back = time.monotonic_ns()
        mock = start_mock(grpc, http)
    out, err = finish(run, 60)
    wall = time.monotonic() - t_start
    if mock.poll() is None:
        mock.send_signal(signal.SIGINT)
        try:
            mock.wait(timeout=10)
        except subprocess.TimeoutExpired:
            mock.kill()
    doc = json.load(open(js)) if os.path.exists(js) else None
    recs = records(os.path.join(art, "records.jsonl"))
    lv = doc["levels"][0] if doc and doc.get("levels") else {}
    t0 = min((r["planned_ns"] for r in recs), default=0)
    after = [r for r in recs if r["sent_ns"] and r["sent_ns"] >= k1]
    return {"rc": run.returncode, "out": out, "err": err, "doc": doc, "lv": lv, "recs": recs, "t0": t0,
            "kill": (k0, k1), "back": back, "wall": wall, "art_bytes": dir_bytes(art),
            "sent_after": len(after), "last_done": max((r["done_ns"] for r in recs), default=0),
            "after_bytes": sum(len(json.dumps(r)) for r in after)}


def check_away(name, o, ended):
    """The report and the JSON say when the server went away: the first
    failure of the run follows the kill (and is not later than 1 s after it,
    a loopback connection's reset being seen at once)."""
    sa = o["lv"].get("server_away")
    k0, k1 = o["kill"]
    ok = sa is not None and o["t0"] and k0 <= o["t0"] + sa["at_s"] * 1e9 <= k1 + 1e9 * SCALE
    check(ok, "%s: the JSON says when the server went away (%.2f s into the level; killed at %.2f-%.2f s)" %
          (name, sa["at_s"] if sa else -1, (k0 - o["t0"]) / 1e9, (k1 - o["t0"]) / 1e9), json.dumps(sa))
    check(sa is not None and sa["ended_level"] == ended and sa["requests"] >= (LIMIT if ended else 1),
          "%s: the JSON says the level %s" % (name, "ended there" if ended else "went on"), json.dumps(sa))
    line = [l for l in o["out"].splitlines() if l.startswith("Server away: from ")]
    check(line and ("%.2f s" % sa["at_s"] if sa else "?") in line[0] and
          (("--max-consecutive-failures" in line[0]) == ended),
          "%s: the text report says when the server went away" % name, line or o["out"][-800:])


# ---- closed loop, concurrency 64, killed 2 s into 20 s ----------------------------------------
summary = []
for target in ("grpc", "http"):
    name = "closed-%s" % target
    o = profile(name, target, ["--duration", "20s", "--concurrency", "64"])
    lv = o["lv"]
    check(o["doc"] is not None and o["rc"] == 1,
          "%s: the run ends with exit 1 and writes its JSON (rc %r)" % (name, o["rc"]), o["err"][-800:])
    check("the server went away at concurrency 64" in o["err"] and "--max-consecutive-failures" in o["err"],
          "%s: stderr says the server went away and which setting ended the level" % name, o["err"][-800:])
    # Every request sent after the kill fails to reach the server and is
    # counted, so at most LIMIT of them before the level ends, and at most
    # one per slot still in flight then; the requests the kill caught in
    # flight are re-planned once each (their answers had begun: no back-off).
    bound = LIMIT + 2 * 64
    check(o["sent_after"] <= bound, "%s: %d requests sent after the kill (at most %d: the limit and a refill per "
          "slot)" % (name, o["sent_after"], bound))
    check(o["art_bytes"] < 8 * MB and o["after_bytes"] < MB,
          "%s: artifacts %.2f MB in all, %.0f KB of records after the kill" %
          (name, o["art_bytes"] / MB, o["after_bytes"] / 1024.0))
    # The level ends once the limit is reached: ceil(LIMIT/64) back-off
    # steps, plus the last refills' own wait (gRPC's reconnect), plus slack
    # for a busy machine.
    steps = -(-LIMIT // 64) + 1
    end_bound = sum(delay(k) for k in range(1, steps + 1)) + (GRPC_RECONNECT_S if target == "grpc" else 0) + 1.0
    end_s = (o["last_done"] - o["kill"][1]) / 1e9
    check(o["last_done"] and end_s <= end_bound * SCALE,
          "%s: the level ends %.2f s after the kill (within the back-off's %.2f s), not at 20 s" %
          (name, end_s, end_bound))
    check(o["wall"] < 15 * SCALE, "%s: tokperf exits after %.1f s (the level was 20 s)" % (name, o["wall"]))
    check_away(name, o, True)
    summary.append("%s: %d requests sent after the kill, artifacts %d bytes, level ended %.3f s after the kill "
                   "(%.3f s into the level), exit %d" %
                   (name, o["sent_after"], o["art_bytes"], end_s, (o["last_done"] - o["t0"]) / 1e9, o["rc"]))

# ---- sessions: a failed turn ends its session, and its slot backs off -------------------------
conv = os.path.join(tmp, "conv.jsonl")
with open(conv, "w") as f:
    for i in range(40):
        f.write(json.dumps({"session_id": "s%d" % i, "turns": [
            {"text": "hello %d" % i, "max_tokens": 8}, {"text": "more", "max_tokens": 8, "delay_ms": 50},
            {"text": "again", "max_tokens": 8, "delay_ms": 50}]}) + "\n")
name = "sessions-http"
o = profile(name, "http", ["--input-file", conv, "--duration", "20s", "--concurrency", "16"])
check(o["doc"] is not None and o["rc"] == 1, "%s: the run ends with exit 1 (rc %r)" % (name, o["rc"]), o["err"][-800:])
check(o["sent_after"] <= LIMIT + 2 * 16 and o["wall"] < 15 * SCALE,
      "%s: %d turns sent after the kill (at most %d), tokperf exits after %.1f s" %
      (name, o["sent_after"], LIMIT + 2 * 16, o["wall"]))
check_away(name, o, True)
summary.append("%s: %d turns sent after the kill, exit %d" % (name, o["sent_after"], o["rc"]))

# ---- open loop: the schedule kept, not_sent counted ------------------------------------------
for target, extra, ended in (("http", ["--max-consecutive-failures", "0"], False), ("grpc", [], True)):
    name = "open-%s%s" % (target, "" if ended else "-nolimit")
    rate, secs = 50, 8
    o = profile(name, target, ["--duration", "%ds" % secs, "--request-rate", str(rate)] + extra)
    lv, recs = o["lv"], o["recs"]
    k1 = o["kill"][1]
    not_sent = [r for r in recs if r["error_class"] == "not_sent"]
    check(o["doc"] is not None and o["rc"] == (1 if ended else o["rc"]) and o["rc"] in (0, 1),
          "%s: the run ends (rc %r) and writes its JSON" % (name, o["rc"]), o["err"][-800:])
    check(not_sent and lv.get("errors_by_class", {}).get("not_sent") == len(not_sent) and
          all(not r["sent_ns"] for r in not_sent),
          "%s: %d requests due while the server was away counted as not_sent, none of them sent" %
          (name, len(not_sent)), json.dumps(lv.get("errors_by_class")))
    if not ended:
        # Constant arrivals: every request of the schedule has its record,
        # sent or not.
        check(len(recs) == rate * secs and lv.get("requests") == rate * secs,
              "%s: the schedule is kept: %d records for %d planned" % (name, len(recs), rate * secs))
        # After the kill only probes leave, one per back-off step (the steps
        # that fit in the rest of the level), plus what left before the first
        # failure was seen.
        left = (o["t0"] + secs * 1e9 - k1) / 1e9
        probes, t = 0, 0.0
        while t <= left:
            probes += 1
            t += delay(probes)
        # What left before the client saw the first failure is measured, not
        # assumed: a busy machine takes longer to see the connection go.
        first_fail = min((r["done_ns"] for r in recs if r["error_class"] not in ("none", "not_sent")
                          and r["done_ns"] >= k1), default=k1)
        before_seen = sum(1 for r in recs if r["sent_ns"] and k1 <= r["sent_ns"] <= first_fail)
        bound = probes + before_seen + 1
        late = [r for r in recs if r["planned_ns"] >= k1 + 1e8 * SCALE]
        check(o["sent_after"] <= bound and late and
              sum(1 for r in late if r["error_class"] == "not_sent") >= len(late) - bound,
              "%s: %d requests sent after the kill (at most %d: a probe per back-off step), %d of the %d due "
              "after it not sent" % (name, o["sent_after"], bound, sum(1 for r in late if r["error_class"] ==
                                                                       "not_sent"), len(late)))
    else:
        check(o["wall"] < secs * SCALE, "%s: the level ends early (%.1f s)" % (name, o["wall"]))
    check_away(name, o, ended)
    summary.append("%s: %d records, %d not_sent, %d sent after the kill, artifacts %d bytes, exit %d" %
                   (name, len(recs), len(not_sent), o["sent_after"], o["art_bytes"], o["rc"]))

# ---- a server that comes back --------------------------------------------------------------
name = "restart-http"
o = profile(name, "http", ["--duration", "6s", "--concurrency", "8", "--output-tokens-mean", "16",
                           "--max-consecutive-failures", "0"], kill_after_s=1.5, restart_after_s=1.5)
sa = o["lv"].get("server_away")
back = o["back"]
ok_after = [r for r in o["recs"] if r["ok"] and r["sent_ns"] >= back]
# Back once a slot's back-off step ends after the restart: at most the
# largest step later, plus slack for the mock's start and a busy machine.
ok = sa is not None and sa["back_s"] is not None and \
    back <= o["t0"] + sa["back_s"] * 1e9 <= back + (MAX_S + 1.5) * SCALE * 1e9
check(ok, "%s: the JSON says when the server came back (%.2f s into the level; restarted at %.2f s)" %
      (name, sa["back_s"] if sa and sa["back_s"] is not None else -1, (back - o["t0"]) / 1e9), json.dumps(sa))
check(len(ok_after) > 8, "%s: requests succeed again once it is back (%d)" % (name, len(ok_after)))
line = [l for l in o["out"].splitlines() if l.startswith("Server away: from ")]
check(line and sa and ("to %.2f s" % sa["back_s"]) in line[0], "%s: the text report says when it came back" % name,
      line)
summary.append("%s: away at %.2f s, back at %.2f s (restarted at %.2f s)" %
               (name, sa["at_s"] if sa else -1, sa["back_s"] if sa and sa["back_s"] else -1,
                (back - o["t0"]) / 1e9))

for s in summary:
    print("# " + s)
subprocess.run(["rm", "-rf", tmp])
done()
