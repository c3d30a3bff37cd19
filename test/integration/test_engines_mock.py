#!/usr/bin/env python3
"""The engine protocols (--service-kind vllm-grpc, sglang-grpc) against the
built-in mock, with the mock's own log (--mock-log) as the reference:
multi-turn sessions from a conversations file and a request-rate sweep, each
request's token ids counted exactly, prompts sent as exact token ids, cached
tokens as the mock's prefix cache reports them, TTFT against the log's
times, faults classified per protocol, and a cancelled request aborted (the
log's "abort" events).  Prints TAP."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")  # a tokenizer whose tokens are words
tmp = tempfile.mkdtemp(prefix="tp_engines_mock_")
KINDS = ("vllm-grpc", "sglang-grpc")
# The client's and the log's mean TTFT of a level differ by the loopback's
# transit both ways and the kernel's stamping (tens of microseconds when
# measured); this bound leaves room for a busy shared machine.
TTFT_TOL_MS = 0.5

# Words the words tokenizer has (sentencepiece makes a run of unknown words
# one <unk>), a different first one per session so first turns share no
# prefix.
conv = os.path.join(tmp, "conv.jsonl")
LONG = " ".join(["the", "of", "and", "to"] * 12)
with open(conv, "w") as f:
    for s, first in enumerate(("night", "picture", "being")):
        f.write(json.dumps({"session_id": "s%d" % s, "turns": [
            {"text": "%s %s" % (first, LONG), "max_tokens": 5},
            {"text": "second study eyes following let night picture being", "max_tokens": 5, "delay_ms": 50},
            {"text": "eyes following second study", "max_tokens": 5, "assistant": "the let answer"},
        ]}) + "\n")


def run(name, args, kind):
    art = os.path.join(tmp, "art_%s_%s" % (name, kind))
    log = os.path.join(tmp, "mock_%s_%s.jsonl" % (name, kind))
    cmd = [TOKPERF, "profile", "--mock", "--service-kind", kind, "--mock-log", log, "--artifact-dir", art,
           "--json", art + ".json", "-q", "--tokenizer", WORDS] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180 * SCALE)
    out = {"p": p, "recs": [], "events": [], "doc": {}}
    if os.path.exists(os.path.join(art, "records.jsonl")):
        with open(os.path.join(art, "records.jsonl")) as f:
            out["recs"] = [json.loads(x) for x in f if x.strip()]
    if os.path.exists(log):
        with open(log) as f:
            out["events"] = [json.loads(x) for x in f if x.strip()]
    if os.path.exists(art + ".json"):
        with open(art + ".json") as f:
            out["doc"] = json.load(f)
    return out


def tokens_by_id(events):
    """Token responses per request id in the log (vLLM's final complete,
    which repeats its last token, is logged without text)."""
    n = {}
    for e in events:
        if e["ev"] == "response" and e.get("text"):
            n[e["id"]] = n.get(e["id"], 0) + 1
    return n


if not WORDS or not os.path.exists(WORDS):
    print("1..0 # SKIP TP_WORDS_MODEL missing: the engine protocols send token ids made by a tokenizer")
    sys.exit(0)

for kind in KINDS:
    # ---- sessions ----
    r = run("sessions", ["--input-file", conv, "--concurrency", "2", "--mock-prefix-cache",
                         "--mock-prefix-cache-block-words", "4", "--mock-log-prompts"], kind)
    p, recs, events = r["p"], r["recs"], r["events"]
    check(p.returncode == 0 and len(recs) == 9 and all(x["ok"] for x in recs),
          "%s sessions: 3 sessions of 3 turns ran" % kind, p.stderr[-1500:])
    reqs = {e["id"]: e for e in events if e["ev"] == "request"}
    toks = tokens_by_id(events)
    bad = [(x["id"], x["output_tokens"], toks.get(x["id"])) for x in recs if x["output_tokens"] != toks.get(x["id"])]
    check(recs and not bad, "%s sessions: every turn's output tokens = the mock's tokens sent" % kind, bad[:5])
    bad = [(x["id"], x["input_tokens"], reqs.get(x["id"], {}).get("prompt_tokens")) for x in recs
           if x["input_tokens"] != reqs.get(x["id"], {}).get("prompt_tokens")]
    check(recs and not bad, "%s sessions: every turn's input = the ids the mock got (the whole history)" % kind,
          bad[:5])
    # The log's prompt is the ids as words: turn k's holds turn k-1's.
    by_session = {}
    for x in sorted(recs, key=lambda x: x["turn"]):
        by_session.setdefault(x["session_id"], []).append(reqs.get(x["id"], {}).get("prompt", ""))
    grows = all(len(v) == 3 and all(v[k].startswith(v[k - 1]) and len(v[k]) > len(v[k - 1]) for k in (1, 2))
                for v in by_session.values())
    check(len(by_session) == 3 and grows, "%s sessions: each turn's ids start with the previous turn's" % kind,
          json.dumps({k: [len(s.split()) for s in v] for k, v in by_session.items()}))
    lv = (r["doc"].get("levels") or [{}])[0]
    turns = lv.get("turns", [])
    cached = [t.get("cached_tokens_avg") for t in turns]
    check(len(turns) == 3 and cached[0] == 0 and cached[1] > 0 and cached[2] > cached[1],
          "%s sessions: cached tokens rise with turns %s" % (kind, cached))
    mock = r["doc"].get("mock", {})
    check(lv.get("server_cached_tokens") == mock.get("prefix_cache_hits_tokens"),
          "%s sessions: cached tokens reported = the mock prefix cache's hits (%s)" % (
              kind, mock.get("prefix_cache_hits_tokens")), json.dumps(lv.get("server_cached_tokens")))
    ss = lv.get("sessions", {})
    check(ss.get("sessions") == 3 and ss.get("completed") == 3, "%s sessions: summary" % kind, json.dumps(ss))

    # ---- request-rate sweep ----
    r = run("rate", ["--request-rate", "25,50", "--request-count", "40", "--synthetic-input-tokens-mean", "30",
                     "--output-tokens-mean", "8"], kind)
    p, recs, events = r["p"], r["recs"], r["events"]
    levels = r["doc"].get("levels", [])
    check(p.returncode == 0 and [L.get("mode") for L in levels] == ["request_rate"] * 2 and
          [L.get("request_rate_rps") for L in levels] == [25, 50],
          "%s rate: two request-rate levels" % kind, p.stderr[-1500:])
    check(levels and all(L.get("succeeded") == 40 and L.get("failed") == 0 for L in levels),
          "%s rate: every request succeeded" % kind)
    reqs = {e["id"]: e for e in events if e["ev"] == "request"}
    toks = tokens_by_id(events)
    bad = [(x["id"], x["output_tokens"], toks.get(x["id"])) for x in recs if x["output_tokens"] != toks.get(x["id"])]
    check(recs and not bad and all(x["output_tokens"] == 8 for x in recs),
          "%s rate: output tokens = the mock's (8 each)" % kind, bad[:5])
    check(recs and all(reqs.get(x["id"], {}).get("prompt_tokens") == 30 == x["input_tokens"] for x in recs),
          "%s rate: every prompt exactly 30 token ids" % kind)
    firsts = {}
    for e in events:
        if e["ev"] == "response" and e.get("text") and e["id"] not in firsts:
            firsts[e["id"]] = e["t_ns"]
    for L in levels:
        ids = [x for x in recs if x["request_rate"] == L["request_rate_rps"]] if recs and "request_rate" in recs[0] \
            else []
        client = [(x["first_token_ns"] - x["sent_ns"]) / 1e6 for x in ids]
        logged = [(firsts[x["id"]] - reqs[x["id"]]["t_ns"]) / 1e6 for x in ids if x["id"] in firsts]
        if not client or len(client) != len(logged):
            check(False, "%s rate %s: records and log matched" % (kind, L["request_rate_rps"]),
                  "%d records, %d in the log" % (len(client), len(logged)))
            continue
        a, b = sum(client) / len(client), sum(logged) / len(logged)
        check(abs(a - b) <= TTFT_TOL_MS, "%s rate %s: mean TTFT %.3f ms, the mock log's %.3f ms" % (
            kind, L["request_rate_rps"], a, b))
        early = [x["id"] for x in ids if x["first_token_ns"] < firsts.get(x["id"], 0)]
        check(not early, "%s rate %s: no first token dated before the mock sent it" % (kind, L["request_rate_rps"]),
              early[:5])

    # ---- faults ----
    r = run("faults", ["--concurrency", "4", "--request-count", "24", "--synthetic-input-tokens-mean", "10",
                       "--output-tokens-mean", "6", "--mock-fault", "inband_error", "--mock-fault-rate", "0.25"], kind)
    lv = (r["doc"].get("levels") or [{}])[0]
    injected = r["doc"].get("mock", {}).get("faults_injected")
    cls = "grpc_status" if kind == "vllm-grpc" else "server_error"
    check(injected and lv.get("failed") == injected and lv.get("errors_by_class", {}).get(cls) == injected,
          "%s faults: the mock's %s errors counted as %s" % (kind, injected, cls),
          json.dumps({k: lv.get(k) for k in ("failed", "errors_by_class", "first_error")}))

    # ---- a cancelled request is aborted ----
    r = run("abort", ["--concurrency", "2", "--request-count", "4", "--synthetic-input-tokens-mean", "10",
                      "--output-tokens-mean", "50", "--max-output-tokens", "3"], kind)
    aborts = {e["id"] for e in r["events"] if e["ev"] == "abort"}
    sent = {e["id"] for e in r["events"] if e["ev"] == "request"}
    check(sent and sent <= aborts, "%s abort: every cancelled request named in an Abort the mock logged" % kind,
          json.dumps([sorted(sent), sorted(aborts)]))

    # ---- Ctrl-C: the requests still in flight after the grace period ----
    art = os.path.join(tmp, "art_int_%s" % kind)
    log = os.path.join(tmp, "mock_int_%s.jsonl" % kind)
    proc = subprocess.Popen([TOKPERF, "profile", "--mock", "--service-kind", kind, "--tokenizer", WORDS,
                             "--mock-itl-ms", "200", "--concurrency", "4", "--request-count", "8",
                             "--output-tokens-mean", "64", "--grace-period", "300ms", "--mock-log", log,
                             "--artifact-dir", art, "--json", art + ".json", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5 * SCALE)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60 * SCALE)
    events = []
    if os.path.exists(log):
        with open(log) as f:
            events = [json.loads(x) for x in f if x.strip()]
    sent = {e["id"] for e in events if e["ev"] == "request"}
    aborts = {e["id"] for e in events if e["ev"] == "abort"}
    doc = json.load(open(art + ".json")) if os.path.exists(art + ".json") else {}
    lv = (doc.get("levels") or [{}])[0]
    check(doc.get("interrupted") and lv.get("errors_by_class", {}).get("cancelled") == 4,
          "%s Ctrl-C: the report is written, the 4 requests in flight cancelled" % kind, err[-800:])
    check(sent and sent <= aborts, "%s Ctrl-C: each named in an Abort the mock logged" % kind,
          json.dumps([sorted(sent), sorted(aborts)]))

done()
