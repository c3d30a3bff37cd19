#!/usr/bin/env python3
"""Start-up: from the command to tokperf's first request, with a Qwen-sized tokenizer.

    bench/startup.py --build BUILD [--runs 9] [--prompts 100] [--tokens 550] [--out DIR]

Target: under 150 ms from exec to the first request sent, on the built-in
mock, tokenizer load, prompt synthesis and preflight included.

How it is measured.  The script reads CLOCK_MONOTONIC (time.monotonic_ns)
just before it starts `tokperf profile --mock --tokenizer FILE
--synthetic-input-tokens-mean TOKENS --num-prompts PROMPTS --request-count 1
--concurrency 1 --output-tokens-mean 1` (artifacts on, in OUT), and takes
the first request's `sent_ns` from its records.jsonl: tokperf stamps it on
the same clock (tp_now_ns), when the socket took the request's last byte.
Their difference is the start-up, exec and dynamic linking included.  The
child's CPU time (user + system, from wait4) is the client's CPU use; with
one request of one output token almost all of it is start-up.

Phases.  tokperf prints no phase timings, so each phase is measured apart,
in the same run, interleaved with the whole runs so that a noisy neighbour
hits all of them alike:
  - tokenizer load and prompt synthesis: bench_startup, a fresh process per
    sample, doing the same library calls with the same seed;
  - preflight: the same tokperf command with --skip-preflight, the
    difference of the medians;
  - the rest (exec, mock and client start, connection, artifact directory,
    the first send): the whole minus the three.
The target is held against the median of RUNS samples; the phases are
split on each one's minimum (the least disturbed sample: medians of
quantities measured apart do not add up on a busy machine).

The tokenizer is bench/make_qwen_tokenizer.py's synthetic file (the size
and layout of Qwen2's; nothing is downloaded), written once to OUT.
Writes OUT/startup.json (schema tokperf-startup/1).  Exit status 0 when the
target was met.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TARGET_MS = 150.0


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory (a release build)")
    ap.add_argument("--runs", type=int, default=9, help="samples of each measurement")
    ap.add_argument("--prompts", type=int, default=100, help="--num-prompts (tokperf's default: 100)")
    ap.add_argument("--tokens", type=int, default=550, help="--synthetic-input-tokens-mean")
    ap.add_argument("--tokenizer", help="a tokenizer.json (default: the synthetic Qwen-sized one)")
    ap.add_argument("--out", help="output directory (default BUILD/startup-out)")
    return ap.parse_args()


def run_tokperf(tokperf, tok, a, out, extra):
    rec = os.path.join(out, "records.jsonl")
    if os.path.exists(rec):
        os.unlink(rec)
    cmd = [tokperf, "profile", "--mock", "--tokenizer", tok, "--synthetic-input-tokens-mean", str(a.tokens),
           "--num-prompts", str(a.prompts), "--request-count", "1", "--concurrency", "1",
           "--output-tokens-mean", "1", "--artifact-dir", os.path.join(out, "artifacts"), "--records", rec,
           "-q"] + extra
    t0 = time.monotonic_ns()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"startup.py: {' '.join(cmd)} exited with status {status}")
    with open(rec) as f:
        sent = min(json.loads(line)["sent_ns"] for line in f if line.strip())
    return (sent - t0) / 1e6, (ru.ru_utime + ru.ru_stime) * 1e3


def phases(bench, tok, a):
    r = subprocess.run([bench, tok, str(a.prompts), str(a.tokens)], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def main():
    a = parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "startup-out"))
    os.makedirs(out, exist_ok=True)
    tokperf = os.path.join(build, "cmd", "tokperf")
    bench = os.path.join(build, "bench", "bench_startup")
    for f in (tokperf, bench):
        if not os.access(f, os.X_OK):
            sys.exit(f"startup.py: {f} missing: run ninja -C {build}")
    tok = a.tokenizer
    if not tok:
        tok = os.path.join(out, "qwen-synth-tokenizer.json")
        if not os.path.exists(tok):
            here = os.path.dirname(os.path.abspath(__file__))
            subprocess.run([sys.executable, os.path.join(here, "make_qwen_tokenizer.py"), tok], check=True)

    whole, cpu, skip, load, synth = [], [], [], [], []
    run_tokperf(tokperf, tok, a, out, [])  # page cache and first-run effects out of the samples
    for _ in range(a.runs):
        ms, c = run_tokperf(tokperf, tok, a, out, [])
        whole.append(ms)
        cpu.append(c)
        skip.append(run_tokperf(tokperf, tok, a, out, ["--skip-preflight"])[0])
        p = phases(bench, tok, a)
        load.append(p["tok_load_ms"])
        synth.append(p["synth_ms"])

    w, s, l, y, c = (summary(v) for v in (whole, skip, load, synth, cpu))
    # The phases are split on the minima, the least disturbed sample of
    # each: medians of separately measured quantities taken on a busy
    # machine do not add up (a neighbour's burst lands in one and not in
    # another).
    preflight = w["min"] - s["min"]  # may come out below 0: it is within the noise
    rest = w["min"] - l["min"] - y["min"] - preflight
    met = w["median"] < TARGET_MS
    rows = [
        ("tokenizer load", f"{l['min']:.1f} ms", f"{l['median']:.1f} ms", "", ""),
        (f"prompt synthesis ({a.prompts} x {a.tokens} tokens)", f"{y['min']:.1f} ms", f"{y['median']:.1f} ms", "", ""),
        ("preflight (whole - whole with --skip-preflight)", f"{preflight:.1f} ms",
         f"{w['median'] - s['median']:.1f} ms", "", ""),
        ("rest: exec, mock, client, connect, artifacts, first send", f"{rest:.1f} ms", "", "", ""),
        ("exec to first request sent", f"{w['min']:.1f} ms", f"{w['median']:.1f} ms (max {w['max']:.1f})",
         f"< {TARGET_MS:.0f} ms", ("yes" if met else "no") + f" (median {w['median'] / TARGET_MS:.2f} of the target)"),
        ("client CPU, whole process (user+sys)", f"{c['min']:.1f} ms", f"{c['median']:.1f} ms", "", ""),
    ]
    size = os.path.getsize(tok)
    print(f"start-up: {os.path.basename(tok)} ({size / 1e6:.1f} MB), {a.runs} runs; phases split on the minima")
    wid = max(len(r[0]) for r in rows)
    print(f"{'figure':<{wid}}  {'min':<9}  {'median':<24}  {'target':<9}  met")
    for r in rows:
        print(f"{r[0]:<{wid}}  {r[1]:<9}  {r[2]:<24}  {r[3]:<9}  {r[4]}")
    doc = {"schema": "tokperf-startup/1", "tokenizer": tok, "tokenizer_bytes": size, "runs": a.runs,
           "prompts": a.prompts, "tokens_mean": a.tokens, "target_ms": TARGET_MS, "met": met,
           "exec_to_first_send_ms": w, "skip_preflight_ms": s, "tok_load_ms": l, "synth_ms": y,
           "preflight_ms": preflight, "rest_ms": rest, "client_cpu_ms": c,
           "samples": {"whole": whole, "skip_preflight": skip, "tok_load": load, "synth": synth, "cpu": cpu}}
    with open(os.path.join(out, "startup.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
