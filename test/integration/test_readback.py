#!/usr/bin/env python3
"""The exports of a real run read back from records.jsonl: a run against the
built-in mock whose finished requests let go of their response times and
text (docs/metrics.md "Memory over long runs"), with a fault that makes some
answers invalid UTF-8 (those stay in memory), so one level mixes both paths.
profile_export.json and responses.jsonl must say, request by request, what
records.jsonl says.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_readback_")
art = os.path.join(tmp, "art")
cmd = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art, "--no-html", "--concurrency", "8",
       "--request-count", "120", "--warmup-request-count", "4", "--output-tokens-mean", "40",
       "--mock-ttft-ms", "2", "--mock-itl-ms", "1", "--mock-fault", "invalid_utf8", "--mock-fault-rate", "0.25",
       "--mock-fault-after-tokens", "5"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
check(p.returncode == 0, "a run with artifacts ends with exit 0", p.stderr)

recs = {}
with open(os.path.join(art, "records.jsonl"), "rb") as f:
    for line in f:
        o = json.loads(line)
        recs[o["id"]] = o
measured = [r for r in recs.values() if not r["warmup"]]
ok = sorted((r for r in measured if r["ok"]), key=lambda r: (r["sent_ns"], r["seq"]))
bad_utf8 = [r for r in ok if "\ufffd" in r["text"]]
check(len(measured) == 120 and len(ok) == 120, "120 measured requests succeeded", len(ok))
check(0 < len(bad_utf8) < len(ok), "some answers held invalid UTF-8 (kept in memory), the others not",
      len(bad_utf8))

with open(os.path.join(art, "profile_export.json")) as f:
    pe = json.load(f)
reqs = pe["experiments"][0]["requests"]
check(len(reqs) == len(ok), "the profile export has every measured successful request", len(reqs))
# Exported times are wall clock: one offset from the monotonic clock for the
# whole run.
offset = reqs[0]["timestamp"] - ok[0]["sent_ns"] if reqs and ok else 0


def distinct(ts):
    """Response times with those of one read given once, as the profile
    export gives responses of one arrival time as one (docs/metrics.md,
    Fidelity)."""
    return [t for i, t in enumerate(ts) if i == 0 or t != ts[i - 1]]


same_times = all(q["timestamp"] - r["sent_ns"] == offset and
                 [t - offset for t in q["response_timestamps"]] == distinct(r["response_ns"])
                 for q, r in zip(reqs, ok))
check(same_times, "every request's send and response times are its records line's")
same_text = all("".join(o["text_output"] for o in q["response_outputs"]) == r["text"] and
                len(q["response_outputs"]) == len(distinct(r["response_ns"])) for q, r in zip(reqs, ok))
check(same_text, "every request's text is its records line's")

outs = {}
with open(os.path.join(art, "responses.jsonl"), "rb") as f:
    for line in f:
        o = json.loads(line)
        outs[o["id"]] = o["output"]
check(len(outs) == 120 and all(outs.get(r["seq"]) == r["text"] for r in measured),
      "responses.jsonl has every measured request's text as its records line has it")

# Records to a pipe: nothing can be read back, so the records keep their
# response times and text in memory, and every line still goes out.
art2 = os.path.join(tmp, "art2")
p = subprocess.run([TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art2, "--no-html", "--concurrency", "4",
                    "--request-count", "20", "--output-tokens-mean", "6", "--records", "/dev/stdout"],
                   capture_output=True, text=True, timeout=120 * SCALE)
lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{") and '"response_ns"' in l]
pe2 = {}
if os.path.exists(os.path.join(art2, "profile_export.json")):
    with open(os.path.join(art2, "profile_export.json")) as f:
        pe2 = json.load(f)
reqs2 = pe2.get("experiments", [{}])[0].get("requests", [])
check(p.returncode == 0 and len(lines) == 20, "records to a pipe: every line is written", p.stderr[-400:])
lines_ok = sorted((r for r in lines if not r["warmup"] and r["ok"]), key=lambda r: (r["sent_ns"], r["seq"]))
check(len(reqs2) == 20 and len(lines_ok) == 20 and
      all(len(r["response_ns"]) == 7 and len(q["response_timestamps"]) == len(distinct(r["response_ns"]))
          for q, r in zip(reqs2, lines_ok)),
      "records to a pipe: the exports have every response from memory")
done()
