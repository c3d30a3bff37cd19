#!/usr/bin/env python3
"""HTTP (and gRPC) timestamp fidelity against the mock's own log.

    bench/http_fidelity.py BUILD_DIR [RUNS] [--hogs N] [--kinds chat,completions,triton-http,grpc]
                           [--conc 1,4,64,256] [--against OTHER_BUILD_DIR]

For each kind and concurrency (1, 4, 64, 256), RUNS runs (default 20) of
`tokperf profile` against `tokperf mock --log --log-prompts` in its own
process (--ttft-ms 10 --itl-ms 5 --output-tokens 4), prompts numbered so
that each record joins the mock's log line of the same prompt.  Per cell:

- answers dated before their send (records: a response before sent_ns);
- sends stamped over 50 us after the mock's receive stamp: both lists in
  time order, the k-th send against the k-th receipt (a request cannot be
  received before it is sent, so a later k-th send is a misdated one);
- TTFT error: the client's TTFT minus the mock's (first text sent - request
  received, from its log), pooled p50/p99/max over the runs and the worst
  run's p99;
- the fidelity verdicts the runs reported.

--hogs N runs N busy loops beside it (a shared CI runner).  --against runs
a second build too, the two alternated run by run (a before/after
comparison on a shared machine, whose load drifts), and prints its line
(marked "against") under each cell's.  Prints one line per cell.  The
machine is shared: compare cells of one sitting only."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

KINDS = {"chat": ["--service-kind", "openai", "--endpoint-type", "chat"],
         "completions": ["--service-kind", "openai", "--endpoint-type", "completions"],
         "triton-http": ["--service-kind", "triton", "-i", "http"],
         "grpc": []}
CONC = {1: 40, 4: 80, 64: 256, 256: 512}  # concurrency: measured requests


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    k = q / 100 * (len(v) - 1)
    i = int(k)
    j = min(i + 1, len(v) - 1)
    return v[i] + (v[j] - v[i]) * (k - i)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(tokperf, kind, c, n, d):
    with open(os.path.join(d, "in.jsonl"), "w") as f:
        for i in range(n + c + 5):
            f.write('{"text_input": "p%d alpha beta gamma delta"}\n' % i)
    gp, hp = free_port(), free_port()
    mock = subprocess.Popen([tokperf, "mock", "-q", "--grpc-port", str(gp), "--http-port", str(hp), "--ttft-ms", "10",
                             "--itl-ms", "5", "--output-tokens", "4", "--itl-us-per-seq", "0",
                             "--prefill-us-per-token", "0", "--prefill-queue-ms", "0", "--max-batch", "4096",
                             "--log", os.path.join(d, "mock.jsonl"), "--log-prompts"])
    time.sleep(0.3)
    url = "127.0.0.1:%d" % (gp if kind == "grpc" else hp)
    subprocess.run([tokperf, "profile", "-q", "-u", url, "-m", "ensemble"] + KINDS[kind] +
                   ["--concurrency", str(c), "--request-count", str(n), "--warmup-request-count", str(c),
                    "--input-file", os.path.join(d, "in.jsonl"), "--no-server-stats", "--no-artifacts",
                    "--records", os.path.join(d, "rec.jsonl"), "--json", os.path.join(d, "out.json")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    mock.terminate()
    mock.wait()
    if not (os.path.exists(os.path.join(d, "rec.jsonl")) and os.path.exists(os.path.join(d, "mock.jsonl"))):
        return None
    recs = [json.loads(line) for line in open(os.path.join(d, "rec.jsonl"))]
    req, first, rx = {}, {}, []
    for line in open(os.path.join(d, "mock.jsonl")):
        e = json.loads(line)
        if e.get("ev") == "request":
            rx.append(e["t_ns"])
            w = [x for x in (e.get("prompt") or "").split() if x[:1] == "p" and x[1:].isdigit()]
            if w:
                req[e["id"]] = (int(w[0][1:]), e["t_ns"])
        elif e.get("ev") == "response" and e.get("text"):
            first.setdefault(e["id"], e["t_ns"])
    by_prompt = {pi: (t, first[mid]) for mid, (pi, t) in req.items() if mid in first}
    sent = sorted(r["sent_ns"] for r in recs if r.get("sent_ns"))
    rx.sort()
    out = {"sends": len(sent), "late": sum(1 for s, x in zip(sent, rx) if s - x > 50000),
           "before": sum(1 for r in recs if r.get("sent_ns") and r.get("response_ns")
                         and min(r["response_ns"]) < r["sent_ns"]), "errs": []}
    for r in recs:
        if r.get("warmup") or not r.get("ok") or not r.get("first_token_ns"):
            continue
        m = by_prompt.get(r["prompt_index"])
        if m:
            out["errs"].append(((r["first_token_ns"] - r["sent_ns"]) - (m[1] - m[0])) / 1e3)
    try:
        out["verdict"] = json.load(open(os.path.join(d, "out.json")))["levels"][0]["fidelity"]["verdict"]
    except (OSError, ValueError, KeyError, IndexError):
        out["verdict"] = "?"
    return out


def fmt(kind, c, a):
    return ("%-12s c=%-3d runs=%d sends=%d answers_before_send=%d sent>50us_after_rx=%d "
            "ttft_err_us p50=%.1f p99=%.1f max=%.1f worst_run_p99=%.1f verdicts=%s"
            % (kind, c, a["done"], a["sends"], a["before"], a["late"], pct(a["errs"], 50), pct(a["errs"], 99),
               max(a["errs"]) if a["errs"] else float("nan"), a["worst"], a["verdicts"]))


def main():
    args = sys.argv[1:]
    hogs, kinds, conc, against = 0, list(KINDS), list(CONC), None
    if "--hogs" in args:
        i = args.index("--hogs")
        hogs = int(args[i + 1])
        del args[i:i + 2]
    if "--kinds" in args:
        i = args.index("--kinds")
        kinds = args[i + 1].split(",")
        del args[i:i + 2]
    if "--conc" in args:
        i = args.index("--conc")
        conc = [int(x) for x in args[i + 1].split(",")]
        del args[i:i + 2]
    if "--against" in args:
        i = args.index("--against")
        against = os.path.join(args[i + 1], "cmd", "tokperf")
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    tokperf = os.path.join(args[0], "cmd", "tokperf")
    runs = int(args[1]) if len(args) > 1 else 20
    builds = [tokperf] + ([against] if against else [])
    hog_procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(hogs)]
    try:
        for kind in kinds:
            for c in conc:
                n = CONC[c]
                acc = {b: {"errs": [], "late": 0, "before": 0, "sends": 0, "worst": 0.0, "verdicts": {}, "done": 0}
                       for b in builds}
                for k in range(2 * runs):
                    # Alternated, each going first every other time.
                    for b in builds if k % 2 == 0 else builds[::-1]:
                        a = acc[b]
                        if a["done"] == runs:
                            continue
                        with tempfile.TemporaryDirectory() as d:
                            o = one_run(b, kind, c, n, d)
                        if o is None:  # a port taken meanwhile: again
                            continue
                        a["done"] += 1
                        a["sends"] += o["sends"]
                        a["late"] += o["late"]
                        a["before"] += o["before"]
                        a["errs"] += o["errs"]
                        a["worst"] = max(a["worst"], pct(o["errs"], 99))
                        a["verdicts"][o["verdict"]] = a["verdicts"].get(o["verdict"], 0) + 1
                    if all(acc[b]["done"] == runs for b in builds):
                        break
                print(fmt(kind, c, acc[tokperf]), flush=True)
                if against:
                    print("  against    " + fmt(kind, c, acc[against]), flush=True)
    finally:
        for h in hog_procs:
            h.kill()


if __name__ == "__main__":
    main()
