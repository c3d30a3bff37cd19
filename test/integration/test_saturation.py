#!/usr/bin/env python3
"""Over-saturation seen while a level runs (docs/metrics.md "Saturation"):
a rate sweep against the mock with room for 4 sequences at once (about 14
requests/s of these): 3 requests/s is within its capacity and is never
called saturated; 40 requests/s is, within a few seconds, and with
--stop-on-saturation the level stops there (partial) and the higher load is
skipped, said on stderr, in --json and in the text report.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_sat_")
out = os.path.join(tmp, "run.json")
cmd = [TOKPERF, "profile", "--mock", "--mock-max-batch", "4", "--output-tokens-mean", "32", "--request-rate",
       "3,40,80", "--duration", "10s", "--grace-period", "1s", "--stop-on-saturation", "--json", out,
       "--no-artifacts"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
check(p.returncode == 0, "the sweep ends with exit 0", p.stderr[-2000:])
doc = json.load(open(out))
lv = doc["levels"]
check(len(lv) == 2, "two levels ran: the third, above the saturated load, was skipped", len(lv))
check(lv[0]["saturation"]["detected"] == 0 and lv[0]["saturation"]["at_s"] is None and not lv[0]["partial"],
      "3 requests/s, within capacity: not over-saturated", lv[0]["saturation"])
if len(lv) > 1:
    s = lv[1]["saturation"]
    check(s["detected"] == 1 and s["stopped"], "40 requests/s: over-saturated, and the level stopped", s)
    # The detector needs 5 s of samples and a second to confirm: it can date
    # it no earlier than 5 s; "within a few seconds" of the level's start.
    check(s["at_s"] is not None and 5 <= s["at_s"] <= 9, "detected 5-9 s into the level", s["at_s"])
    check(s["reason"] and "requests in the system" in s["reason"], "the reason says what rose", s["reason"])
    check(lv[1]["partial"] and lv[1]["partial_ran_s"] < 10, "the stopped level is partial, shorter than 10 s",
          (lv[1]["partial"], lv[1].get("partial_ran_s")))
check("over-saturated from" in p.stderr and "the level ends here" in p.stderr, "stderr says so as it happens",
      p.stderr[-1500:])
check("skipped (--stop-on-saturation)" in p.stderr, "stderr names the skipped level", p.stderr[-1500:])
check("Over-saturated, request rate 40/s" in p.stdout, "the text report has a line for the level", p.stdout[-3000:])

# Without --stop-on-saturation the level runs to its end, and says it.
cmd = [TOKPERF, "profile", "--mock", "--mock-max-batch", "4", "--output-tokens-mean", "32", "--request-rate", "40",
       "--duration", "8s", "--grace-period", "1s", "--json", out, "--no-artifacts", "-q"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
doc = json.load(open(out))
s = doc["levels"][0]["saturation"]
check(s["detected"] == 1 and not s["stopped"] and not doc["levels"][0]["partial"],
      "without the flag: detected, reported, the level not stopped", s)
check("--stop-on-saturation would end the level here" in p.stderr, "stderr points to the flag", p.stderr[-800:])
done()
