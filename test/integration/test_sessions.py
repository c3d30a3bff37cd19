#!/usr/bin/env python3
"""Multi-turn sessions (docs/sessions.md) against the mock, with the mock's
own log (--mock-log, --mock-log-prompts) as the reference: each turn is sent
with the whole history (earlier user texts and the model's actual answers,
or the file's fixed answer), the think time between a turn's answer and the
next turn's send is honoured, cached tokens rise with turns, and with the
mock's prefix cache later turns start faster than the first.  Prints TAP."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")  # a tokenizer whose tokens are words
tmp = tempfile.mkdtemp(prefix="tp_sessions_")
LONG = " ".join(["the", "of", "and", "to"] * 24)  # words the words tokenizer knows
DELAY_MS = 150
conv = os.path.join(tmp, "conv.jsonl")
with open(conv, "w") as f:
    for s in range(3):
        f.write(json.dumps({"session_id": "s%d" % s, "turns": [
            {"text": "start%d %s" % (s, LONG), "max_tokens": 6},
            {"text": "second%d question" % s, "max_tokens": 6, "delay_ms": DELAY_MS},
            {"text": "third%d question" % s, "max_tokens": 6, "delay_ms": DELAY_MS,
             **({"assistant": "FIXED%d answer" % s} if s == 2 else {})},
            {"text": "fourth%d question" % s, "max_tokens": 6},
        ]}) + "\n")


def run(kind, endpoint=None):
    art = os.path.join(tmp, "art_" + kind)
    log = os.path.join(tmp, "mock_%s.jsonl" % kind)
    args = [TOKPERF, "profile", "--mock", "--mock-prefix-cache", "--mock-prefill-us-per-token", "1000",
            "--mock-log", log, "--mock-log-prompts", "--input-file", conv, "--concurrency", "2",
            "--artifact-dir", art, "--json", art + ".json", "-q"]
    if WORDS:  # the whole history sent is counted as the turn's input
        args += ["--tokenizer", WORDS]
    if endpoint:  # else Triton over gRPC, the history sent as text
        args += ["--service-kind", "openai", "--endpoint-type", endpoint]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120 * SCALE)
    recs, events, level = [], [], {}
    if p.returncode == 0:
        with open(os.path.join(art, "records.jsonl")) as f:
            recs = [json.loads(x) for x in f if x.strip()]
        with open(log) as f:
            events = [json.loads(x) for x in f if x.strip()]
        with open(art + ".json") as f:
            level = json.load(f)["levels"][0]
    return p, recs, events, level


for kind in ("chat", "completions", "triton"):
    p, recs, events, level = run(kind, None if kind == "triton" else kind)
    check(p.returncode == 0 and len(recs) == 12 and all(r["ok"] for r in recs),
          "%s: 3 sessions of 4 turns ran" % kind, p.stderr[-2000:])
    if not recs:
        continue
    html = open(os.path.join(tmp, "art_" + kind, "report.html"), encoding="utf-8").read()
    check("Time to first token by turn" in html and html.count("<tr><td>") >= 4 and "Cached tokens" in html,
          "%s: report.html has the per-turn chart with its numbers in a table" % kind)
    reqs = {e["id"]: e for e in events if e["ev"] == "request"}
    answers, finals = {}, {}
    for e in events:
        if e["ev"] == "response":
            answers[e["id"]] = answers.get(e["id"], "") + e.get("text", "")
            finals[e["id"]] = max(finals.get(e["id"], 0), e["t_ns"])
    # A session's requests in the log: those whose prompt starts with its
    # first turn's text, in send order (its turns leave one after the other).
    sessions = {}
    for rid, e in sorted(reqs.items(), key=lambda kv: kv[1]["t_ns"]):
        sessions.setdefault(e["prompt"].split()[0], []).append(rid)
    hist_ok, gap_ok, cached_ok = True, True, True
    for s, rids in sessions.items():
        if len(rids) != 4:
            hist_ok = False
            continue
        for k in range(1, 4):
            prev, cur = reqs[rids[k - 1]], reqs[rids[k]]
            prev_ans = answers.get(rids[k - 1], "")
            i = s[len("start"):]
            if k == 3 and i == "2":
                prev_ans = "FIXED2 answer"
            # The history: the previous prompt whole, then its answer.
            body = prev["prompt"].rstrip("\n")
            if body not in cur["prompt"] or prev_ans.strip() not in cur["prompt"]:
                hist_ok = False
            if k in (1, 2) and cur["t_ns"] - finals[rids[k - 1]] < DELAY_MS * 1_000_000:
                gap_ok = False
    check(len(sessions) == 3 and hist_ok, "%s: the log's prompt of turn k holds turns 1..k-1 and their answers" % kind,
          json.dumps({s: [reqs[r]["prompt"][-80:] for r in rids] for s, rids in sessions.items()})[:1500])
    check(gap_ok, "%s: the think time passed between an answer and the next turn's send (log times)" % kind)
    turns = level.get("turns", [])
    check(len(turns) == 4 and [t["requests"] for t in turns] == [3, 3, 3, 3], "%s: a JSON row per turn" % kind,
          json.dumps(turns)[:800])
    if len(turns) == 4 and kind != "triton":  # Triton reports no usage
        cached = [t["cached_tokens_avg"] for t in turns]
        check(all(c is not None for c in cached) and cached[0] == 0 and 0 < cached[1] <= cached[2] < cached[3], "%s: cached tokens rise with turns %s" % (kind, cached))
    if len(turns) == 4 and (WORDS or kind != "triton"):
        inputs = [t["input_tokens_avg"] for t in turns]
        check(inputs[0] < inputs[1] < inputs[2] < inputs[3], "%s: input tokens grow %s" % (kind, inputs))
    if len(turns) == 4:
        ttft = [t["ttft_ms_avg"] for t in turns]
        check(all(x < ttft[0] for x in ttft[1:]), "%s: later turns' TTFT below the first's (prefix cache) %s"
              % (kind, ttft))
    ss = level.get("sessions", {})
    check(ss.get("sessions") == 3 and ss.get("completed") == 3 and ss.get("time_s_avg", 0) >= 2 * DELAY_MS / 1000,
          "%s: session summary (3 sessions, time includes think time)" % kind, json.dumps(ss))
    check(all(r.get("session_id", "").startswith("s") and 0 <= r.get("turn", -1) < 4 for r in recs),
          "%s: records carry session_id and turn" % kind)
    check("Per turn (sessions)" in p.stdout, "%s: the text report has the per-turn table" % kind, p.stdout[-1500:])

# A failed turn ends its session (a user would not go on): with a third of
# the requests failing, fewer later turns are sent, and the run still ends.
art = os.path.join(tmp, "art_faults")
p = subprocess.run([TOKPERF, "profile", "--mock", "--mock-fault", "http_status:503", "--mock-fault-rate", "0.3",
                    "--service-kind", "openai", "--endpoint-type", "chat", "--input-file", conv, "--concurrency", "2",
                    "--request-count", "6", "--artifact-dir", art, "--json", art + ".json", "-q"],
                   capture_output=True, text=True, timeout=120 * SCALE)
lv = json.load(open(art + ".json"))["levels"][0] if p.returncode == 0 else {}
reqs = [t["requests"] for t in lv.get("turns", [])]
failed_turns = {}
with open(os.path.join(art, "records.jsonl")) if p.returncode == 0 else open(os.devnull) as f:
    for line in f:
        r = json.loads(line)
        if not r["ok"]:
            failed_turns[r["session"]] = r["turn"]
with open(os.path.join(art, "records.jsonl")) if p.returncode == 0 else open(os.devnull) as f:
    after = [json.loads(x) for x in f if x.strip()]
after = [r for r in after if r["session"] in failed_turns and r["turn"] > failed_turns[r["session"]]]
check(p.returncode == 0 and failed_turns and not after and sum(reqs) < 24 and lv["sessions"]["completed"] < 6,
      "a failed turn ends its session: no later turn of it is sent", json.dumps([reqs, failed_turns]))

# A trace's session form (one line per turn, lines of sessions interleaved,
# turns given as lengths or text): each session's turns go in file order,
# each with the history, the think time honoured.
if WORDS:
    trace = os.path.join(tmp, "trace_sessions.jsonl")
    with open(trace, "w") as f:
        for line in [{"session_id": "t1", "timestamp": 0, "input_length": 30, "output_length": 4, "hash_ids": [1]},
                     {"session_id": "t2", "timestamp": 5, "input_length": 30, "output_length": 4, "hash_ids": [1]},
                     {"session_id": "t1", "delay": DELAY_MS, "text_input": "then this", "output_length": 4},
                     {"session_id": "t2", "delay": DELAY_MS, "text_input": "and that", "output_length": 4}]:
            f.write(json.dumps(line) + "\n")
    art = os.path.join(tmp, "art_trace")
    p = subprocess.run([TOKPERF, "profile", "--mock", "--input-file", trace, "--tokenizer", WORDS,
                        "--prefix-block-tokens", "16", "--concurrency", "2", "--artifact-dir", art, "-q"],
                       capture_output=True, text=True, timeout=120 * SCALE)
    recs = []
    if p.returncode == 0:
        with open(os.path.join(art, "records.jsonl")) as f:
            recs = [json.loads(x) for x in f if x.strip()]
    by = {}
    for r in recs:
        by.setdefault(r.get("session_id"), {})[r["turn"]] = r
    check(p.returncode == 0 and sorted(by) == ["t1", "t2"] and all(sorted(v) == [0, 1] for v in by.values())
          and all(r["ok"] for r in recs), "trace session form: 2 sessions of 2 turns ran", p.stderr[-800:])
    check(all(v[1]["input_tokens"] > v[0]["input_tokens"] >= 25 for v in by.values() if len(v) == 2),
          "trace session form: turn 1 made of ~30 tokens, turn 2 sent with the history",
          json.dumps({k: [v[t]["input_tokens"] for t in sorted(v)] for k, v in by.items()}))
    gaps = [(v[1]["sent_ns"] - v[0]["done_ns"]) / 1e6 for v in by.values() if len(v) == 2]
    check(gaps and all(g >= DELAY_MS - 1 for g in gaps), "trace session form: the delay is honoured", gaps)

# Lengths without a tokenizer to make prompts of them: a usage error naming the file.
lengths = os.path.join(tmp, "trace_lengths.jsonl")
with open(lengths, "w") as f:
    f.write(json.dumps({"session_id": "a", "input_length": 20, "output_length": 4}) + "\n")
p = subprocess.run([TOKPERF, "profile", "--mock", "--input-file", lengths,
                    "--no-artifacts", "-q"], capture_output=True, text=True, timeout=60 * SCALE)
check(p.returncode == 2 and "trace_lengths.jsonl: turns given as \"input_length\" need --tokenizer" in p.stderr,
      "a session trace of lengths without --tokenizer: exit 2, the file named", "rc %d: %s" % (p.returncode,
                                                                                              p.stderr[-400:]))

# A bad conversations file is named by file and line.
bad = os.path.join(tmp, "bad.jsonl")
with open(bad, "w") as f:
    f.write('{"session_id": "x", "turns": [{"text": "a"}]}\n{"session_id": "y", "turns": [{"max_tokens": 3}]}\n')
p = subprocess.run([TOKPERF, "profile", "--mock", "--input-file", bad, "-q"], capture_output=True, text=True,
                   timeout=60 * SCALE)
check(p.returncode != 0 and "bad.jsonl:2: turn 1" in p.stderr, "a bad turn is named by file:line and turn",
      p.stderr[-500:])
# Reasoning turns: each turn's figures are the level's method over that
# turn's requests (docs/sessions.md), recomputed here from records.jsonl:
# ITL over reasoning and answer tokens, none for a request whose text all
# came at one time, percentiles by linear interpolation.
art = os.path.join(tmp, "art_reasoning")
args = [TOKPERF, "profile", "--mock", "--service-kind", "openai", "--endpoint-type", "chat", "--input-file", conv,
        "--concurrency", "3", "--mock-reasoning-tokens", "4", "--mock-itl-ms", "3", "--artifact-dir", art,
        "--no-html", "--json", art + ".json", "-q"]
if WORDS:
    args += ["--tokenizer", WORDS]
p = subprocess.run(args, capture_output=True, text=True, timeout=120 * SCALE)
check(p.returncode == 0, "a sessions run with reasoning ends with exit 0", p.stderr[-1500:])
turns = json.load(open(art + ".json"))["levels"][0].get("turns", []) if p.returncode == 0 else []
lines = []
if p.returncode == 0:
    with open(os.path.join(art, "records.jsonl")) as f:
        lines = [json.loads(x) for x in f if x.strip()]


def linear(v, q):
    """numpy's default percentile (docs/metrics.md)."""
    v = sorted(v)
    rank = q / 100.0 * (len(v) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def output_used(r):
    """The output count the report uses (--token-source, docs/metrics.md)."""
    if r["token_source"] != "client" and r["server_output_tokens"] is not None:
        rt = r["reasoning_tokens"]
        return max(r["server_output_tokens"] - rt, 0) if rt else r["server_output_tokens"]
    return None if r["token_source"] == "server" else r["output_tokens"]


def itl(r):
    """The level's ITL of one request: first to last text response over the
    generated tokens (answer and reasoning) less one; none when its text
    responses all came at one time."""
    out = output_used(r)
    if out is None:
        return None
    gen = out + (r["reasoning_tokens"] or 0)
    n_text = sum(1 for a in r.get("response_text_at", []) if a is not None)
    if gen < 2 or n_text < 2 or r["merged_text_responses"] + 1 >= n_text:
        return None
    return (r["last_token_ns"] - r["first_token_ns"]) / 1e6 / (gen - 1)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


bad = []
reasoned = 0
for t in turns:
    rs = [r for r in lines if r["measured"] and r["ok"] and r["turn"] == t["turn"]]
    reasoned += sum(1 for r in rs if r.get("reasoning"))
    itls = [x for x in map(itl, rs) if x is not None]
    ttft = [(r["first_token_ns"] - r["sent_ns"]) / 1e6 for r in rs if r["first_token_ns"]]
    want = {"itl_ms_avg": sum(itls) / len(itls) if itls else None,
            "ttft_ms_avg": sum(ttft) / len(ttft) if ttft else None,
            "ttft_ms_p50": linear(ttft, 50) if ttft else None, "ttft_ms_p99": linear(ttft, 99) if ttft else None}
    for k, w in want.items():
        if not close(t.get(k), w):
            bad.append("turn %d %s: report %r, recomputed %r" % (t["turn"], k, t.get(k), w))
check(len(turns) == 4 and reasoned == 12 and not bad,
      "each turn's ITL, TTFT avg and linear p50/p99 are the level's method on that turn's records (1e-9)",
      "\n".join(bad) + " reasoned %d" % reasoned)
# The mock's own log of its gaps bounds the ITL: reasoning and answer tokens
# both came 3 ms apart, so no turn's ITL is above the largest gap the mock
# left between two of a request's tokens (a division by answer tokens only
# would put it near twice that).
itls = [t["itl_ms_avg"] for t in turns if t.get("itl_ms_avg") is not None]
gaps = [(b - a) / 1e6 for r in lines if r["measured"] and r["ok"]
        for a, b in zip(r["response_ns"], r["response_ns"][1:]) if b > a]
check(len(itls) == 4 and gaps and max(itls) <= max(gaps),
      "no turn's ITL exceeds the largest gap between two responses (%s <= %.3f ms)" % (itls, max(gaps or [0])))

done()
