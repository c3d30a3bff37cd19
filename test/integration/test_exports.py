#!/usr/bin/env python3
"""The GenAI-Perf and AIPerf summaries of a real run say what the report
says: a sweep against the built-in mock, with --json, and for each level
every figure of <stem>_genai_perf.json/.csv and <stem>_aiperf.json/.csv
equals the same figure of the report's JSON document (the CSVs to their two
decimals), and AIPerf's per-record profile_export.jsonl agrees with
records.jsonl, the summary and the pooled ITL.  A run without streaming leaves the timings between tokens out
of both.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")

# Each tool's key and unit for a key of the report's JSON document: the
# facts of the tools' layouts (docs/metrics.md "Exports"), written out here
# rather than read from the registry the exports are written from.
GENAI = {
    "time_to_first_token_ms": ("time_to_first_token", "ms"),
    # tokperf's TPOT is what both tools call inter-token latency.
    "time_per_output_token_ms": ("inter_token_latency", "ms"),
    "request_latency_ms": ("request_latency", "ms"),
    "output_tokens": ("output_sequence_length", "tokens"),
    "input_tokens": ("input_sequence_length", "tokens"),
    "time_to_second_token_ms": ("time_to_second_token", "ms"),
    "output_token_throughput_per_user_from_itl_tps": ("output_token_throughput_per_user", "tokens/sec/user"),
    "request_throughput_rps": ("request_throughput", "requests/sec"),
    "output_token_throughput_tps": ("output_token_throughput", "tokens/sec"),
    "goodput_rps": ("request_goodput", "requests/sec"),
    "requests": ("request_count", "count"),
}
AIPERF = dict(GENAI)
AIPERF.update({
    "goodput_rps": ("goodput", "requests/sec"),
    "requests": ("request_count", "requests"),
    "duration_s": ("benchmark_duration", "sec"),
    "failed": ("error_request_count", "requests"),
})
BETWEEN_TOKENS = {"time_to_first_token", "inter_token_latency", "time_to_second_token",
                  "output_token_throughput_per_user"}
STATS = ["avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]


def run(tmp, extra):
    os.makedirs(tmp)
    art = os.path.join(tmp, "art")
    js = os.path.join(tmp, "r.json")
    cmd = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art, "--no-html", "--json", js,
           "--request-count", "24", "--output-tokens-mean", "12", "--mock-ttft-ms", "2", "--mock-itl-ms", "1",
           "--goodput", "ttft:500"] + extra
    if WORDS:
        cmd += ["--tokenizer", WORDS]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "a run with %s ends with exit 0" % " ".join(extra), p.stderr[-2000:])
    with open(js) as f:
        return art, json.load(f)


def level_dir(art, lv):
    return os.path.join(art, "concurrency%d" % lv["concurrency"])


def compare_json(doc, lv, table, tool, streaming):
    """Every exported figure is the report's; every report figure with a key
    is exported (unless unavailable, or a timing between tokens without
    streaming)."""
    bad = []
    for jkey, (key, unit) in table.items():
        want = lv.get(jkey)
        got = doc.get(key)
        expect = want is not None and (streaming or key not in BETWEEN_TOKENS)
        if not expect:
            if got is not None:
                bad.append("%s exported without a figure to export" % key)
            continue
        if got is None:
            bad.append("%s missing" % key)
            continue
        if got.get("unit") != unit:
            bad.append("%s unit %r, want %r" % (key, got.get("unit"), unit))
        if isinstance(want, dict):
            for s in STATS:
                if got.get(s) != want[s]:
                    bad.append("%s.%s %r != report's %r" % (key, s, got.get(s), want[s]))
            if list(got) != ["unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min",
                             "max", "std"]:
                bad.append("%s statistics in the order %s" % (key, list(got)))
        elif got.get("avg") != want or len(got) != 2:
            bad.append("%s %r != report's %r" % (key, got, want))
    extra = set(doc) - {k for k, _ in table.values()} - {"input_config"}
    if extra:
        bad.append("keys with no report figure: %s" % sorted(extra))
    check(not bad, "%s json of concurrency %d: every figure is the report's" % (tool, lv["concurrency"]),
          "\n".join(bad))


def compare_csv(text, doc, table, tool, lv, thousands):
    """Every number of the CSV is the JSON export's figure to two decimals
    (the JSON having been checked against the report)."""
    fmt = (lambda v: format(v, ",.2f")) if thousands else (lambda v: format(v, ".2f"))
    lines = text.split("\r\n")
    check(lines[0] == "Metric," + ",".join(STATS) and text.endswith("\r\n"),
          "%s csv header and CRLF line ends" % tool, lines[0])
    import csv
    import io
    rows = list(csv.reader(io.StringIO(text)))
    split = rows.index([])
    dist = rows[1:split]
    values = rows[split + 2:]
    want_dist = [k for k, _ in table.values() if k in doc and "p50" in doc[k]]
    want_values = [k for k, _ in table.values() if k in doc and "p50" not in doc[k]]
    bad = []
    if len(dist) != len(want_dist) or len(values) != len(want_values):
        bad.append("rows %d+%d, want %d+%d" % (len(dist), len(values), len(want_dist), len(want_values)))
    # Rows follow the JSON's order; each row's numbers are its metric's.
    order = [k for k in doc if k != "input_config"]
    dist_keys = [k for k in order if "p50" in doc[k]]
    value_keys = [k for k in order if "p50" not in doc[k]]
    for row, k in zip(dist, dist_keys):
        want = [fmt(doc[k][s]) for s in STATS]
        if row[1:] != want:
            bad.append("%s: %s != %s" % (row[0], row[1:], want))
        words = k.replace("_", " ").split()
        if row[0].split(" (")[0].lower() != " ".join(words):
            bad.append("%s labels %s" % (row[0], k))
    for row, k in zip(values, value_keys):
        if row[1:] != ["%.2f" % doc[k]["avg"]]:
            bad.append("%s: %s != %.2f" % (row[0], row[1:], doc[k]["avg"]))
    check(not bad, "%s csv of concurrency %d: every value is the figure to two decimals" % (tool, lv["concurrency"]),
          "\n".join(bad))


def check_level(art, lv, streaming):
    d = level_dir(art, lv)
    for tool, table, stem, thousands in (("GenAI-Perf", GENAI, "profile_export_genai_perf", True),
                                         ("AIPerf", AIPERF, "profile_export_aiperf", False)):
        jp, cp = os.path.join(d, stem + ".json"), os.path.join(d, stem + ".csv")
        check(os.path.exists(jp) and os.path.exists(cp), "%s files of concurrency %d" % (tool, lv["concurrency"]))
        if not os.path.exists(jp) or not os.path.exists(cp):
            continue
        with open(jp) as f:
            doc = json.load(f)
        with open(cp, newline="") as f:
            text = f.read()
        compare_json(doc, lv, table, tool, streaming)
        compare_csv(text, doc, table, tool, lv, thousands)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check_records(art, li, lv, streaming):
    """AIPerf's per-record profile_export.jsonl of a level: one line per
    measured request of records.jsonl, each figure worked out again from
    that line's times and counts, and the lines' figures summarised are the
    summary's (profile_export_aiperf.json) and the pooled ITL's."""
    d = level_dir(art, lv)
    path = os.path.join(d, "profile_export.jsonl")
    check(os.path.exists(path), "AIPerf's profile_export.jsonl of concurrency %d" % lv["concurrency"])
    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = [json.loads(x) for x in f]
    with open(os.path.join(art, "records.jsonl")) as f:
        recs = {r["seq"]: r for r in map(json.loads, f) if r["level"] == li and r["measured"]}
    with open(os.path.join(d, "profile_export_aiperf.json")) as f:
        summary = json.load(f)
    bad = []
    if sorted(x["metadata"]["request_num"] for x in lines) != sorted(recs):
        bad.append("lines for requests %s, records.jsonl measured %s" %
                   (sorted(x["metadata"]["request_num"] for x in lines), sorted(recs)))
    gaps = []
    for x in lines:
        r = recs.get(x["metadata"]["request_num"])
        if r is None:
            continue
        md, m = x["metadata"], x["metrics"] or {}
        sent = r["sent_ns"]
        if md["request_end_ns"] - md["request_start_ns"] != r["done_ns"] - sent:
            bad.append("seq %d: end - start is not done - sent" % r["seq"])
        if md["request_ack_ns"] - md["request_start_ns"] != r["response_ns"][0] - sent:
            bad.append("seq %d: ack - start is not the first response - sent" % r["seq"])
        if not r["ok"]:
            if x["error"] is None or set(m) - {"error_isl"}:
                bad.append("seq %d failed: %r" % (r["seq"], x))
            continue
        if x["error"] is not None:
            bad.append("seq %d succeeded but has an error" % r["seq"])
        want = {"request_latency": (r["done_ns"] - sent) / 1e6}
        if WORDS:
            want["input_sequence_length"] = r["input_tokens"]
            want["output_sequence_length"] = r["output_tokens"]
        if streaming:
            want["time_to_first_token"] = (r["first_token_ns"] - sent) / 1e6
            want["time_to_second_token"] = (r["second_token_ns"] - r["first_token_ns"]) / 1e6
        for k, v in want.items():
            if not close(m.get(k, {}).get("value"), v):
                bad.append("seq %d: %s %r, records.jsonl gives %r" % (r["seq"], k, m.get(k), v))
        icl = m.get("inter_chunk_latency", {}).get("value")
        if streaming:
            # The gaps are differences of consecutive response times, and
            # together they span the first text response to the last.
            diffs = {(b - a) / 1e6 for a, b in zip(r["response_ns"], r["response_ns"][1:])}
            span = (r["last_token_ns"] - r["first_token_ns"]) / 1e6
            if icl is None or any(g not in diffs for g in icl) or not close(sum(icl), span):
                bad.append("seq %d: inter_chunk_latency %r against response_ns" % (r["seq"], icl))
            gaps += icl or []
        elif icl is not None:
            bad.append("seq %d: gaps without streaming" % r["seq"])
    for key, want in summary.items():
        vals = [x["metrics"][key]["value"] for x in lines if x["metrics"] and key in x["metrics"]]
        if "p50" not in want or key.startswith("error"):
            continue
        if not vals or not close(sum(vals) / len(vals), want["avg"]) or not close(min(vals), want["min"]) \
                or not close(max(vals), want["max"]):
            bad.append("%s: the lines' mean/min/max are not the summary's %r" % (key, want))
    if summary.get("request_count", {}).get("avg") != len(lines):
        bad.append("request_count %r, %d lines" % (summary.get("request_count"), len(lines)))
    pooled = lv.get("itl_pooled_ms")
    if streaming and (not pooled or pooled["n"] != len(gaps) or not close(pooled["avg"], sum(gaps) / len(gaps))
                      or not close(pooled["max"], max(gaps)) or not close(pooled["min"], min(gaps))):
        bad.append("itl_pooled_ms %r against %d gaps" % (pooled, len(gaps)))
    check(not bad, "AIPerf's per-record lines of concurrency %d agree with records.jsonl and the summary" %
          lv["concurrency"], "\n".join(bad[:20]))


tmp = tempfile.mkdtemp(prefix="tp_exports_")
art, rep = run(os.path.join(tmp, "stream"), ["--concurrency", "2,4"])
levels = rep.get("levels", [])
check(len(levels) == 2, "two levels in the report", len(levels))
check(all(lv.get("time_to_first_token_ms") and lv.get("time_to_second_token_ms") for lv in levels),
      "the streaming run has the timings between tokens to compare")
if WORDS:
    check(all(lv.get("output_tokens") and lv.get("output_token_throughput_tps") for lv in levels),
          "with a tokenizer the token figures exist to compare")
for li, lv in enumerate(levels):
    check_level(art, lv, True)
    check_records(art, li, lv, True)

art, rep = run(os.path.join(tmp, "nostream"), ["--concurrency", "3", "--no-streaming"])
for li, lv in enumerate(rep.get("levels", [])):
    check_level(art, lv, False)
    check_records(art, li, lv, False)
# The API as the tools name it: an OpenAI chat run's profile_export.json and
# GenAI-Perf summary say "openai" and its endpoint, not the KServe defaults.
art = os.path.join(tempfile.mkdtemp(prefix="tp_exports_api_"), "art")
p = subprocess.run([TOKPERF, "profile", "--mock", "--service-kind", "openai", "--endpoint-type", "chat",
                    "--concurrency", "2", "--request-count", "4", "--output-tokens-mean", "4", "-q",
                    "--artifact-dir", art, "--no-html"], capture_output=True, text=True, timeout=120 * SCALE)
pe = json.load(open(os.path.join(art, "profile_export.json"))) if p.returncode == 0 else {}
gp = {}
for root, _, files in os.walk(art):
    for f in files:
        if f.endswith("_genai_perf.json"):
            gp = json.load(open(os.path.join(root, f)))
ic = gp.get("input_config", {})
check(pe.get("service_kind") == "openai" and pe.get("endpoint") == "v1/chat/completions",
      "an OpenAI chat run's profile_export.json names its service kind and endpoint",
      json.dumps({k: pe.get(k) for k in ("service_kind", "endpoint")}) + p.stderr[-300:])
check(ic.get("service_kind") == "openai" and ic.get("endpoint_type") == "chat" and
      ic.get("endpoint") == "v1/chat/completions", "and so does the GenAI-Perf summary's input_config",
      json.dumps({k: ic.get(k) for k in ("service_kind", "endpoint_type", "endpoint")}))
done()
