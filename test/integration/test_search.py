"""Capacity search and repeated runs against the in-process mock
(docs/search.md).

Search: the mock decodes at most --mock-max-batch B sequences at once; a
request beyond B waits in its queue until a sequence ends, a whole decode
(output tokens x ITL).  With a TTFT p99 SLO between the plain TTFT and
TTFT plus a decode, every concurrency up to B passes and every one above
fails: the true boundary is B, and the search must land within its stated
precision of it.  The same through perf_analyzer's spelling
(--binary-search --latency-threshold over --concurrency-range).

Repeats: --num-profile-runs N gives N levels and, per metric, a mean and a
95% interval over runs.  The mock draws output lengths at random
(--mock-eos-prob), so request latency varies from run to run; its true
mean, ttft + itl x (E[tokens] - 1), takes E[tokens] from the mock's own
log of a long reference run.  The interval must cover it in most of
several repetitions.  tokperf compare then calls two runs of one
configuration "within noise" and a run with a slower mock a regression."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = os.path.abspath(sys.argv[1])
tmp = tempfile.mkdtemp(prefix="tokperf-search-")


def run(args, timeout=120):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout * SCALE)
    return p.returncode, p.stdout, p.stderr


def load(path):
    with open(path) as f:
        return json.load(f)


# ---- capacity search -------------------------------------------------------
B = 8
MOCK = ["--mock", "--mock-max-batch", str(B), "--mock-ttft-ms", "10", "--mock-itl-ms", "6",
        "--mock-output-tokens", "16", "--mock-prefill-queue-ms", "0", "--mock-prefill-us-per-token", "0",
        "--mock-itl-us-per-seq", "0"]
# Up to B: TTFT about 10 ms; beyond: 10 ms + a whole sequence, 10 + 15 x 6
# = 100 ms, later.  The bound of 50 ms leaves 40 ms for a busy machine's
# scheduling hiccups.
out = os.path.join(tmp, "search.json")
rc, so, se = run(["profile"] + MOCK + ["--search", "concurrency", "--search-min", "1", "--search-max", "64",
                                      "--search-precision", "1", "--slo", "ttft.p99 <= 50ms",
                                      "--request-count", "32", "--warmup-request-count", "8", "--artifact-dir",
                                      os.path.join(tmp, "art"), "-q", "--json", out])
check(rc == 0, "a concurrency search against the mock runs", se)
s = load(out).get("search", {}) if rc == 0 else {}
probes = s.get("probes", [])
check(s.get("outcome") == "found", "the search ends with a bracket within its precision", json.dumps(s)[:2000])
check(s.get("boundary") is not None and abs(s["boundary"] - B) <= 1,
      "the boundary found (%s) is within the precision (1) of the true one (%d)" % (s.get("boundary"), B))
check(s.get("last_passing") == s.get("boundary") and s.get("first_failing") is not None
      and s["first_failing"] > s["boundary"], "the last passing and first failing probes are reported")
check(len(probes) >= 3 and all("ttft.p99 <= 50ms" in p["slos"] for p in probes),
      "every probe is listed with its SLO figure (%d probes)" % len(probes))
check(all(p["passed"] == (p["load"] <= B) for p in probes),
      "every probe up to %d passed and every one above failed" % B,
      "\n".join("%g %s %s" % (p["load"], p["passed"], p["slos"]) for p in probes))
html = ""
if os.path.exists(os.path.join(tmp, "art", "report.html")):
    with open(os.path.join(tmp, "art", "report.html")) as f:
        html = f.read()
sec = html[html.find("<h2>Capacity search"):]
check('data-chart="search"' in sec and sec.count('class="probe ') == len(probes) and
      sec.count("<tr><td>") == len(probes), "report.html has the probe chart and its numbers in a table beside it")
check("Capacity search" in so and "Boundary: 8" in so and "First failing probe" in so,
      "the text report has the search's table and its boundary", so[-3000:])



def pct(v, q):
    v = sorted(v)
    k = q / 100 * (len(v) - 1)
    i = int(k)
    j = min(i + 1, len(v) - 1)
    return v[i] + (v[j] - v[i]) * (k - i)


def recompute(levels, records_path, what):
    """Every probe's figures worked out again from records.jsonl alone
    (docs/metrics.md), to 1e-9: the search's levels are levels like any."""
    recs = {}
    with open(records_path) as f:
        for line in f:
            o = json.loads(line)
            recs.setdefault(o["level"], []).append(o)
    bad = []
    for i, lv in enumerate(levels):
        m = [r for r in recs.get(i, []) if not r["warmup"]]
        ok = [r for r in m if r["ok"]]
        sent = [r["sent_ns"] for r in m if r["sent_ns"]]
        done_ = [r["done_ns"] for r in m if r["done_ns"]]
        dur = (max(done_) - min(sent)) / 1e9
        ttft = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in ok if r.get("first_token_ns")]
        lat = [(r["done_ns"] - r["sent_ns"]) / 1e6 for r in ok]
        counted = [r["output_tokens"] for r in ok if r["output_tokens"] is not None and r["output_tokens"] >= 0]
        outt = sum(counted)
        want = {"requests": len(m), "succeeded": len(ok), "duration_s": dur,
                "request_throughput_rps": len(ok) / dur,
                "output_token_throughput_tps": outt / dur if counted else None,
                "ttft.p50": pct(ttft, 50), "ttft.p99": pct(ttft, 99), "latency.avg": sum(lat) / len(lat)}
        got = {"requests": lv["requests"], "succeeded": lv["succeeded"], "duration_s": lv["duration_s"],
               "request_throughput_rps": lv["request_throughput_rps"],
               "output_token_throughput_tps": lv["output_token_throughput_tps"],
               "ttft.p50": lv["time_to_first_token_ms"]["p50"], "ttft.p99": lv["time_to_first_token_ms"]["p99"],
               "latency.avg": lv["request_latency_ms"]["avg"]}
        for k in want:
            if (got[k] is None) != (want[k] is None) or (
                    want[k] is not None and abs(got[k] - want[k]) > 1e-9 * max(abs(want[k]), 1e-9)):
                bad.append("level %d %s: %r vs %r" % (i, k, got[k], want[k]))
    check(levels and not bad, "%s: every level's figures recompute from records.jsonl (%d levels)" % (what, len(levels)),
          "\n".join(bad[:20]))


if rc == 0:
    recompute(load(out).get("levels", []), os.path.join(tmp, "art", "records.jsonl"), "capacity search")

# Each probe repeated (--num-profile-runs 2): judged on the mean of its
# runs' figures, every run a level of its own, the boundary the same.
out = os.path.join(tmp, "search_runs.json")
rc, so, se = run(["profile"] + MOCK + ["--search", "concurrency", "--search-min", "4", "--search-max", "16",
                                      "--search-precision", "1", "--slo", "ttft.p99 <= 50ms", "--num-profile-runs",
                                      "2", "--request-count", "24", "--warmup-request-count", "4", "--artifact-dir",
                                      os.path.join(tmp, "art_runs"), "--no-html", "-q", "--json", out])
doc = load(out) if rc == 0 else {}
if rc == 0:
    recompute(doc.get("levels", []), os.path.join(tmp, "art_runs", "records.jsonl"), "search with repeated runs")
s = doc.get("search", {})
probes = s.get("probes", [])
levels = doc.get("levels", [])
check(rc == 0 and s.get("outcome") == "found" and s.get("boundary") is not None and abs(s["boundary"] - B) <= 1,
      "a search with repeated runs finds the boundary (%s)" % s.get("boundary"), se[-800:])
check(len(levels) == 2 * len(probes) and all(levels[2 * i]["concurrency"] == levels[2 * i + 1]["concurrency"] ==
                                             p["load"] for i, p in enumerate(probes)),
      "each probe ran twice at its load, each run a level (%d levels, %d probes)" % (len(levels), len(probes)))
want = [sum(lv["time_to_first_token_ms"]["p99"] for lv in levels[2 * i:2 * i + 2]) / 2 for i in range(len(probes))]
check(all(abs(p["slos"]["ttft.p99 <= 50ms"]["value"] - w) < 1e-6 for p, w in zip(probes, want))
      if probes and isinstance(probes[0].get("slos"), dict) else False,
      "each probe is judged on the mean of its runs' figures",
      json.dumps([[p.get("slos"), w] for p, w in zip(probes, want)])[:1500])
check("Repeated runs: 2 per level" in so, "the repeats' table is in the report", so[-1500:])

# A request-rate search with a relative precision: the mock serves B
# sequences at once, each 10 ms + 15 x 6 ms = 100 ms long, so it keeps up
# with B / 0.1 = 80 requests/s; below that TTFT stays near 10 ms, above
# it the queue grows through the level, so that by the middle of a 2 s
# level the median request waits far beyond the bound (the median, not
# p99: one scheduling hiccup of a busy machine must not fail a probe).  The
# bracket found must hold the true capacity (widened by the 10% precision).
out = os.path.join(tmp, "search_rate.json")
rc, so, se = run(["profile"] + MOCK + ["--search", "request-rate", "--search-min", "10", "--search-max", "640",
                                      "--search-precision", "10%", "--slo", "ttft.p50 <= 50ms",
                                      "--slo", "error_rate <= 1%", "--duration", "2s", "--no-artifacts",
                                      "-q", "--json", out])
s = load(out).get("search", {}) if rc == 0 else {}
CAP = B / 0.100
check(rc == 0 and s.get("mode") == "request_rate" and s.get("boundary") is not None
      and s.get("first_failing") is not None and s["boundary"] <= CAP * 1.1 and s["first_failing"] >= CAP * 0.9
      and (s["first_failing"] - s["boundary"]) <= 0.1 * s["boundary"] + 1e-9,
      "a request-rate search brackets the mock's capacity (%.0f/s) within 10%%: last pass %s, first failure %s"
      % (CAP, s.get("boundary"), s.get("first_failing")), se + json.dumps(s)[:1500])

# perf_analyzer's spelling.
out = os.path.join(tmp, "pa.json")
rc, so, se = run(["profile"] + MOCK + ["--binary-search", "--latency-threshold", "150",
                                      "--concurrency-range", "1:32", "--request-count", "32", "--no-artifacts",
                                      "-q", "--json", out])
s = load(out).get("search", {}) if rc == 0 else {}
check(rc == 0 and s.get("slos") == ["latency.avg <= 150ms"] and s.get("max") == 32 and s.get("boundary") is not None,
      "--binary-search --latency-threshold 150 searches the --concurrency-range under latency.avg <= 150ms",
      se + json.dumps(s)[:1500])
# Below the range: the first probe fails at --search-min, and the run fails.
out = os.path.join(tmp, "below.json")
rc, so, se = run(["profile"] + MOCK + ["--search", "concurrency", "--search-min", "12", "--search-max", "64",
                                      "--slo", "ttft.p99 <= 50ms", "--request-count", "24", "--no-artifacts",
                                      "-q", "--json", out])
s = load(out).get("search", {}) if os.path.exists(out) else {}
check(rc == 1 and s.get("boundary") is None and s.get("outcome", "").startswith("every probe failed")
      and "no probe met every SLO" in se, "a capacity below --search-min is reported and fails the run (exit 1)",
      se + json.dumps(s)[:800])
rc, so, se = run(["profile", "--mock", "--slo", "ttft.p99 <= 1s", "--no-artifacts", "-q"])
check(rc == 2 and "--slo goes with --search" in se, "--slo without --search is refused with the way out", se)
rc, so, se = run(["profile", "--mock", "--search", "concurrency", "--no-artifacts", "-q"])
check(rc != 0 and "--slo" in se, "--search without an SLO is refused", se)

# ---- repeated runs ---------------------------------------------------------
RMOCK = ["--mock", "--mock-ttft-ms", "20", "--mock-itl-ms", "2", "--mock-itl-us-per-seq", "0",
         "--mock-prefill-us-per-token", "0", "--mock-prefill-queue-ms", "0", "--mock-eos-prob", "0.1",
         "--max-tokens", "64"]
# The reference: the mean output length over many of the mock's sequences,
# from its own log.
log = os.path.join(tmp, "ref.jsonl")
rc, so, se = run(["profile"] + RMOCK + ["--mock-itl-ms", "0.1", "--mock-ttft-ms", "1", "--mock-seed", "999",
                                       "--concurrency", "32", "--request-count", "2000", "--no-artifacts", "-q",
                                       "--mock-log", log])
counts = {}
with open(log) as f:
    for line in f:
        e = json.loads(line)
        if e.get("ev") == "response" and e.get("text"):  # the final response carries no token
            counts[e["id"]] = counts.get(e["id"], 0) + 1
mean_tokens = sum(counts.values()) / max(1, len(counts))
true_latency = 20 + 2 * (mean_tokens - 1)
check(rc == 0 and len(counts) >= 2000, "the reference run logs %d sequences, %.2f tokens on average"
      % (len(counts), mean_tokens), se)

covered, docs = 0, []
REPS = 5
for k in range(REPS):
    out = os.path.join(tmp, "rep%d.json" % k)
    docs.append(out)
    rc, so, se = run(["profile"] + RMOCK + ["--mock-seed", str(k + 1), "--concurrency", "4",
                                           "--num-profile-runs", "5", "--request-count", "40", "--no-artifacts",
                                           "-q", "--json", out])
    d = load(out) if rc == 0 else {}
    reps = d.get("repeats", [])
    if k == 0:
        check(rc == 0 and len(d.get("levels", [])) == 5 and len(reps) == 1 and reps[0]["runs"] == 5,
              "--num-profile-runs 5: five levels, one point with its five runs", se)
        check("Repeated runs: 5 per level" in so and "95% CI" in so, "the text report has the repeats section",
              so[-2000:])
    m = reps[0]["metrics"]["request_latency_ms"]["avg"] if reps else {}
    if m and m["ci95_low"] <= true_latency <= m["ci95_high"]:
        covered += 1
check(covered >= 3, "the 95%% interval of the mean latency covers the mock's true mean (%.2f ms) in %d of %d "
      "repetitions" % (true_latency, covered, REPS))

# compare: the same configuration again (the first repetition's command
# line), and a slower mock.
again = os.path.join(tmp, "again.json")
rc, so, se = run(["profile"] + RMOCK + ["--mock-seed", "1", "--concurrency", "4", "--num-profile-runs", "5",
                                       "--request-count", "40", "--no-artifacts", "-q", "--json", again])
slow = os.path.join(tmp, "slow.json")
rc, so, se = run(["profile"] + RMOCK + ["--mock-itl-ms", "4", "--mock-seed", "77", "--concurrency", "4",
                                       "--num-profile-runs", "5", "--request-count", "40", "--no-artifacts", "-q",
                                       "--json", slow])
junit = os.path.join(tmp, "j.xml")
rc, so, se = run(["compare", docs[0], again, "--fail-on", "latency.avg:5%", "--fail-on", "ttft.avg:1%",
                  "--junit", junit])
with open(junit) as f:
    jx = f.read()
check(rc == 0 and "within noise" in so and "within noise" in jx,
      "compare calls two runs of one configuration within noise (text and JUnit)", so[-2000:] + se)
rc, so, se = run(["compare", docs[0], slow, "--fail-on", "latency.avg:5%", "--junit", junit])
with open(junit) as f:
    jx = f.read()
check(rc == 1 and "beyond noise" in so and "<failure" in jx,
      "compare calls a run with a slower mock a regression beyond noise", so[-2000:] + se)

done()
