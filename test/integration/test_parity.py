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
    header Metric,avg,min,max,p99 ... p1, every number "{:,.2f}".  The
    same parse of the level's profile_export.json (the file GenAI-Perf
    reads) gives the summary's figures too.
  AIPerf (metrics/types/*.py): request latency = last content response -
    start (usage-only chunks excluded), ITL = (latency - TTFT) / (OSL - 1),
    OSL = output + reasoning tokens; each profile_export.jsonl line's
    "metrics" is a dict (its record model refuses null).
  vLLM (endpoint_request_func.py, serve.py): TTFT at the first chunk with
    choices, E2EL at the last one (records.jsonl's last_choice_ns; its
    chunks the first choice_responses responses, a usage-only chunk after
    them), TPOT = (E2EL - TTFT) / (output - 1), output =
    usage.completion_tokens when non-zero, else the tokenizer's count of
    the answer, else 1; ITL every gap between chunks pooled;
    request_goodput null without --goodput; only the --percentile-metrics'
    keys.
  vLLM's result file (serve.py's benchmark() and main_async): with
    --save-detailed the per-request arrays, in request order, seconds;
    a failed request has output_lens 0, latencies 0, generated_texts ""
    and a non-empty error; its summary figures are calculate_metrics()
    over those arrays (numpy's mean, median, std, percentiles; ITL every
    gap of every successful request pooled, zeros included).

A request whose text all came at one time shows no gap the server left:
tokperf gives it no ITL under GenAI-Perf's and AIPerf's names
(docs/metrics.md, "Fidelity"), and so does the recomputation.

Shapes the mock writes on request: OpenAI completions and chat (the vLLM
dialect's role-only first chat chunk), chat with reasoning before the
answer, Triton gRPC and HTTP (generate_stream), a usage-only chunk
trailing the last token by 25 ms (the 10-token, 10 ms stream of the
issue, with and without reasoning: there each tool's ITL is held against
the mock's log too), chunks of several tokens, every response in one
write, failures before any token (no counts: --token-source server) and
mid-stream (counted).  vllm-bench runs on the same shapes.  Prints the
matrix (shape x tool x figure -> largest relative difference) as TAP
diagnostics, "# matrix: SHAPE | TOOL | FIGURE | DIFF"."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_check import SCALE, check, done, free_port, skip, wait_port  # noqa: E402

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
        return 0.0 if a is None and b is None else float("inf")
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


def eff_in(r):
    """The input count the report took (docs/metrics.md, "Counting tokens"):
    the server's unless the source is client; under server, none without."""
    src = r.get("token_source", "auto")
    if src != "client" and r["server_input_tokens"] is not None:
        return r["server_input_tokens"]
    return None if src == "server" else r["input_tokens"]


def eff_out(r):
    """The output count the report took: the server's less the client's
    reasoning count, unless the source is client."""
    src = r.get("token_source", "auto")
    if src != "client" and r["server_output_tokens"] is not None:
        n = r["server_output_tokens"]
        if r.get("reasoning") and r["reasoning_tokens"]:
            n = max(n - r["reasoning_tokens"], 0)
        return n
    return None if src == "server" else r["output_tokens"]


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
    lat, ttft, osl = ms(r["sent_ns"], ts[-1]), ms(r["sent_ns"], ts[0]), eff_out(r)
    f = {"time_to_first_token": ttft, "request_latency": lat, "output_sequence_length": osl,
         "input_sequence_length": eff_in(r)}
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
    out = eff_out(r)
    osl = None if out is None else out + reasoning
    f["output_sequence_length"] = osl
    f.pop("inter_token_latency", None)
    f.pop("output_token_throughput_per_user", None)
    ts = text_stamps(r)
    if osl is not None and osl > 1 and len(ts) >= 2 and not one_time(r):
        f["inter_token_latency"] = (f["request_latency"] - f["time_to_first_token"]) / (osl - 1)
        f["output_token_throughput_per_user"] = 1000.0 / f["inter_token_latency"]
    return f


def vllm_request(r):
    """vLLM's client on one record: its chunks are the first
    choice_responses responses (all of them where no choices are marked),
    TTFT at the first, E2EL at the last (last_choice_ns), the output the
    server's completion count when non-zero, else the client's count of
    the answer, else 1; every gap between the chunks, zeros included."""
    ts = r["response_ns"]
    k = r["choice_responses"] or len(ts)
    end = r["last_choice_ns"] or r["done_ns"]
    ttft, e2el = ms(r["sent_ns"], ts[0]), ms(r["sent_ns"], end)
    n = r["server_output_tokens"] if r["server_output_tokens"] else r["output_tokens"]
    n = 1 if n is None else n
    return {"vllm_ttft_ms": ttft, "vllm_e2el_ms": e2el, "vllm_output_tokens": n,
            "vllm_tpot_ms": (e2el - ttft) / (n - 1) if n > 1 else None,
            "gaps": [ms(a, b) for a, b in zip(ts[:k], ts[1:k])],
            "end_is_last_chunk": not r["last_choice_ns"] or ts[k - 1] == r["last_choice_ns"]}


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


def sse_content(resp):
    """The answer text of one response of a profile export as GenAI-Perf's
    parser reads it: every SSE event in it ("data: " + chunk; [DONE]
    skipped), the content of its first choice (delta.content or text)."""
    text = ""
    for ev in resp.strip().split("\n\n"):
        ev = ev.strip()
        if not ev.startswith("data:") or ev[5:].strip() == "[DONE]":
            continue
        choices = json.loads(ev[5:]).get("choices") or [{}]
        c = choices[0]
        text += (c.get("delta") or {}).get("content") or c.get("text") or ""
    return text


def genai_profile_export(shape, d, gdoc):
    """GenAI-Perf's parser on the level's profile_export.json: per request,
    the responses without content dropped, request latency and TTFT from
    the kept ones' timestamps, OSL the tokenizer's count of their text,
    ITL (latency - TTFT) / (OSL - 1) (none where the kept responses share
    one time, as above).  Its figures are the summary's."""
    with open(os.path.join(d, "profile_export.json")) as f:
        reqs = json.load(f)["experiments"][0]["requests"]
    kept = []
    for q in reqs:
        if not q["response_outputs"]:
            continue
        outs = [o.get("text_output") if "text_output" in o else sse_content(o.get("response", ""))
                for o in q["response_outputs"]]
        ts = [t for t, o in zip(q["response_timestamps"], outs) if o]
        if ts:
            kept.append((q, ts, "".join(o for o in outs if o)))
    figs = []
    for (q, ts, text), n in zip(kept, count_tokens([k[2] for k in kept])):
        lat, ttft = ms(q["timestamp"], ts[-1]), ms(q["timestamp"], ts[0])
        f = {"request_latency": lat, "time_to_first_token": ttft, "output_sequence_length": n}
        if n > 1 and ts[0] != ts[-1]:
            f["inter_token_latency"] = (lat - ttft) / (n - 1)
            f["output_token_throughput_per_user"] = 1000.0 / f["inter_token_latency"]
        figs.append(f)
    compare(shape, "GenAI-Perf export", gdoc, figs,
            ["time_to_first_token", "request_latency", "inter_token_latency", "output_sequence_length",
             "output_token_throughput_per_user"])


def vllm_check(shape, lv, ok):
    """vLLM's figures in --json (the rows vllm-bench writes) against vLLM's
    client logic on records.jsonl (vllm_request)."""
    figs = [vllm_request(r) for r in ok]
    check(all(f["end_is_last_chunk"] for f in figs),
          "%s, records: last_choice_ns is the time of response choice_responses" % shape)
    for key in ("vllm_ttft_ms", "vllm_e2el_ms", "vllm_tpot_ms", "vllm_output_tokens"):
        want = dist([f[key] for f in figs if f[key] is not None])
        got = lv.get(key)
        worst = max(rel(got.get(s), want[s]) for s in want) if got and want else float("inf")
        MATRIX.append((shape, "vLLM", key, worst))
        check(worst <= 1e-9, "%s, vLLM: %s is vLLM's definition (max rel diff %.1e)" % (shape, key, worst),
              {s: (got.get(s) if got else None, want[s] if want else None) for s in ("avg", "p50", "max")})
    # The pooled gaps: every statistic exact (a level of this size keeps them all).
    gaps = [g for f in figs for g in f["gaps"]]
    want, got = dist(gaps), lv.get("vllm_itl_ms")
    worst = max(rel(got.get(s), want[s]) for s in want) if got and want else float("inf")
    MATRIX.append((shape, "vLLM", "vllm_itl_ms", worst))
    check(got is not None and got["n"] == len(gaps) and worst <= 1e-9,
          "%s, vLLM: the pooled ITL is every gap between chunks, zeros included (%d gaps, max rel diff %.1e)"
          % (shape, len(gaps), worst), (got, want))


def mock_requests(path, prompts=None):
    """The mock's log: per request, its responses' (t_ns, text, final) in
    order; prompts, when given, gets each request's prompt_tokens (what
    its usage chunk says)."""
    reqs = {}
    with open(path) as f:
        for x in map(json.loads, f):
            if x["ev"] == "response":
                reqs.setdefault(x["id"], []).append((x["index"], x["t_ns"], x["text"], x["final"]))
            elif x["ev"] == "request" and prompts is not None:
                prompts[x["id"]] = x["prompt_tokens"]
    return {k: [v[1:] for v in sorted(rs)] for k, rs in reqs.items()}


def trailing_check(shape, log, ok, gdoc, adoc):
    """The usage chunk trails the last token: what the mock's log shows it
    did, request by request (matched by their text), against the client.
    The exported ITLs are the log's own token gaps within half of what
    the trailing chunk would add to them (its measured delay over the
    tokens), vLLM's E2EL ends between the last token's send and the
    trailer's, and AIPerf's OSL counts the reasoning."""
    by_text = {}
    for rs in mock_requests(log).values():
        by_text.setdefault("".join(t for _, t, _ in rs), []).append(rs)
    g_itl, a_itl, trail, ends = [], [], [], []
    for r in ok:
        rs = by_text.get((r.get("reasoning") or "") + r["text"])
        if not rs or len(rs) != 1:
            continue
        rs = rs[0]
        toks = [(t, x) for t, x, final in rs if x]
        trailer = [t for t, x, final in rs if not x and final]
        if len(toks) < 3 or len(trailer) != 1:
            continue
        trail.append(ms(toks[-1][0], trailer[0]))
        # Reasoning pieces come first: as many as make up the reasoning.
        k, acc = 0, ""
        while r.get("reasoning") and acc != r["reasoning"] and k < len(toks):
            acc += toks[k][1]
            k += 1
        ans = toks[k:]
        g_itl.append(ms(ans[0][0], ans[-1][0]) / (len(ans) - 1))
        a_itl.append(ms(toks[0][0], toks[-1][0]) / (len(toks) - 1))
        ends.append(toks[-1][0] <= r["last_choice_ns"] < trailer[0])
    check(len(trail) == len(ok) and trail, "%s: every request found in the mock's log (%d of %d)"
          % (shape, len(trail), len(ok)))
    if not trail:
        return
    delay = sum(trail) / len(trail)
    for tool, doc, want in (("GenAI-Perf", gdoc, g_itl), ("AIPerf", adoc, a_itl)):
        avg = sum(want) / len(want)
        got = doc["inter_token_latency"]["avg"]
        n = doc["output_sequence_length"]["avg"]
        tol = delay / (n - 1) / 2
        check(abs(got - avg) <= tol,
              "%s, %s: inter_token_latency %.3f ms is the mock's token gap %.3f ms (the usage chunk %.2f ms "
              "later would add %.2f)" % (shape, tool, got, avg, delay, 2 * tol))
    check(all(ends), "%s, vLLM: every E2EL ends at the last token's chunk, before the usage chunk was sent"
          % shape, ends)


def run_shape(tmp, shape, args, reasoning_run=False, timing=None, requests=16, out_tokens=12, log=False):
    art = os.path.join(tmp, shape.replace(" ", "_"))
    js = art + ".json"
    timing = timing or ["--mock-ttft-ms", "3", "--mock-itl-ms", "2"]
    cmd = [TOKPERF, "profile", "--mock", "-q", "--artifact-dir", art, "--no-html", "--json", js,
           "--request-count", str(requests), "--concurrency", "4", "--output-tokens-mean", str(out_tokens),
           "--tokenizer", WORDS] + timing + args
    if "--token-source" not in args:
        cmd += ["--token-source", "client"]
    mlog = art + ".mock.jsonl"
    if log:
        cmd += ["--mock-log", mlog]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    check(p.returncode == 0, "%s: the run ends with exit 0" % shape, p.stderr[-1500:])
    if p.returncode:
        return None
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
    genai_profile_export(shape, d, gdoc)

    # AIPerf: its summary, and every line of profile_export.jsonl.
    ad = os.path.join(d, "aiperf")
    with open(os.path.join(ad, "profile_export_aiperf.json")) as f:
        adoc = json.load(f)
    afigs = [a for a in (aiperf_request(r, t) for r, t in zip(ok, rtok)) if a]
    compare(shape, "AIPerf", adoc, afigs, keys)
    with open(os.path.join(ad, "profile_export.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    check(len(lines) == len(recs) and all(isinstance(x.get("metrics"), dict) for x in lines),
          "%s, AIPerf jsonl: a line per request, every line's metrics a dict, as AIPerf's record model reads "
          "it (%d failed)" % (shape, len(recs) - len(ok)))
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
            worst[k] = max(worst.get(k, 0.0), rel(got, w))
    for k, v in worst.items():
        MATRIX.append((shape, "AIPerf jsonl", k, v))
        check(v <= 1e-9, "%s, AIPerf jsonl: each line's %s is AIPerf's (max rel diff %.1e)" % (shape, k, v))
    return {"recs": recs, "ok": ok, "rtok": rtok, "gdoc": gdoc, "adoc": adoc, "log": mlog if log else None}


def np_stats(vals, pcts):
    """numpy's mean, median, std and percentiles of vals (0 when empty, as
    vLLM's `np.mean(x or 0)`), in ms."""
    v = dist(vals) if vals else None
    if v is None:
        return dict({"mean": 0.0, "median": 0.0, "std": 0.0}, **{"p%d" % p: 0.0 for p in pcts})
    out = {"mean": v["avg"] * 1000, "median": v["p50"] * 1000, "std": v["std"] * 1000}
    for p in pcts:
        out["p%d" % p] = v["p%d" % p] * 1000
    return out


def vllm_file(shape, res, pcts, metrics, want_failed, failed_chunks=None):
    """vLLM's result file read as vLLM's code reads it, its summary
    recomputed by calculate_metrics() from its own per-request arrays."""
    n = res["num_prompts"]
    arrays = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
              "generated_texts", "errors")
    check(all(isinstance(res.get(k), list) and len(res[k]) == n for k in arrays),
          "%s: --save-detailed writes every per-request array, one entry per prompt" % shape,
          {k: len(res.get(k) or []) for k in arrays})
    if not all(isinstance(res.get(k), list) and len(res[k]) == n for k in arrays):
        return
    good = [i for i in range(n) if res["errors"][i] == ""]
    bad = [i for i in range(n) if i not in good]
    check(res["completed"] == len(good) and res["failed"] == len(bad) and (len(bad) > 0) == want_failed,
          "%s: completed and failed are the requests without and with an error (%d, %d)"
          % (shape, len(good), len(bad)))
    check(all(res["output_lens"][i] == 0 and res["latencies"][i] == 0 and res["generated_texts"][i] == ""
              and res["errors"][i] for i in bad),
          "%s: a failed request as vLLM keeps one: output_lens 0, latency 0, no text, an error" % shape,
          [(res["errors"][i][:80], res["ttfts"][i], len(res["itls"][i])) for i in bad])
    if failed_chunks is not None:
        # Before any chunk: vLLM's defaults (TTFT 0, no gaps); mid-stream:
        # its TTFT and the gaps of the chunks that came.
        check(all((res["ttfts"][i] > 0) == (failed_chunks > 0) and len(res["itls"][i]) == max(failed_chunks - 1, 0)
                  for i in bad),
              "%s: a failed request's TTFT and gaps as far as its stream went (%d chunks)" % (shape, failed_chunks),
              [(res["ttfts"][i], res["itls"][i]) for i in bad])
    check(all(abs(res["ttfts"][i] + sum(res["itls"][i]) - res["latencies"][i]) <= 1e-9 for i in good),
          "%s: each latency is its TTFT plus its gaps (vLLM's clock stops at the last chunk)" % shape)
    tot_in = sum(res["input_lens"][i] for i in good)
    tot_out = sum(res["output_lens"][i] for i in good)
    check(res["total_input_tokens"] == tot_in and res["total_output_tokens"] == tot_out,
          "%s: total_input_tokens and total_output_tokens are the sums over the successful requests (%d, %d)"
          % (shape, tot_in, tot_out), (res["total_input_tokens"], res["total_output_tokens"]))
    dur = res["duration"]
    MATRIX.append((shape, "vLLM file", "output_throughput", rel(res["output_throughput"], tot_out / dur)))
    check(rel(res["output_throughput"], tot_out / dur) <= 1e-9 and
          rel(res["total_token_throughput"], (tot_in + tot_out) / dur) <= 1e-9,
          "%s: output_throughput and total_token_throughput over the duration" % shape)
    ttfts = [res["ttfts"][i] for i in good]
    e2els = [res["latencies"][i] for i in good]
    tpots = [(res["latencies"][i] - res["ttfts"][i]) / (res["output_lens"][i] - 1)
             for i in good if res["output_lens"][i] > 1]
    itls = [g for i in good for g in res["itls"][i]]
    for m, vals in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2el", e2els)):
        if m not in metrics:
            check(not any(k.endswith("_%s_ms" % m) for k in res), "%s: no %s keys when not selected" % (shape, m))
            continue
        want = np_stats(vals, pcts)
        got = {s: res.get("%s_%s_ms" % (s, m)) for s in want}
        worst = max(rel(got[s], want[s]) for s in want)
        MATRIX.append((shape, "vLLM file", "%s (mean/median/std/p)" % m, worst))
        check(worst <= 1e-9, "%s: the %s figures are calculate_metrics() on the file's own arrays (max rel diff "
              "%.1e)" % (shape, m, worst), {s: (got[s], want[s]) for s in want})


def vllm_shape(tmp, shape, args, mock=None, want_failed=False, prompts=12, out_len=10, failed_chunks=None,
               metrics=("ttft", "tpot", "itl", "e2el"), tokenizer=None):
    """vllm-bench against the in-process mock, or against `tokperf mock
    ARGS` started here with its log (returned with the result)."""
    d = os.path.join(tmp, shape.replace(" ", "_"))
    os.makedirs(d)
    pcts = [50, 90, 99]
    cmd = [TOKPERF, "vllm-bench", "-q", "--num-prompts", str(prompts), "--random-input-len", "16",
           "--random-output-len", str(out_len), "--max-concurrency", "3", "--save-result", "--save-detailed",
           "--result-dir", d, "--result-filename", "r.json", "--percentile-metrics", ",".join(metrics),
           "--metric-percentiles", ",".join(map(str, pcts)), "--tokenizer", tokenizer or WORDS] + args
    srv, log = None, None
    if mock is None:
        cmd.append("--mock")
    else:
        port = free_port()
        log = os.path.join(d, "mock.jsonl")
        srv = subprocess.Popen([TOKPERF, "mock", "-q", "--grpc-port", "0", "--http-port", str(port), "--log", log]
                               + mock, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not wait_port(port, 10 * SCALE):
            srv.kill()
            check(False, "%s: the mock listens" % shape, srv.communicate()[1])
            return None, None
        cmd += ["--base-url", "http://127.0.0.1:%d" % port]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SCALE)
    finally:
        if srv:
            srv.terminate()
            srv.wait(timeout=10 * SCALE)
    check(p.returncode == 0, "%s: vllm-bench ends with exit 0" % shape, p.stderr[-1500:])
    if p.returncode:
        return None, None
    with open(os.path.join(d, "r.json")) as f:
        res = json.load(f)
    check("request_goodput" in res and res["request_goodput"] is None,
          "%s: request_goodput is null without --goodput, as vLLM writes it" % shape, res.get("request_goodput"))
    vllm_file(shape, res, pcts, metrics, want_failed, failed_chunks)
    return res, log


def vllm_trailing(shape, res, log):
    """The 25 ms stream through vllm-bench: each request's end (its send
    plus its E2EL, on the mock's clock; 1 us for the seconds' rounding)
    falls between the mock's send of its last token and of its usage
    chunk; its output length is the server's count, reasoning included,
    and its input length the server's prompt_tokens (the client's
    tokenizer counts the prompt otherwise here)."""
    prompts = {}
    by_text = {}
    for rid, rs in mock_requests(log, prompts).items():
        toks = [(t, x) for t, x, final in rs if x]
        trailer = [t for t, x, final in rs if not x and final]
        by_text.setdefault("".join(x for _, x in toks), []).append((toks, trailer, prompts.get(rid)))
    ends, lens, ins = [], [], []
    for i, text in enumerate(res["generated_texts"]):
        # The answer: the log's text ends with it (reasoning came first).
        hits = [v for k, v in by_text.items() if k.endswith(text) and text]
        if len(hits) != 1 or len(hits[0]) != 1:
            continue
        toks, trailer, ptoks = hits[0][0]
        end = int(round((res["start_times"][i] + res["latencies"][i]) * 1e9))
        ends.append(toks[-1][0] <= end + 1000 and trailer and end < trailer[0])
        lens.append(res["output_lens"][i] == len(toks))
        ins.append((res["input_lens"][i], ptoks))
    check(len(ends) == res["num_prompts"] and all(ends),
          "%s: every E2EL ends after the mock sent the last token and before it sent the usage chunk (%d of %d)"
          % (shape, sum(ends), res["num_prompts"]))
    check(lens and all(lens), "%s: output_lens is the server's count, reasoning included" % shape)
    check(ins and all(a == b for a, b in ins),
          "%s: input_lens is the server's usage.prompt_tokens, as vLLM's client takes it" % shape, ins)


def main():
    if not WORDS:
        skip("parity suite", "no TP_WORDS_MODEL tokenizer")
        done()
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="tp_parity_")
    chat = ["--service-kind", "openai", "--endpoint-type", "chat", "--streaming"]
    run_shape(tmp, "completions", ["--service-kind", "openai", "--endpoint-type", "completions", "--streaming"])
    run_shape(tmp, "chat", chat)
    run_shape(tmp, "chat+reasoning", chat + ["--mock-reasoning-tokens", "4"], reasoning_run=True)
    run_shape(tmp, "triton-grpc", ["--streaming"])
    run_shape(tmp, "triton-http", ["--service-kind", "triton", "-i", "http", "--endpoint-type", "generate",
                                   "--streaming"])
    # The stream: 10 tokens 10 ms apart, the usage chunk 25 ms later.
    slow = ["--mock-ttft-ms", "5", "--mock-itl-ms", "10", "--mock-itl-us-per-seq", "0",
            "--mock-prefill-us-per-token", "0", "--mock-usage-delay-ms", "25"]
    for name, extra, reasoning in (("usage+25ms", [], False),
                                   ("usage+25ms+reasoning", ["--mock-reasoning-tokens", "5"], True)):
        got = run_shape(tmp, name, chat + extra, reasoning_run=reasoning, timing=slow, requests=8, out_tokens=10,
                        log=True)
        if got:
            trailing_check(name, got["log"], got["ok"], got["gdoc"], got["adoc"])
            if reasoning:
                osl = got["adoc"]["output_sequence_length"]
                check(osl["min"] == osl["max"] == 10,
                      "%s, AIPerf: output_sequence_length counts reasoning and answer (10)" % name, osl)
    run_shape(tmp, "chunks of 3", chat + ["--mock-reasoning-tokens", "4", "--mock-tokens-per-chunk", "3"],
              reasoning_run=True)
    run_shape(tmp, "triton-http chunks of 2", ["--service-kind", "triton", "-i", "http", "--endpoint-type",
                                               "generate", "--streaming", "--mock-tokens-per-chunk", "2"])
    got = run_shape(tmp, "one write", chat + ["--mock-one-write"])
    if got:
        n1 = sum(one_time(r) for r in got["ok"])
        check(n1 > 0, "one write: requests whose responses share one time (%d of %d)" % (n1, len(got["ok"])))
    for name, extra in (("failed mid-stream, counted", ["--mock-fault", "inband_error", "--mock-fault-rate", "0.25",
                                                        "--mock-fault-after-tokens", "3"]),
                        ("failed at arrival, uncounted", ["--mock-fault", "http_status:503", "--mock-fault-rate",
                                                          "0.25", "--token-source", "server"])):
        got = run_shape(tmp, name, chat + extra)
        if got:
            check(len(got["ok"]) < len(got["recs"]), "%s: some requests failed (%d of %d)"
                  % (name, len(got["recs"]) - len(got["ok"]), len(got["recs"])))

    vllm_shape(tmp, "vllm-bench chat", ["--backend", "openai-chat"])
    vllm_shape(tmp, "vllm-bench completions", ["--backend", "openai"], metrics=("ttft", "tpot", "itl"))
    res, log = vllm_shape(tmp, "vllm-bench usage+25ms+reasoning", ["--backend", "openai-chat"],
                          mock=["--ttft-ms", "5", "--itl-ms", "10", "--itl-us-per-seq", "0", "--usage-delay-ms", "25",
                                "--reasoning-tokens", "5"], prompts=6, tokenizer=os.environ.get("TP_PROSE_MODEL"))
    if res:
        vllm_trailing("vllm-bench usage+25ms+reasoning", res, log)
    vllm_shape(tmp, "vllm-bench failed at arrival", ["--backend", "openai-chat"],
               mock=["--ttft-ms", "3", "--itl-ms", "2", "--fault", "http_status:503", "--fault-rate", "0.3"],
               want_failed=True, failed_chunks=0)
    vllm_shape(tmp, "vllm-bench failed mid-stream", ["--backend", "openai"],
               mock=["--ttft-ms", "3", "--itl-ms", "2", "--fault", "inband_error", "--fault-rate", "0.3",
                     "--fault-after-tokens", "3"], want_failed=True, failed_chunks=3)
    vllm_shape(tmp, "vllm-bench chunks of 3", ["--backend", "openai-chat"],
               mock=["--ttft-ms", "3", "--itl-ms", "2", "--tokens-per-chunk", "3"])
    for shape, tool, key, v in MATRIX:
        print("# matrix: %-30s | %-12s | %-34s | %.1e" % (shape, tool, key, v))
    print("# parity suite: %.1f s" % (time.monotonic() - t0))
    subprocess.run(["rm", "-rf", tmp])
    done()


main()
