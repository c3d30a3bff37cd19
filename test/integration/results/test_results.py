#!/usr/bin/env python3
"""The result files read back the way the other tools read them, with
Python's own parsers (json, csv, xml.etree), and held against the figures
tokperf computed (expect.json, written by gen_results from
tp_level_compute over the same records).  Prints TAP.

Facts about the formats, from the tools' sources and documents:
  - perf_analyzer's LLM guide (calculate_avg_first_token_latency.py) reads
    json.load(f)["experiments"][0]["requests"] and averages
    r["response_timestamps"][0] - r["timestamp"] (ns).
  - GenAI-Perf's profile data parser (llm_metrics.py) reads
    data["service_kind"]; for "triton", request["request_inputs"]
    ["text_input"] and response_outputs[i]["text_output"]; request latency
    is res_timestamps[-1] - req_timestamp; the benchmark duration is
    max(res_timestamps[-1]) - min(req_timestamp); request throughput is
    len(requests) / duration.
  - GenAI-Perf's CSV (csv_exporter.py): header Metric,avg,min,max,p1,p5,
    p10,p25,p50,p75,p90,p95,p99,std; one row per request metric, labelled
    with its key in title case and " (unit)" unless the unit is tokens
    ("Time To First Token (ms)", "Output Sequence Length"); an empty row;
    "Metric,Value"; "Request Throughput (requests/sec)" and the like.
  - GenAI-Perf's JSON: metric name -> {"unit", "avg", "p1" ... "p99",
    "min", "max", "std"}, a system metric {"unit", "avg"}, plus
    "input_config" (ConfigCommand.to_json_dict(): model_names, then
    sections, perf_analyzer.stimulus the load); its inter_token_latency is (latency - TTFT) / (tokens -
    1) with the latency ending at the last text, over the answer (its parser
    reads OpenAI content only): tokperf's ITL of the answer, its ITL for a
    model that does not reason (as here).
  - GenAI-Perf's CSV (csv_exporter.py): the header Metric,avg,min,max,p99 ... p1
    (no std), rows TTFT, TTST, request latency, ITL, per-user, OSL, ISL, the
    lengths "(tokens)"; then Metric,Value from the output token throughput,
    the rates "per sec"; every number "{:,.2f}".
  - genai-perf process-export-files (process_export_files.py) takes each
    subdirectory's first *.json whose name lacks "_genai_perf" as a
    profile export and reads its experiments[0], and *_genai_perf.json as
    the summary.
  - JUnit XML: <testsuites> of <testsuite name tests failures> holding
    <testcase classname name> with <failure message> or <skipped>.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, done  # noqa: E402

GEN = sys.argv[1]


def near(a, b, tol):
    return abs(a - b) <= tol


tmp = tempfile.mkdtemp(prefix="tp_results_")
try:
    p = subprocess.run([GEN, tmp], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "gen_results wrote the files", p.stderr)
    with open(os.path.join(tmp, "expect.json")) as f:
        expect = json.load(f)
    art = os.path.join(tmp, "art")
    levels = expect["levels"]

    # --- perf_analyzer profile export -----------------------------------
    with open(os.path.join(art, "profile_export.json")) as f:
        pe = json.load(f)
    check(sorted(pe.keys()) == ["endpoint", "experiments", "service_kind", "version"],
          "profile export top level: experiments, version, service_kind, endpoint", pe.keys())
    check(pe["service_kind"] == "triton", "service_kind is triton")
    check(len(pe["experiments"]) == len(levels), "one experiment per level")
    for e, lv in zip(pe["experiments"], levels):
        c = lv["concurrency"]
        check(e["experiment"] == {"mode": "concurrency", "value": c},
              "experiment %d: mode concurrency, value %d" % (c, c), e["experiment"])
        reqs = e["requests"]
        check(len(reqs) == lv["succeeded"], "experiment %d: the successful requests" % c)
        keys_ok = all(set(r.keys()) == {"timestamp", "request_inputs", "response_timestamps", "response_outputs"}
                      for r in reqs)
        check(keys_ok, "experiment %d: each request has timestamp, request_inputs, response_timestamps, "
              "response_outputs" % c)
        ints = all(isinstance(r["timestamp"], int) and all(isinstance(t, int) for t in r["response_timestamps"])
                   for r in reqs)
        check(ints, "experiment %d: timestamps are integers (ns)" % c)
        check(all(abs(r["timestamp"] - expect["wall0"]) < 10**13 for r in reqs),
              "experiment %d: timestamps are wall-clock ns near the run's start" % c)
        check(all(len(r["response_timestamps"]) == len(r["response_outputs"]) for r in reqs),
              "experiment %d: one output per response timestamp" % c)
        check(all(isinstance(r["request_inputs"]["text_input"], str) and r["request_inputs"]["text_input"]
                  .startswith("Question") for r in reqs),
              "experiment %d: request_inputs.text_input holds the prompt" % c)
        # The perf_analyzer guide's first-token latency, in seconds.
        lat = [r["response_timestamps"][0] - r["timestamp"] for r in reqs]
        avg_s = sum(lat) / len(lat) / 1000000000
        check(near(avg_s, lv["ttft_ms"]["avg"] / 1000, 1e-9),
              "experiment %d: the guide's average first-token latency equals tokperf's TTFT avg" % c,
              "%r vs %r" % (avg_s, lv["ttft_ms"]["avg"] / 1000))
        # GenAI-Perf's request latency and benchmark duration.
        rl = sorted(r["response_timestamps"][-1] - r["timestamp"] for r in reqs)
        check(near(sum(rl) / len(rl) / 1e6, lv["latency_ms"]["avg"], 1e-6),
              "experiment %d: GenAI-Perf's request latency equals tokperf's" % c)
        dur = (max(r["response_timestamps"][-1] for r in reqs) - min(r["timestamp"] for r in reqs)) / 1e9
        if lv["failed"] == 0:
            check(near(len(reqs) / dur, lv["request_throughput"], 1e-6),
                  "experiment %d: GenAI-Perf's request throughput equals tokperf's" % c)
        wb = e["window_boundaries"]
        check(len(wb) == 2 and near((wb[1] - wb[0]) / 1e9, lv["duration_s"], 1e-9),
              "experiment %d: window_boundaries span the level's duration" % c)
        text = "".join(o["text_output"] for o in reqs[0]["response_outputs"])
        check(text.strip().startswith("the answer"), "experiment %d: text_output joins to the generated text" % c)

    # --- GenAI-Perf CSV and JSON ----------------------------------------
    for lv in levels:
        c = lv["concurrency"]
        d = os.path.join(art, "concurrency%d" % c)
        with open(os.path.join(d, "profile_export_genai_perf.csv"), newline="") as f:
            raw = f.read()
        check("\r\n" in raw and raw.count("\n") == raw.count("\r\n"), "csv %d: CRLF line ends" % c)
        rows = list(csv.reader(raw.splitlines()))
        stat_cols = ["avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "p10", "p5", "p1"]
        check(rows[0] == ["Metric"] + stat_cols, "csv %d: GenAI-Perf's header" % c, rows[0])
        split = rows.index([]) if [] in rows else len(rows)
        by_name = {r[0]: r[1:] for r in rows[1:split]}
        # GenAI-Perf's row for each of tokperf's distributions (its ITL and
        # request latency end at the last text), where the level has values.
        want_rows = [("Time To First Token (ms)", "ttft_ms"), ("Time To Second Token (ms)", "ttst_ms"),
                     ("Request Latency (ms)", "latency_last_text_ms"), ("Inter Token Latency (ms)", "itl_ms"),
                     ("Output Token Throughput Per User (tokens/sec/user)", "output_tps_per_user_itl"),
                     ("Output Sequence Length (tokens)", "output_tokens"),
                     ("Input Sequence Length (tokens)", "input_tokens")]
        names = [n for n, k in want_rows if lv[k]["n"]]
        check([r[0] for r in rows[1:split]] == names, "csv %d: GenAI-Perf's request metric rows" % c,
              [r[0] for r in rows[1:split]])
        check(rows[split + 1:split + 2] == [["Metric", "Value"]], "csv %d: empty row, then Metric,Value" % c)
        sys_rows = {r[0]: r[1] for r in rows[split + 2:]}
        check([r[0] for r in rows[split + 2:]] == ["Output Token Throughput (per sec)", "Request Throughput (per sec)",
                                                   "Request Count (count)"],
              "csv %d: system metric rows" % c, rows[split + 2:])
        ok = True
        for name, key in want_rows:
            for col, val in zip(stat_cols, by_name.get(name, [])):
                if not near(float(val.replace(",", "")), lv[key][col], 0.0051):
                    ok = False
        check(ok, "csv %d: every value is tokperf's figure to two decimals" % c)
        check(near(float(sys_rows.get("Request Throughput (per sec)", "nan").replace(",", "")), lv["request_throughput"],
                   0.0051),
              "csv %d: request throughput value" % c)
        check(sys_rows.get("Request Count (count)") == "%.2f" % lv["requests"], "csv %d: request count" % c)

        with open(os.path.join(d, "profile_export_genai_perf.json")) as f:
            gj = json.load(f)
        # input_config and tokperf_fidelity (tokperf's own member) are no metrics.
        units = {k: v["unit"] for k, v in gj.items() if k not in ("input_config", "tokperf_fidelity")}
        want_units = {"request_throughput": "requests/sec", "request_latency": "ms", "time_to_first_token": "ms",
                      "output_token_throughput": "tokens/sec", "output_sequence_length": "tokens",
                      "input_sequence_length": "tokens", "request_count": "count"}
        for key, k2, unit in (("itl_ms", "inter_token_latency", "ms"), ("ttst_ms", "time_to_second_token", "ms"),
                              ("output_tps_per_user_itl", "output_token_throughput_per_user", "tokens/sec/user")):
            if lv[key]["n"]:
                want_units[k2] = unit
        check(units == want_units, "json %d: GenAI-Perf's metric names and units" % c, units)
        check(list(gj["time_to_first_token"].keys()) ==
              ["unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"],
              "json %d: GenAI-Perf's statistic keys, in its order" % c)
        check(near(gj["time_to_first_token"]["p99"], lv["ttft_ms"]["p99"], 1e-9) and
              near(gj["time_to_first_token"]["p1"], lv["ttft_ms"]["p1"], 1e-9) and
              (not lv["itl_ms"]["n"] or near(gj["inter_token_latency"]["avg"], lv["itl_ms"]["avg"], 1e-9)) and
              near(gj["request_latency"]["avg"], lv["latency_last_text_ms"]["avg"], 1e-9) and
              near(gj["output_token_throughput"]["avg"], lv["output_token_throughput"], 1e-6),
              "json %d: values are tokperf's figures" % c)
        ic = gj["input_config"]
        check(ic["perf_analyzer"]["stimulus"] == {"concurrency": c} and ic["model_names"] == [expect["model"]],
              "json %d: input_config names the level and the model, as GenAI-Perf nests them" % c)

        # --- the level's directory as genai-perf process-export-files reads
        # it: the first *.json whose name lacks "_genai_perf" is a profile
        # export whose experiments[0] is read, beside one *_genai_perf.json.
        jsons = sorted(f for f in os.listdir(d) if f.endswith(".json"))
        pa = [f for f in jsons if "_genai_perf" not in f]
        check(pa == ["profile_export.json"] and [f for f in jsons if "_genai_perf.json" in f] ==
              ["profile_export_genai_perf.json"], "level %d: one profile export and one GenAI-Perf summary" % c, jsons)
        with open(os.path.join(d, "profile_export.json")) as f:
            lpe = json.load(f)
        top = [e for e in pe["experiments"] if e["experiment"]["value"] == c]
        check(lpe["experiments"] == top and {k: lpe[k] for k in ("service_kind", "endpoint", "version")} ==
              {k: pe[k] for k in ("service_kind", "endpoint", "version")},
              "level %d: its profile export is the run's experiment of that level" % c)

    # --- responses.jsonl and accuracy -----------------------------------
    lines = []
    with open(os.path.join(art, "responses.jsonl"), encoding="utf-8") as f:
        for line in f:
            lines.append(json.loads(line))
    check(len(lines) == sum(lv["requests"] for lv in levels), "responses.jsonl: a line per measured request")
    check(all({"id", "prompt", "reference", "output", "input_tokens", "output_tokens"} <= set(o) for o in lines),
          "responses.jsonl: id, prompt, reference, output, token counts")
    scored = [o for o in lines if "exact_match" in o]
    rate = sum(o["exact_match"] for o in scored) / len(scored)
    rouge = sum(o["rouge_l_f1"] for o in scored) / len(scored)
    check(len(scored) == expect["accuracy"]["scored"], "responses.jsonl: scored lines = run accuracy's count")
    check(near(rate, expect["accuracy"]["exact_match_rate"], 1e-12), "responses.jsonl: exact-match rate agrees")
    check(near(rouge, expect["accuracy"]["rouge_l_f1"], 1e-5), "responses.jsonl: mean ROUGE-L agrees")

    def lcs_f1(c, r):
        c, r = c.split(), r.split()
        if not c or not r:
            return 0.0
        prev = [0] * (len(r) + 1)
        for x in c:
            cur = [0]
            for j, y in enumerate(r):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        lcs = prev[-1]
        if not lcs:
            return 0.0
        p, q = lcs / len(c), lcs / len(r)
        return 2 * p * q / (p + q)

    ok = all(near(lcs_f1(o["output"], o["reference"]), o["rouge_l_f1"], 1e-5) and
             o["exact_match"] == (o["output"].strip() == o["reference"].strip()) for o in scored)
    check(ok, "responses.jsonl: every score matches an independent LCS and exact-match")
    with open(os.path.join(art, "accuracy.json")) as f:
        acc = json.load(f)
    check(acc["run"]["scored"] == expect["accuracy"]["scored"] == sum(lv["succeeded"] for lv in levels) and
          near(acc["run"]["exact_match_rate"], expect["accuracy"]["exact_match_rate"], 1e-6),
          "accuracy.json: run totals over the successful requests (the failed one is not scored)", acc["run"])
    check([a["exact"] for a in acc["levels"]] == [lv["accuracy"]["exact"] for lv in levels],
          "accuracy.json: exact matches per level")

    leftovers = [x for _, _, fs in os.walk(art) for x in fs if ".tmp." in x]
    check(not leftovers, "no temporary files left in the artifact directory", leftovers)

    # --- compare and JUnit ----------------------------------------------
    check(expect["compare_failed"] == 1 and "ttft.p99" in expect["compare_err"],
          "compare: a 30 % slower run fails ttft.p99:+10%", expect["compare_err"])
    tree = ET.parse(os.path.join(tmp, "junit.xml"))
    root = tree.getroot()
    check(root.tag == "testsuites", "junit: root <testsuites>")
    suites = root.findall("testsuite")
    check([s.get("name") for s in suites] == ["tokperf.compare.rules", "tokperf.compare.metrics"],
          "junit: a suite of rules and a suite of comparisons")
    cases = root.findall("./testsuite/testcase")
    fails = root.findall("./testsuite/testcase/failure")
    skips = root.findall("./testsuite/testcase/skipped")
    check(int(root.get("tests")) == len(cases) and int(root.get("failures")) == len(fails) and
          int(root.get("skipped")) == len(skips), "junit: counts on <testsuites> match the elements")
    for s in suites:
        check(int(s.get("tests")) == len(s.findall("testcase")) and
              int(s.get("failures")) == len(s.findall("testcase/failure")),
              "junit: counts on suite %s match" % s.get("name"))
    rules_cases = suites[0].findall("testcase")
    check(len(rules_cases) == 3 * len(levels), "junit: one test per rule and level")
    check(len(fails) == len(levels) and all("ttft.p99" in f.get("message") for f in fails),
          "junit: ttft.p99 failed at every level, message names it", [f.get("message") for f in fails])
    check(all(c.get("classname") and c.get("name") for c in cases), "junit: every testcase has classname and name")
    with open(os.path.join(tmp, "compare.txt")) as f:
        ctext = f.read()
    check("worse" in ctext and "FAIL ttft.p99:+10%" in ctext, "compare output marks regressions")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

done()
