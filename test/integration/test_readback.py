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
# The server's counts (--token-source auto, the default): an OpenAI chat run
# whose server reports usage, with reasoning, and the client's tokenizer
# counting too.  The report takes the server's counts; each records line
# carries them (server_input_tokens, server_output_tokens, the client's
# reasoning_tokens, token_source), so the input and output figures
# recompute from records.jsonl alone.
WORDS = os.environ.get("TP_WORDS_MODEL")


def usage_run(name, tokenizer):
    art3 = os.path.join(tmp, name)
    js3 = os.path.join(tmp, name + ".json")
    cmd3 = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art3, "--no-html", "--json", js3,
            "--service-kind", "openai", "--endpoint-type", "chat", "--concurrency", "3", "--request-count", "18",
            "--output-tokens-mean", "8", "--mock-reasoning-tokens", "3", "--mock-ttft-ms", "2", "--mock-itl-ms", "1"]
    if tokenizer:
        cmd3 += ["--tokenizer", tokenizer]
    p = subprocess.run(cmd3, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: an OpenAI chat run with usage and reasoning ends with exit 0" % name,
          p.stderr[-1000:])
    lv3 = json.load(open(js3))["levels"][0] if p.returncode == 0 else {}
    lines3 = []
    if p.returncode == 0:
        with open(os.path.join(art3, "records.jsonl")) as f:
            lines3 = [json.loads(x) for x in f if x.strip()]
    m3 = [r for r in lines3 if r["measured"]]
    ok3 = [r for r in m3 if r["ok"]]
    check(len(ok3) == 18 and all(r.get("token_source") == "auto" and r.get("server_input_tokens") is not None
                                 and "server_cached_tokens" in r and "reasoning_tokens" in r for r in ok3),
          "%s: every records line carries the server's input count, its cached count, the reasoning count and "
          "the source" % name, json.dumps(ok3[0] if ok3 else {})[:600])
    return lv3, m3, ok3


def used_input(r):
    """The input count the report uses, by --token-source (docs/metrics.md)."""
    if r["token_source"] != "client" and r["server_input_tokens"] is not None:
        return r["server_input_tokens"]
    return None if r["token_source"] == "server" else r["input_tokens"]


def used_output(r):
    """The output count the report uses: the server's completion count holds
    the reasoning tokens, taken off when the client counted them."""
    if r["token_source"] != "client" and r["server_output_tokens"] is not None:
        n = r["server_output_tokens"]
        rt = r["reasoning_tokens"]
        return max(n - rt, 0) if rt else n
    return None if r["token_source"] == "server" else r["output_tokens"]


def rel(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


def check_usage(name, tokenizer):
    lv3, m3, ok3 = usage_run(name, tokenizer)
    if not tokenizer:
        # No client count at all: the line's input_tokens is null, and only
        # the server's count gives the report's figures back.
        check(ok3 and all(r["input_tokens"] is None for r in ok3), "%s: the client counted nothing" % name)
    dur3 = (max(r["done_ns"] for r in m3) - min(r["sent_ns"] for r in m3 if r["sent_ns"])) / 1e9 if m3 else 0
    ins = [used_input(r) for r in ok3 if used_input(r) is not None]
    outs3 = [used_output(r) for r in ok3 if used_output(r) is not None]
    want = {"input_tokens.avg": sum(ins) / len(ins) if ins else None,
            "input_token_throughput_tps": sum(ins) / dur3 if ins and dur3 else None,
            "output_tokens.avg": sum(outs3) / len(outs3) if outs3 else None,
            "output_token_throughput_tps": sum(outs3) / dur3 if outs3 and dur3 else None}
    got = {"input_tokens.avg": (lv3.get("input_tokens") or {}).get("avg"),
           "input_token_throughput_tps": lv3.get("input_token_throughput_tps"),
           "output_tokens.avg": (lv3.get("output_tokens") or {}).get("avg"),
           "output_token_throughput_tps": lv3.get("output_token_throughput_tps")}
    check(lv3.get("input_tokens_source") == "server" and all(rel(got[k], want[k]) for k in want),
          "%s: ISL, OSL and the input and output throughputs recompute from records.jsonl to 1e-9 "
          "(server's counts)" % name,
          json.dumps({"got": got, "want": want, "source": lv3.get("input_tokens_source")}))
    if tokenizer:
        # The client's counts stay in the line: the report's comparison of
        # the two recomputes from it too.
        diffs = [abs(r["server_input_tokens"] - r["input_tokens"]) for r in ok3
                 if r["server_input_tokens"] is not None and r["input_tokens"] is not None]
        mean = sum(diffs) / len(diffs) if diffs else None
        check(diffs and lv3.get("server_usage_input_compared") == len(diffs) and
              (rel(lv3.get("server_usage_input_diff_mean"), mean) or
               mean == lv3.get("server_usage_input_diff_mean") == 0),
              "%s: the server-client input difference recomputes from the line's two counts" % name,
              json.dumps([lv3.get("server_usage_input_compared"), lv3.get("server_usage_input_diff_mean"), diffs[:5]]))


check_usage("usage_server_only", None)
if WORDS:
    check_usage("usage_both", WORDS)
done()
