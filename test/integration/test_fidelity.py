#!/usr/bin/env python3
"""Every run says how far its numbers can be trusted (docs/metrics.md,
"Fidelity"), against the built-in mock: the text report, --json,
report.html and the exports' metadata end with the client's own figures and
a verdict per level; the merged share is the one records.jsonl gives; a run
the client cannot keep up with is reported client-bound or degraded, naming
the figure; and --assert and --slo read the fidelity figures.

The verdict of an ordinary run is not held to "ok": a shared CI machine may
well make it "degraded", and that is what the verdict is for.  What is held
is its structure, the sanity of every figure (each against another the run
measured, never against a configured constant), and the forced case.
Prints TAP."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="tp_fidelity_")
VERDICTS = {"ok": 0, "degraded": 1, "client-bound": 2}
# A quick mock: answers of a few tokens, a millisecond apart.
MOCK = ["--mock", "--mock-ttft-ms", "2", "--mock-itl-ms", "1", "--mock-prefill-us-per-token", "0",
        "--mock-prefill-queue-ms", "0", "--mock-itl-us-per-seq", "0"]


def run(args, timeout=180):
    p = subprocess.run([TOKPERF] + args, capture_output=True, text=True, timeout=timeout * SCALE)
    return p.returncode, p.stdout, p.stderr


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def last_key(obj):
    return list(obj)[-1] if obj else None


def merged_from_records(path):
    """Text responses sharing the time of the text response before them, and
    the text responses that follow another, over the measured requests of
    each level of records.jsonl (docs: Merged responses)."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if not r.get("measured"):
                continue
            ts, at = r["response_ns"], r.get("response_text_at") or []
            text = [ts[i] for i, a in enumerate(at) if a is not None]
            m, g = out.get(r["level"], (0, 0))
            merged = sum(1 for a, b in zip(text, text[1:]) if a == b)
            if r.get("merged_text_responses") != merged:
                out["bad"] = out.get("bad", []) + [r["seq"]]
            out[r["level"]] = (m + merged, g + max(len(text) - 1, 0))
            fm, fp = out.get(("first", r["level"]), (0, 0))
            if len(text) >= 2 and r.get("first_token_ns"):
                out[("first", r["level"])] = (fm + (r.get("second_token_ns") == r["first_token_ns"]), fp + 1)
    return out


def check_block(f, lv, what):
    """The fidelity object of one level: every member, each figure sane
    against the others the run measured."""
    bad = []
    want = ["loop_lag_ms", "merged_pct", "client_cpu_pct", "process_cpu_pct", "reads_per_s", "verdict_code",
            "verdict", "reason", "send_lag_ms", "merged_text_responses", "text_response_gaps", "itl_merged",
            "itl_merged_requests", "itl_all_merged_requests", "itl_pooled_merged_gaps", "reads", "wall_s",
            "thresholds"]
    missing = [k for k in want if k not in f]
    if missing:
        bad.append("missing %s" % missing)
        return bad
    if VERDICTS.get(f["verdict"]) != f["verdict_code"]:
        bad.append("verdict %r, code %r" % (f["verdict"], f["verdict_code"]))
    if f["verdict"] == "ok" and f["reason"] is not None:
        bad.append("ok with a reason %r" % f["reason"])
    if f["verdict"] != "ok" and not re.search(r"(send lag p99|loop lag p99|merged responses|first responses merged) "
                                              r"[0-9.]+( ms|%) > |[0-9]+ answers dated before their send",
                                              f["reason"] or ""):
        bad.append("%s without a figure past its threshold: %r" % (f["verdict"], f["reason"]))
    ll = f["loop_lag_ms"]
    if not ll or not (0 <= ll["min"] <= ll["p50"] <= ll["p99"] <= ll["max"]) or ll["n"] < 1:
        bad.append("loop lag %r" % ll)
    elif ll["max"] > f["wall_s"] * 1000 + 1:
        bad.append("a read waited %.1f ms, longer than the level's %.3f s" % (ll["max"], f["wall_s"]))
    if not (f["reads"] >= ll.get("n", 0) > 0):
        bad.append("%r reads, %r with a stamp" % (f["reads"], ll.get("n")))
    if not (f["wall_s"] > 0 and abs(f["reads_per_s"] - f["reads"] / f["wall_s"]) <= 1e-6 * f["reads_per_s"] + 1e-9):
        bad.append("reads/s %r against %r reads in %r s" % (f["reads_per_s"], f["reads"], f["wall_s"]))
    # The level's wall time covers its measured span (warm-up included).
    if f["wall_s"] + 1e-3 < lv["duration_s"]:
        bad.append("wall %r s shorter than the measured duration %r s" % (f["wall_s"], lv["duration_s"]))
    # One thread can use at most one core (the kernel counts in ticks: a
    # little over 100 from rounding); the process at least that thread.
    if not (0 <= f["client_cpu_pct"] <= 105):
        bad.append("client CPU %r%%" % f["client_cpu_pct"])
    if not (f["process_cpu_pct"] + 1 >= f["client_cpu_pct"]):
        bad.append("process CPU %r%% below the loop thread's %r%%" % (f["process_cpu_pct"], f["client_cpu_pct"]))
    sl, lsl = f["send_lag_ms"], lv["send_lag_ms"]
    if not sl or sl["p99"] != lsl["p99"] or sl["max"] != lsl["max"] or sl["p50"] != lsl["p50"]:
        bad.append("send lag %r, the level's %r" % (sl, lsl))
    gaps = f["text_response_gaps"]
    if gaps and abs(f["merged_pct"] - 100.0 * f["merged_text_responses"] / gaps) > 1e-9:
        bad.append("merged %r%% of %r/%r" % (f["merged_pct"], f["merged_text_responses"], gaps))
    if f["itl_merged"] != (f["itl_merged_requests"] > 0):
        bad.append("itl_merged %r with %r requests" % (f["itl_merged"], f["itl_merged_requests"]))
    if lv.get("itl_pooled_ms") and f["itl_pooled_merged_gaps"] and lv["itl_pooled_ms"]["min"] <= 0:
        bad.append("a gap of 0 in the pooled ITL")
    return bad


def check_run(label, args):
    """One ordinary run: every report ends with the fidelity figures."""
    art = os.path.join(tmp, label)
    js = os.path.join(tmp, label + ".json")
    rc, so, se = run(["profile"] + MOCK + args + ["--artifact-dir", art, "--json", js])
    check(rc == 0, "%s: the run ends with exit 0" % label, se[-2000:])
    doc = load(js)
    levels = doc.get("levels", [])
    check(len(levels) == 2, "%s: two levels in --json" % label)

    # Text: the last table, a line per level with its verdict.
    tail = so[so.find("Fidelity: the client's own figures"):] if "Fidelity: the client's own figures" in so else ""
    lines = [re.match(r"Fidelity, (.*): (ok|degraded|client-bound)(: (.*))?$", ln) for ln in tail.splitlines()]
    lines = [m for m in lines if m]
    check(tail and so.rfind("Sweep summary") < so.find("Fidelity: the client's own figures") and len(lines) == 2,
          "%s: the text report ends with the fidelity table and a verdict per level" % label, so[-3000:])
    check(all(m.group(2) == lv["fidelity"]["verdict"] and (m.group(4) or None) == lv["fidelity"]["reason"]
              for m, lv in zip(lines, levels)), "%s: the text's verdicts are --json's" % label,
          [(m.group(0), lv["fidelity"]["verdict"]) for m, lv in zip(lines, levels)])

    # --json: each level ends with its fidelity object; the run's after the levels.
    for lv in levels:
        name = "concurrency %d" % lv["concurrency"]
        check(last_key(lv) == "fidelity", "%s, %s: the level ends with \"fidelity\"" % (label, name), last_key(lv))
        bad = check_block(lv.get("fidelity", {}), lv, name)
        check(not bad, "%s, %s: every fidelity figure there and sane (%s)" % (label, name, lv["fidelity"]["verdict"]),
              "\n".join(bad))
    worst = max((lv["fidelity"]["verdict_code"] for lv in levels), default=-1)
    rf = doc.get("fidelity", {})
    check(last_key(doc) == "fidelity" and VERDICTS.get(rf.get("verdict")) == worst and
          [x["verdict"] for x in rf.get("levels", [])] == [lv["fidelity"]["verdict"] for lv in levels],
          "%s: the document ends with the run's verdict, the worst level's" % label, json.dumps(rf)[:500])

    # The merged share is what records.jsonl's response times say.
    rec = merged_from_records(os.path.join(art, "records.jsonl"))
    check(not rec.get("bad"), "%s: each records line's merged_text_responses is its response times'" % label,
          rec.get("bad"))
    check(all(rec.get(i) == (lv["fidelity"]["merged_text_responses"], lv["fidelity"]["text_response_gaps"])
              for i, lv in enumerate(levels)),
          "%s: the merged share is the records' (%s)" % (label, [rec.get(i) for i in range(len(levels))]),
          [(lv["fidelity"]["merged_text_responses"], lv["fidelity"]["text_response_gaps"]) for lv in levels])

    # The share of first responses merged, likewise (docs: First responses merged).
    def first_pct(i):
        fm, fp = rec.get(("first", i), (0, 0))
        return 100.0 * fm / fp if fp else None
    check(all((first_pct(i) is None and lv["fidelity"]["first_merged_pct"] is None) or
              (first_pct(i) is not None and lv["fidelity"]["first_merged_pct"] is not None and
               abs(first_pct(i) - lv["fidelity"]["first_merged_pct"]) < 1e-9)
              for i, lv in enumerate(levels)),
          "%s: the first responses' merged share is the records'" % label,
          [(first_pct(i), lv["fidelity"].get("first_merged_pct")) for i, lv in enumerate(levels)])

    # report.html: its last section.
    html = ""
    if os.path.exists(os.path.join(art, "report.html")):
        with open(os.path.join(art, "report.html")) as f:
            html = f.read()
    sec = html[html.find("<h2>Fidelity: the client's own figures</h2>"):] if "<h2>Fidelity" in html else ""
    check(sec and "<h2>" not in sec[5:] and sec.count('<tr class="fid">') == 2 and
          all(">%s</td></tr>" % lv["fidelity"]["verdict"] in sec for lv in levels),
          "%s: report.html ends with the fidelity section, a row and a verdict per level" % label)

    # The exports' metadata: each experiment and each summary.
    pe = load(os.path.join(art, "profile_export.json"))
    exps = pe.get("experiments", [])
    check(len(exps) == 2 and all(last_key(e) == "tokperf_fidelity" and
                                 e["tokperf_fidelity"]["verdict"] == lv["fidelity"]["verdict"] and
                                 e["tokperf_fidelity"]["merged_pct"] == lv["fidelity"]["merged_pct"]
                                 for e, lv in zip(exps, levels)),
          "%s: each experiment of profile_export.json ends with the level's fidelity figures" % label)
    multi = [q for e in exps for q in e["requests"]
             if len(q["response_timestamps"]) > 1 and q["response_timestamps"][0] == q["response_timestamps"][-1]]
    check(not multi, "%s: no exported request has several responses all of one time (GenAI-Perf's division "
          "by zero)" % label, len(multi))
    summaries = []
    for root, _, files in os.walk(art):
        summaries += [os.path.join(root, n) for n in files if n.endswith(("_genai_perf.json", "_aiperf.json"))]
    check(len(summaries) == 4 and all("verdict" in load(p).get("tokperf_fidelity", {}) and
                                      "note" in load(p)["tokperf_fidelity"] for p in summaries),
          "%s: every GenAI-Perf and AIPerf summary carries tokperf_fidelity with its note" % label, summaries)
    return levels


# gRPC (kernel stamps on recvmsg) and HTTP (peeks before libcurl reads).
check_run("grpc", ["--concurrency", "1,4", "--request-count", "24", "--output-tokens-mean", "12"])
check_run("openai", ["--service-kind", "openai", "--endpoint-type", "chat", "--concurrency", "1,4",
                     "--request-count", "24", "--output-tokens-mean", "12"])

# A rate the client cannot keep: 200,000 requests/s for a second, the mock
# answering at once.  Client-bound when the client's own core was saturated;
# on a machine busy with other work, degraded: either way a figure past its
# threshold is named (send lag or loop lag).
FAST = ["--mock", "--mock-ttft-ms", "0", "--mock-itl-ms", "0", "--mock-prefill-us-per-token", "0",
        "--mock-prefill-queue-ms", "0", "--mock-itl-us-per-seq", "0", "--mock-max-batch", "100000"]
js = os.path.join(tmp, "overload.json")
rc, so, se = run(["profile"] + FAST + ["--request-rate", "200000", "--duration", "1s", "--output-tokens-mean", "2",
                                       "--no-artifacts", "-q", "--json", js], timeout=300)
lv = (load(js).get("levels") or [{}])[0]
f = lv.get("fidelity", {})
check(rc == 0 and f.get("verdict") in ("client-bound", "degraded") and
      re.search(r"(send lag|loop lag) p99 [0-9.]+ ms > 1 ms", f.get("reason") or ""),
      "a rate the client cannot keep is reported %s, naming the figure: %s (client CPU %.1f%%, achieved %.0f/s)"
      % (f.get("verdict"), f.get("reason"), f.get("client_cpu_pct") or -1, lv.get("achieved_send_rate_rps") or -1),
      se[-1500:])
check(f.get("verdict") != "client-bound" or f.get("client_cpu_pct", 0) >= 90,
      "client-bound only with the loop's core at 90% or more")
check("Fidelity, request rate 200000/s: %s: %s" % (f.get("verdict"), f.get("reason")) in so,
      "the text report says the same")

# --assert reads the fidelity figures: one that holds, one that cannot.
base = ["profile"] + MOCK + ["--concurrency", "2", "--request-count", "8", "--output-tokens-mean", "8",
                             "--no-artifacts", "-q"]
rc, so, se = run(base + ["--assert", "fidelity.merged_pct <= 100", "--assert", "fidelity.verdict <= 2",
                         "--assert", "fidelity.reads_per_s > 0"])
check(rc == 0, "--assert on fidelity figures that hold: exit 0", se[-1500:])
rc, so, se = run(base + ["--assert", "fidelity.loop_lag.max < 0us"])
check(rc == 1 and re.search(r"assertion failed: fidelity\.loop_lag\.max < 0us: measured [0-9.e+-]+ ms at "
                            r"concurrency 2", se),
      "--assert on a fidelity figure that cannot hold: exit 1, naming the figure, value and level", se[-1500:])
rc, so, se = run(base + ["--assert", "fidelity.merged <= 1"])
check(rc != 0 and "unknown metric 'fidelity.merged'" in se and "fidelity.merged_pct" in se,
      "an unknown fidelity name is refused with the list", se[-1500:])

# --slo: a capacity search judges each probe on a fidelity figure too.
js = os.path.join(tmp, "search.json")
rc, so, se = run(["profile"] + MOCK + ["--search", "concurrency", "--search-min", "1", "--search-max", "2",
                                       "--search-precision", "1", "--slo", "fidelity.verdict <= 2",
                                       "--request-count", "8", "--output-tokens-mean", "8", "--no-artifacts", "-q",
                                       "--json", js])
probes = load(js).get("search", {}).get("probes", [])
check(rc == 0 and probes and all(p["passed"] and "fidelity.verdict <= 2" in p["slos"] for p in probes),
      "--slo on the verdict: every probe judged on it, and it held", (se[-800:], json.dumps(probes)[:800]))
done()
