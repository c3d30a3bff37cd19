#!/usr/bin/env python3
"""The steady state of a level (docs/metrics.md "Steady state"), recomputed
from records.jsonl by a reader written from the definition alone: the
window where the measured successful requests in flight stay at or above
ceil(F x target), and the figures over it, equal what --json says to 1e-9.
A concurrency level with a ramp (requests of uneven length, so the window
is narrower than the level), and an open-loop rate level, which has no
target and so no steady state.  Prints TAP."""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_steady_")


def run(name, extra):
    art = os.path.join(tmp, name)
    out = os.path.join(tmp, name + ".json")
    cmd = [TOKPERF, "profile", "--mock", "-q", "--service-kind", "openai", "--endpoint-type", "chat",
           "--artifact-dir", art, "--no-html", "--json", out, "--mock-ttft-ms", "5", "--mock-itl-ms", "2",
           "--output-tokens-mean", "20", "--output-tokens-stddev", "8",
           "--tokenizer", os.environ["TP_WORDS_MODEL"]] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: the run ends with exit 0" % name, p.stderr[-2000:])
    with open(out) as f:
        doc = json.load(f)
    with open(os.path.join(art, "records.jsonl")) as f:
        recs = [json.loads(line) for line in f]
    return doc, recs


def pct(sorted_v, p):
    rank = p / 100.0 * (len(sorted_v) - 1)
    lo = int(math.floor(rank))
    if lo >= len(sorted_v) - 1:
        return sorted_v[-1]
    return sorted_v[lo] + (sorted_v[lo + 1] - sorted_v[lo]) * (rank - lo)


def steady(recs, target, threshold):
    rs = [r for r in recs if not r["warmup"] and r["ok"] and r["sent_ns"] and r["done_ns"] >= r["sent_ns"]]
    k = max(1, math.ceil(threshold * target))
    ev = sorted([(r["sent_ns"], 1) for r in rs] + [(r["done_ns"], 0) for r in rs])  # ends first on ties
    c = peak = 0
    a = b = None
    for t, start in ev:
        before = c
        c = c + 1 if start else c - 1
        peak = max(peak, c)
        if start and before < k <= c and a is None:
            a = t
        if not start and before >= k > c:
            b = t
    if a is None:
        return None
    first = min(r["sent_ns"] for r in rs)
    span = (b - a) / 1e9
    started = [r for r in rs if a <= r["sent_ns"] < b]
    completed = [r for r in rs if a <= r["done_ns"] < b]
    out_tokens = 0.0
    for r in rs:
        # Tokens placed evenly over the text's span (the records keep its
        # first and last times): token k of n at f + k (l - f) / (n - 1).
        n_out = r["output_tokens"]
        if n_out <= 0 or not r["first_token_ns"]:
            continue
        f = float(r["first_token_ns"])
        last = float(r["last_token_ns"] or r["first_token_ns"])
        if n_out == 1 or last <= f:
            out_tokens += n_out if a <= f < b else 0
            continue
        step = (last - f) / (n_out - 1)
        out_tokens += sum(1 for k in range(n_out) if float(a) <= f + k * step < float(b))
    ttft = sorted((r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in started)
    return {"start_s": (a - first) / 1e9, "end_s": (b - first) / 1e9, "peak": peak, "k": k,
            "started": len(started), "completed": len(completed), "rps": len(completed) / span,
            "out_tps": out_tokens / span, "in_tps": sum(r["input_tokens"] for r in started) / span,
            "ttft_p50": pct(ttft, 50), "ttft_p99": pct(ttft, 99), "ttft_avg": sum(ttft) / len(ttft)}


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# A concurrency level: 8 streams, 160 requests of uneven length.
doc, recs = run("conc", ["--concurrency", "8", "--request-count", "160", "--warmup-request-count", "0"])
lv = doc["levels"][0]
s = lv["steady"]
want = steady(recs, 8, 0.95)
check(want is not None and s["found"], "concurrency 8: a steady state is found", s)
if want and s["found"]:
    check(s["threshold_abs"] == want["k"] == 8 and s["target_concurrency"] == 8,
          "threshold ceil(0.95 x 8) = 8 of target 8", s)
    check(rel(s["start_s"], want["start_s"]) < 1e-9 or abs(s["start_s"] - want["start_s"]) < 1e-9,
          "window start recomputes from records.jsonl", (s["start_s"], want["start_s"]))
    check(rel(s["end_s"], want["end_s"]) < 1e-9, "window end recomputes", (s["end_s"], want["end_s"]))
    check(s["observed_peak"] == want["peak"] and s["requests_started"] == want["started"] and
          s["requests_completed"] == want["completed"], "peak and counts recompute",
          (s["observed_peak"], s["requests_started"], s["requests_completed"], want))
    check(rel(s["request_throughput_rps"], want["rps"]) < 1e-9, "request throughput recomputes",
          (s["request_throughput_rps"], want["rps"]))
    check(rel(s["output_token_throughput_tps"], want["out_tps"]) < 1e-9, "output token throughput recomputes",
          (s["output_token_throughput_tps"], want["out_tps"]))
    check(rel(s["input_token_throughput_tps"], want["in_tps"]) < 1e-9, "input token throughput recomputes",
          (s["input_token_throughput_tps"], want["in_tps"]))
    for key in ("p50", "p99", "avg"):
        check(rel(s["ttft_ms"][key], want["ttft_" + key]) < 1e-9, "TTFT %s recomputes" % key,
              (s["ttft_ms"][key], want["ttft_" + key]))
    # The ramp and the drain are outside: the window is inside the level.
    dur = lv["duration_s"]
    check(0 <= s["start_s"] and s["end_s"] < dur and s["duration_s"] < dur,
          "the window lies inside the level, shorter than it", (s["start_s"], s["end_s"], dur))
    check(s["requests_started"] < lv["requests"], "fewer requests sent in the window than in the level",
          (s["requests_started"], lv["requests"]))
    # Over the ramp and the drain fewer streams generate: the plateau's
    # output rate is above the whole level's.
    check(s["output_token_throughput_tps"] > lv["output_token_throughput_tps"],
          "steady output token throughput above the whole level's (no ramp, no drain)",
          (s["output_token_throughput_tps"], lv["output_token_throughput_tps"]))

# An open-loop rate without a cap has no target: no steady state, figures null.
doc, recs = run("rate", ["--request-rate", "200", "--request-count", "60"])
s = doc["levels"][0]["steady"]
check(s["found"] is False and s["ttft_ms"] is None and s["request_throughput_rps"] is None,
      "an open-loop rate level: no steady state, its figures null", s)

done()
