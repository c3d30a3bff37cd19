#!/usr/bin/env python3
"""The server's side (issue #9) against the mock: per-model and composing-
model statistics equal to what the level sent, Prometheus figures scraped
during the level, and KV-cache controls (--cache-bust rules prefix reuse
out; shared prefixes show hits and a shorter time to first token).  TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")


tmp = tempfile.mkdtemp(prefix="tp_server_")


def run(args):
    js = os.path.join(tmp, "s.json")
    if os.path.exists(js):
        os.unlink(js)
    p = subprocess.run([TOKPERF, "profile", "--mock", "-q", "--no-artifacts", "--json", js] + args,
                       capture_output=True, text=True, timeout=120 * SCALE)
    return p, (json.load(open(js)) if os.path.exists(js) else None)


# 1. ModelStatistics: the ensemble and its composing models, per level.
p, doc = run(["--concurrency", "1,4", "--request-count", "12", "--warmup-request-count", "3",
              "--output-tokens-mean", "4", "--mock-ttft-ms", "5", "--mock-itl-ms", "2"])
check(p.returncode == 0 and doc, "statistics run: exit 0", p.stderr[-500:])
for lv in (doc or {}).get("levels", []):
    srv = {m["name"]: m for m in lv["server"]}
    # The counters are read again once the warm-up ended: the measured
    # requests only.  At concurrency 1 that boundary is exact; with 4 in
    # flight, a measured request sent beside the last warm-up ones may end
    # before it (counted in the "before" snapshot): at most 3 of them.
    sent = lv["requests"]
    got = srv.get("ensemble", {}).get("success_count", -1)
    low = sent if lv["concurrency"] == 1 else sent - 3
    check(low <= got <= sent and srv["ensemble"]["inference_count"] == got,
          "c=%d: the ensemble counted the measured requests (%d of %d), not the 3 warm-up ones" % (
              lv["concurrency"], got, sent), "%r" % srv.get("ensemble"))
    check(list(srv)[:1] == ["ensemble"] and not srv["ensemble"]["composing"],
          "c=%d: the target model comes first" % lv["concurrency"], "%r" % list(srv))
    comp = [m for m in lv["server"] if m["composing"]]
    check(sorted(m["name"] for m in comp) == ["postprocessing", "preprocessing", "tensorrt_llm"],
          "c=%d: preprocessing, tensorrt_llm and postprocessing as composing models" % lv["concurrency"])
    check(all(m["success_count"] >= got for m in comp), "c=%d: each composing model ran for every request" %
          lv["concurrency"], "%r" % [(m["name"], m["success_count"]) for m in comp])
    e = srv.get("ensemble", {})
    check(e.get("avg_request_latency_us", 0) > 0 and abs(e["avg_request_latency_us"] - (
        e["avg_overhead_us"] + e["avg_queue_us"] + e["avg_compute_input_us"] + e["avg_compute_infer_us"] +
        e["avg_compute_output_us"])) < 1 + 0.01 * e["avg_request_latency_us"],
        "c=%d: request latency = overhead + queue + compute (perf_analyzer's breakdown)" % lv["concurrency"], "%r" % e)
check("Composing models:" in p.stdout and "compute infer" in p.stdout, "the report shows the server section")
p, doc = run(["--concurrency", "1", "--request-count", "4", "--output-tokens-mean", "2", "--no-server-stats"])
check(doc and doc["levels"][0]["server"] == [], "--no-server-stats leaves it out")

# 2. Prometheus metrics scraped during the level.
p, doc = run(["--concurrency", "8", "--request-count", "48", "--output-tokens-mean", "16", "--mock-itl-ms", "8",
              "--metrics-url", "mock", "--metrics-interval", "100ms"])
lv = doc["levels"][0] if doc else {}
sm = lv.get("server_metrics", {})
check(lv.get("metrics_scrapes", 0) >= 3, "scraped several times during the level (%r)" % lv.get("metrics_scrapes"))
check(all(k in sm for k in ("gpu_utilization", "trtllm_active_requests", "vllm_requests_running",
                             "trtllm_kv_blocks_used")), "GPU, TensorRT-LLM and vLLM figures summarised",
      "%r" % sorted(sm))
check(sm.get("trtllm_active_requests", {}).get("max") == 8, "the server saw at most the 8 in flight, and reached it",
      "%r" % sm.get("trtllm_active_requests"))
p, doc = run(["--concurrency", "1", "--request-count", "2", "--output-tokens-mean", "2",
              "--metrics-url", "ftp://nowhere/metrics"])
check(p.returncode == 2 and "--metrics-url" in p.stderr, "a bad metrics URL is a usage error", p.stderr)

# 3. KV-cache controls against the mock's prefix cache.
if WORDS:
    base = ["--concurrency", "1", "--request-count", "16", "--output-tokens-mean", "2", "--tokenizer", WORDS,
            "--mock-prefix-cache", "--mock-prefill-us-per-token", "400", "--mock-ttft-ms", "5",
            "--mock-prefill-queue-ms", "0", "--prefix-tokens", "64", "--num-prefixes", "1",
            "--metrics-url", "mock", "--metrics-interval", "50ms"]
    p, shared = run(base)
    p2, busted = run(base + ["--cache-bust"])
    p3, nocache = run([a for a in base if a != "--mock-prefix-cache"] + ["--cache-bust"])
    if shared and busted and nocache:
        s, b, u = shared["levels"][0], busted["levels"][0], nocache["levels"][0]
        check(shared["mock"]["prefix_cache_hits_tokens"] > 0 and (s["prefix_cache_hit_rate"] or 0) > 0.2,
              "shared prefixes: the mock reuses them (hit rate %.2f)" % (s["prefix_cache_hit_rate"] or 0))
        check(busted["mock"]["prefix_cache_hits_tokens"] == 0 and b["prefix_cache_hit_rate"] == 0,
              "--cache-bust: no prefix is ever reused (hit rate 0)",
              "hits %r rate %r" % (busted["mock"]["prefix_cache_hits_tokens"], b["prefix_cache_hit_rate"]))
        ts, tb, tu = (x["time_to_first_token_ms"]["avg"] for x in (s, b, u))
        check(ts < tb - 10, "shared prefixes: time to first token shorter (%.1f ms vs %.1f ms)" % (ts, tb))
        check(abs(tb - tu) < 2.5, "--cache-bust: TTFT matches the uncached model (%.1f vs %.1f ms)" % (tb, tu))
        check(s["input_tokens"]["avg"] == b["input_tokens"]["avg"] - 1 or
              s["input_tokens"]["avg"] < b["input_tokens"]["avg"],
              "the marker's tokens are counted in the input (%.0f vs %.0f)" % (s["input_tokens"]["avg"],
                                                                               b["input_tokens"]["avg"]))
        check("prefix-cache hit rate" in p.stdout, "the report shows the hit rate")
    else:
        check(False, "KV-cache runs completed", p.stderr[-300:] + p2.stderr[-300:] + p3.stderr[-300:])
    # The server's cached-token count through OpenAI usage.
    p, doc = run(["--service-kind", "openai", "-m", "ensemble"] + base)
    lv = doc["levels"][0] if doc else {}
    check(lv.get("server_cached_tokens", 0) > 0, "OpenAI usage reports the cached prompt tokens (%r)" %
          lv.get("server_cached_tokens"), p.stderr[-300:])

subprocess.run(["rm", "-rf", tmp])
done()
