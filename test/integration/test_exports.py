#!/usr/bin/env python3
"""The exports of real runs say what the records say: runs against the
built-in mock (a concurrency sweep, a run without streaming, a request rate
against OpenAI completions, perf_analyzer's stability windows, a reasoning
chat run), each with --json.  For each level every figure of the report's
JSON is worked out again from records.jsonl by the definitions of
docs/metrics.md (with stability windows, from the requests that ended in the
last three windows); every figure of <stem>_genai_perf.json/.csv and
<stem>_aiperf.json/.csv equals the report's (the CSVs to their two
decimals) and the recomputed one; AIPerf's per-record profile_export.jsonl
agrees with records.jsonl, the summary and the pooled ITL; and
profile_export.json gives each response its own payload, whose texts joined
are the request's text with its token count.  A run without streaming
leaves the timings between tokens out of both summaries (GenAI-Perf's JSON
keeps the time to first token, as GenAI-Perf's does).  Each level's directory
holds its own profile export and GenAI-Perf's summary, AIPerf's files in
aiperf/.  Prints TAP."""
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
    # GenAI-Perf reads OpenAI content only: its first token, ITL and
    # per-user rate are the answer's (reasoning left out).
    "time_to_first_output_token_ms": ("time_to_first_token", "ms"),
    # Both tools' inter-token latency and request latency end at the last
    # text (a trailing usage-only response left out): tokperf's ITL and its
    # latency to the last text, not its TPOT and latency to the end.
    "inter_token_latency_answer_ms": ("inter_token_latency", "ms"),
    "request_latency_to_last_text_ms": ("request_latency", "ms"),
    "output_tokens": ("output_sequence_length", "tokens"),
    "input_tokens": ("input_sequence_length", "tokens"),
    "time_to_second_token_ms": ("time_to_second_token", "ms"),
    "output_token_throughput_per_user_from_answer_itl_tps": ("output_token_throughput_per_user", "tokens/sec/user"),
    "request_throughput_rps": ("request_throughput", "requests/sec"),
    "output_token_throughput_tps": ("output_token_throughput", "tokens/sec"),
    "goodput_rps": ("request_goodput", "requests/sec"),
    "requests": ("request_count", "count"),
}
AIPERF = dict(GENAI)
# AIPerf's output sequence length counts reasoning and answer.
for k in ("output_tokens", "time_to_first_output_token_ms", "inter_token_latency_answer_ms",
          "output_token_throughput_per_user_from_answer_itl_tps"):
    del AIPERF[k]
AIPERF.update({
    "time_to_first_token_ms": ("time_to_first_token", "ms"),
    "inter_token_latency_ms": ("inter_token_latency", "ms"),
    "output_token_throughput_per_user_from_itl_tps": ("output_token_throughput_per_user", "tokens/sec/user"),
    "generated_tokens": ("output_sequence_length", "tokens"),
    "goodput_rps": ("goodput", "requests/sec"),
    "requests": ("request_count", "requests"),
    "duration_s": ("benchmark_duration", "sec"),
    "failed": ("error_request_count", "requests"),
})
BETWEEN_TOKENS = {"time_to_first_token", "inter_token_latency", "time_to_second_token",
                  "output_token_throughput_per_user"}
# Without streaming GenAI-Perf's JSON keeps every figure it has: each
# request's one response still gives its time to first token (its CSV
# leaves that out, and AIPerf has none).
NOSTREAM_JSON_KEEPS = {"GenAI-Perf": {"time_to_first_token"}, "AIPerf": set()}
# GenAI-Perf's current CSV (csv_exporter.py): its header's statistics, from
# p99 down and without std, and its rows' order.
GENAI_CSV_STATS = ["avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "p10", "p5", "p1"]
GENAI_CSV_ORDER = ["time_to_first_token", "time_to_second_token", "request_latency", "inter_token_latency",
                   "output_token_throughput_per_user", "output_sequence_length", "input_sequence_length",
                   "output_token_throughput", "request_throughput", "request_goodput", "request_count"]
STATS = ["avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]


def run(tmp, extra, count=True):
    os.makedirs(tmp)
    art = os.path.join(tmp, "art")
    js = os.path.join(tmp, "r.json")
    cmd = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art, "--no-html", "--json", js,
           "--output-tokens-mean", "12", "--mock-ttft-ms", "2", "--mock-itl-ms", "1",
           "--goodput", "ttft:500"] + (["--request-count", "24"] if count else []) + extra
    if WORDS:
        cmd += ["--tokenizer", WORDS]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "a run with %s ends with exit 0" % " ".join(extra), p.stderr[-2000:])
    with open(js) as f:
        return art, json.load(f)


def tool_dir(d, tool):
    """GenAI-Perf's summary is in the level's directory, AIPerf's files in
    its aiperf/."""
    return d if tool == "GenAI-Perf" else os.path.join(d, "aiperf")


def level_dir(art, lv):
    if lv["mode"] == "request_rate":
        return os.path.join(art, "request_rate%s" % float(lv["request_rate_rps"]))
    return os.path.join(art, "concurrency%d" % lv["concurrency"])


def label(lv):
    return os.path.basename(level_dir("", lv))


def level_name(lv):
    """The level as responses.jsonl names it."""
    if lv["mode"] == "request_rate":
        return "request rate %g/s" % lv["request_rate_rps"]
    return "concurrency %d" % lv["concurrency"]


def compare_json(doc, lv, table, tool, streaming):
    """Every exported figure is the report's; every report figure with a key
    is exported (unless unavailable, or a timing between tokens without
    streaming)."""
    bad = []
    for jkey, (key, unit) in table.items():
        want = lv.get(jkey)
        got = doc.get(key)
        expect = want is not None and (streaming or key not in BETWEEN_TOKENS or key in NOSTREAM_JSON_KEEPS[tool])
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
    extra = set(doc) - {k for k, _ in table.values()} - {"input_config", "tokperf_fidelity"}
    if extra:
        bad.append("keys with no report figure: %s" % sorted(extra))
    check(not bad, "%s json of %s: every figure is the report's" % (tool, label(lv)),
          "\n".join(bad))


def compare_csv(text, doc, table, tool, lv, thousands, streaming):
    """Every number of the CSV is the JSON export's figure to two decimals
    (the JSON having been checked against the report); without streaming the
    CSV has none of the timings of tokens."""
    doc = {k: v for k, v in doc.items() if streaming or k not in BETWEEN_TOKENS}
    fmt = (lambda v: format(v, ",.2f")) if thousands else (lambda v: format(v, ".2f"))
    genai = tool == "GenAI-Perf"
    stats = GENAI_CSV_STATS if genai else STATS
    lines = text.split("\r\n")
    check(lines[0] == "Metric," + ",".join(stats) and text.endswith("\r\n"),
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
    # AIPerf's rows follow the JSON's order, GenAI-Perf's its exporter's;
    # each row's numbers are its metric's.
    order = [k for k in doc if k not in ("input_config", "tokperf_fidelity")]
    if genai:
        order = [k for k in GENAI_CSV_ORDER if k in order] + [k for k in order if k not in GENAI_CSV_ORDER]
    dist_keys = [k for k in order if "p50" in doc[k]]
    value_keys = [k for k in order if "p50" not in doc[k]]
    for row, k in zip(dist, dist_keys):
        want = [fmt(doc[k][s]) for s in stats]
        if row[1:] != want:
            bad.append("%s: %s != %s" % (row[0], row[1:], want))
        words = k.replace("_", " ").split()
        if row[0].split(" (")[0].lower() != " ".join(words):
            bad.append("%s labels %s" % (row[0], k))
    for row, k in zip(values, value_keys):
        if row[1:] != [fmt(doc[k]["avg"])]:
            bad.append("%s: %s != %.2f" % (row[0], row[1:], doc[k]["avg"]))
    check(not bad, "%s csv of %s: every value is the figure to two decimals" % (tool, label(lv)),
          "\n".join(bad))


def check_level(art, lv, streaming):
    d = level_dir(art, lv)
    for tool, table, stem, thousands in (("GenAI-Perf", GENAI, "profile_export_genai_perf", True),
                                         ("AIPerf", AIPERF, "profile_export_aiperf", False)):
        jp, cp = os.path.join(tool_dir(d, tool), stem + ".json"), os.path.join(tool_dir(d, tool), stem + ".csv")
        check(os.path.exists(jp) and os.path.exists(cp), "%s files of %s" % (tool, label(lv)))
        if not os.path.exists(jp) or not os.path.exists(cp):
            continue
        with open(jp) as f:
            doc = json.load(f)
        with open(cp, newline="") as f:
            text = f.read()
        compare_json(doc, lv, table, tool, streaming)
        compare_csv(text, doc, table, tool, lv, thousands, streaming)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


# ---------------------------------------------------------------------------
# Every figure again, from records.jsonl alone, by the definitions of
# docs/metrics.md ("Which requests count", "Per-request metrics",
# "Per-level metrics"), with numpy's linear percentiles and the population
# standard deviation.

PCTS = [1, 5, 10, 25, 50, 75, 90, 95, 99]


def dist(vals):
    """{n, avg, min, max, std, p1 ... p99} of vals; None when empty."""
    if not vals:
        return None
    v = sorted(vals)
    n = len(v)
    avg = sum(v) / n
    out = {"n": n, "avg": avg, "min": v[0], "max": v[-1],
           "std": 0.0 if v[0] == v[-1] else (sum((x - avg) ** 2 for x in v) / n) ** 0.5}
    for p in PCTS:
        rank = p / 100.0 * (n - 1)
        lo = int(rank)
        hi = min(lo + 1, n - 1)
        out["p%d" % p] = v[lo] + (v[hi] - v[lo]) * (rank - lo)
    return out


def span_ms(a, b):
    """b - a in ms; None when an end is missing or they are out of order."""
    return (b - a) / 1e6 if a and b and b >= a else None


def count_tokens(texts):
    """The test tokenizer's count of each text (tokperf tokenize, the
    counter profile uses)."""
    if not texts:
        return []
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--jsonl", "-"],
                       input="".join(json.dumps({"text": t}) + "\n" for t in texts),
                       capture_output=True, text=True, timeout=60 * SCALE)
    counts = [int(x) for x in p.stdout.split()]
    return counts if p.returncode == 0 and len(counts) == len(texts) else [None] * len(texts)


def request_figures(r, reasoning_tokens, goodput_ttft_ms):
    """One successful request's own figures (None = it has none)."""
    sent, first, done = r["sent_ns"], r["first_token_ns"], r["done_ns"]
    out_tok = r["output_tokens"]
    gen = None if out_tok is None else out_tok + (reasoning_tokens or 0)
    f = {"time_to_first_token_ms": span_ms(sent, first),
         "request_latency_ms": span_ms(sent, done),
         "request_latency_to_last_text_ms": span_ms(sent, r["last_token_ns"]),
         "generated_tokens": gen,
         # Two text responses at one time show no gap (docs/metrics.md, "Fidelity").
         "time_to_second_token_ms": span_ms(first, r["second_token_ns"]) if r["second_token_ns"] != first else None,
         "time_to_first_output_token_ms": span_ms(sent, r["first_answer_ns"]),
         "time_to_first_token_from_planned_ms": span_ms(r["planned_ns"], first),
         "request_latency_from_planned_ms": span_ms(r["planned_ns"], done),
         "responses_per_request": len(r["response_ns"]),
         "output_tokens": out_tok, "input_tokens": r["input_tokens"],
         "reasoning_tokens": reasoning_tokens}
    lat = f["request_latency_ms"]
    f["output_token_throughput_per_user_tps"] = out_tok / (lat / 1000) if out_tok is not None and lat else None
    itl = span_ms(first, r["last_token_ns"])
    two = r["second_token_ns"] != 0
    # Text that all came at one time has no ITL, and no TPOT when the end came with it too.
    merged = two and first == r["last_token_ns"]
    f["inter_token_latency_ms"] = itl / (gen - 1) if gen is not None and gen >= 2 and two and itl is not None \
        and not merged else None
    tpot = span_ms(first, done)
    f["time_per_output_token_ms"] = tpot / (gen - 1) if gen is not None and gen >= 2 and tpot is not None \
        and not (merged and tpot == 0) else None
    itl = f["inter_token_latency_ms"]
    f["output_token_throughput_per_user_from_itl_tps"] = 1000 / itl if itl else None
    # GenAI-Perf's: the answer's responses alone.
    ans = span_ms(r["first_answer_ns"], r["last_token_ns"])
    f["inter_token_latency_answer_ms"] = ans / (out_tok - 1) if out_tok is not None and out_tok >= 2 and ans \
        else None
    ia = f["inter_token_latency_answer_ms"]
    f["output_token_throughput_per_user_from_answer_itl_tps"] = 1000 / ia if ia else None
    ttft = f["time_to_first_token_ms"]
    f["good"] = ttft is not None and ttft <= goodput_ttft_ms
    f["mismatch"] = gen is not None and r["max_tokens"] > 0 and gen != r["max_tokens"]
    return f


DISTS = ["time_to_first_token_ms", "inter_token_latency_ms", "request_latency_ms", "output_tokens",
         "input_tokens", "output_token_throughput_per_user_tps", "time_to_second_token_ms",
         "time_to_first_output_token_ms", "time_per_output_token_ms",
         "output_token_throughput_per_user_from_itl_tps", "responses_per_request", "send_lag_ms",
         "time_to_first_token_from_planned_ms", "request_latency_from_planned_ms", "reasoning_tokens",
         "request_latency_to_last_text_ms", "generated_tokens", "inter_token_latency_answer_ms",
         "output_token_throughput_per_user_from_answer_itl_tps"]


def pooled_gaps(r):
    """The gaps between consecutive responses from the first text response
    to the last (docs: inter-chunk latency, pooled), in ms; the responses
    with text are those response_text_at gives a place in the text."""
    ts = r["response_ns"]
    text = [i for i, at in enumerate(r.get("response_text_at", [])) if at is not None]
    if len(text) < 2:
        return []
    a, b = text[0], text[-1]
    # A gap of 0 between responses of one read is not a gap the server left: left out.
    return [(y - x) / 1e6 for x, y in zip(ts[a:b], ts[a + 1:b + 1]) if y != x]


def recompute(measured, window_ns=None, goodput_ttft_ms=500.0, pooled=True):
    """The level's figures from its measured records.jsonl lines."""
    ok = [r for r in measured if r["ok"]]
    reasoning = count_tokens([r["reasoning"] for r in ok if r.get("reasoning")]) if WORDS else []
    rtok = {}
    for r in ok:
        if r.get("reasoning") and WORDS:
            rtok[r["seq"]] = reasoning.pop(0)
    figs = [request_figures(r, rtok.get(r["seq"]), goodput_ttft_ms) for r in ok]
    want = {k: dist([f[k] for f in figs if f[k] is not None]) for k in DISTS if k != "send_lag_ms"}
    want["send_lag_ms"] = dist([span_ms(r["planned_ns"], r["sent_ns"]) for r in measured
                                if r["sent_ns"] and r["planned_ns"] and r["sent_ns"] >= r["planned_ns"]])
    sent = [r["sent_ns"] for r in measured if r["sent_ns"]]
    done = [r["done_ns"] for r in measured if r["done_ns"]]
    if window_ns:
        dur = (window_ns[1] - window_ns[0]) / 1e9
    else:
        dur = (max(done) - min(sent)) / 1e9 if sent and done and max(done) > min(sent) else 0
    out_sum = [f["output_tokens"] for f in figs if f["output_tokens"] is not None]
    in_sum = [f["input_tokens"] for f in figs if f["input_tokens"] is not None]
    good = sum(f["good"] for f in figs)
    want.update({
        "requests": len(measured), "succeeded": len(ok), "failed": len(measured) - len(ok),
        "duration_s": dur,
        "request_throughput_rps": len(ok) / dur if dur else None,
        "output_token_throughput_tps": sum(out_sum) / dur if dur and out_sum else None,
        "input_token_throughput_tps": sum(in_sum) / dur if dur and in_sum else None,
        "goodput_rps": good / dur if dur else None,
        "goodput_fraction": good / len(measured) if measured else None,
        "error_rate": (len(measured) - len(ok)) / len(measured) if measured else None,
        "achieved_send_rate_rps": (len(sent) - 1) / ((max(sent) - min(sent)) / 1e9)
        if len(sent) > 1 and max(sent) > min(sent) else None,
        "late_sends": sum(1 for r in measured if r["sent_ns"] and r["planned_ns"] and
                          (span_ms(r["planned_ns"], r["sent_ns"]) or 0) > 1.0),
        "output_length_mismatches": sum(f["mismatch"] for f in figs) if WORDS else None,
    })
    gaps = [g for r in ok for g in pooled_gaps(r)]
    want["itl_pooled_ms"] = dist(gaps) if pooled else None
    return want


def compare_recomputed(lv, want, what):
    """Every figure of the report's level against the recomputation.  The
    pooled ITL's percentiles are within 1/1024 of their value (docs), its
    other statistics exact."""
    bad = []
    for k, w in want.items():
        got = lv.get(k)
        if w is None or got is None:
            if not (w is None and got is None) and not (k == "output_length_mismatches" and w is None):
                bad.append("%s: report %r, recomputed %r" % (k, got, w))
            continue
        if isinstance(w, dict):
            for s, v in w.items():
                tol = abs(v) / 1024 + 1e-6 if k == "itl_pooled_ms" and s.startswith("p") else 0
                if got.get(s) is None or not (close(got[s], v) or abs(got[s] - v) <= tol):
                    bad.append("%s.%s: report %r, recomputed %r" % (k, s, got.get(s), v))
        elif not close(float(got), float(w)):
            bad.append("%s: report %r, recomputed %r" % (k, got, w))
    check(not bad, "%s: every figure of --json is the one recomputed from records.jsonl" % what, "\n".join(bad[:30]))


def compare_exports_recomputed(d, want, what):
    """The GenAI-Perf and AIPerf summaries against the recomputation: each
    exported statistic is the recomputed one (the summaries are otherwise
    checked against --json, which is checked against the recomputation)."""
    bad = []
    for tool, table, stem in (("GenAI-Perf", GENAI, "profile_export_genai_perf"),
                              ("AIPerf", AIPERF, "profile_export_aiperf")):
        with open(os.path.join(tool_dir(d, tool), stem + ".json")) as f:
            doc = json.load(f)
        for jkey, (key, _) in table.items():
            w, got = want.get(jkey), doc.get(key)
            if got is None or w is None:
                continue
            if isinstance(w, dict):
                for s in STATS:
                    if not close(got.get(s), w[s]):
                        bad.append("%s %s.%s %r, recomputed %r" % (tool, key, s, got.get(s), w[s]))
            elif not close(got.get("avg"), float(w)):
                bad.append("%s %s %r, recomputed %r" % (tool, key, got.get("avg"), w))
    check(not bad, "%s: the GenAI-Perf and AIPerf summaries hold the recomputed figures" % what, "\n".join(bad[:30]))


def check_records(art, li, lv, streaming, pooled=True):
    """AIPerf's per-record profile_export.jsonl of a level: one line per
    measured request of records.jsonl, each figure worked out again from
    that line's times and counts, and the lines' figures summarised are the
    summary's (profile_export_aiperf.json) and the pooled ITL's."""
    d = tool_dir(level_dir(art, lv), "AIPerf")
    path = os.path.join(d, "profile_export.jsonl")
    check(os.path.exists(path), "AIPerf's profile_export.jsonl of %s" % label(lv))
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
        # AIPerf's request latency ends at the last text.
        want = {"request_latency": span_ms(sent, r["last_token_ns"])}
        if WORDS:
            rt = count_tokens([r["reasoning"]])[0] if r.get("reasoning") else 0
            gen = r["output_tokens"] + rt if r["output_tokens"] is not None and rt is not None else None
            want["input_sequence_length"] = r["input_tokens"]
            # AIPerf's output length counts reasoning and answer.
            want["output_sequence_length"] = gen
            if streaming:
                # (last text - first text) / (OSL - 1); none for text all of one time.
                one_time = r["second_token_ns"] != 0 and r["first_token_ns"] == r["last_token_ns"]
                want["inter_token_latency"] = span_ms(r["first_token_ns"], r["last_token_ns"]) / (gen - 1) \
                    if gen is not None and gen >= 2 and r["second_token_ns"] and not one_time else None
        if streaming:
            want["time_to_first_token"] = span_ms(sent, r["first_token_ns"])
            # Two text responses of one time show no gap (docs/metrics.md, "Fidelity").
            want["time_to_second_token"] = span_ms(r["first_token_ns"], r["second_token_ns"]) \
                if r["second_token_ns"] != r["first_token_ns"] else None
        for k, v in want.items():
            if v is None and k not in m:
                continue
            if not close(m.get(k, {}).get("value"), v):
                bad.append("seq %d: %s %r, records.jsonl gives %r" % (r["seq"], k, m.get(k), v))
        icl = m.get("inter_chunk_latency", {}).get("value")
        if streaming:
            # The gaps are differences of consecutive response times, and
            # together they span the first text response to the last.
            diffs = {(b - a) / 1e6 for a, b in zip(r["response_ns"], r["response_ns"][1:])}
            span = (r["last_token_ns"] - r["first_token_ns"]) / 1e6
            # Gaps of 0 (responses of one time) are left out; text all of one time has none.
            if span == 0 and r["second_token_ns"]:
                if icl is not None:
                    bad.append("seq %d: inter_chunk_latency %r for text all of one time" % (r["seq"], icl))
            elif icl is None or any(g not in diffs or g == 0 for g in icl) or not close(sum(icl), span):
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
    got = lv.get("itl_pooled_ms")
    if streaming and pooled and (not got or got["n"] != len(gaps) or not close(got["avg"], sum(gaps) / len(gaps))
                                 or not close(got["max"], max(gaps)) or not close(got["min"], min(gaps))):
        bad.append("itl_pooled_ms %r against %d gaps" % (got, len(gaps)))
    if not pooled and got is not None:
        bad.append("itl_pooled_ms %r where it is unavailable" % (got,))
    check(not bad, "AIPerf's per-record lines of %s agree with records.jsonl and the summary" % label(lv),
          "\n".join(bad[:20]))


def level_records(art, li):
    with open(os.path.join(art, "records.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["level"] == li]


def experiment(art, li):
    with open(os.path.join(art, "profile_export.json")) as f:
        return json.load(f)["experiments"][li]


def chunk_texts(payload):
    """What GenAI-Perf's parser takes from one OpenAI response: the events
    of the read (split on blank lines, "data: " stripped), "[DONE]" apart,
    each event's answer text (choices[0].delta.content of a chunk,
    .message.content of a chat body, .text of a text_completion) and the
    reasoning beside it."""
    texts, reasoning, done, objs = [], [], 0, []
    for ev in payload.strip().split("\n\n"):
        ev = ev[len("data: "):] if ev.startswith("data: ") else ev
        if ev.strip() == "[DONE]":
            done += 1
            continue
        d = json.loads(ev)
        objs.append(d)
        ch = d["choices"][0]
        body = ch.get("delta", ch.get("message", ch))
        texts.append((body.get("content") if "delta" in ch or "message" in ch else ch.get("text")) or "")
        reasoning.append(body.get("reasoning_content") or "")
    return texts, reasoning, done, objs


def check_payloads(art, li, lv, kind):
    """profile_export.json carries each response's own payload: per request
    of the level, the texts of its responses joined are its text in
    records.jsonl and responses.jsonl; for OpenAI every payload parses as
    the server's chunk would, [DONE] comes once, with the last response;
    and the token count and inter-token latency GenAI-Perf would work out
    from the chunks are the record's."""
    exp = experiment(art, li)
    ok = sorted((r for r in level_records(art, li) if r["measured"] and r["ok"]),
                key=lambda r: (r["sent_ns"], r["seq"]))
    with open(os.path.join(art, "responses.jsonl")) as f:
        outputs = {x["id"]: x["output"] for x in map(json.loads, f) if x["level"] == level_name(lv)}
    reqs = exp["requests"]
    bad = []
    if len(reqs) != len(ok):
        bad.append("%d requests in the experiment, %d measured successful records" % (len(reqs), len(ok)))
    joined, genai = [], []
    for q, r in zip(reqs, ok):
        off = q["timestamp"] - r["sent_ns"]
        # Responses of one arrival time (one read) are one response (docs/metrics.md, Fidelity).
        distinct = [t for i, t in enumerate(r["response_ns"]) if i == 0 or t != r["response_ns"][i - 1]]
        if [t - off for t in q["response_timestamps"]] != distinct:
            bad.append("seq %d: response_timestamps are not its response times" % r["seq"])
        if len(q["response_timestamps"]) > 1 and q["response_timestamps"][-1] == q["response_timestamps"][0]:
            bad.append("seq %d: responses of one time, GenAI-Perf would divide by zero" % r["seq"])
        outs = q["response_outputs"]
        if kind == "triton":
            text, rtext = "".join(o["text_output"] for o in outs), ""
            keep = [i for i, o in enumerate(outs) if o["text_output"]]
        else:
            parsed = [chunk_texts(o["response"]) for o in outs]
            text = "".join("".join(p[0]) for p in parsed)
            rtext = "".join("".join(p[1]) for p in parsed)
            if [p[2] for p in parsed] != [0] * (len(parsed) - 1) + [1]:
                bad.append("seq %d: [DONE] is not once, with the last response" % r["seq"])
            want_obj = {"chat": "chat.completion.chunk", "completions": "text_completion"}[kind]
            if any(set(d) < {"id", "object", "created", "model", "choices"} or d["object"] != want_obj
                   for p in parsed for d in p[3]):
                bad.append("seq %d: a chunk is not a %s with id, created and model" % (r["seq"], want_obj))
            keep = [i for i, p in enumerate(parsed) if "".join(p[0])]
        if text != r["text"] or text != outputs.get(r["seq"]) or rtext != r.get("reasoning", ""):
            bad.append("seq %d: the responses' texts joined %r, records.jsonl %r" % (r["seq"], text, r["text"]))
        joined.append(text)
        ts = [q["response_timestamps"][i] for i in keep]
        genai.append((ts[0] - q["timestamp"], ts[-1] - q["timestamp"]) if ts else None)
    if WORDS and not bad:
        for r, n, g in zip(ok, count_tokens(joined), genai):
            if n != r["output_tokens"]:
                bad.append("seq %d: %r tokens in the chunks, records.jsonl %r" % (r["seq"], n, r["output_tokens"]))
            elif n > 1 and g:
                # GenAI-Perf: (latency - TTFT) / (tokens - 1) over the
                # responses with text; the record's answer span.
                itl = (g[1] - g[0]) / (n - 1) / 1e6
                if not close(itl, (r["last_token_ns"] - r["first_answer_ns"]) / (n - 1) / 1e6):
                    bad.append("seq %d: ITL from the chunks %r" % (r["seq"], itl))
    check(not bad and reqs, "profile_export.json of %s: each response carries its own %s payload, joined they "
          "are the request's text and its token count" % (label(lv), kind), "\n".join(bad[:20]))
    check_inputs(art, lv, reqs, ok, kind)


def check_inputs(art, lv, reqs, ok, kind):
    """request_inputs as perf_analyzer keeps them: Triton's text_input and
    max_tokens; OpenAI's {"payload": the JSON body sent}, whose prompt (the
    text as one user message for chat) is the prompt of responses.jsonl,
    with the record's max_tokens and the run's stream flag, as GenAI-Perf's
    parser reads it (payload["messages"][i]["content"], payload["prompt"])."""
    with open(os.path.join(art, "responses.jsonl")) as f:
        prompts = {x["id"]: x["prompt"] for x in map(json.loads, f) if x["level"] == level_name(lv)}
    bad = []
    for q, r in zip(reqs, ok):
        ins = q["request_inputs"]
        if kind == "triton":
            if set(ins) != {"text_input", "max_tokens"} or ins["text_input"] != prompts.get(r["seq"]):
                bad.append("seq %d: request_inputs %r" % (r["seq"], sorted(ins)))
            continue
        if set(ins) != {"payload"}:
            bad.append("seq %d: request_inputs %r, want only payload" % (r["seq"], sorted(ins)))
            continue
        body = json.loads(ins["payload"])
        text = body["messages"][0]["content"] if kind == "chat" else body.get("prompt")
        if kind == "chat" and [m["role"] for m in body["messages"]] != ["user"]:
            bad.append("seq %d: messages %r" % (r["seq"], body["messages"]))
        if text != prompts.get(r["seq"]) or body.get("max_tokens") != r["max_tokens"] or body.get("stream") is not True:
            bad.append("seq %d: payload %r" % (r["seq"], ins["payload"][:200]))
    check(not bad and reqs, "profile_export.json of %s: request_inputs as perf_analyzer keeps a %s request"
          % (label(lv), kind), "\n".join(bad[:20]))


def check_windows(art, li, lv):
    """Stability windows: the measured requests are those that ended within
    the last three windows (perf_analyzer's window_boundaries in
    profile_export.json), up to the time between a response's arrival and
    the run seeing it; the level's duration is the windows' span."""
    exp = experiment(art, li)
    recs = level_records(art, li)
    q0 = exp["requests"][0] if exp["requests"] else None
    r0 = next((r for r in recs if q0 and r["measured"] and r["ok"] and
               q0["response_timestamps"] == [t + q0["timestamp"] - r["sent_ns"] for i, t in enumerate(r["response_ns"])
                                             if i == 0 or t != r["response_ns"][i - 1]]), None)
    wb = exp["window_boundaries"]
    check(r0 is not None and len(wb) == 2, "a stability level's window boundaries and its clock offset", wb)
    if r0 is None or len(wb) != 2:
        return None
    off = q0["timestamp"] - r0["sent_ns"]
    start, end = wb[0] - off, wb[1] - off
    slack = 20e6 * SCALE
    bad = []
    for r in recs:
        d = r["done_ns"]
        if r["measured"] and not (start - slack <= d <= end):
            bad.append("seq %d measured, ended %.3f ms from the window's start" % (r["seq"], (d - start) / 1e6))
        if not r["measured"] and d and start <= d <= end - slack:
            bad.append("seq %d not measured, ended %.3f ms into the windows" % (r["seq"], (d - start) / 1e6))
    if not close(lv["duration_s"], (end - start) / 1e9):
        bad.append("duration %r, windows span %r" % (lv["duration_s"], (end - start) / 1e9))
    if lv.get("stability_trials", 0) < 3:
        bad.append("%r windows" % lv.get("stability_trials"))
    check(not bad, "%s: the measured requests are those that ended in the last three windows" % label(lv),
          "\n".join(bad[:20]))
    return (start, end)


def check_level_export(art, li, lv):
    """The level's directory as genai-perf process-export-files reads it
    (each subdirectory's first *.json not named *_genai_perf* is a profile
    export whose experiments[0] it reads, beside a *_genai_perf.json): the
    level's own export, holding the run's experiment of that level."""
    d = level_dir(art, lv)
    jsons = sorted(f for f in os.listdir(d) if f.endswith(".json"))
    check(jsons == ["profile_export.json", "profile_export_genai_perf.json"],
          "%s: its only *.json are its profile export and GenAI-Perf's summary" % label(lv), jsons)
    with open(os.path.join(art, "profile_export.json")) as f:
        run_pe = json.load(f)
    with open(os.path.join(d, "profile_export.json")) as f:
        pe = json.load(f)
    check(pe["experiments"] == [run_pe["experiments"][li]] and
          all(pe[k] == run_pe[k] for k in ("version", "service_kind", "endpoint")),
          "%s: its profile export is the run's experiment of the level" % label(lv))


def check_run(art, rep, streaming=True, kind="triton", windows=False):
    """Every check of every level of one run."""
    levels = rep.get("levels", [])
    check(levels, "the run has levels to check")
    for li, lv in enumerate(levels):
        recs = level_records(art, li)
        window = check_windows(art, li, lv) if windows else None
        want = recompute([r for r in recs if r["measured"]], window, pooled=not windows)
        compare_recomputed(lv, want, label(lv))
        check_level(art, lv, streaming)
        check_level_export(art, li, lv)
        compare_exports_recomputed(level_dir(art, lv), want, label(lv))
        check_records(art, li, lv, streaming, pooled=not windows)
        check_payloads(art, li, lv, kind)
        late = [(r["seq"], r["sent_ns"], min(r["response_ns"])) for r in recs
                if r.get("sent_ns") and r.get("response_ns") and min(r["response_ns"]) < r["sent_ns"]]
        check(not late, "%s: no response is dated before its request was sent" % label(lv), late[:5])



def check_capped_http(tmp):
    """Requests held by the in-flight cap go out together, and one libcurl
    call then runs several transfers: each one's answer is dated by its own
    socket, never by another's earlier stamp (a bug once put answers
    before their sends in about one run of four)."""
    late = []
    for i in range(8):
        art, _ = run(os.path.join(tmp, "capped%d" % i), ["--service-kind", "openai", "--endpoint-type", "chat",
                                                          "--concurrency", "2", "--request-rate", "300",
                                                          "--request-count", "12"], count=False)
        for r in level_records(art, 0):
            if r.get("sent_ns") and r.get("response_ns") and min(r["response_ns"]) < r["sent_ns"]:
                late.append((i, r["seq"], r["sent_ns"], min(r["response_ns"])))
    check(not late, "capped HTTP rate runs: no answer is dated before its request was sent", late[:5])

tmp = tempfile.mkdtemp(prefix="tp_exports_")
art, rep = run(os.path.join(tmp, "stream"), ["--concurrency", "2,4"])
levels = rep.get("levels", [])
check(len(levels) == 2, "two levels in the report", len(levels))
check(all(lv.get("time_to_first_token_ms") and lv.get("time_to_second_token_ms") for lv in levels),
      "the streaming run has the timings between tokens to compare")
if WORDS:
    check(all(lv.get("output_tokens") and lv.get("output_token_throughput_tps") for lv in levels),
          "with a tokenizer the token figures exist to compare")
check_run(art, rep)

art, rep = run(os.path.join(tmp, "nostream"), ["--concurrency", "3", "--no-streaming"])
check_run(art, rep, streaming=False)

# A request rate, against OpenAI completions: chunks are text_completion.
OPENAI = ["--service-kind", "openai", "--token-source", "client"]
art, rep = run(os.path.join(tmp, "rate"), OPENAI + ["--endpoint-type", "completions", "--request-rate", "150"])
check([lv["mode"] for lv in rep.get("levels", [])] == ["request_rate"], "the rate run has one rate level")
check_run(art, rep, kind="completions")

# perf_analyzer's stability windows: which requests count is chosen at the
# level's end, by the time they ended.
art, rep = run(os.path.join(tmp, "windows"), ["--concurrency", "2", "--measurement-interval", "100",
                                              "--stability-percentage", "50", "--max-trials", "10"], count=False)
check_run(art, rep, windows=True)

# Reasoning: a chat answer that begins with reasoning_content; the ITL and
# TPOT count its tokens, output tokens do not.
art, rep = run(os.path.join(tmp, "reasoning"), OPENAI + ["--endpoint-type", "chat", "--concurrency", "2",
                                                         "--mock-reasoning-tokens", "3"])
if WORDS:
    check(all(lv.get("reasoning_tokens") for lv in rep.get("levels", [])), "the reasoning run counted reasoning")
check_run(art, rep, kind="chat")

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
ep = ic.get("endpoint", {})
check(ep.get("service_kind") == "openai" and ep.get("type") == "chat" and ep.get("custom") == "v1/chat/completions"
      and ep.get("output_format") == "openai_chat_completions" and ep.get("backend") == "",
      "and so does the GenAI-Perf summary's input_config, as GenAI-Perf nests it (no backend for chat)",
      json.dumps(ep))
check_capped_http(tmp)
done()
