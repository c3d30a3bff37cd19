#!/usr/bin/env python3
"""Under another tool's name, that tool's number: each file tokperf writes
for GenAI-Perf, AIPerf and vLLM's `bench serve` is read here as that tool
reads it, and every figure under the tool's key is recomputed from the same
run's records.jsonl by the tool's own definition (docs/metrics.md, "Each
tool's definitions"), to 1e-9 relative.  The definitions below are written
from the tools' code, not taken from tokperf's registry:

  GenAI-Perf (llm_profile_data_parser.py): responses without OpenAI
    content are dropped first (role-only, usage-only, reasoning-only);
    request latency = last response - send, TTFT = first response -
    send, ITL = (latency - TTFT) / (OSL - 1) for OSL > 1, OSL the
    tokenizer's count of the output text; its CSV (csv_exporter.py) has the
    header Metric,avg,min,max,p99 ... p1, every number "{:,.2f}".
  AIPerf (metrics/types/*.py): request latency = last content response -
    start (usage-only chunks excluded), ITL = (latency - TTFT) / (OSL - 1),
    OSL = output + reasoning tokens; each profile_export.jsonl line's
    "metrics" is a dict (its record model refuses null).
  vLLM (endpoint_request_func.py, serve.py): TTFT at the first chunk with
    choices, E2EL at the last one, TPOT = (E2EL - TTFT) / (output - 1),
    output = usage.completion_tokens when given; request_goodput null
    without --goodput; only the --percentile-metrics' keys.

A request whose text all came at one time shows no gap the server left:
tokperf gives it no ITL under any name (docs/metrics.md, "Fidelity"), and
so does the recomputation.  Shapes: OpenAI completions and chat (the vLLM
dialect's role-only first chat chunk, the usage chunk at the end), chat
with reasoning before the answer, Triton gRPC.  Prints the matrix (shape x
tool x figure -> largest relative difference) as TAP diagnostics."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, skip  # noqa: E402

TOKPERF = sys.argv[1]
WORDS = os.environ.get("TP_WORDS_MODEL")
PCTS = [1, 5, 10, 25, 50, 75, 90, 95, 99]
MATRIX = []


def dist(vals):
    """numpy's linear percentiles and the population std, as both tools use."""
    if not vals:
        return None
    v = sorted(vals)
    n = len(v)
    avg = sum(v) / n
    out = {"avg": avg, "min": v[0], "max": v[-1], "std": (sum((x - avg) ** 2 for x in v) / n) ** 0.5}
    for p in PCTS:
        rank = p / 100.0 * (n - 1)
        lo = int(rank)
        hi = min(lo + 1, n - 1)
        out["p%d" % p] = v[lo] + (v[hi] - v[lo]) * (rank - lo)
    return out


def rel(a, b):
    if a is None or b is None:
        return float("inf")
    return abs(a - b) / max(abs(a), abs(b), 1e-300) if a != b else 0.0


def ms(a, b):
    return (b - a) / 1e6


def count_tokens(texts):
    if not texts:
        return []
    p = subprocess.run([TOKPERF, "tokenize", "--tokenizer", WORDS, "--jsonl", "-"],
                       input="".join(json.dumps({"text": t}) + "\n" for t in texts),
                       capture_output=True, text=True, timeout=60 * SCALE)
    return [int(x) for x in p.stdout.split()]


def text_stamps(r):
    """Arrival times of the responses that carried text (either kind)."""
    return [t for t, at in zip(r["response_ns"], r.get("response_text_at") or []) if at is not None]


def one_time(r):
    """All text responses at one time: no gap was seen (no ITL)."""
    ts = text_stamps(r)
    return len(ts) >= 2 and ts[0] == ts[-1]


def answer_stamps(r):
    """Arrival times of the responses with answer text (OpenAI content):
    response_text_at >= 0 (a reasoning piece's place is negative)."""
    return [t for t, at in zip(r["response_ns"], r.get("response_text_at") or []) if at is not None and at >= 0]


def genai_request(r, answer_only=True):
    """GenAI-Perf's figures of one request: the responses without content
    dropped (reasoning-only ones too), the rest its text responses."""
    ts = answer_stamps(r) if answer_only else text_stamps(r)
    if not ts:
        return None
    lat, ttft, osl = ms(r["sent_ns"], ts[-1]), ms(r["sent_ns"], ts[0]), r["output_tokens"]
    f = {"time_to_first_token": ttft, "request_latency": lat, "output_sequence_length": osl,
         "input_sequence_length": r["input_tokens"]}
    if osl is not None and osl > 1 and len(ts) >= 2 and ts[0] != ts[-1]:
        f["inter_token_latency"] = (lat - ttft) / (osl - 1)
        f["output_token_throughput_per_user"] = 1000.0 / f["inter_token_latency"] \
            if f["inter_token_latency"] > 0 else None
    return f


def aiperf_request(r, reasoning):
    """AIPerf's figures of one request: its content responses (reasoning
    counts as content), its OSL answer plus reasoning."""
    f = genai_request(r, answer_only=False)
    if f is None:
        return None
    osl = None if r["output_tokens"] is None else r["output_tokens"] + reasoning
    f["output_sequence_length"] = osl
    f.pop("inter_token_latency", None)
    f.pop("output_token_throughput_per_user", None)
    ts = text_stamps(r)
    if osl is not None and osl > 1 and len(ts) >= 2 and not one_time(r):
        f["inter_token_latency"] = (f["request_latency"] - f["time_to_first_token"]) / (osl - 1)
        f["output_token_throughput_per_user"] = 1000.0 / f["inter_token_latency"]
    return f


def compare(shape, tool, doc, figs, keys):
    """Each key's statistics in doc against the distribution of figs."""
    for key in keys:
        want = dist([f[key] for f in figs if f.get(key) is not None])
        got = doc.get(key)
        if want is None:
            check(got is None, "%s, %s: %s absent where no request has it" % (shape, tool, key), got)
            continue
        if got is None:
            check(False, "%s, %s: %s present" % (shape, tool, key))
            continue
        worst = max(rel(got.get(s), want[s]) for s in want)
        MATRIX.append((shape, tool, key, worst))
        check(worst <= 1e-9, "%s, %s: %s is the tool's definition (max rel diff %.1e)" % (shape, tool, key, worst),
              {s: (got.get(s), want[s]) for s in want})


def genai_csv(shape, d, doc):
    """GenAI-Perf's CSV read as csv.reader reads it: its header, and each
    row's numbers the JSON's in "{:,.2f}"."""
    with open(os.path.join(d, "profile_export_genai_perf.csv"), newline="") as f:
        rows = list(csv.reader(io.StringIO(f.read())))
    stats = ["avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "p10", "p5", "p1"]
    check(rows[0] == ["Metric"] + stats, "%s, GenAI-Perf csv: its header" % shape, rows[0])
    split = rows.index([])
    bad = []
    for row in rows[1:split]:
        key = row[0].split(" (")[0].lower().replace(" ", "_")
        want = [format(doc[key][s], ",.2f") for s in stats] if key in doc else None
        if row[1:] != want:
            bad.append("%s: %s != %s" % (row[0], row[1:], want))
    for row in rows[split + 2:]:
        key = row[0].split(" (")[0].lower().replace(" ", "_")
        if key not in doc or row[1:] != [format(doc[key]["avg"], ",.2f")]:
            bad.append("%s: %s" % (row[0], row[1:]))
    check(not bad, "%s, GenAI-Perf csv: every number is the JSON's, {:,.2f}" % shape, "\n".join(bad))


def vllm_check(shape, lv, ok):
    """vLLM's figures in --json (the rows vllm-bench writes) against vLLM's
    client logic on records.jsonl: TTFT at the first response (the role-only
    chat chunk included), E2EL at the last chunk with choices, output
    length the server's count, ITL every gap between those chunks pooled.
    The mock's usage-only chunk shares the last text's arrival, so the
    last chunk with choices is the last response here."""
    figs = []
    gaps = []
    for r in ok:
        ts = r["response_ns"]
        ttft, e2el = ms(r["sent_ns"], ts[0]), ms(r["sent_ns"], ts[-1])
        n = r["server_output_tokens"] if r["server_output_tokens"] else r["output_tokens"]
        figs.append({"vllm_ttft_ms": ttft, "vllm_e2el_ms": e2el, "vllm_output_tokens": n,
                     "vllm_tpot_ms": (e2el - ttft) / (n - 1) if n and n > 1 else None})
        gaps += [ms(a, b) for a, b in zip(ts, ts[1:]) if b != a]
    for key in ("vllm_ttft_ms", "vllm_e2el_ms", "vllm_tpot_ms", "vllm_output_tokens"):
        want = dist([f[key] for f in figs if f[key] is not None])
        got = lv.get(key)
        worst = max(rel(got.get(s), want[s]) for s in want) if got and want else float("inf")
        MATRIX.append((shape, "vLLM", key, worst))
        check(worst <= 1e-9, "%s, vLLM: %s is vLLM's definition (max rel diff %.1e)" % (shape, key, worst),
              {s: (got.get(s) if got else None, want[s] if want else None) for s in ("avg", "p50", "max")})
    # The pooled gaps: n, mean, min, max exact; percentiles within 1/1024 (docs).
    want, got = dist(gaps), lv.get("vllm_itl_ms")
    exact = max(rel(got.get(s), want[s]) for s in ("avg", "min", "max")) if got and want else float("inf")
    pct = max(rel(got.get("p%d" % p), want["p%d" % p]) for p in PCTS) if got and want else float("inf")
    MATRIX.append((shape, "vLLM", "vllm_itl_ms (avg/min/max)", exact))
    check(got is not None and got["n"] == len(gaps) and exact <= 1e-9 and pct <= 1 / 1024,
          "%s, vLLM: the pooled ITL is every gap between chunks (%d gaps, rel %.1e, percentiles %.1e)"
          % (shape, len(gaps), exact, pct), (got, want))


def run_shape(tmp, shape, args, reasoning_run=False):
    art = os.path.join(tmp, shape)
    js = os.path.join(tmp, shape + ".json")
    cmd = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art, "--no-html", "--json", js,
           "--request-count", "16",
           "--concurrency", "4", "--output-tokens-mean", "12", "--mock-ttft-ms", "3", "--mock-itl-ms", "2",
           "--tokenizer", WORDS, "--token-source", "client"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: the run ends with exit 0" % shape, p.stderr[-1500:])
    if p.returncode:
        return
    with open(os.path.join(art, "records.jsonl")) as f:
        recs = [r for r in map(json.loads, f) if r["measured"]]
    ok = [r for r in recs if r["ok"]]
    rtok = count_tokens([r.get("reasoning") or "" for r in ok]) if reasoning_run else [0] * len(ok)
    d = os.path.join(art, "concurrency4")
    if "openai" in args:
        with open(js) as f:
            vllm_check(shape, json.load(f)["levels"][0], ok)
    keys = ["time_to_first_token", "request_latency", "inter_token_latency", "output_sequence_length",
            "input_sequence_length", "output_token_throughput_per_user"]

    # GenAI-Perf: its summary, its CSV.
    with open(os.path.join(d, "profile_export_genai_perf.json")) as f:
        gdoc = json.load(f)
    gfigs = [g for g in map(genai_request, ok) if g]
    compare(shape, "GenAI-Perf", gdoc, gfigs, keys)
    genai_csv(shape, d, gdoc)

    # AIPerf: its summary, and every line of profile_export.jsonl.
    ad = os.path.join(d, "aiperf")
    with open(os.path.join(ad, "profile_export_aiperf.json")) as f:
        adoc = json.load(f)
    afigs = [a for a in (aiperf_request(r, t) for r, t in zip(ok, rtok)) if a]
    compare(shape, "AIPerf", adoc, afigs, keys)
    with open(os.path.join(ad, "profile_export.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    check(all(isinstance(x.get("metrics"), dict) for x in lines),
          "%s, AIPerf jsonl: every line's metrics is a dict, as AIPerf's record model reads it" % shape)
    by_seq = {r["seq"]: (r, t) for r, t in zip(ok, rtok)}
    worst = {}
    for x in lines:
        rt = by_seq.get(x["metadata"]["request_num"])
        if not rt:
            continue
        want = aiperf_request(*rt) or {}
        for k in ("request_latency", "inter_token_latency", "output_sequence_length"):
            got = x["metrics"].get(k, {}).get("value")
            w = want.get(k)
            worst[k] = max(worst.get(k, 0.0), 0.0 if got is None and w is None else rel(got, w))
    for k, v in worst.items():
        MATRIX.append((shape, "AIPerf jsonl", k, v))
        check(v <= 1e-9, "%s, AIPerf jsonl: each line's %s is AIPerf's (max rel diff %.1e)" % (shape, k, v))


def vllm_shape(tmp, shape, args):
    d = os.path.join(tmp, shape)
    os.makedirs(d)
    cmd = [TOKPERF, "vllm-bench", "--mock", "-q", "--num-prompts", "12", "--random-input-len", "16",
           "--random-output-len", "10", "--max-concurrency", "3", "--save-result", "--result-dir", d,
           "--result-filename", "r.json", "--percentile-metrics", "ttft,tpot,itl"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: vllm-bench ends with exit 0" % shape, p.stderr[-1500:])
    if p.returncode:
        return
    with open(os.path.join(d, "r.json")) as f:
        res = json.load(f)
    check("request_goodput" in res and res["request_goodput"] is None,
          "%s: request_goodput is null without --goodput, as vLLM writes it" % shape, res.get("request_goodput"))
    check(not any(k.endswith("_e2el_ms") for k in res),
          "%s: no e2el keys when e2el is not in --percentile-metrics" % shape, sorted(res))
    check(all(("%s_%s_ms" % (s, m)) in res for s in ("mean", "median", "std", "p99") for m in ("ttft", "tpot", "itl")),
          "%s: mean, median, std and p99 of each selected metric" % shape, sorted(res))
    # 12 requests of 10 tokens each, counted by the server.
    check(res["total_output_tokens"] == 120 and rel(res["output_throughput"], 120 / res["duration"]) <= 1e-9,
          "%s: total_output_tokens from the server's counts, output_throughput over the duration" % shape,
          (res["total_output_tokens"], res["output_throughput"], res["duration"]))


def main():
    if not WORDS:
        skip("parity suite", "no TP_WORDS_MODEL tokenizer")
        done()
    tmp = tempfile.mkdtemp(prefix="tp_parity_")
    run_shape(tmp, "completions", ["--service-kind", "openai", "--endpoint-type", "completions", "--streaming"])
    run_shape(tmp, "chat", ["--service-kind", "openai", "--endpoint-type", "chat", "--streaming"])
    run_shape(tmp, "chat+reasoning", ["--service-kind", "openai", "--endpoint-type", "chat", "--streaming",
                                      "--mock-reasoning-tokens", "4"], reasoning_run=True)
    run_shape(tmp, "triton-grpc", ["--streaming"])
    vllm_shape(tmp, "vllm-bench chat", ["--backend", "openai-chat"])
    vllm_shape(tmp, "vllm-bench completions", ["--backend", "openai"])
    for shape, tool, key, v in MATRIX:
        print("# matrix: %-16s %-13s %-34s %.1e" % (shape, tool, key, v))
    subprocess.run(["rm", "-rf", tmp])
    done()


main()
