#!/usr/bin/env python3
"""bench/memory.py: resident memory over a long run, one command.

    bench/memory.py [--build DIR] [--minutes M] [--rate R] [--tokens T] [--out DIR]

Runs `tokperf profile` (gRPC streaming, artifacts on) against `tokperf mock`
in a process of its own (so the figure is the client's alone) at R requests/s of T output tokens each (default 1,000 x 50: 50,000
streamed responses/s) for M minutes (default 10), samples tokperf's VmRSS
from /proc/PID/status every second, and prints the resident memory at
minute 1 and at the end of the measured time, their ratio against the
target (within 10%), the requests measured and the responses per second
the run reached.  The records of finished requests live in a file-backed
arena whose pages the run hands back to the kernel (lib/record/
tp_rec_arena.h); with TOKPERF_BENCH_OLD=PATH the same run is made first with
another tokperf binary (an older build) for a before/after figure on the
same machine.

It is a benchmark, not a CI test: it takes minutes and wants a quiet
machine.  Exit status 0 when the target was met, 1 when not, 2 on a usage
error.  rss.tsv and tokperf's --json stay in --out (default
BUILD/memory-out).
"""
import argparse
import json
import os
import subprocess
import sys
import time


def vmrss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def start_mock(tokperf, args):
    """The mock in a process of its own, so the figure is the client's."""
    m = subprocess.Popen([tokperf, "mock", "--grpc-port", "0", "--http-port", "-1", "--output-tokens",
                          str(args.tokens), "--ttft-ms", "20", "--itl-ms", "1", "--max-batch", "100000",
                          # no slope: a server that keeps up, so nothing piles up in flight
                          "--itl-us-per-seq", "0", "--prefill-us-per-token", "0", "--prefill-queue-ms", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = m.stderr.readline().decode(errors="replace")
    if "listening on " not in line:
        m.kill()
        raise RuntimeError("the mock did not start: " + line)
    return m, line.split("listening on ")[1].split()[0]


def one_run(tokperf, args, out, tag):
    os.makedirs(out, exist_ok=True)
    jpath = os.path.join(out, "%s.json" % tag)
    art = os.path.join(out, "%s-artifacts" % tag)
    seconds = args.minutes * 60
    mock, addr = start_mock(tokperf, args)
    cmd = [tokperf, "profile", "-u", addr, "-q", "--request-rate", str(args.rate), "--duration", "%ds" % seconds,
           "--output-tokens-mean", str(args.tokens), "--json", jpath, "--artifact-dir", art, "--no-html"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    samples = []
    while p.poll() is None:
        rss = vmrss_kib(p.pid)
        if rss is not None:
            samples.append((time.monotonic() - t0, rss))
        time.sleep(1)
    err = p.stderr.read().decode(errors="replace")
    mock.terminate()
    mock.wait()
    with open(os.path.join(out, "%s-rss.tsv" % tag), "w") as f:
        for t, rss in samples:
            f.write("%.1f\t%d\n" % (t, rss))
    if p.returncode != 0:
        print("%s: tokperf exited %d: %s" % (tag, p.returncode, err[-400:]), file=sys.stderr)
        return None

    def at(sec):
        best = None
        for t, rss in samples:
            if t <= sec:
                best = rss
        return best

    doc = json.load(open(jpath))
    lv = doc["levels"][0]
    # The end of the measured time, before the level's statistics and
    # exports read the records back.
    rpr = lv.get("responses_per_request", {}).get("avg", 0)
    return {"rss1": at(60), "rss_end": at(seconds - 2), "requests": lv.get("requests"),
            "max_in_flight": lv.get("max_in_flight"),
            "duration_s": lv.get("duration_s", 0), "seconds": seconds,
            "responses_per_s": rpr * lv.get("requests", 0) / max(lv.get("duration_s", 1), 1e-9)}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.minutes < 1.5:
        print("memory.py: --minutes must be at least 1.5 (the figure is minute 1 against the end)", file=sys.stderr)
        return 2
    out = args.out or os.path.join(args.build, "memory-out")
    runs = []
    old = os.environ.get("TOKPERF_BENCH_OLD")
    if old:
        runs.append(("before", old))
    runs.append(("tokperf", os.path.join(args.build, "cmd", "tokperf")))
    ok = True
    print("%-8s %12s %12s %8s %10s %14s %9s %s" % ("run", "RSS 1 min", "RSS end", "ratio", "requests",
                                                    "responses/s", "in flight", "target <= 1.10"))
    for tag, binary in runs:
        res = one_run(binary, args, out, tag)
        if not res or not res["rss1"] or not res["rss_end"]:
            print("%-8s failed" % tag)
            ok = False
            continue
        ratio = res["rss_end"] / res["rss1"]
        if res["duration_s"] > res["seconds"] * 1.05:
            print("%-8s note: the level took %.0f s for %.0f s of sending: the mock or the client fell behind, "
                  "requests piled up in flight (lower --rate)" % (tag, res["duration_s"], res["seconds"]))
        met = ratio <= 1.10
        if tag == "tokperf":
            ok = ok and met
        print("%-8s %9d KiB %9d KiB %8.3f %10d %14.0f %9d %s" % (
            tag, res["rss1"], res["rss_end"], ratio, res["requests"] or 0, res["responses_per_s"],
            res["max_in_flight"] or 0,
            "met" if met else "missed by %.1f%%" % ((ratio - 1.10) * 100)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
