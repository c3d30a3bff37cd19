#!/usr/bin/env python3
"""Load control through the CLI against the built-in mock: rates, caps,
arrival schedules, durations, stability windows, sweeps, trace replay,
goodput, output-length control and CI gates.  Timing targets (send lag in
microseconds) are the benchmarks' business; these checks hold on a busy
machine.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")


tmp = tempfile.mkdtemp(prefix="tp_load_")
FAST = ["--mock-ttft-ms", "5", "--mock-itl-ms", "2", "--mock-prefill-us-per-token", "0",
        "--mock-prefill-queue-ms", "0", "--mock-itl-us-per-seq", "0", "--mock-max-batch", "4096"]


def run(args, timeout=120):
    js = os.path.join(tmp, "r.json")
    rec = os.path.join(tmp, "r.jsonl")
    for p in (js, rec):
        if os.path.exists(p):
            os.unlink(p)
    cmd = [TOKPERF, "profile", "--mock", "-q", "--json", js, "--records", rec] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * SCALE)
    doc = json.load(open(js)) if os.path.exists(js) else None
    recs = [json.loads(l) for l in open(rec)] if os.path.exists(rec) else []
    return p.returncode, p.stdout, p.stderr, doc, recs


# 1. Constant rate: the plan is exact and the achieved rate holds.
rc, out, err, doc, recs = run(FAST + ["--request-rate", "400", "--request-count", "800", "--output-tokens-mean", "4"])
check(rc == 0 and doc, "rate 400/s: exit 0", err)
if doc:
    lv = doc["levels"][0]
    check(lv["mode"] == "request_rate" and lv["request_rate_rps"] == 400, "level is a rate level")
    # The achieved rate runs from the first send to the last: a busy
    # machine that delays either by its send lag moves it by that much over
    # the span, which the records show; beyond that the pacing itself is off.
    sends = sorted((r["sent_ns"], r["planned_ns"]) for r in recs if r.get("sent_ns"))
    span = (sends[-1][0] - sends[0][0]) if len(sends) > 1 else 1
    explained = ((sends[0][0] - sends[0][1]) + (sends[-1][0] - sends[-1][1])) / span if len(sends) > 1 else 0
    check(abs(lv["achieved_send_rate_rps"] / 400 - 1) < 0.005 + explained,
          "achieved send rate within 0.5%% of 400/s, beside what the first and last sends' lag explains (%.3f%%)"
          % (100 * explained), "achieved %r" % lv["achieved_send_rate_rps"])
    planned = sorted(r["planned_ns"] for r in recs)
    gaps = [b - a for a, b in zip(planned, planned[1:])]
    check(len(planned) == 800 and all(abs(g - 2500000) <= 1 for g in gaps),
          "constant arrivals planned exactly 2.5 ms apart", "gaps %r" % sorted(set(gaps))[:5])
    check(all(r["sent_ns"] >= r["planned_ns"] for r in recs), "no request left before its planned time")
    check(all(r["measured"] is True for r in recs), "a request-count level: every record says measured")
    check(lv["send_lag_ms"]["n"] == 800 and lv["time_to_first_token_from_planned_ms"]["avg"] >=
          lv["time_to_first_token_ms"]["avg"], "send lag and planned-time TTFT reported")

# 2. Same seed, same schedule; another seed, another.
def offsets(args):
    _, _, _, _, rr = run(FAST + args + ["--request-count", "50", "--output-tokens-mean", "2"])
    p = sorted(r["planned_ns"] for r in rr)
    return [x - p[0] for x in p]


for kind in (["--arrival", "poisson"], ["--arrival", "gamma", "--burstiness", "0.5"]):
    a = offsets(["--request-rate", "500", "--random-seed", "11"] + kind)
    b = offsets(["--request-rate", "500", "--random-seed", "11"] + kind)
    c = offsets(["--request-rate", "500", "--random-seed", "12"] + kind)
    check(len(a) == 50 and a == b, "%s: the same seed gives the same schedule" % kind[1])
    check(a != c, "%s: another seed gives another schedule" % kind[1])
    gaps = [y - x for x, y in zip(a, a[1:])]
    check(len(set(gaps)) > 40, "%s: gaps vary" % kind[1])

# 3. The in-flight cap holds in rate mode, by the mock's own count, and
#    waiting shows as send lag.
rc, out, err, doc, recs = run(["--mock-ttft-ms", "50", "--mock-itl-ms", "10", "--request-rate", "200",
                               "--request-count", "120", "--max-concurrency", "8", "--output-tokens-mean", "10"])
check(rc == 0 and doc, "capped rate run: exit 0", err)
if doc:
    lv = doc["levels"][0]
    check(doc["mock"]["max_active_streams"] <= 8, "the mock never saw more than 8 streams",
          "mock %r" % doc["mock"])
    check(doc["mock"]["max_active_streams"] == 8 and lv["max_in_flight"] == 8, "the cap was reached")
    check(lv["send_lag_ms"]["p99"] > 100 and lv["late_sends"] > 50,
          "requests held by the cap show as send lag", "lag %r" % lv["send_lag_ms"])
    check(lv["time_to_first_token_from_planned_ms"]["avg"] > lv["time_to_first_token_ms"]["avg"] + 50,
          "latency from the planned time shows the client-side queueing (coordinated omission)")
    check("left over 1 ms after their planned time" in err, "a warning names the late sends", err)

# 4. Duration: the requests planned within the window are measured.
rc, out, err, doc, recs = run(FAST + ["--request-rate", "200", "--duration", "1s", "--output-tokens-mean", "2"])
check(rc == 0 and doc and doc["levels"][0]["requests"] == 200,
      "--duration 1s at 200/s measures exactly the 200 planned requests",
      doc and doc["levels"][0]["requests"])

# 5. Stability windows: steady converges, overload never does.
rc, out, err, doc, recs = run(["--mock-ttft-ms", "10", "--mock-itl-ms", "2", "--concurrency", "4",
                               "--measurement-mode", "count_windows", "--measurement-request-count", "40",
                               "--stability-percentage", "20", "--output-tokens-mean", "8"])
check(rc == 0 and doc, "count windows: exit 0", err)
if doc:
    lv = doc["levels"][0]
    check(lv["stable"] is True and 3 <= lv["stability_trials"] < 10, "a steady mock converges",
          "trials %r stable %r" % (lv["stability_trials"], lv["stable"]))
    check(lv["window_s"] and lv["requests"] >= 100, "the last three windows are measured",
          "requests %r window %r" % (lv["requests"], lv["window_s"]))
    check("Stability: " in out and "the last three agreed" in out, "the report says so")
    # Issue #15: records.jsonl is written before the windows are chosen; its
    # "measured" flags still give the measured set.
    meas = [r for r in recs if r["measured"] is True]
    check(all(isinstance(r["measured"], bool) for r in recs) and len(meas) == lv["requests"] < len(recs),
          "records.jsonl: %d records marked measured = the level's requests (%d of %d)"
          % (len(meas), lv["requests"], len(recs)))
rc, out, err, doc, recs = run(["--mock-ttft-ms", "10", "--mock-itl-ms", "5", "--mock-max-batch", "2",
                               "--request-rate", "200", "--measurement-interval", "300ms", "--max-trials", "4",
                               "--output-tokens-mean", "8"])
check(rc == 0 and doc, "overloaded time windows: exit 0", err)
if doc:
    lv = doc["levels"][0]
    check(lv["stable"] is False and lv["stability_trials"] == 4, "an overloaded (drifting) mock never converges",
          "trials %r stable %r" % (lv["stability_trials"], lv["stable"]))
    check("never agreed" in err and "never agreed" in out, "and the run says so", err[-600:])
    n_meas = sum(1 for r in recs if r["measured"] is True)
    check(n_meas == lv["requests"], "time windows: %d records marked measured = requests %d" % (n_meas, lv["requests"]))

# 6. Sweeps over input and output length (exact-length synthetic prompts).
if WORDS:
    rc, out, err, doc, recs = run(FAST + ["--tokenizer", WORDS, "--concurrency", "2", "--request-count", "6",
                                          "--synthetic-input-tokens-mean", "16,48", "--output-tokens-mean", "4,9",
                                          "--num-prompts", "10"])
    check(rc == 0 and doc and len(doc["levels"]) == 4, "2 x 2 sweep gives 4 levels", err)
    if doc:
        pts = [(l["input_tokens_target"], l["output_tokens_target"]) for l in doc["levels"]]
        check(pts == [(16, 4), (16, 9), (48, 4), (48, 9)], "points in order: input outer, output inner", pts)
        check(all(l["input_tokens"]["min"] == l["input_tokens"]["max"] == l["input_tokens_target"]
                  for l in doc["levels"]), "every prompt has exactly the target input tokens")
        check(all(l["output_tokens"]["avg"] == l["output_tokens_target"] for l in doc["levels"]),
              "every answer has the target output tokens")
        check(out.count("LLM metrics, concurrency 2, input") == 4, "one table per point")

# 6b. A reasoning model (issue #15): 8 reasoning tokens then 16 answer tokens,
#     one every 10 ms.  ITL runs over every generated token (10 ms, not the
#     240 ms span over 15 answer gaps); the time to first output token is
#     the first answer token, 8 tokens after the first reasoning one.
if WORDS:
    rc, out, err, doc, recs = run(["--service-kind", "openai", "--endpoint-type", "chat", "-m", "ensemble",
                                   "--tokenizer", WORDS, "--mock-reasoning-tokens", "8", "--mock-output-tokens", "24",
                                   "--output-tokens-mean", "24", "--mock-itl-ms", "10", "--mock-itl-us-per-seq", "0",
                                   "--mock-ttft-ms", "20", "--mock-prefill-us-per-token", "0",
                                   "--concurrency", "1", "--request-count", "4",
                                   "--mock-log", os.path.join(tmp, "reasoning_log.jsonl")])
    check(rc == 0 and doc, "reasoning run: exit 0", err)
    if doc:
        lv = doc["levels"][0]
        check(lv["reasoning_tokens"]["avg"] == 8 and lv["output_tokens"]["avg"] == 16,
              "reasoning tokens counted apart from the answer's",
              "%r %r" % (lv["reasoning_tokens"], lv["output_tokens"]))
        # Against what the mock really did (its log of each token's send):
        # a busy mock is late, and the client must read that lateness, not
        # the mock's setting of 10 ms.
        texts = {}
        for line in open(os.path.join(tmp, "reasoning_log.jsonl")):
            e = json.loads(line)
            if e.get("ev") == "response" and e.get("text"):
                texts.setdefault(e["id"], []).append(e["t_ns"])
        true_itl = [(t[-1] - t[0]) / 1e6 / (len(t) - 1) for t in texts.values() if len(t) > 1]
        true_itl = sum(true_itl) / len(true_itl) if true_itl else float("nan")
        itl = lv["inter_token_latency_ms"]["avg"]
        check(abs(itl - true_itl) < 0.2 and abs(itl - 10) < 5,
              "ITL over reasoning and answer tokens: %.2f ms (the mock's log: %.2f, set to 10)" % (itl, true_itl))
        tpot = lv["time_per_output_token_ms"]["avg"]
        check(abs(tpot - true_itl) < 0.5 and abs(tpot - 10) < 5,
              "TPOT over every generated token: %.2f ms (the mock's log: %.2f)" % (tpot, true_itl))
        ttft = lv["time_to_first_token_ms"]["avg"]
        ttfo = lv["time_to_first_output_token_ms"]["avg"]
        check(abs(ttfo - ttft - 80) < 8, "time to first output token = TTFT + 8 reasoning tokens (%.1f vs %.1f ms)"
              % (ttfo, ttft))
        check(all(r["first_answer_ns"] - r["first_token_ns"] >= 70e6 for r in recs),
              "records.jsonl: first_answer_ns after the reasoning")
        check("Time to first output token" in out, "the report shows the time to first output token")
        check(lv["output_length_mismatches"] == 0, "max_tokens bounds reasoning and answer together")

# 6c. --cache-bust and --prefix-tokens (issue #15): the exports give the text
#     sent, marker and prefix first, and input tokens are counted on it.
if WORDS:
    art = os.path.join(tmp, "bust")
    rc, out, err, doc, recs = run(FAST + ["--tokenizer", WORDS, "--cache-bust", "--prefix-tokens", "8",
                                          "--num-prefixes", "1", "--concurrency", "1", "--request-count", "3",
                                          "--output-tokens-mean", "2", "--artifact-dir", art])
    check(rc == 0 and doc, "cache-bust run with a prefix: exit 0", err)
    try:
        resp = [json.loads(l) for l in open(os.path.join(art, "responses.jsonl"))]
        pe = json.load(open(os.path.join(art, "profile_export.json")))
        sent = [q["request_inputs"]["text_input"] for q in pe["experiments"][0]["requests"]]
    except (OSError, ValueError, KeyError, IndexError) as e:
        resp, sent = [], []
        check(False, "the exports are there", repr(e))
    marker = r"^\[[0-9a-f]{16}\] "
    import re
    check(len(resp) == 3 and all(re.match(marker, q["prompt"]) for q in resp),
          "responses.jsonl: every prompt is the text sent, the cache-bust marker first",
          resp and resp[0]["prompt"][:40])
    check(len(sent) == 3 and all(re.match(marker, t) for t in sent) and len(set(t[:19] for t in sent)) == 3,
          "profile_export.json: text_input is the text sent, a marker of its own each", sent and sent[0][:40])
    check(all(q["input_tokens"] >= 64 + 8 for q in resp),
          "input tokens counted on the text sent (prompt 64 + prefix 8 + marker)",
          [q["input_tokens"] for q in resp])

# 6d. Issue #15: without a tokenizer the usage line does not claim 0
#     differences; it says the client did not count.
rc, out, err, doc, recs = run(FAST + ["--service-kind", "openai", "--endpoint-type", "chat", "-m", "ensemble",
                                      "--concurrency", "1", "--request-count", "2", "--output-tokens-mean", "4"])
check(rc == 0 and "the client did not count" in out and "differ from the client's in 0" not in out,
      "usage line without a tokenizer says the client did not count", [l for l in out.splitlines() if "usage" in l])

# 6f. Issue #15: token counts from the server.  Without a tokenizer, a run
#     against a server that reports usage has token metrics (auto); with
#     --token-source client it has none; with a tokenizer that disagrees the
#     report gives the size of the difference.
OAI = FAST + ["--service-kind", "openai", "--endpoint-type", "chat", "-m", "ensemble", "--concurrency", "2",
              "--request-count", "4", "--output-tokens-mean", "12"]
rc, out, err, doc, recs = run(OAI)
if doc:
    lv = doc["levels"][0]
    check(lv["output_tokens"] and lv["output_tokens"]["avg"] == 12 and lv["inter_token_latency_ms"] and
          lv["output_token_throughput_tps"] and lv["output_tokens_source"] == "server",
          "no tokenizer, server usage: token metrics from the server's counts (auto)",
          "%r %r" % (lv["output_tokens"], lv.get("output_tokens_source")))
    check("output the server's" in out, "the report names the source")
else:
    check(False, "openai run: exit 0", err)
rc, out, err, doc, recs = run(OAI + ["--token-source", "client"])
check(doc and doc["levels"][0]["output_tokens"] is None and doc["levels"][0]["output_tokens_source"] == "none",
      "--token-source client without a tokenizer: no token metrics", err[-300:])
PROSE = os.environ.get("TP_PROSE_MODEL")
if PROSE:
    rc, out, err, doc, recs = run(OAI + ["--tokenizer", PROSE])
    lv = doc["levels"][0] if doc else {}
    check(lv.get("server_usage_output_mismatches", 0) > 0 and lv["server_usage_output_diff_mean"] > 0 and
          lv["server_usage_output_diff_max"] >= lv["server_usage_output_diff_mean"] and
          lv["server_usage_input_diff_max"] >= lv["server_usage_input_diff_mean"] > 0,
          "a tokenizer that disagrees: the size of the difference, mean and max, output and input",
          {k: v for k, v in lv.items() if "usage" in k})
    check("tokens on average, at most" in out, "and the report line gives it")
    check(lv.get("output_tokens", {}).get("avg") == 12, "auto: the server's counts are the ones used")
    diffs = [abs(r["server_output_tokens"] - r["output_tokens"]) for r in recs]
    check(recs and max(diffs) == lv["server_usage_output_diff_max"],
          "records.jsonl keeps the client's count beside the server's; their largest gap is the max", diffs)
    rc, out, err, doc, recs = run(OAI + ["--tokenizer", PROSE, "--token-source", "client"])
    check(doc and doc["levels"][0]["output_tokens"]["avg"] != 12 and
          doc["levels"][0]["output_tokens_source"] == "client", "--token-source client: the tokenizer's counts")

# 6e. Issue #15: a stability window counts a request as it ends, not when
#     its tokens are counted (a slow count used to leave it out of its
#     window, so the last three windows held more requests than 3 x 50).
TOKM = os.environ.get("TP_PROSE_MODEL") or WORDS
if TOKM:
    rc, out, err, doc, recs = run(["--tokenizer", TOKM, "--mock-ttft-ms", "1", "--mock-itl-ms", "0.02",
                                   "--mock-itl-us-per-seq", "0", "--mock-prefill-us-per-token", "0",
                                   "--concurrency", "64", "--measurement-mode", "count_windows",
                                   "--measurement-request-count", "50", "--stability-percentage", "80",
                                   "--output-tokens-mean", "3000"], timeout=240)
    check(rc == 0 and doc, "count windows with slow token counting: exit 0", err[-300:])
    if doc:
        n = doc["levels"][0]["requests"]
        check(n == 150, "the last three windows of 50 hold 150 requests (%d; a request whose count "
              "ended after its window closed was left out of it)" % n)

# 7. Trace replay with a speed-up.
trace = os.path.join(tmp, "trace.jsonl")
with open(trace, "w") as f:
    for i in range(10):
        f.write(json.dumps({"timestamp": 100 * i, "text_input": "the water of the world", "output_length": 3}) + "\n")
rc, out, err, doc, recs = run(FAST + ["--schedule", trace, "--replay-speedup", "2"])
check(rc == 0 and doc and doc["levels"][0]["mode"] == "schedule" and doc["levels"][0]["requests"] == 10,
      "trace replay: 10 requests", err)
planned = sorted(r["planned_ns"] for r in recs)
check(len(planned) == 10 and all(abs((b - a) - 50000000) <= 1 for a, b in zip(planned, planned[1:])),
      "planned 50 ms apart (100 ms at speed-up 2)")
check(all(r["max_tokens"] == 3 for r in recs), "output_length honoured")
if WORDS:
    with open(trace, "w") as f:
        f.write(json.dumps({"timestamp": 0, "input_length": 40, "output_length": 2, "hash_ids": [1, 2]}) + "\n")
        f.write(json.dumps({"timestamp": 10, "input_length": 40, "output_length": 2, "hash_ids": [1, 3]}) + "\n")
    rc, out, err, doc, recs = run(FAST + ["--schedule", trace, "--tokenizer", WORDS, "--prefix-block-tokens", "16"])
    check(rc == 0 and doc and doc["levels"][0]["requests"] == 2, "trace with input_length and hash_ids", err)
    if recs:
        check(all(abs(r["input_tokens"] - 40) <= 2 for r in recs), "prompts of about 40 tokens",
              [r["input_tokens"] for r in recs])

# 8. Goodput.
rc, out, err, doc, recs = run(FAST + ["--concurrency", "2", "--request-count", "10", "--output-tokens-mean", "4",
                                      "--goodput", "ttft:1000 latency:5000"])
check(doc and doc["levels"][0]["goodput_fraction"] == 1.0, "generous bounds: every request is good")
rc, out, err, doc, recs = run(FAST + ["--concurrency", "2", "--request-count", "10", "--output-tokens-mean", "4",
                                      "--goodput", "ttft:1"])
check(doc and doc["levels"][0]["goodput_fraction"] == 0.0 and doc["levels"][0]["goodput_rps"] == 0,
      "a 1 ms TTFT bound against a 5 ms mock: no request is good")
check("Goodput (requests/s)" in out, "the report shows goodput")
# An ITL bound without a tokenizer cannot be shown to hold: nothing passes it,
# every request is counted as unjudged and the report says why.
rc, out, err, doc, recs = run(FAST + ["--concurrency", "2", "--request-count", "10", "--output-tokens-mean", "4",
                                      "--goodput", "itl:1000"])
lv = doc["levels"][0] if doc else {}
check(lv.get("goodput_fraction") == 0.0 and lv.get("goodput_unjudged") == lv.get("succeeded") == 10,
      "ITL bound without a tokenizer: 0% met, 10 unjudged", {k: lv.get(k) for k in ("goodput_fraction",
                                                                                  "goodput_unjudged", "succeeded")})
check("could not judge 10 requests" in out, "and the report says the bound could not judge them", out[-600:])

# 8a. Issue #15: GenAI-Perf's and vLLM's goodput key names.  vLLM's tpot is
#     tokperf's TPOT; GenAI-Perf's inter_token_latency ends at the last text,
#     as tokperf's ITL does.
G = FAST + ["--concurrency", "2", "--request-count", "6", "--output-tokens-mean", "4"]
for spec in ("time_to_first_token:1000 request_latency:5000", "ttft:1000 e2el:5000"):
    rc, out, err, doc, recs = run(G + ["--goodput", spec])
    check(rc == 0 and doc and doc["levels"][0]["goodput_fraction"] == 1.0, "--goodput '%s' accepted, all met" % spec,
          err[-300:])
rc, out, err, doc, recs = run(G + ["--goodput", "time_to_first_token:1"])
check(doc and doc["levels"][0]["goodput_fraction"] == 0.0, "time_to_first_token:1 is a TTFT bound (none met)")
rc, out, err, doc, recs = run(G + ["--goodput", "bogus:5"])
check(rc == 2 and "inter_token_latency" in err and "e2el" in err, "an unknown key lists every name", err[-300:])
if WORDS:
    for spec, key, frac in (("tpot:1000", "tpot_ms", 1.0), ("inter_token_latency:1000", "itl_ms", 1.0),
                            ("tpot:0.01", "tpot_ms", 0.0)):
        rc, out, err, doc, recs = run(G + ["--tokenizer", WORDS, "--goodput", spec])
        lv = doc["levels"][0] if doc else {}
        # A request whose text was read in one piece on a busy machine has
        # neither ITL nor TPOT: unjudged, failing the bound (Fidelity).
        n = lv.get("requests") or 1
        want = frac * (n - (lv.get("goodput_unjudged") or 0)) / n
        check(abs((lv.get("goodput_fraction") or 0) - want) < 1e-9 and doc["config"]["goodput"].get(key) is not None,
              "--goodput %s: a bound on %s, %.0f%% of the judged met" % (spec, key, 100 * frac),
              {k: lv.get(k) for k in ("goodput_fraction", "goodput_unjudged")})
rc, out, err, doc, recs = run(G + ["--goodput", "tpot:1000"])
lv = doc["levels"][0] if doc else {}
check(lv.get("goodput_fraction") == 0.0 and lv.get("goodput_unjudged") == 6,
      "a TPOT bound without token counts: unjudged, like ITL")

# 8b. The other tools' figures against the mock's own timing (2 ms between
# tokens, one token per response): time to second token, TPOT and 1/ITL.
if WORDS:
    rc, out, err, doc, recs = run(FAST + ["--concurrency", "2", "--request-count", "10", "--output-tokens-mean", "8",
                                          "--tokenizer", WORDS])
    lv = doc["levels"][0] if doc else {}
    ttst, tpot, per = (lv.get(k) or {} for k in ("time_to_second_token_ms", "time_per_output_token_ms",
                                                 "output_token_throughput_per_user_from_itl_tps"))
    check(ttst.get("n") == 10 and abs(ttst.get("p50", 0) - 2) < 1.0, "time to second token ~ the mock's 2 ms",
          ttst)
    check(tpot.get("n") == 10 and abs(tpot.get("p50", 0) - 2) < 1.0, "TPOT ~ the mock's 2 ms", tpot)
    check(per.get("n") == 10 and 300 < per.get("p50", 0) < 1000, "per-user throughput from ITL ~ 1000/2 tokens/s",
          per)

# 9. Output length: the report counts answers that stopped early.
if WORDS:
    rc, out, err, doc, recs = run(FAST + ["--tokenizer", WORDS, "--concurrency", "4", "--request-count", "40",
                                          "--output-tokens-mean", "20", "--mock-eos-prob", "0.2"])
    check(doc and doc["levels"][0]["output_length_mismatches"] > 0, "early stops counted as length mismatches")
    rc, out, err, doc, recs = run(FAST + ["--tokenizer", WORDS, "--concurrency", "4", "--request-count", "40",
                                          "--output-tokens-mean", "20", "--mock-eos-prob", "0.2",
                                          "--output-tokens-mean-deterministic"])
    check(doc and doc["levels"][0]["output_length_mismatches"] == 0 and doc["levels"][0]["output_tokens"]["min"] == 20,
          "--output-tokens-mean-deterministic forces the length through min_length")

# 10. CI gates through the CLI.
base = FAST + ["--concurrency", "2", "--request-count", "8", "--output-tokens-mean", "4"]
rc, out, err, doc, recs = run(base + ["--assert", "ttft.p99 <= 2s", "--assert", "error_rate <= 1%"])
check(rc == 0, "passing gates: exit 0", err)
rc, out, err, doc, recs = run(base + ["--assert", "ttft.p99 <= 1us"])
check(rc == 1 and "assertion failed: ttft.p99 <= 1us: measured" in err, "a failing gate: exit 1 and the bound", err)
check("Time to first token" in out, "the report is still printed")
rc, out, err, doc, recs = run(base + ["--assert", "request_throughput >= 1000000"])
check(rc == 1 and "requests/s" in err, "a throughput gate fails with its unit", err)
rc, out, err, doc, recs = run(base + ["--assert", "ttft.p42 <= 1"])
check(rc == 2 and "p42" in err, "a bad gate is a usage error", err)
rc, out, err, doc, recs = run(["--skip-preflight", "-m", "no_such_model", "--concurrency", "2",
                               "--request-count", "4"])
check(rc == 1 and "every one of the 4 measured requests failed" in err, "all requests failed: exit 1", err)
check(doc and doc["levels"][0]["errors_by_class"]["server_error"] == 4, "classed as server errors")

# 11. The send window: constant arrivals 500 us apart with a 1,200 us window
# leave in threes, each group in one write at its last request's due time.
from collections import Counter  # noqa: E402
win = FAST + ["--request-rate", "2000", "--arrival", "constant", "--request-count", "300",
              "--output-tokens-mean", "2"]
rc, out, err, doc, recs = run(win + ["--send-window", "1200"])
check(rc == 0 and doc and len(recs) == 300, "--send-window 1200: exit 0", err)
if doc and recs:
    check(doc["config"]["send_window_us"] == 1200, "the window is echoed in the report's config")
    check(all(r["sent_ns"] >= r["planned_ns"] for r in recs), "window: no request left before its planned time")
    groups = {}
    for r in recs:
        groups.setdefault(r["sent_ns"], []).append(r["planned_ns"])
    # A loop that falls behind (a slow start, a sanitizer build) sends
    # every request already due at once, window or not: those groups are
    # larger, and left late; the window itself makes the groups of three.
    sizes = Counter(len(g) for g in groups.values())
    check(sizes[3] >= 0.8 * len(groups), "window: requests leave in groups of three, one send time each",
          "group sizes %r" % dict(sizes))
    check(all(t >= max(g) for t, g in groups.items()), "window: a group leaves once its last request is due")
    spans = [max(g) - min(g) for g in groups.values() if len(g) <= 3]
    check(max(spans) <= 1200000, "window: no group the window made spans more than the window",
          "widest %d ns" % max(spans))
rc, out, err, doc, recs = run(win)
if doc and recs:
    check(doc["config"]["send_window_us"] == 0, "no window by default")
    sends = len(set(r["sent_ns"] for r in recs))
    check(sends >= 0.8 * len(recs), "without a window each request leaves at its own time",
          "%d send times for %d requests" % (sends, len(recs)))

subprocess.run(["rm", "-rf", tmp])
done()
